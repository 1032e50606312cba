"""Synthetic voiced clips for the speaker-encoder tests and benchmark (16 kHz): ``voice`` makes one,
``CLIPS`` are five of different pitch and length."""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter, sawtooth

SR = 16_000

VOWELS = [(730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480), (570, 840, 2410)]


def voice(f0: float, formant_scale: float, seconds: float, seed: int, sr: int = SR) -> np.ndarray:
    """A synthetic voiced utterance: a sawtooth glottal source at a wandering F0 through the
    formant resonators of random vowels, one syllable every 0.25 s."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    contour = f0 * (1 + 0.06 * np.sin(2 * np.pi * 0.6 * t + rng.uniform(0, 6)) + 0.02 * rng.standard_normal())
    source = sawtooth(np.cumsum(2 * np.pi * contour / sr))
    syllable = int(0.25 * sr)
    out = np.zeros(n)
    for start in range(0, n, syllable):
        chunk = source[start : start + syllable]
        for formant, bandwidth in zip(VOWELS[rng.integers(len(VOWELS))], (80, 100, 120)):
            r = np.exp(-np.pi * bandwidth / sr)
            theta = 2 * np.pi * formant * formant_scale / sr
            chunk = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], chunk)
        out[start : start + chunk.size] = chunk * np.hanning(chunk.size)
    out = out / np.abs(out).max() * 0.3 + 0.001 * rng.standard_normal(n)
    return out.astype(np.float32)


CLIPS = [
    voice(f0, 1.0, s, seed)
    for f0, s, seed in [(120, 1.1, 1), (200, 0.8, 2), (150, 1.4, 3), (110, 0.5, 4), (230, 1.2, 5)]
]
