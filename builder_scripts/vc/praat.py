"""Praat voice conversion (praat-parselmouth): "Change gender" (PSOLA), no weights, CPU only.

Praat's ``Sound: Change gender...`` with

- formant shift ratio: the vocal-tract-length ratio alpha that the WORLD backend also uses
  (``world.vtl_ratio``: long-term envelope alignment bounded around an F0-ratio prior);
- new pitch median: the target speaker's median F0, moved by this turn's own offset from its
  speaker's median (``median_tgt * (median_turn / median_src) ** k``), so a turn spoken higher
  than usual stays higher after conversion (without ``source_clips`` it is the target median);
- pitch range factor ``k = sigma_tgt / sigma_src`` of log F0, clamped to [0.5, 2];
- the new median is at least ``MIN_PITCH_RATIO`` (0.5) x the turn's own median: PSOLA builds
  each new period from a two-period piece of the source, which cannot fill a period more than
  twice as long, so a drop beyond an octave (a 300 Hz voice to an 85 Hz one) left a gap of
  near-silence in every period, an impulse train the shortcut audit flagged on S2
  (``builder_scripts/artifacts.py``). Lowered by an octave at most, female turns still land
  in a male range (a 60-dialogue build: female turns, median 270 Hz, at 104-162 Hz, median
  138 Hz, aimed at ~90 Hz);
- duration factor 1.0 (timing kept).

Speaker statistics are the WORLD backend's cached ``SpeakerProfile`` s, so both DSP backends aim
at the same targets. ``resynthesize`` runs the same PSOLA path with neutral settings (ratio 1,
pitch median unchanged, range 1). Praat shifts formants by resampling, which empties the top of
the band for a ratio above 1 and fills it with stretched content below 1, so a converted turn
would differ from resynthesised ones in bandwidth alone (the shortcut audit found the 4-8 kHz
energy share picking S3's converted turn at 46 % against 20 % chance): every output, converted or
resynthesised, is low-passed to ``world.BANDWIDTH_HZ``, the band the largest ratio leaves. Output:
the source's exact length and RMS loudness.
"""

from __future__ import annotations

import numpy as np
import parselmouth
from parselmouth.praat import call

from speakersleuth.speech.audio import seeded_praat

from .base import SAMPLING_RATE, Clips, VoiceConverter
from .world import BANDWIDTH_HZ, F0_SCALE_RANGE, f0_median, speaker_profile, vtl_ratio

#: the lowest new pitch median, as a share of the turn's own: PSOLA cannot lower by more than an octave
MIN_PITCH_RATIO = 0.5


class PraatConverter(VoiceConverter):
    """PSOLA pitch change + resampling formant shift (Praat "Change gender")."""

    name = "praat"
    offline = True
    bandwidth_hz = BANDWIDTH_HZ

    def __init__(self, pitch_floor: float = 60.0, pitch_ceiling: float = 600.0):
        self.pitch_floor = pitch_floor
        self.pitch_ceiling = pitch_ceiling

    def _change_gender(
        self, audio: np.ndarray, formant_ratio: float, new_median: float, range_factor: float
    ) -> np.ndarray:
        sound = parselmouth.Sound(audio.astype(np.float64), sampling_frequency=SAMPLING_RATE)
        with seeded_praat(audio, formant_ratio, new_median, range_factor):  # PSOLA draws random numbers
            out = call(
                sound,
                "Change gender",
                self.pitch_floor,
                self.pitch_ceiling,
                formant_ratio,
                new_median,
                range_factor,
                1.0,
            )
        if out.sampling_frequency != SAMPLING_RATE:
            raise RuntimeError(f"Praat returned {out.sampling_frequency} Hz audio, expected {SAMPLING_RATE}")
        return out.values[0]

    def _convert(self, source: np.ndarray, target_clips: Clips, source_clips: Clips | None) -> np.ndarray:
        target = speaker_profile(target_clips)
        if source_clips:
            origin, turn_median = speaker_profile(source_clips), f0_median(source)
        else:
            origin = speaker_profile([source])
            turn_median = origin.f0_median
        scale = float(np.clip(target.log_f0_std / max(origin.log_f0_std, 1e-6), *F0_SCALE_RANGE))
        new_median = target.f0_median * (turn_median / origin.f0_median) ** scale
        new_median = max(new_median, MIN_PITCH_RATIO * turn_median)
        return self._change_gender(source, vtl_ratio(origin, target), float(new_median), scale)

    def _resynthesize(self, audio: np.ndarray) -> np.ndarray:
        return self._change_gender(audio, 1.0, 0.0, 1.0)
