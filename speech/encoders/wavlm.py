"""transformers' WavLM x-vector speaker encoder (``microsoft/wavlm-base-plus-sv``) from a local folder."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE
from speakersleuth.speech.model_dirs import ModelFolder

from .base import SpeakerEncoder, checked_model_dir, register_encoder


@register_encoder("wavlm")
class WavLMEncoder(SpeakerEncoder):
    """transformers ``Wav2Vec2FeatureExtractor`` + ``WavLMForXVector``; ``.embeddings`` per clip,
    loaded with ``local_files_only=True``.

    Batches are padded with an attention mask. WavLM-Base models group-normalise their first
    conv layer over time, which padding would change, so for them each clip goes to the model
    alone (see ``SpeakerEncoder``).

    Its specs are ``wavlm:<folder>`` and a bare ``wavlm`` with ``--model-dir wavlm=<folder>``.

    Arguments
    ---------
    source : str or pathlib.Path
        The model folder (``config.json``, ``preprocessor_config.json`` and the weights, as
        ``staging`` says), or the hub id of a model already in the local Hugging Face cache. A
        folder that lacks files raises ``ModelFolderError`` naming them.
    device : str
        The torch device to run the model on (default ``"cpu"``).

    Example
    -------
    Skipped, as it needs the files of ``microsoft/wavlm-base-plus-sv`` staged by hand:

    >>> WavLMEncoder("/models/wavlm-base-plus-sv")  # doctest: +SKIP
    WavLMEncoder(name='wavlm:/models/wavlm-base-plus-sv', dim=512)
    """

    label = "WavLM"
    staging = (
        "Copy config.json, preprocessor_config.json and model.safetensors (or pytorch_model.bin) of "
        "microsoft/wavlm-base-plus-sv into it."
    )

    def __init__(self, source: str | Path, device: str = "cpu"):
        folder = checked_model_dir(source, type(self))
        from transformers import Wav2Vec2FeatureExtractor, WavLMForXVector

        extractor = Wav2Vec2FeatureExtractor.from_pretrained(str(folder), local_files_only=True)
        model = WavLMForXVector.from_pretrained(str(folder), local_files_only=True)
        self._setup(model, extractor, f"wavlm:{source}", device)

    @classmethod
    def model_folder(cls, folder: Path) -> ModelFolder:
        """The files ``folder`` must hold (weights as safetensors, or as a .bin when that is there)."""
        weights = "pytorch_model.bin" if (folder / "pytorch_model.bin").is_file() else "model.safetensors"
        return ModelFolder(cls.kind, folder, ("config.json", "preprocessor_config.json", weights))

    @classmethod
    def from_model(cls, model, feature_extractor, name: str = "wavlm:in-memory", device: str = "cpu") -> WavLMEncoder:
        """An encoder from a ``WavLMForXVector`` in memory (e.g. built from a config) and its
        feature extractor.

        Arguments
        ---------
        model : transformers.WavLMForXVector
            The model; its config sets ``dim``, ``min_samples`` and ``pad_batches``.
        feature_extractor : transformers.Wav2Vec2FeatureExtractor
            The extractor that turns 16 kHz clips into the model's inputs and attention mask.
        name : str
            The encoder's ``name``, which keys embedding caches (default ``"wavlm:in-memory"``).
        device : str
            The torch device to run on (default ``"cpu"``); the model is moved there.

        Returns
        -------
        WavLMEncoder
            The encoder.

        Example
        -------
        Skipped, as importing transformers' WavLM takes about 3 s:

        >>> from transformers import Wav2Vec2FeatureExtractor, WavLMConfig, WavLMForXVector  # doctest: +SKIP
        >>> model = WavLMForXVector(WavLMConfig(xvector_output_dim=32))  # doctest: +SKIP
        >>> WavLMEncoder.from_model(model, Wav2Vec2FeatureExtractor())  # doctest: +SKIP
        WavLMEncoder(name='wavlm:in-memory', dim=32)
        """
        self = cls.__new__(cls)
        self._setup(model, feature_extractor, name, device)
        return self

    def _setup(self, model, extractor, name: str, device: str) -> None:
        cfg = model.config
        self._model = model.to(device).eval()
        self._extractor, self._device, self.name = extractor, device, name
        self.dim = int(cfg.xvector_output_dim)
        self.pad_batches = cfg.feat_extract_norm != "group"
        # the shortest input that yields enough frames for the TDNN context, through the conv stack
        # statistics pooling needs two TDNN frames for a standard deviation
        frames = 2 + sum((k - 1) * d for k, d in zip(cfg.tdnn_kernel, cfg.tdnn_dilation))
        for kernel, stride in reversed(list(zip(cfg.conv_kernel, cfg.conv_stride))):
            frames = (frames - 1) * stride + kernel
        self.min_samples = frames

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        inputs = self._extractor(
            clips, sampling_rate=SAMPLING_RATE, padding=True, return_attention_mask=True, return_tensors="pt"
        )
        with torch.no_grad(), warnings.catch_warnings():
            # raised inside transformers' WavLM attention on every call; not actionable here
            warnings.filterwarnings("ignore", message="Support for mismatched key_padding_mask")
            out = self._model(
                input_values=inputs["input_values"].to(self._device),
                attention_mask=inputs["attention_mask"].to(self._device),
            )
        return out.embeddings.cpu().numpy()
