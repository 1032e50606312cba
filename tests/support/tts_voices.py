"""Real speech for the speaker-encoder tests: distinct voices of the embedded TTS bank (Kokoro-82M
and Piper, shipped in wheels), each reading two different texts, rendered into a temporary cache.

``same_voice_failures(emb, ids)`` is the check every encoder must pass: with ``emb`` of shape
(voices, 2, dim), each voice's two texts are closer to each other than to any other voice's
(cross-text pairs on both sides, so text overlap favours neither). The ``tts_voices`` fixture
(``tests/conftest.py``) renders the clips once per test session."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

#: Base voices of different families and genders (no pitch/formant variant of the same base twice).
VOICE_IDS = ("kf_alpha", "kf_gongitsune_low", "kf_nezumi_prosody_tebukuro_high", "km_kumo", "pm_joe", "pm_joe_light")
TEXTS = (
    "I grew up in a small town, so I really love the mountains.",
    "What kind of music do you usually listen to when you study?",
)


def render_voices(cache: Path) -> dict[str, list[np.ndarray]]:
    """Every voice of ``VOICE_IDS`` reading ``TEXTS``: 16 kHz float32 clips, as the cache holds them."""
    from speakersleuth.builder_scripts.tts.voice_bank import Voicer

    voicer = Voicer(cache, threads=1)
    return {v: [sf.read(voicer.synthesize(v, t), dtype="float32")[0] for t in TEXTS] for v in VOICE_IDS}


def same_voice_failures(emb: np.ndarray, ids: list[str]) -> list[str]:
    """The voices whose same-speaker similarity does not beat every other voice's (empty: all do)."""
    failures = []
    for i, v in enumerate(ids):
        same = float(emb[i, 0] @ emb[i, 1])
        cross = {u: float(emb[i, 0] @ emb[j, 1] + emb[i, 1] @ emb[j, 0]) / 2 for j, u in enumerate(ids) if j != i}
        nearest = max(cross, key=cross.get)
        if same <= cross[nearest]:
            failures.append(f"{v}: same-speaker {same:.3f} <= {nearest} {cross[nearest]:.3f}")
    return failures
