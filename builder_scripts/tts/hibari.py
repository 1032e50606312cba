"""hibari's ``heart`` voice (``hibari-tts``): a 7.9 MB int8 ONNX student of Kokoro's ``af_heart``
(US English, female) with its own grapheme-to-phoneme front end (no espeak) and a DSP vocoder.

Only the voice bundled in the wheel is used (the package's other voices download on first use,
which a build never does). The vocoder adds noise from a generator; it is seeded per call, so a
text always sounds the same. About 0.01 CPU s per second of speech on one core.
"""

from __future__ import annotations

import numpy as np

VOICE = "heart"  # the one voice inside the wheel
SEED = 0  # the vocoder's noise: fixed, so synthesis is deterministic


class HibariEngine:
    """One ONNX session, reused; ``synthesize`` returns float32 audio at 24 kHz."""

    name = "hibari"

    def __init__(self, threads: int | None = None):
        from hibari import SAMPLE_RATE, Hibari
        from hibari.voices import voice_path

        self.sample_rate: int = SAMPLE_RATE
        self.tts = Hibari(voice=VOICE, model=voice_path(VOICE, download_missing=False), threads=threads or 1)

    def synthesize(self, text: str, speed: float = 1.0) -> np.ndarray:
        """Speak English ``text``; ``speed`` > 1 talks faster."""
        return np.asarray(self.tts(text, speed=speed, seed=SEED), dtype=np.float32)
