"""OpenVoice v2 tone-colour converter through coqui-tts, from local files.

Local layout (``--model-dir openvoice=DIR``, default ``$SPEAKERSLEUTH_VC_DIR/openvoice_v2``)::

    openvoice_v2/config.json       the converter of checkpoints_v2_0417.zip
    openvoice_v2/checkpoint.pth    (checkpoints_v2/converter/), or HF myshell-ai/OpenVoiceV2 converter/

The original ``config.json`` is read for both its ``data`` section (sampling rate, STFT; coqui's
loader maps the same fields) and its ``model`` section (the architecture; coqui builds
``OpenVoiceConfig`` defaults, which equal v2's), so any OpenVoice converter checkpoint builds
with the architecture it was trained with. The conversion is coqui's ``OpenVoice.voice_conversion``:
tone-colour embeddings of the source turn and of the target clips (averaged), then the flow swaps
the source's for the target's. OpenVoice's MeloTTS base speakers, its Whisper/VAD-based
``get_se`` and its watermark are not used (they would download models).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .base import NeuralConverter


class OpenVoiceConverter(NeuralConverter):
    name = "openvoice"
    staging = (
        "Copy config.json and checkpoint.pth of the OpenVoice v2 converter "
        "(checkpoints_v2_0417.zip: checkpoints_v2/converter/) into the model folder."
    )
    model_files = ("config.json", "checkpoint.pth")

    @property
    def input_rate(self) -> int:
        return int(self._model.config.audio.input_sample_rate)

    @staticmethod
    def _load(model_dir: Path, device: str):
        from TTS.vc.configs.openvoice_config import OpenVoiceConfig
        from TTS.vc.models.openvoice import OpenVoice

        original = json.loads((model_dir / "config.json").read_text())
        config = OpenVoiceConfig()
        for key, value in original.get("model", {}).items():
            if hasattr(config.model_args, key):
                setattr(config.model_args, key, value)
        data = original["data"]
        config.audio.input_sample_rate = config.audio.output_sample_rate = data["sampling_rate"]
        config.audio.fft_size = data["filter_length"]
        config.audio.hop_length = data["hop_length"]
        config.audio.win_length = data["win_length"]
        model = OpenVoice(config)
        model.load_checkpoint(config, model_dir / "checkpoint.pth", eval=True)
        return model.to(device)

    def _run(self, source: np.ndarray, targets: list[np.ndarray]) -> tuple[np.ndarray, int]:
        return self._model.voice_conversion(source, targets), int(self._model.config.audio.output_sample_rate)
