"""Post-processing shared by every voice: a natural pitch/formant change, silence trimming to a
fixed pad, and loudness normalisation (resampling is ``speech.audio.resample``). All audio is
float32 mono."""

from __future__ import annotations

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE, resample, seeded_praat

#: Silence kept before and after speech after trimming (seconds).
PAD_SECONDS = 0.1
#: RMS of the active (speech) frames after normalisation, in dBFS.
TARGET_DBFS = -23.0
PEAK_LIMIT = 0.95
_FRAME = 0.01  # seconds per analysis frame for trimming and loudness
_SILENCE_DB = 40.0  # frames this far below the loudest frame count as silence


def shift_voice(audio: np.ndarray, sr: int, pitch: float = 1.0, formant: float = 1.0) -> np.ndarray:
    """Scale F0 by ``pitch`` and formants (vocal-tract length) by ``formant`` with Praat's PSOLA.

    Factors of about 0.85-1.15 make a shorter or longer vocal tract of the same voice; F0 x 0.5-0.66
    with formants x 0.8-0.9 make a female voice male and keep it clean (harmonics-to-noise ratio
    and click rate as in the unshifted voice: benchmarks/bench_voice_bank.py). 1.0/1.0 returns the
    input unchanged. PSOLA draws random numbers: they are seeded by the input and the factors
    (``seeded_praat``), so the same call gives the same samples in any process.
    """
    if pitch == 1.0 and formant == 1.0:
        return audio
    import parselmouth
    from parselmouth.praat import call

    sound = parselmouth.Sound(audio.astype(np.float64), sampling_frequency=sr)
    pitch_track = call(sound, "To Pitch", 0.01, 60, 500)
    median = call(pitch_track, "Get quantile", 0, 0, 0.5, "Hertz")
    new_median = 0.0 if np.isnan(median) else median * pitch
    with seeded_praat(audio, pitch, formant):
        out = call((sound, pitch_track), "Change gender", formant, new_median, 1.0, 1.0)
    return resample(out.values[0], int(round(out.sampling_frequency)), sr)


def _frame_db(audio: np.ndarray, sr: int) -> np.ndarray:
    hop = max(1, int(sr * _FRAME))
    n = len(audio) // hop
    frames = audio[: n * hop].reshape(n, hop).astype(np.float64)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)


def trim(audio: np.ndarray, sr: int = SAMPLING_RATE, pad: float = PAD_SECONDS) -> np.ndarray:
    """Cut leading/trailing silence, then pad both ends with exactly ``pad`` seconds of zeros."""
    db = _frame_db(audio, sr)
    if len(db) == 0:
        return audio
    active = np.flatnonzero(db > db.max() - _SILENCE_DB)
    hop = int(sr * _FRAME)
    start, end = active[0] * hop, min(len(audio), (active[-1] + 1) * hop)
    zeros = np.zeros(int(round(pad * sr)), dtype=np.float32)
    return np.concatenate([zeros, audio[start:end].astype(np.float32), zeros])


def normalize_loudness(audio: np.ndarray, sr: int = SAMPLING_RATE, target_dbfs: float = TARGET_DBFS) -> np.ndarray:
    """Scale so the speech frames have RMS ``target_dbfs``; never let the peak pass ``PEAK_LIMIT``."""
    db = _frame_db(audio, sr)
    speech = db[db > db.max() - _SILENCE_DB] if len(db) else db
    if len(speech) == 0 or not np.isfinite(speech).all():
        return audio.astype(np.float32)
    rms = np.sqrt(np.mean(10 ** (speech / 10)))
    gain = 10 ** (target_dbfs / 20) / max(rms, 1e-9)
    peak = float(np.abs(audio).max()) * gain
    if peak > PEAK_LIMIT:
        gain *= PEAK_LIMIT / peak
    return (audio * gain).astype(np.float32)
