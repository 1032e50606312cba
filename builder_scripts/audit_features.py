"""The clip features of the shortcut audit (``builder_scripts/shortcuts.py``): what a classifier may
read of a published clip besides its speaker.

Two feature sets, each grouped in families:

- ``NON_SPEAKER``, every non-speaker feature (band edge, spectrum, compressibility, activity,
  quantisation, clicks, noise floor, level, duration, DC). Several of them carry the voice too (a
  clip's FLAC rate follows its F0, the spectrum's shape is timbre, a voice has its own pace), so a
  real other voice is found by them as well: the card compares them with chance and, for the DSP
  conversions, with the same turn re-spoken by the substitute's own voice.
- ``VOICE_FREE``, features no voice should carry, which must sit at chance: the quiet frames'
  (the final stage's floor, where its gate faded the pauses) level and spectrum, DC, quantisation
  as the quiet frames use the grid (odd-sample share, distinct values, tiny values), the band
  above the final stage's low-pass, and the FLAC rate net of the voice (its residual from a ridge
  fit on F0, MFCC means, length and speech share over all the audited clips, blind to the labels:
  ``net_of_voice``). None depends on a clip's length or on how much of it is speech.

All are measured on the clip's 16-bit samples as published.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd

from .artifacts import impulse_windows, zero_runs
from .scenarios import TARGET_RMS_DBFS

SR = ssd.SAMPLING_RATE
#: 10 ms frames of the level-based features
FRAME = SR // 100
#: bands (Hz) around the DSP backends' 6.4 kHz limit and the final stage's low-pass
EDGE_BANDS = ((4800, 5200), (5200, 5600), (5600, 6000), (6000, 6400), (6400, 6800), (6800, 8000))
#: the final stage's noise floor (dBFS); a quiet frame lies within ``QUIET_DB`` of it
FLOOR_DBFS = TARGET_RMS_DBFS - 40.0
QUIET_DB = 3.0
#: the fewest quiet frames a clip is measured on, and how many quiet samples count distinct values
QUIET_MIN_FRAMES = 10
QUIET_SAMPLES = QUIET_MIN_FRAMES * FRAME
#: bands (Hz) of the quiet frames' spectrum (shares of their energy; the rest of the band is implied)
QUIET_BANDS = ((0, 1000), (1000, 2500), (2500, 5600))
#: what ``_voice`` measures besides the MFCC means
VOICE_DESCRIPTORS = ("median_f0", "duration_seconds", "speech_share")
#: the band above the final stage's low-pass (its stop band starts at 5.6 kHz)
ABOVE_LOW_PASS_HZ = 5600
#: a 16-bit value this small (in steps) is a "tiny" one: dither and floor, no speech
TINY_STEPS = 2
#: MFCCs whose means describe a clip's timbre in ``net_of_voice``
MFCC_COEFFICIENTS = 13


def _spectrum(clip: np.ndarray) -> np.ndarray:
    """Power spectrum of 512-sample Hann frames, hop 256 (rows: frames, columns: 31.25 Hz bins)."""
    clip = np.asarray(clip, dtype=np.float64)
    if clip.size < 512:
        clip = np.pad(clip, (0, 512 - clip.size))
    frames = np.lib.stride_tricks.sliding_window_view(clip, 512)[::256]
    return np.abs(np.fft.rfft(frames * np.hanning(512), axis=1)) ** 2 + 1e-20


def dc_offset(clip: np.ndarray) -> float:
    """The clip's mean relative to its RMS level (a resynthesis can shift the waveform's zero)."""
    level = float(np.sqrt(np.mean(np.square(clip, dtype=np.float64))))
    return abs(float(np.mean(clip, dtype=np.float64))) / level if level else 0.0


def _db(x) -> np.ndarray:
    return 10 * np.log10(np.asarray(x, dtype=np.float64) + 1e-20)


def _band_edge(spec: np.ndarray) -> dict[str, float]:
    power = spec.mean(axis=0)
    freqs = np.arange(power.size) * SR / 512
    total = power.sum()
    bands = {
        f"band_{lo / 1000:g}_{hi / 1000:g}_khz_db": float(_db(power[(freqs >= lo) & (freqs < hi)].sum() / total))
        for lo, hi in EDGE_BANDS
    }
    values = list(bands.values())
    return bands | {"edge_drop_5.6_khz_db": values[1] - values[2], "edge_drop_6.4_khz_db": values[3] - values[4]}


def _spectrum_shape(spec: np.ndarray) -> dict[str, float]:
    """The shape of the speech band below the band-edge family's bands (0-4.8 kHz): the share of
    its upper half, and its flatness."""
    band = spec[:, : int(EDGE_BANDS[0][0] / (SR / 512))]
    flatness = np.exp(np.mean(np.log(band), axis=1)) / np.mean(band, axis=1)
    return {
        "upper_half_share": float(band[:, band.shape[1] // 2 :].sum() / band.sum()),
        "spectral_flatness": float(np.mean(flatness)),
    }


def _flac_rate(pcm: np.ndarray) -> dict[str, float]:
    buffer = io.BytesIO()
    sf.write(buffer, pcm, SR, format="FLAC", subtype="PCM_16", compression_level=ssd.FLAC_LEVELS[0])
    return {"flac_bytes_per_second": len(buffer.getvalue()) / (pcm.size / SR)}


def _frame_levels(x: np.ndarray) -> np.ndarray:
    n = max(1, x.size // FRAME)
    frames = np.pad(x, (0, max(0, FRAME - x.size)))[: n * FRAME].reshape(n, FRAME)
    return _db(np.mean(frames**2, axis=1))


def _activity(levels: np.ndarray) -> dict[str, float]:
    return {f"active_fraction_{r}_db": float(np.mean(levels > levels.max() - r)) for r in (20, 40)}


def _noise_floor(levels: np.ndarray) -> dict[str, float]:
    floor = float(np.percentile(levels, 10))
    return {"noise_floor_db": floor, "noise_floor_below_median_db": float(np.median(levels)) - floor}


def _level(x: np.ndarray) -> dict[str, float]:
    return {"rms_db": float(_db(np.mean(x**2))), "peak_db": float(_db(np.max(np.abs(x)) ** 2))}


def _clicks(x: np.ndarray) -> dict[str, float]:
    return {"impulse_windows_per_second": impulse_windows(x) / (x.size / SR), "exact_zero_runs": float(zero_runs(x))}


#: family -> how its features are computed from (16-bit samples, float samples, spectrum, 10 ms levels)
_FAMILY_FEATURES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], dict[str, float]]] = {
    "band edge": lambda pcm, x, spec, levels: _band_edge(spec),
    "spectrum": lambda pcm, x, spec, levels: _spectrum_shape(spec),
    "compressibility": lambda pcm, x, spec, levels: _flac_rate(pcm),
    "activity": lambda pcm, x, spec, levels: _activity(levels),
    "quantisation": lambda pcm, x, spec, levels: {"distinct_value_share": np.unique(pcm).size / pcm.size},
    "clicks": lambda pcm, x, spec, levels: _clicks(x),
    "noise floor": lambda pcm, x, spec, levels: _noise_floor(levels),
    "level": lambda pcm, x, spec, levels: _level(x),
    "duration": lambda pcm, x, spec, levels: {"duration_seconds": x.size / SR},
    "DC": lambda pcm, x, spec, levels: {"dc_offset": dc_offset(x)},
}


def _features(families: dict[str, Callable], clip: np.ndarray) -> dict[str, dict[str, float]]:
    pcm = ssd.pcm16(np.asarray(clip, dtype=np.float32).reshape(-1))
    x = pcm.astype(np.float64) / 32768
    spec, levels = _spectrum(x), _frame_levels(x)
    return {family: compute(pcm, x, spec, levels) for family, compute in families.items()}


def features(clip: np.ndarray) -> dict[str, dict[str, float]]:
    """``{family: {feature: value}}`` of one clip's non-speaker features."""
    return _features(_FAMILY_FEATURES, clip)


