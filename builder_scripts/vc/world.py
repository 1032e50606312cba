"""WORLD-vocoder voice conversion (pyworld): no weights, CPU only.

The source turn is analysed into F0, spectral envelope and aperiodicity (F0: Praat's
autocorrelation tracker refined by StoneMask, or WORLD's own DIO + StoneMask or Harvest;
CheapTrick; D4C), then

1. F0: on voiced frames, log F0 is mapped to the target speaker's statistics,
   ``f0' = exp((log f0 - mu_src) * k + mu_tgt)`` with ``k = sigma_tgt / sigma_src`` clamped to
   [0.5, 2]; unvoiced frames stay unvoiced.
2. Vocal-tract length: every frame's log envelope is stretched along frequency by a ratio
   ``alpha`` (``E'(f) = E(f / alpha)``, so a formant at F moves to alpha * F; above the stretched
   top the last value is held). alpha is estimated from the two speakers, not set by gender.
   On a log-frequency axis a vocal-tract-length change is a shift, so alpha is the shift that
   best aligns the source speaker's long-term average voiced envelope with the target's, after
   removing level and spectral tilt (a least-squares line in log frequency) over 300-5000 Hz.
   With few clips that alignment has spurious minima (a formant lining up with its neighbour),
   so the search is bounded to +-10 % around a prior from the F0 ratio,
   ``alpha0 = (F0_tgt / F0_src) ** 0.3`` (the exponent that maps the Peterson-Barney male/female
   mean F0 ratio, about 1.69, onto their formant ratio, about 1.17), and to [0.8, 1.25] overall
   (about the spread of adult vocal-tract lengths).
3. Aperiodicity: where a frame's F0 is lowered, raised to at least
   ``LOWERED_F0_APERIODICITY * (1 - f0' / f0)`` (``gap_aperiodicity``), and to at least
   ``ONSET_APERIODICITY * (1 - f0' / f0)`` in the first ``ONSET_SECONDS`` (20 ms) of a voiced
   run; frames whose F0 is kept or raised keep theirs. The envelope was smoothed at the source's
   F0, so its impulse response rings only about one source period; synthesised at a much lower
   F0 (female -> male: 300 -> 85 Hz) each period became one isolated glottal pulse and
   near-silence, a buzzy pulse train the shortcut audit's impulse detector flagged on S2
   (``builder_scripts/artifacts.py``) and far more periodic than real low voices (harmonics-to-
   noise ratio above the original's). The floor fills the rest of each period with WORLD's
   aperiodic (aspiration) component, in proportion to how much of the period is left empty.
   After a pause the first pulse has not even a previous period's ringing around it, so the
   onset gets a breathy start (1.0 rather than 0.25: an aspirated first period, not a lone
   click). Re-converting the 60 WORLD units of a 60-dialogue build, S2 (both directions) had
   an impulse in 50 % of turns (originals: 17 %) and a male-voice HNR of 12.7 dB (originals:
   9.4); with the floor 30 % and 10.1 dB, with the onset floor too 23 % and 9.9 dB. A larger
   overall floor (0.35, 0.5) clicks less (27 %, 23 %) but is breathier than the real men
   (8.9, 7.2 dB); see benchmarks/notes/2026-12-01-voice-bank-and-artefacts.md.
4. WORLD resynthesises; the result is low-passed to ``BANDWIDTH_HZ`` and gets the source's exact
   length and RMS.

The low-pass applies to resynthesised turns too. Stretching the envelope by alpha changes the
top of the band (above Nyquist / alpha the last value is held), and the shortcut audit found the
4-8 kHz energy share telling the original discrimination candidate from the converted ones
(43 % against 33 % chance); cutting every output at the band the largest alpha leaves removes it
(27 %). The Praat backend uses the same bandwidth.

Praat's tracker is the default because its path search avoids octave jumps: DIO tracks some
low voices (the Piper voice of the embedded bank, ~85 Hz) at twice their F0, which made even a
plain resynthesis an octave too high. Speaker statistics (``SpeakerProfile``) come from a fixed
analysis (Praat + StoneMask, CheapTrick, 10 ms frames) of a speaker's clips and are cached by the
clips' content, so a target
speaker is analysed once however many turns are converted to it; the last few source analyses
are cached too (S2 and S3 convert the same turn).

>>> import numpy as np
>>> t = np.arange(16000) / 16000
>>> clip = (0.3 * np.sign(np.sin(2 * np.pi * 120 * t))).astype(np.float32)
>>> round(speaker_profile([clip]).f0_median)
120
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyworld

from .base import SAMPLING_RATE, Clips, VoiceConverter, check_waveform

F0_FLOOR = 60.0
F0_CEIL = 700.0
#: log-frequency grid of the long-term average envelopes (Hz, natural log)
LOG_FREQS = np.linspace(np.log(60.0), np.log(7800.0), 400)
ALPHA_RANGE = (0.8, 1.25)
ALPHA_BAND = (300.0, 5000.0)
#: Bandwidth of every DSP-backend output: what the largest formant/envelope stretch leaves (6.4 kHz).
BANDWIDTH_HZ = SAMPLING_RATE / 2 / ALPHA_RANGE[1]
F0_TO_VTL_EXPONENT = 0.3
PRIOR_WINDOW = 1.1
F0_SCALE_RANGE = (0.5, 2.0)
#: aperiodicity floor of a frame whose F0 is lowered to ``r`` x its own: this x (1 - r)
LOWERED_F0_APERIODICITY = 0.25
#: the same floor in the first ``ONSET_SECONDS`` of a voiced run (a breathy onset, not a lone first pulse)
ONSET_APERIODICITY = 1.0
ONSET_SECONDS = 0.02
#: fewer voiced frames (10 ms) than this and a clip set has no usable pitch statistics
MIN_VOICED_FRAMES = 10


def _digest(clip: np.ndarray) -> bytes:
    return hashlib.blake2b(clip.tobytes(), digest_size=16).digest()


class _LRU(OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def get_or_make(self, key, make):
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = self[key] = make()
        if len(self) > self.size:
            self.popitem(last=False)
        return value


F0_ESTIMATORS = ("praat", "dio", "harvest")


def _praat_f0(x: np.ndarray, frame_period: float) -> tuple[np.ndarray, np.ndarray]:
    """Praat's autocorrelation F0 on WORLD's frame grid (frame ``i`` at ``i * frame_period``)."""
    import parselmouth

    step = frame_period / 1000.0
    times = np.arange(1 + int(len(x) / SAMPLING_RATE / step)) * step
    pitch = parselmouth.Sound(x, sampling_frequency=SAMPLING_RATE).to_pitch_ac(
        time_step=step, pitch_floor=F0_FLOOR, pitch_ceiling=F0_CEIL
    )
    values, centres = pitch.selected_array["frequency"], pitch.xs()
    nearest = np.clip(np.round((times - centres[0]) / step).astype(int), 0, len(values) - 1)
    inside = (times >= centres[0] - step / 2) & (times <= centres[-1] + step / 2)
    return np.ascontiguousarray(np.where(inside, values[nearest], 0.0)), times


def f0_track(x: np.ndarray, frame_period: float, estimator: str = "praat") -> tuple[np.ndarray, np.ndarray]:
    """F0 (Hz, 0 = unvoiced) and frame times of a float64 C-contiguous signal on WORLD's grid."""
    if estimator == "praat":
        f0, t = _praat_f0(x, frame_period)
        return pyworld.stonemask(x, f0, t, SAMPLING_RATE), t
    if estimator == "dio":
        f0, t = pyworld.dio(x, SAMPLING_RATE, f0_floor=F0_FLOOR, f0_ceil=F0_CEIL, frame_period=frame_period)
        return pyworld.stonemask(x, f0, t, SAMPLING_RATE), t
    if estimator == "harvest":
        return pyworld.harvest(x, SAMPLING_RATE, f0_floor=F0_FLOOR, f0_ceil=F0_CEIL, frame_period=frame_period)
    raise ValueError(f"unknown F0 estimator {estimator!r}; use one of {', '.join(F0_ESTIMATORS)}")


