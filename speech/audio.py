"""The benchmark's sampling rate, the one resampler, the one waveform check and Praat's seeding.

>>> resample(np.ones(4, np.float32), 8000).shape
(8,)
>>> check_waveform(np.zeros((2, 3)), "turn 4")
Traceback (most recent call last):
...
ValueError: turn 4 has shape (2, 3); expected a 1-D mono array
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from math import gcd

import numpy as np

#: Every clip of the benchmark, and every speaker encoder's input, is 16 kHz mono.
SAMPLING_RATE = 16_000


def resample(wav: np.ndarray, orig_sr: int, target_sr: int = SAMPLING_RATE) -> np.ndarray:
    """``wav`` (1-D) from ``orig_sr`` to ``target_sr`` Hz by polyphase filtering (scipy
    ``resample_poly``), as float32.

    A float64 signal is filtered in float64 and rounded to float32 once, at the end; any other
    dtype is taken as float32 first (pass float32 to filter in float32).
    """
    wav = np.asarray(wav)
    if wav.dtype != np.float64:
        wav = wav.astype(np.float32, copy=False)
    if orig_sr == target_sr:
        return wav.astype(np.float32, copy=False)
    try:
        from scipy.signal import resample_poly
    except ImportError:
        raise ImportError(
            f"resampling {orig_sr} Hz audio to {target_sr} Hz needs scipy: pip install 'speakersleuth[audio]'"
        ) from None

    g = gcd(int(orig_sr), int(target_sr))
    return resample_poly(wav, int(target_sr) // g, int(orig_sr) // g).astype(np.float32)


def check_waveform(wav, where: str = "audio") -> np.ndarray:
    """``wav`` as a C-contiguous float32 array, after checking that it is mono (1-D), not empty and
    finite; otherwise a ValueError naming ``where`` (e.g. ``"resemblyzer: waveform 3"``)."""
    wav = np.ascontiguousarray(wav, dtype=np.float32)
    if wav.ndim != 1:
        raise ValueError(f"{where} has shape {wav.shape}; expected a 1-D mono array")
    if wav.size == 0:
        raise ValueError(f"{where} is empty")
    if not np.all(np.isfinite(wav)):
        raise ValueError(f"{where} contains NaN or infinite samples")
    return wav


@contextmanager
def seeded_praat(audio: np.ndarray, *settings: float) -> Iterator[None]:
    """Inside the block Praat draws its random numbers (PSOLA's "Change gender" does) from a seed
    made of ``audio`` and ``settings``, so the call's output depends on its input alone, not on
    what Praat ran before in the process (a shard, a cache, another voice); after it, Praat's
    generator is unpredictable again for whatever else uses parselmouth."""
    from parselmouth.praat import run

    key = audio.tobytes() + np.float64(settings).tobytes()
    run(
        f"random_initializeWithSeedUnsafelyButPredictably ({int.from_bytes(hashlib.blake2b(key, digest_size=6).digest(), 'big')})"
    )
    try:
        yield
    finally:
        run("random_initializeSafelyAndUnpredictably ()")