# ----------------------------------------------------------------------------- voice-free


def _quiet_samples(pcm: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The samples of the quiet frames: the 10 ms frames within ``QUIET_DB`` of the final stage's
    noise floor, with both neighbours too (what the gate left of the pauses and pads, away from
    its ramps: the floor and the dither alone), at
    least ``QUIET_MIN_FRAMES`` of them (the quietest, where a clip has fewer), in clip order."""
    frames = np.pad(pcm, (0, -pcm.size % FRAME)).reshape(-1, FRAME)
    near = levels[: len(frames)] <= FLOOR_DBFS + QUIET_DB
    quiet = np.flatnonzero(near & np.roll(near, 1) & np.roll(near, -1))  # and both neighbours: no speech's tail
    if quiet.size < QUIET_MIN_FRAMES:
        quiet = np.sort(np.argsort(levels[: len(frames)], kind="stable")[:QUIET_MIN_FRAMES])
    return frames[quiet]


def _quiet(pcm: np.ndarray, levels: np.ndarray) -> dict[str, float]:
    """The quiet frames' level (dBFS) and the shares of their energy in ``QUIET_BANDS``."""
    frames = _quiet_samples(pcm, levels).astype(np.float64) / 32768
    power = np.abs(np.fft.rfft(frames * np.hanning(FRAME), axis=1)) ** 2 + 1e-20
    freqs = np.fft.rfftfreq(FRAME, 1 / SR)
    total = power.sum()
    shares = {
        f"quiet_share_{lo / 1000:g}_{hi / 1000:g}_khz": float(power[:, (freqs >= lo) & (freqs < hi)].sum() / total)
        for lo, hi in QUIET_BANDS
    }
    return {"quiet_level_db": float(_db(np.mean(frames**2)))} | shares


def _quantisation(pcm: np.ndarray, levels: np.ndarray) -> dict[str, float]:
    """The 16-bit grid as the quiet frames use it (no speech there: the dither and the floor):
    the share of odd values, of distinct values among the first ``QUIET_SAMPLES`` quiet samples,
    of values within ``TINY_STEPS`` of zero."""
    values = _quiet_samples(pcm, levels).ravel().astype(np.int64)
    return {
        "odd_sample_share": float(np.mean(values % 2 != 0)),
        "distinct_value_share": np.unique(values[:QUIET_SAMPLES]).size / min(values.size, QUIET_SAMPLES),
        "tiny_value_share": float(np.mean(np.abs(values) <= TINY_STEPS)),
    }


def _above_low_pass(spec: np.ndarray) -> dict[str, float]:
    freqs = np.arange(spec.shape[1]) * SR / 512
    return {"above_low_pass_db": float(_db(spec[:, freqs >= ABOVE_LOW_PASS_HZ].sum(axis=1).mean()))}


@lru_cache(maxsize=1)
def _mel_dct() -> np.ndarray:
    """The 40-band mel filterbank of a 512-point spectrum, followed by the DCT to ``MFCC_COEFFICIENTS``."""
    import librosa
    from scipy.fft import dct

    return dct(np.eye(40), type=2, norm="ortho", axis=0)[:MFCC_COEFFICIENTS] @ librosa.filters.mel(
        sr=SR, n_fft=512, n_mels=40
    )


def _voice(x: np.ndarray, spec: np.ndarray, levels: np.ndarray) -> dict[str, float]:
    """What the voice sets of a clip (median F0, MFCC means, length, share of speech frames): no
    features, what ``net_of_voice`` fits the FLAC rate on."""
    from .verification import median_f0

    mfcc = np.log(spec) @ _mel_dct().T
    return {
        "median_f0": median_f0(x.astype(np.float32)),
        **{f"mfcc_{i}": float(v) for i, v in enumerate(mfcc.mean(axis=0))},
        "duration_seconds": x.size / SR,
        "speech_share": float(np.mean(levels > FLOOR_DBFS + QUIET_DB)),
    }


_VOICE_FREE_FAMILIES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], dict[str, float]]] = {
    "quiet frames": lambda pcm, x, spec, levels: _quiet(pcm, levels),
    "DC": lambda pcm, x, spec, levels: {"dc_offset": dc_offset(x)},
    "quantisation": lambda pcm, x, spec, levels: _quantisation(pcm, levels),
    "above the low-pass": lambda pcm, x, spec, levels: _above_low_pass(spec),
    "compressibility net of the voice": lambda pcm, x, spec, levels: _flac_rate(pcm),
    "voice": lambda pcm, x, spec, levels: _voice(x, spec, levels),
}


