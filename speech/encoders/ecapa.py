"""SpeechBrain's ECAPA-TDNN speaker encoder (``speechbrain/spkrec-ecapa-voxceleb``) from a local folder."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE
from speakersleuth.speech.model_dirs import ModelFolder

from .base import SpeakerEncoder, checked_model_dir, register_encoder

ECAPA_FILES = (
    "hyperparams.yaml",
    "embedding_model.ckpt",
    "mean_var_norm_emb.ckpt",
    "classifier.ckpt",
    "label_encoder.txt",
)


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


def _padded_batch(clips: list[np.ndarray]):
    """A zero-padded (B, T) float tensor and each clip's length relative to T."""
    import torch

    longest = max(c.size for c in clips)
    wavs = torch.zeros(len(clips), longest)
    for row, clip in enumerate(clips):
        wavs[row, : clip.size] = torch.from_numpy(clip)
    rel = torch.tensor([c.size / longest for c in clips])
    return wavs, rel


@register_encoder("ecapa")
class EcapaEncoder(SpeakerEncoder):
    """SpeechBrain ``EncoderClassifier.encode_batch`` (Fbank -> sentence mean norm -> ECAPA-TDNN).

    Loaded from a local folder with ``overrides={"pretrained_path": folder}`` and network access
    off, so the Hub path written in ``hyperparams.yaml`` is never fetched. Every file the YAML
    reads from ``<pretrained_path>/`` must be in the folder.

    ECAPA's dilated convolutions see the padding at the end of a shorter clip, so a padded batch
    changes that clip's embedding (measured: cosine 0.8-0.96 to the unpadded one on a random
    model). By default each clip therefore goes to the model alone and the result never
    depends on the batch; ``pad_batches=True`` zero-pads with relative lengths as SpeechBrain's
    own batched inference does (faster on many clips of mixed lengths).

    Its specs are ``ecapa:<folder>`` and a bare ``ecapa`` with ``--model-dir ecapa=<folder>``.

    Arguments
    ---------
    source : str or pathlib.Path
        The model folder (``hyperparams.yaml`` and every file it reads, as ``staging`` says), or
        the hub id of a model already in the local Hugging Face cache. A folder that lacks files
        raises ``ModelFolderError`` naming them.
    savedir : str or pathlib.Path, optional
        A folder SpeechBrain copies the model files into before loading them (copies, never
        symlinks); None (default) loads them where they are.
    device : str
        The torch device to run the model on (default ``"cpu"``).
    pad_batches : bool
        Whether a batch may mix clip lengths, zero-padded (default False; see above). The name
        then ends in ``(padded batches)``, so that embedding caches keep the two apart.

    Example
    -------
    Skipped, as it needs the files of ``speechbrain/spkrec-ecapa-voxceleb`` staged by hand
    (``from_modules`` builds one from modules in memory):

    >>> EcapaEncoder("/models/spkrec-ecapa-voxceleb")  # doctest: +SKIP
    EcapaEncoder(name='ecapa:/models/spkrec-ecapa-voxceleb', dim=192)
    """

    label = "ECAPA"
    min_samples = 1600  # 0.1 s: ECAPA's reflect-padded convolutions need a few Fbank frames
    staging = (
        "Copy hyperparams.yaml, embedding_model.ckpt, mean_var_norm_emb.ckpt, classifier.ckpt and "
        "label_encoder.txt of speechbrain/spkrec-ecapa-voxceleb into it."
    )
    model_files = ECAPA_FILES

    def __init__(
        self, source: str | Path, savedir: str | Path | None = None, device: str = "cpu", pad_batches: bool = False
    ):
        folder = checked_model_dir(source, type(self))
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

    @classmethod
    def model_folder(cls, folder: Path) -> ModelFolder:
        """The files ``folder`` must hold: hyperparams.yaml and every file it reads from ``<pretrained_path>/``."""
        hparams = folder / "hyperparams.yaml"
        if not hparams.is_file():
            return super().model_folder(folder)
        needed = re.findall(r"<pretrained_path>/([^\s'\"]+)", hparams.read_text(encoding="utf-8"))
        return ModelFolder(cls.kind, folder, tuple(sorted({"hyperparams.yaml", *needed})))

    @classmethod
    def from_modules(
        cls,
        compute_features,
        mean_var_norm,
        embedding_model,
        name: str = "ecapa:in-memory",
        device: str = "cpu",
        pad_batches: bool = False,
    ) -> EcapaEncoder:
        """An encoder from SpeechBrain modules in memory (e.g. a randomly initialised ECAPA_TDNN),
        run as ``EncoderClassifier.encode_batch`` runs them.

        Arguments
        ---------
        compute_features : torch.nn.Module
            Waveforms to features (e.g. ``speechbrain.lobes.features.Fbank``).
        mean_var_norm : torch.nn.Module
            The features' normalisation, called with their relative lengths (e.g.
            ``speechbrain.processing.features.InputNormalization``).
        embedding_model : torch.nn.Module
            Features to embeddings (e.g. ``speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN``); its
            output size becomes ``dim``.
        name : str
            The encoder's ``name``, which keys embedding caches (default ``"ecapa:in-memory"``).
        device : str
            The torch device to run on (default ``"cpu"``).
        pad_batches : bool
            As for the constructor (default False).

        Returns
        -------
        EcapaEncoder
            The encoder.

        Example
        -------
        >>> import numpy as np, torch
        >>> from speechbrain.lobes.features import Fbank
        >>> from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
        >>> from speechbrain.processing.features import InputNormalization
        >>> _ = torch.manual_seed(0)
        >>> small = dict(channels=[32, 32, 32, 32, 96], attention_channels=16, se_channels=16, lin_neurons=48)
        >>> model = ECAPA_TDNN(40, **small)
        >>> norm = InputNormalization(norm_type="sentence", std_norm=False)
        >>> encoder = EcapaEncoder.from_modules(Fbank(n_mels=40), norm, model)
        >>> encoder
        EcapaEncoder(name='ecapa:in-memory', dim=48)
        >>> encoder.encode([np.sin(np.arange(16000) / 7)]).shape
        (1, 48)
        """
        _import_speechbrain_safely()
        from speechbrain.inference.speaker import EncoderClassifier

        modules = {
            "compute_features": compute_features,
            "mean_var_norm": mean_var_norm,
            "embedding_model": embedding_model,
        }
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

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        wavs, rel = _padded_batch(clips)
        with torch.no_grad():
            emb = self._classifier.encode_batch(wavs, rel)  # (B, 1, D)
        return emb.reshape(len(clips), -1).cpu().numpy()
