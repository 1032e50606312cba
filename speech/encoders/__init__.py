"""Speaker encoders behind one interface: ``embed(waveforms) -> (B, D)`` L2-normalised float32.

Three backends, all offline:

- ``ResemblyzerEncoder``: the GE2E LSTM whose weights ship inside the ``Resemblyzer`` wheel (the
  default; needs nothing staged).
- ``EcapaEncoder``: SpeechBrain ECAPA-TDNN (``speechbrain/spkrec-ecapa-voxceleb``) from a local
  folder, loaded with the ``pretrained_path`` override so SpeechBrain never fetches from the Hub.
- ``WavLMEncoder``: transformers ``WavLMForXVector`` (``microsoft/wavlm-base-plus-sv``) from a
  local folder, ``local_files_only=True``.

The folder comes with the spec (``ecapa:<folder>``) or, for a bare ``ecapa``/``wavlm``, from
``--model-dir ecapa=DIR`` (``speech.model_dirs``). A hub id is accepted only when the model is
already in the local Hugging Face cache. A folder that lacks files raises ``ModelFolderError``
naming them. Heavy libraries are imported when an encoder is built, not when this module is
imported.

>>> get_encoder("ecapa")
Traceback (most recent call last):
...
speech.model_dirs.ModelFolderError: encoder 'ecapa' needs a local model folder: 'ecapa:<folder>' or --model-dir ecapa=<folder>. Copy hyperparams.yaml, embedding_model.ckpt, mean_var_norm_emb.ckpt, classifier.ckpt and label_encoder.txt of speechbrain/spkrec-ecapa-voxceleb into it. Nothing is downloaded at run time.
"""

from __future__ import annotations

import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from speech.audio import SAMPLING_RATE, check_waveform, resample
from speech.model_dirs import ModelFolder, ModelFolderError, check_model_folders, model_dir


class SpeakerEncoder(ABC):
    """A speaker-embedding model. Subclasses implement ``_embed_batch`` on 16 kHz float32 clips.

    ``pad_batches`` says whether a batch may mix lengths, shorter clips zero-padded and their
    true lengths passed to the model. Encoders whose output padding would change (ECAPA's convs,
    a WavLM that group-normalises over time) leave it False: batches then hold equal-length clips
    only, so a clip's embedding never depends on the rest of its batch.
    """

    name: str
    dim: int
    #: clips shorter than this are zero-padded to it (the model cannot run on less)
    min_samples: int = 1
    pad_batches: bool = True

    def embed(
        self,
        waveforms: Sequence[np.ndarray],
        batch_size: int = 16,
        sampling_rate: int = SAMPLING_RATE,
    ) -> np.ndarray:
        """Embed mono clips (1-D arrays at ``sampling_rate``): (len(waveforms), dim) float32, L2-normalised."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        clips = [self._prepare(w, i, sampling_rate) for i, w in enumerate(waveforms)]
        out = np.zeros((len(clips), self.dim), dtype=np.float32)
        for batch in self._batches(clips, batch_size):
            out[batch] = self._embed_batch([clips[i] for i in batch])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def _prepare(self, wav: np.ndarray, index: int, sampling_rate: int) -> np.ndarray:
        wav = check_waveform(wav, f"{self.name}: waveform {index}")
        if not np.any(wav):
            raise ValueError(f"{self.name}: waveform {index} is digital silence (all samples zero); it has no speaker to embed")
        wav = resample(wav, sampling_rate)
        if wav.size < self.min_samples:
            wav = np.pad(wav, (0, self.min_samples - wav.size))
        return wav

    def _batches(self, clips: list[np.ndarray], batch_size: int) -> list[list[int]]:
        """Indices grouped into batches, longest first so padding stays small."""
        order = sorted(range(len(clips)), key=lambda i: -clips[i].size)
        if self.pad_batches:
            return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]
        batches: list[list[int]] = []
        for i in order:
            if batches and len(batches[-1]) < batch_size and clips[batches[-1][0]].size == clips[i].size:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    @abstractmethod
    def _embed_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        """Raw (len(clips), dim) embeddings of 16 kHz float32 clips (normalised by ``embed``)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def _padded_batch(clips: list[np.ndarray]):
    """A zero-padded (B, T) float tensor and each clip's length relative to T."""
    import torch

    longest = max(c.size for c in clips)
    wavs = torch.zeros(len(clips), longest)
    for row, clip in enumerate(clips):
        wavs[row, : clip.size] = torch.from_numpy(clip)
    rel = torch.tensor([c.size / longest for c in clips])
    return wavs, rel


