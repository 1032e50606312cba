"""YourTTS voice conversion (VITS with a speaker encoder) through coqui-tts, from local files.

Local layout (``--model-dir yourtts=DIR``, default ``$SPEAKERSLEUTH_VC_DIR/your_tts``): the unzipped coqui release
``tts_models--multilingual--multi-dataset--your_tts.zip``::

    your_tts/config.json  model_file.pth  model_se.pth  config_se.json
    + every file config.json names (d_vector_file, speakers_file, language_ids_file, ...), by
      file name in the same folder (e.g. speakers.json, language_ids.json)

The release config stores the paths of its side files as they were on the author's machine;
coqui's model manager rewrites them to the download folder, and so does this adapter, into a
temporary copy (the model folder is never modified). That copy also turns off
``audio.do_trim_silence``: trimming the source's edge silence would change its timing.
Conversion is coqui's ``Synthesizer.tts(source_wav=..., speaker_wav=[...])`` (VITS
``voice_conversion``: speaker-encoder d-vectors of the source turn and of the target clips, the
flow swaps them); inputs go through temporary WAV files at the model's rate, because that API
takes paths. License of the weights: CC BY-NC-ND 4.0.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.speech.model_dirs import ModelFolder

from .base import NeuralConverter, model_folder

#: config fields (top level and under model_args) that name side files of the release
PATH_FIELDS = (
    "d_vector_file",
    "speakers_file",
    "language_ids_file",
    "speaker_encoder_model_path",
    "speaker_encoder_config_path",
)


def _side_files(config: dict) -> set[str]:
    """File names of every non-empty path field of a coqui config (both levels)."""
    names = set()
    for section in (config, config.get("model_args") or {}):
        for field in PATH_FIELDS:
            value = section.get(field)
            for path in value if isinstance(value, list) else [value]:
                if path:
                    names.add(Path(path).name)
    return names


def localized_config(config: dict, model_dir: Path) -> dict:
    """``config`` with its side-file paths pointing into ``model_dir`` and trimming off."""
    config = json.loads(json.dumps(config))
    for section in (config, config.get("model_args") or {}):
        for field in PATH_FIELDS:
            value = section.get(field)
            if isinstance(value, list):
                section[field] = [str(model_dir / Path(p).name) for p in value if p]
            elif value:
                section[field] = str(model_dir / Path(value).name)
    config.setdefault("audio", {})["do_trim_silence"] = False
    return config


class YourTTSConverter(NeuralConverter):
    name = "yourtts"
    staging = (
        "Unzip coqui's tts_models--multilingual--multi-dataset--your_tts.zip into the model folder "
        "(all its files side by side)."
    )
    model_files = ("config.json", "model_file.pth", "model_se.pth", "config_se.json")

    @property
    def input_rate(self) -> int:
        return int(self._model.tts_config.audio["sample_rate"])

    @classmethod
    def model_folders(cls, model_dir=None) -> list[ModelFolder]:
        """The release's files and every side file its config.json names."""
        model_dir = model_folder("yourtts", model_dir)
        names = set(cls.model_files)
        config_path = model_dir / "config.json"
        if config_path.is_file():
            names |= _side_files(json.loads(config_path.read_text()))
        return [ModelFolder("yourtts", model_dir, tuple(sorted(names)))]

    @staticmethod
    def _load(model_dir: Path, device: str):
        from TTS.utils.synthesizer import Synthesizer

        config = localized_config(json.loads((model_dir / "config.json").read_text()), model_dir)
        with tempfile.TemporaryDirectory(prefix="yourtts-config-") as tmp:
            config_path = Path(tmp, "config.json")
            config_path.write_text(json.dumps(config))
            return Synthesizer(
                tts_checkpoint=model_dir / "model_file.pth",
                tts_config_path=config_path,
                encoder_checkpoint=model_dir / "model_se.pth",
                encoder_config=model_dir / "config_se.json",
                use_cuda=device.startswith("cuda"),
            )

    def _run(self, source: np.ndarray, targets: list[np.ndarray]) -> tuple[np.ndarray, int]:
        with tempfile.TemporaryDirectory(prefix="yourtts-") as tmp:
            source_path = Path(tmp, "source.wav")
            sf.write(source_path, source, self.input_rate, subtype="FLOAT")
            target_paths = []
            for i, clip in enumerate(targets):
                target_paths.append(str(Path(tmp, f"target{i}.wav")))
                sf.write(target_paths[-1], clip, self.input_rate, subtype="FLOAT")
            # speaker_name=None: Synthesizer.tts defaults it to "", which makes coqui cache the
            # cloned voice under the file name ".pth" and fail
            out = self._model.tts(source_wav=str(source_path), speaker_wav=target_paths, speaker_name=None)
        return out, int(self._model.output_sample_rate)