def f0_median(audio: np.ndarray) -> float:
    """Median F0 (Hz) of a clip's voiced frames, by the profiles' analysis (10 ms frames)."""
    f0, _ = f0_track(check_waveform(audio).astype(np.float64), 10.0)
    if (f0 > 0).sum() < MIN_VOICED_FRAMES:
        raise ValueError(f"too little voiced speech for an F0 median: {(f0 > 0).sum()} voiced 10 ms frames")
    return float(np.exp(np.median(np.log(f0[f0 > 0]))))


@dataclass(frozen=True)
class SpeakerProfile:
    """Pitch and vocal-tract statistics of one speaker, from voiced frames of their clips."""

    log_f0_mean: float
    log_f0_std: float
    f0_median: float  # Hz
    envelope: np.ndarray  # mean log power envelope of voiced frames on LOG_FREQS
    voiced_frames: int


_PROFILES = _LRU(512)
_CLIP_STATS = _LRU(64)


def _clip_stats(clip: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Log-F0 of the voiced 10 ms frames and their mean log power envelope (on WORLD's linear
    frequency grid); None for a clip without voiced frames. Cached by content: a 10-turn segment
    shares five clips with its nested 5-turn one."""

    def run():
        x = clip.astype(np.float64)
        f0, t = f0_track(x, 10.0)
        voiced = f0 > 0
        if not voiced.any():
            return None
        sp = pyworld.cheaptrick(x, f0, t, SAMPLING_RATE, f0_floor=F0_FLOOR)
        return np.log(f0[voiced]), np.log(sp[voiced] + 1e-16).mean(axis=0)

    return _CLIP_STATS.get_or_make(_digest(clip), run)


def _compute_profile(clips: list[np.ndarray]) -> SpeakerProfile:
    stats = [s for s in map(_clip_stats, clips) if s is not None]
    log_f0 = [f for f, _ in stats]
    frames = sum(map(len, log_f0))
    if frames < MIN_VOICED_FRAMES:
        raise ValueError(
            f"too little voiced speech for pitch statistics: {frames} voiced 10 ms frames in "
            f"{len(clips)} clip(s) (need {MIN_VOICED_FRAMES})"
        )
    weights = np.array([len(v) for v in log_f0], dtype=np.float64)
    mean_envelope = np.average(np.stack([e for _, e in stats]), axis=0, weights=weights)
    freqs = np.linspace(0.0, SAMPLING_RATE / 2, mean_envelope.size)
    all_log_f0 = np.concatenate(log_f0)
    return SpeakerProfile(
        log_f0_mean=float(all_log_f0.mean()),
        log_f0_std=float(all_log_f0.std()),
        f0_median=float(np.exp(np.median(all_log_f0))),
        envelope=np.interp(np.exp(LOG_FREQS), freqs, mean_envelope),
        voiced_frames=frames,
    )


def speaker_profile(clips: Sequence[np.ndarray]) -> SpeakerProfile:
    """The profile of the speaker of ``clips`` (16 kHz), cached by the clips' content."""
    clips = [check_waveform(c, f"clip {i}") for i, c in enumerate(clips)]
    if not clips:
        raise ValueError("a speaker profile needs at least one clip")
    return _PROFILES.get_or_make(tuple(map(_digest, clips)), lambda: _compute_profile(clips))


def vtl_ratio(source: SpeakerProfile, target: SpeakerProfile) -> float:
    """The envelope stretch alpha (> 1: formants up) that best maps ``source`` onto ``target``."""
    prior = np.exp(F0_TO_VTL_EXPONENT * (target.log_f0_mean - source.log_f0_mean))
    lo, hi = np.clip([prior / PRIOR_WINDOW, prior * PRIOR_WINDOW], *ALPHA_RANGE)
    alphas = np.exp(np.linspace(np.log(lo), np.log(hi), 41))
    band = (LOG_FREQS >= np.log(ALPHA_BAND[0])) & (LOG_FREQS <= np.log(ALPHA_BAND[1]))
    design = np.stack([np.ones(band.sum()), LOG_FREQS[band]], axis=1)
    residual_maker = np.eye(band.sum()) - design @ np.linalg.pinv(design)  # removes level + tilt
    warped = np.stack([np.interp(LOG_FREQS, LOG_FREQS + np.log(a), source.envelope) for a in alphas])
    residuals = (warped[:, band] - target.envelope[band]) @ residual_maker.T
    return float(alphas[np.argmin(np.mean(residuals**2, axis=1))])


def map_f0(f0: np.ndarray, source: SpeakerProfile, target: SpeakerProfile) -> np.ndarray:
    """Log-F0 mean/variance mapping on voiced frames; unvoiced frames stay 0."""
    scale = np.clip(target.log_f0_std / max(source.log_f0_std, 1e-6), *F0_SCALE_RANGE)
    out = np.zeros_like(f0)
    voiced = f0 > 0
    mapped = np.exp((np.log(f0[voiced]) - source.log_f0_mean) * scale + target.log_f0_mean)
    out[voiced] = np.clip(mapped, F0_FLOOR * 0.8, F0_CEIL * 1.2)
    return out


def voicing_onsets(voiced: np.ndarray, frames: int) -> np.ndarray:
    """Mask of the first ``frames`` frames of every voiced run.

    >>> voicing_onsets(np.array([0, 1, 1, 1, 0, 1, 1], dtype=bool), 2).astype(int).tolist()
    [0, 1, 1, 0, 0, 1, 1]
    """
    index = np.arange(voiced.size)
    starts = voiced & ~np.concatenate([[False], voiced[:-1]])
    run_start = np.maximum.accumulate(np.where(starts, index, 0))
    return voiced & (index - run_start < frames)


def gap_aperiodicity(ap: np.ndarray, f0: np.ndarray, new_f0: np.ndarray, frame_period: float) -> np.ndarray:
    """``ap`` floored, in each frame whose F0 is lowered from ``f0`` to ``new_f0``, at
    ``LOWERED_F0_APERIODICITY * (1 - new_f0 / f0)`` (``ONSET_APERIODICITY * ...`` in the first
    ``ONSET_SECONDS`` of a voiced run; ``frame_period`` in ms): aspiration noise where the source's
    envelope leaves the longer period empty. Other frames keep their aperiodicity.

    >>> ap = np.full((4, 2), 0.05)
    >>> f0, new = np.array([0.0, 200.0, 200.0, 200.0]), np.array([0.0, 100.0, 100.0, 300.0])
    >>> gap_aperiodicity(ap, f0, new, frame_period=ONSET_SECONDS * 1000)[:, 0].round(3).tolist()
    [0.05, 0.5, 0.125, 0.05]
    """
    lowered = (f0 > 0) & (new_f0 > 0) & (new_f0 < f0)
    gap = 1.0 - np.where(lowered, new_f0 / np.where(lowered, f0, 1.0), 1.0)
    onset = voicing_onsets(new_f0 > 0, max(1, round(ONSET_SECONDS * 1000 / frame_period)))
    floor = np.where(onset, ONSET_APERIODICITY, LOWERED_F0_APERIODICITY) * gap
    return np.ascontiguousarray(np.maximum(ap, floor[:, None]))


def warp_envelope(sp: np.ndarray, alpha: float) -> np.ndarray:
    """Stretch every frame's log envelope along frequency: ``E'(f) = E(f / alpha)``."""
    bins = sp.shape[1]
    pos = np.minimum(np.arange(bins) / alpha, bins - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, bins - 1)
    frac = pos - lo
    log_sp = np.log(sp + 1e-16)
    return np.ascontiguousarray(np.exp(log_sp[:, lo] * (1 - frac) + log_sp[:, hi] * frac))


class WorldConverter(VoiceConverter):
    """WORLD analysis, F0 mapping + vocal-tract-length warping + aperiodicity where F0 is lowered, WORLD synthesis.

    ``frame_period`` (ms) and ``f0_estimator`` ("praat": Praat + StoneMask, the default; "dio":
    DIO + StoneMask; "harvest": slower) set the conversion's analysis; see
    benchmarks/bench_vc.py for speed.
    """

    name = "world"
    offline = True
    bandwidth_hz = BANDWIDTH_HZ

    def __init__(self, frame_period: float = 5.0, f0_estimator: str = "praat"):
        if f0_estimator not in F0_ESTIMATORS:
            raise ValueError(f"unknown F0 estimator {f0_estimator!r}; use one of {', '.join(F0_ESTIMATORS)}")
        self.frame_period = frame_period
        self.f0_estimator = f0_estimator
        self._analyses = _LRU(16)  # a 10-turn segment's clips and reference, shared with its nested 5-turn one

    def analyse(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f0, sp, ap)`` of a 16 kHz clip (cached for the last few clips)."""

        def run():
            x = audio.astype(np.float64)
            f0, t = f0_track(x, self.frame_period, self.f0_estimator)
            sp = pyworld.cheaptrick(x, f0, t, SAMPLING_RATE, f0_floor=F0_FLOOR)
            ap = pyworld.d4c(x, f0, t, SAMPLING_RATE)
            return f0, sp, ap

        return self._analyses.get_or_make(_digest(audio), run)

    def _synthesize(self, f0: np.ndarray, sp: np.ndarray, ap: np.ndarray) -> np.ndarray:
        f0, sp = np.ascontiguousarray(f0), np.ascontiguousarray(sp)
        return pyworld.synthesize(f0, sp, ap, SAMPLING_RATE, self.frame_period)

    def _convert(self, source: np.ndarray, target_clips: Clips, source_clips: Clips | None) -> np.ndarray:
        target = speaker_profile(target_clips)
        origin = speaker_profile(source_clips if source_clips else [source])
        f0, sp, ap = self.analyse(source)
        new_f0 = map_f0(f0, origin, target)
        alpha = vtl_ratio(origin, target)
        return self._synthesize(new_f0, warp_envelope(sp, alpha), gap_aperiodicity(ap, f0, new_f0, self.frame_period))

    def _resynthesize(self, audio: np.ndarray) -> np.ndarray:
        return self._synthesize(*self.analyse(audio))