# --------------------------------------------------------------------------------------------
# Resemblyzer


class ResemblyzerEncoder(SpeakerEncoder):
    """Resemblyzer's ``VoiceEncoder`` (256-d; weights inside the wheel), batched over partials.

    Each clip goes through ``preprocess_wav`` (volume to -30 dBFS, webrtcvad trimming of long
    silences); when trimming leaves less than ``MIN_VOICED_SECONDS`` the untrimmed, volume-
    normalised clip is used instead. The clip is cut into Resemblyzer's 1.6 s partials exactly
    as ``embed_utterance`` does; the partials of a whole batch run through the LSTM together and
    each clip's embedding is the normalised mean of its partials (same result as one-by-one).
    """

    dim = 256
    MIN_VOICED_SECONDS = 0.25

    def __init__(self, device: str = "cpu", weights_path: str | Path | None = None, rate: float = 1.3, min_coverage: float = 0.75):
        with warnings.catch_warnings():  # resemblyzer imports scipy.ndimage.morphology
            warnings.simplefilter("ignore", DeprecationWarning)
            from resemblyzer import VoiceEncoder, audio
        if weights_path is not None and not Path(weights_path).is_file():
            raise FileNotFoundError(f"resemblyzer: weights file {weights_path} does not exist")
        self._audio = audio
        self._model = VoiceEncoder(device=device, verbose=False, weights_fpath=weights_path)
        self._rate, self._min_coverage = rate, min_coverage
        self.name = "resemblyzer" if weights_path is None else f"resemblyzer:{weights_path}"

    def preprocess(self, wav: np.ndarray) -> np.ndarray:
        """Resemblyzer's preprocessing, falling back to the untrimmed clip when VAD removes it."""
        trimmed = self._audio.preprocess_wav(wav)
        if trimmed.size >= self.MIN_VOICED_SECONDS * SAMPLING_RATE:
            return trimmed
        return self._audio.normalize_volume(wav, self._audio.audio_norm_target_dBFS, increase_only=True)

    def _embed_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        mels, owner = [], []
        for i, clip in enumerate(clips):
            wav = self.preprocess(clip)
            wav_slices, mel_slices = self._model.compute_partial_slices(wav.size, self._rate, self._min_coverage)
            wav = np.pad(wav, (0, max(0, wav_slices[-1].stop - wav.size)))
            mel = self._audio.wav_to_mel_spectrogram(wav)
            mels.extend(mel[s] for s in mel_slices)
            owner.extend([i] * len(mel_slices))
        with torch.no_grad():
            partials = self._model(torch.from_numpy(np.stack(mels)).to(self._model.device)).cpu().numpy()
        owner_arr = np.asarray(owner)
        means = np.stack([partials[owner_arr == i].mean(axis=0) for i in range(len(clips))])
        return means / np.linalg.norm(means, axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------
# Local model folders


def _local_model_dir(source: str | Path, what: str) -> Path:
    """``source`` as a local folder: a path, or a hub id already in the local HF cache."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    if not path.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", str(source)):
        from huggingface_hub import snapshot_download

        try:
            return Path(snapshot_download(str(source), local_files_only=True))
        except Exception:  # noqa: BLE001 - any failure means "not in the local cache"
            pass
    raise ModelFolderError(
        f"{what}: {source!r} is neither a local folder nor a model in the local Hugging Face cache; "
        f"nothing can be downloaded here. {STAGING[what]}"
    )


# --------------------------------------------------------------------------------------------
# SpeechBrain ECAPA-TDNN

def _import_speechbrain_safely() -> None:
    """Import speechbrain with its lazy redirect modules made safe to scan.

    speechbrain 1.1 leaves lazy proxies (``speechbrain.k2_integration``, ...) in ``sys.modules``
    whose attribute lookups import optional integrations (k2, flair) and raise ImportError. Tools
    that scan ``sys.modules`` with ``getattr(module, "__file__", None)`` then fail (hypothesis;
    IPython autoreload: speechbrain issue #2995). As the upstream fix proposes (speechbrain PR
    #3084), ``__file__`` on a proxy whose target is not loaded yet raises AttributeError.
    """
    from speechbrain.utils.importutils import LazyModule

    if getattr(LazyModule, "_file_lookup_guarded", False):
        return
    lookup = LazyModule.__getattr__

    def guarded(self, attr):
        if attr == "__file__" and self.lazy_module is None:
            raise AttributeError(attr)
        return lookup(self, attr)

    LazyModule.__getattr__ = guarded
    LazyModule._file_lookup_guarded = True


ECAPA_FILES = ("hyperparams.yaml", "embedding_model.ckpt", "mean_var_norm_emb.ckpt", "classifier.ckpt", "label_encoder.txt")
#: what to put in each encoder's model folder, and from where
STAGING = {
    "ecapa": "Copy hyperparams.yaml, embedding_model.ckpt, mean_var_norm_emb.ckpt, classifier.ckpt and "
             "label_encoder.txt of speechbrain/spkrec-ecapa-voxceleb into it.",
    "wavlm": "Copy config.json, preprocessor_config.json and model.safetensors (or pytorch_model.bin) of "
             "microsoft/wavlm-base-plus-sv into it.",
}


class EcapaEncoder(SpeakerEncoder):
    """SpeechBrain ``EncoderClassifier.encode_batch`` (Fbank -> sentence mean norm -> ECAPA-TDNN).

    Loaded from a local folder with ``overrides={"pretrained_path": folder}`` and network access
    off, so the Hub path written in ``hyperparams.yaml`` is never fetched. Every file the YAML
    reads from ``<pretrained_path>/`` must be in the folder.

    ECAPA's dilated convolutions see the padding at the end of a shorter clip, so a padded batch
    changes that clip's embedding (measured: cosine 0.8-0.96 to the unpadded one on a random
    model). By default batches therefore hold equal-length clips only and the result never
    depends on the batch; ``pad_batches=True`` zero-pads with relative lengths as SpeechBrain's
    own batched inference does (faster on many clips of mixed lengths).
    """

    min_samples = 1600  # 0.1 s: ECAPA's reflect-padded convolutions need a few Fbank frames

    def __init__(self, source: str | Path, savedir: str | Path | None = None, device: str = "cpu", pad_batches: bool = False):
        folder = _local_model_dir(source, "ecapa")
        check_model_folders([self.model_folder(folder)], STAGING["ecapa"])
        _import_speechbrain_safely()
        from speechbrain.inference.speaker import EncoderClassifier
        from speechbrain.utils.fetching import FetchConfig, LocalStrategy

        classifier = EncoderClassifier.from_hparams(
            source=str(folder),
            savedir=None if savedir is None else str(savedir),
            overrides={"pretrained_path": str(folder)},
            fetch_config=FetchConfig(allow_network=False),
            local_strategy=LocalStrategy.COPY,  # a copy in savedir (if given), never a symlink
            run_opts={"device": device},
        )
        self._setup(classifier, f"ecapa:{source}", pad_batches)

    @staticmethod
    def model_folder(folder: Path) -> ModelFolder:
        """The files ``folder`` must hold: hyperparams.yaml and every file it reads from ``<pretrained_path>/``."""
        hparams = folder / "hyperparams.yaml"
        if not hparams.is_file():
            return ModelFolder("ecapa", folder, ECAPA_FILES)
        needed = re.findall(r"<pretrained_path>/([^\s'\"]+)", hparams.read_text(encoding="utf-8"))
        return ModelFolder("ecapa", folder, tuple(sorted({"hyperparams.yaml", *needed})))

    @classmethod
    def from_modules(
        cls, compute_features, mean_var_norm, embedding_model, name: str = "ecapa:in-memory", device: str = "cpu", pad_batches: bool = False
    ) -> EcapaEncoder:
        """An encoder from in-memory SpeechBrain modules (e.g. a randomly initialised ECAPA_TDNN)."""
        _import_speechbrain_safely()
        from speechbrain.inference.speaker import EncoderClassifier

        modules = {"compute_features": compute_features, "mean_var_norm": mean_var_norm, "embedding_model": embedding_model}
        self = cls.__new__(cls)
        self._setup(EncoderClassifier(modules=modules, hparams={}, run_opts={"device": device}), name, pad_batches)
        return self

    def _setup(self, classifier, name: str, pad_batches: bool) -> None:
        import torch

        self._classifier = classifier
        # padded batches give (slightly) other embeddings: a distinct name keeps caches apart
        self.name, self.pad_batches = name + (" (padded batches)" if pad_batches else ""), pad_batches
        with torch.no_grad():
            probe = self._classifier.encode_batch(*_padded_batch([np.zeros(SAMPLING_RATE // 2, np.float32)]))
        self.dim = int(probe.shape[-1])

    def _embed_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        wavs, rel = _padded_batch(clips)
        with torch.no_grad():
            emb = self._classifier.encode_batch(wavs, rel)  # (B, 1, D)
        return emb.reshape(len(clips), -1).cpu().numpy()


# --------------------------------------------------------------------------------------------
# transformers WavLM x-vector


class WavLMEncoder(SpeakerEncoder):
    """transformers ``Wav2Vec2FeatureExtractor`` + ``WavLMForXVector``; ``.embeddings`` per clip.

    Batches are padded with an attention mask. WavLM-Base models group-normalise their first
    conv layer over time, which padding would change, so for them batches hold equal-length clips
    only (see ``SpeakerEncoder``).
    """

    def __init__(self, source: str | Path, device: str = "cpu"):
        folder = _local_model_dir(source, "wavlm")
        check_model_folders([self.model_folder(folder)], STAGING["wavlm"])
        from transformers import Wav2Vec2FeatureExtractor, WavLMForXVector

        extractor = Wav2Vec2FeatureExtractor.from_pretrained(str(folder), local_files_only=True)
        model = WavLMForXVector.from_pretrained(str(folder), local_files_only=True)
        self._setup(model, extractor, f"wavlm:{source}", device)

    @staticmethod
    def model_folder(folder: Path) -> ModelFolder:
        """The files ``folder`` must hold (weights as safetensors, or as a .bin when that is there)."""
        weights = "pytorch_model.bin" if (folder / "pytorch_model.bin").is_file() else "model.safetensors"
        return ModelFolder("wavlm", folder, ("config.json", "preprocessor_config.json", weights))

    @classmethod
    def from_model(cls, model, feature_extractor, name: str = "wavlm:in-memory", device: str = "cpu") -> WavLMEncoder:
        """An encoder from an in-memory ``WavLMForXVector`` (e.g. built from a config) and extractor."""
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

    def _embed_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        inputs = self._extractor(clips, sampling_rate=SAMPLING_RATE, padding=True, return_attention_mask=True, return_tensors="pt")
        with torch.no_grad(), warnings.catch_warnings():
            # raised inside transformers' WavLM attention on every call; not actionable here
            warnings.filterwarnings("ignore", message="Support for mismatched key_padding_mask")
            out = self._model(input_values=inputs["input_values"].to(self._device), attention_mask=inputs["attention_mask"].to(self._device))
        return out.embeddings.cpu().numpy()


# --------------------------------------------------------------------------------------------

_FOLDER_ENCODERS = {"ecapa": EcapaEncoder, "wavlm": WavLMEncoder}


def _parse_spec(spec: str) -> tuple[str, str]:
    """``(kind, source)`` of an encoder spec; a bare ``ecapa``/``wavlm`` takes its ``--model-dir``."""
    kind, _, source = spec.partition(":")
    kind = kind.strip().lower()
    if kind in _FOLDER_ENCODERS and not source:
        given = model_dir(kind)
        if given is None:
            raise ModelFolderError(f"encoder {kind!r} needs a local model folder: '{kind}:<folder>' or --model-dir "
                                   f"{kind}=<folder>. {STAGING[kind]} Nothing is downloaded at run time.")
        source = str(given)
    if kind != "resemblyzer" and kind not in _FOLDER_ENCODERS:
        raise ValueError(f"unknown encoder {spec!r}; use 'resemblyzer', 'ecapa:<folder>' or 'wavlm:<folder>'")
    return kind, source


def check_encoder(spec: str) -> None:
    """Raise now, loading nothing, if ``spec`` names an unknown encoder or a model folder that is
    missing or incomplete (``ModelFolderError``)."""
    kind, source = _parse_spec(spec)
    if kind in _FOLDER_ENCODERS:
        check_model_folders([_FOLDER_ENCODERS[kind].model_folder(_local_model_dir(source, kind))], STAGING[kind])


def get_encoder(spec: str, device: str = "cpu") -> SpeakerEncoder:
    """Build an encoder from ``"resemblyzer"``, ``"resemblyzer:<weights.pt>"``, ``"ecapa:<folder>"``
    or ``"wavlm:<folder>"`` (a folder, or a hub id already in the local HF cache); a bare
    ``"ecapa"``/``"wavlm"`` loads from its ``--model-dir`` folder."""
    kind, source = _parse_spec(spec)
    if kind == "resemblyzer":
        return ResemblyzerEncoder(device=device, weights_path=source or None)
    return _FOLDER_ENCODERS[kind](source, device=device)
