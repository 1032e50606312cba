"""Units for the shortcut audit: five band-limited noise "turns" and their converted versions, with a
planted band-edge residue where asked, for ``ShortcutAudit.add`` (its tests and its benchmark's)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy.signal import butter, sosfiltfilt

SR = 16000
LOW = butter(8, 6000, fs=SR, output="sos")


def level(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to a standard deviation of 0.05, as float32."""
    return (0.05 * x / x.std()).astype(np.float32)


def voice(rng: np.random.Generator, seconds: float = 0.4) -> np.ndarray:
    """A "turn": noise band-limited to 6 kHz, at one level, a different draw (voice) each time."""
    return level(sosfiltfilt(LOW, rng.standard_normal(int(seconds * SR))))


def unit(i: int, rng: np.random.Generator, leak: float = 0.0, raw: bool = False) -> SimpleNamespace:
    """Five turns; turn k's S2/S3 versions are other voices, with a 6.6 kHz tone ``leak`` (its
    amplitude) where the conversion leaves residue above the band, at the same level."""
    k = 1 + i % 5
    turns = [voice(rng) for _ in range(5)]
    tone = leak * np.sin(2 * np.pi * 6600 * np.arange(turns[k - 1].size) / SR).astype(np.float32)
    converted = {s: level(voice(rng) + tone) for s in ("S2", "S3")}
    return SimpleNamespace(
        converted_turn=k,
        targets=turns,
        converted=converted,
        raw_targets=turns if raw else [],
        raw_converted={s: c * 2 for s, c in converted.items()} if raw else {},
        segment=SimpleNamespace(
            source="synthetic", dialogue_id=f"d{i // 2}", target_gender="female"
        ),  # two units a dialogue
        s2=SimpleNamespace(gender="male"),
        s3=SimpleNamespace(gender="female"),
    )


#: the planted residue: a 6.6 kHz tone 50 dB under the turn, above the voice's 6 kHz band limit
LEAK = 0.05 * np.sqrt(2) * 10 ** (-50 / 20)
