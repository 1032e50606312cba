"""CosyVoice3 zero-shot voice conversion, from a local CosyVoice checkout and model folder.

CosyVoice is not a PyPI package and pins its own torch, so it runs in its own environment (see
its requirements.txt); this adapter imports it from a checkout on ``sys.path``. Local layout
(``--model-dir cosyvoice3-repo=DIR`` and ``--model-dir cosyvoice3=DIR``, defaults under
``$SPEAKERSLEUTH_VC_DIR``)::

    CosyVoice/                       git clone --recursive https://github.com/FunAudioLLM/CosyVoice
      cosyvoice/cli/cosyvoice.py
      third_party/Matcha-TTS/matcha/
    Fun-CosyVoice3-0.5B/             FunAudioLLM/Fun-CosyVoice3-0.5B-2512, staged in advance
      cosyvoice3.yaml llm.pt flow.pt hift.pt campplus.onnx speech_tokenizer_v3.onnx
      CosyVoice-BlankEN/

``AutoModel(model_dir=...)`` would call ModelScope's ``snapshot_download`` for a folder that does
not exist, so the files are checked first. Conversion is ``inference_vc(source_wav, prompt_wav)``
(source speech tokens, the flow conditioned on the prompt's tokens, features and CAM++ speaker
embedding): both go through temporary 16 kHz WAV files, because that API takes paths; the
target clips are joined (0.2 s pauses between them) into one prompt of at most 25 s, and the
source must be at most 30 s (the speech tokenizer's limit). Output at ``model.sample_rate``.
The token rate quantises timing, so lengths drift by a few tens of ms; the shared plumbing
checks the drift and trims or pads to the source's exact length.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.speech.model_dirs import ModelFolder

from .base import SAMPLING_RATE, NeuralConverter, model_folder

MODEL_FILES = (
    "cosyvoice3.yaml",
    "llm.pt",
    "flow.pt",
    "hift.pt",
    "campplus.onnx",
    "speech_tokenizer_v3.onnx",
    "CosyVoice-BlankEN",
)
REPO_FILES = ("cosyvoice/cli/cosyvoice.py", "third_party/Matcha-TTS/matcha")
MAX_SOURCE_SECONDS = 30.0
PROMPT_PAUSE_SECONDS = 0.2


def _paths(model_dir, repo_dir) -> tuple[Path, Path]:
    return model_folder("cosyvoice3", model_dir), model_folder("cosyvoice3-repo", repo_dir)


def join_prompt(clips: list[np.ndarray]) -> np.ndarray:
    """The target clips as one prompt, with short pauses between them."""
    pause = np.zeros(int(PROMPT_PAUSE_SECONDS * SAMPLING_RATE), dtype=np.float32)
    parts = []
    for clip in clips:
        parts += [clip, pause]
    return np.concatenate(parts[:-1])


class CosyVoiceConverter(NeuralConverter):
    name = "cosyvoice3"
    staging = (
        "Clone FunAudioLLM/CosyVoice with --recursive into the repository folder and put "
        "Fun-CosyVoice3-0.5B-2512 into the model folder."
    )

    def __init__(self, model_dir=None, repo_dir=None, resynthesis: str = "self", model=None):
        """``model``: an already loaded CosyVoice model object (skips the files and loading)."""
        super().__init__(model_dir, resynthesis=resynthesis, model=model, repo_dir=repo_dir)

    @classmethod
    def model_folders(cls, model_dir=None, repo_dir=None) -> list[ModelFolder]:
        model_dir, repo_dir = _paths(model_dir, repo_dir)
        return [
            ModelFolder("cosyvoice3", model_dir, MODEL_FILES),
            ModelFolder("cosyvoice3-repo", repo_dir, REPO_FILES),
        ]

    @staticmethod
    def _load(model_dir: Path, device: str, repo_dir=None):
        """CosyVoice's ``AutoModel`` (it chooses its device), imported from the checkout."""
        repo_dir = model_folder("cosyvoice3-repo", repo_dir)
        for path in (repo_dir / "third_party" / "Matcha-TTS", repo_dir):
            if str(path) not in sys.path:
                sys.path.insert(0, str(path))
        try:
            from cosyvoice.cli.cosyvoice import AutoModel
        except ImportError as error:
            raise ImportError(
                f"cannot import CosyVoice from {repo_dir} ({error}); install its requirements.txt "
                "in a separate environment (it pins its own torch)"
            ) from error
        return AutoModel(model_dir=str(model_dir))

    def _run(self, source: np.ndarray, targets: list[np.ndarray]) -> tuple[np.ndarray, int]:
        if source.size > MAX_SOURCE_SECONDS * SAMPLING_RATE:
            raise ValueError(f"cosyvoice3: source is {source.size / SAMPLING_RATE:.1f} s, over the 30 s limit")
        with tempfile.TemporaryDirectory(prefix="cosyvoice-") as tmp:
            source_path, prompt_path = str(Path(tmp, "source.wav")), str(Path(tmp, "prompt.wav"))
            sf.write(source_path, source, SAMPLING_RATE, subtype="FLOAT")
            sf.write(prompt_path, join_prompt(targets), SAMPLING_RATE, subtype="FLOAT")
            chunks = [
                np.asarray(out["tts_speech"].cpu().numpy(), dtype=np.float32).reshape(-1)
                for out in self._model.inference_vc(source_path, prompt_path, stream=False)
            ]
        return np.concatenate(chunks), int(self._model.sample_rate)