def net_of_voice(vectors: np.ndarray, names: list[str]) -> np.ndarray:
    """``vectors`` (clips x ``names``) with the FLAC rate replaced by its residual from a ridge fit
    on what the voice sets (``_voice``: median F0, unvoiced clips at the median of the others; MFCC
    means; length and speech share) over these clips, and those descriptors dropped. Blind to the labels.

    >>> names = ["flac_bytes_per_second", "median_f0", "mfcc_0"]
    >>> rate = np.array([[100.0 + 2 * f, f, 0.0] for f in (100, 150, 200, 250)])
    >>> np.round(net_of_voice(rate, names), 1).ravel().tolist()  # the rate follows F0 alone: nothing left
    [-0.0, -0.0, 0.0, 0.0]
    """
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    voice = [i for i, n in enumerate(names) if n in VOICE_DESCRIPTORS or n.startswith("mfcc_")]
    rate = names.index("flac_bytes_per_second")
    descriptors = vectors[:, voice].copy()
    f0 = descriptors[:, [names[i] for i in voice].index("median_f0")]
    f0[~(f0 > 0)] = np.median(f0[f0 > 0]) if np.any(f0 > 0) else 0.0
    scaled = StandardScaler().fit_transform(descriptors)
    residual = vectors[:, rate] - Ridge(alpha=1e-3).fit(scaled, vectors[:, rate]).predict(scaled)
    kept = vectors.copy()
    kept[:, rate] = residual
    return np.delete(kept, voice, axis=1)


