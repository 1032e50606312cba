"""FreeVC (24 kHz, VCTK) through coqui-tts, from local files: the paper's ``main`` backend.

Local layout (``--model-dir freevc=DIR``, default ``$SPEAKERSLEUTH_VC_DIR/freevc24``)::

    freevc24/config.json        the unzipped coqui release
    freevc24/model.pth          voice_conversion_models--multilingual--vctk--freevc24.zip
    freevc24/WavLM-Large.pt     WavLM-Large content encoder (coqui's v0.13.0_models release)

coqui's FreeVC loads WavLM from ``<TTS_HOME>/tts/wavlm/WavLM-Large.pt`` and downloads it when
absent; this adapter checks the file first, then points ``TTS_HOME`` (only while the model is
built) at a temporary folder that links to it, so ``wavlm_path`` may be anywhere and nothing is
fetched. A config with ``use_spk: true`` would make coqui fetch an external speaker encoder from
GitHub at init, so it is refused. The model is loaded as coqui's ``Synthesizer(vc_checkpoint=...,
vc_config=...)``; input 16 kHz, output at the config's ``output_sample_rate`` (24 kHz),
resampled back to 16 kHz.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from speakersleuth.speech.model_dirs import ModelFolder

from .base import NeuralConverter, model_folder


class FreeVCConverter(NeuralConverter):
    name = "freevc"
    staging = (
        "Unzip coqui's voice_conversion_models--multilingual--vctk--freevc24.zip (config.json, "
        "model.pth) into the model folder and put WavLM-Large.pt beside them (or pass wavlm_path)."
    )

    def __init__(self, model_dir=None, wavlm_path=None, device: str = "cpu", resynthesis: str = "self"):
        """``wavlm_path``: WavLM-Large.pt where it is not in the model folder."""
        super().__init__(model_dir, device, resynthesis, wavlm_path=wavlm_path)

    @property
    def input_rate(self) -> int:
        return int(self._model.vc_config.audio.input_sample_rate)

    @staticmethod
    def _paths(model_dir, wavlm_path) -> tuple[Path, Path]:
        model_dir = model_folder("freevc", model_dir)
        return model_dir, Path(wavlm_path) if wavlm_path is not None else model_dir / "WavLM-Large.pt"

    @classmethod
    def model_folders(cls, model_dir=None, wavlm_path=None) -> list[ModelFolder]:
        model_dir, wavlm_path = cls._paths(model_dir, wavlm_path)
        return [
            ModelFolder("freevc", model_dir, ("config.json", "model.pth")),
            ModelFolder("freevc", wavlm_path.parent, (wavlm_path.name,)),
        ]

    @classmethod
    def _load(cls, model_dir: Path, device: str, wavlm_path=None):
        """coqui's Synthesizer, with ``TTS_HOME`` pointing at ``wavlm_path`` while it is built."""
        from TTS.utils.synthesizer import Synthesizer

        config = json.loads((model_dir / "config.json").read_text())
        if config.get("model_args", {}).get("use_spk"):
            raise ValueError(
                f"{model_dir / 'config.json'} sets model_args.use_spk = true: coqui would download an "
                "external speaker encoder at init; use the freevc24 release config (use_spk false)"
            )
        _, wavlm_path = cls._paths(model_dir, wavlm_path)
        previous = os.environ.get("TTS_HOME")
        with tempfile.TemporaryDirectory(prefix="freevc-home-") as home:
            link = Path(home, "tts", "wavlm", "WavLM-Large.pt")
            link.parent.mkdir(parents=True)
            link.symlink_to(wavlm_path.resolve())
            os.environ["TTS_HOME"] = home
            try:
                return Synthesizer(
                    vc_checkpoint=model_dir / "model.pth",
                    vc_config=model_dir / "config.json",
                    use_cuda=device.startswith("cuda"),
                )
            finally:
                if previous is None:
                    os.environ.pop("TTS_HOME", None)
                else:
                    os.environ["TTS_HOME"] = previous

    def _run(self, source: np.ndarray, targets: list[np.ndarray]) -> tuple[np.ndarray, int]:
        out = self._model.voice_conversion(source_wav=source, target_wav=targets)
        return out, int(self._model.output_sample_rate)