@dataclass(frozen=True)
class FeatureSet:
    """A set of clip features the audit fits.

    ``measure(clip)`` gives ``{family: {name: value}}``; ``prepare(vectors, measured)`` turns every
    audited clip's measured values (clips x ``measured`` names) into the classifier's columns, once
    over all clips (None: they are the columns); ``families`` names the columns by family.
    """

    name: str
    measure: Callable[[np.ndarray], dict[str, dict[str, float]]]
    prepare: Callable[[np.ndarray, list[str]], np.ndarray] | None = None
    #: families measured only for ``prepare`` (not columns)
    helpers: tuple[str, ...] = ()

    @cached_property
    def _measured(self) -> dict[str, list[str]]:
        return {
            family: list(values)
            for family, values in self.measure(np.sin(np.arange(SR) / 10).astype(np.float32) * 0.1).items()
        }

    @property
    def families(self) -> dict[str, list[str]]:
        return {family: names for family, names in self._measured.items() if family not in self.helpers}

    @property
    def names(self) -> list[str]:
        return [name for names in self.families.values() for name in names]

    def vector(self, clip: np.ndarray) -> np.ndarray:
        """The measured values of one clip (``columns`` makes them the classifier's)."""
        return np.array([v for values in self.measure(clip).values() for v in values.values()], dtype=np.float64)

    def columns(self, vectors: np.ndarray) -> np.ndarray:
        if self.prepare is None:
            return vectors
        return self.prepare(vectors, [name for names in self._measured.values() for name in names])


def _voice_free(clip: np.ndarray) -> dict[str, dict[str, float]]:
    return _features(_VOICE_FREE_FAMILIES, clip)


NON_SPEAKER = FeatureSet("non-speaker", features)
VOICE_FREE = FeatureSet("voice-free", _voice_free, net_of_voice, helpers=("voice",))
#: the non-speaker families and feature names (the card's list)
FAMILIES: dict[str, list[str]] = NON_SPEAKER.families
FEATURES: list[str] = NON_SPEAKER.names


def feature_vector(clip: np.ndarray) -> np.ndarray:
    """The non-speaker features of one clip, in ``FEATURES``' order."""
    return NON_SPEAKER.vector(clip)
