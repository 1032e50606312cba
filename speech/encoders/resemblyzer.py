"""Resemblyzer's GE2E LSTM speaker encoder (256-d; weights inside the wheel)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE

from .base import SpeakerEncoder, register_encoder


@register_encoder("resemblyzer")
class ResemblyzerEncoder(SpeakerEncoder):
    """Resemblyzer's ``VoiceEncoder``, its partials batched per clip.

    Each clip goes through ``preprocess_wav`` (volume to -30 dBFS, webrtcvad trimming of long
    silences); when trimming leaves less than ``MIN_VOICED_SECONDS`` the untrimmed, volume-
    normalised clip is used instead. The clip is cut into Resemblyzer's 1.6 s partials exactly
    as ``embed_utterance`` does; a clip's partials run through the LSTM together, apart from other
    clips' (a batch of several clips' rows gives other float roundings on some CPUs, so a clip's
    embedding would depend on the batch), and its embedding is the normalised mean of its partials.
    Its specs are ``resemblyzer`` and ``resemblyzer:<weights.pt>``.

    Arguments
    ---------
    device : str
        The torch device to run the LSTM on (default ``"cpu"``).
    weights_path : str or pathlib.Path, optional
        A weights file of Resemblyzer's ``VoiceEncoder`` (its ``weights_fpath``) to load instead
        of the one the wheel ships (None, the default); a missing file raises ``FileNotFoundError``.
    rate : float
        Partials per second of audio, as ``embed_utterance`` takes it (default 1.3: a 1.6 s
        partial every ~0.77 s).
    min_coverage : float
        The share of a last partial that audio must fill for it to be kept (default 0.75); a clip
        shorter than one partial always gets one.

    Example
    -------
    >>> import numpy as np
    >>> encoder = ResemblyzerEncoder()
    >>> encoder
    ResemblyzerEncoder(name='resemblyzer', dim=256)
    >>> encoder.encode([np.sin(np.arange(16000) / 7)]).shape
    (1, 256)
    """

    dim = 256
    #: installed without its dependencies (it asks for webrtcvad, whose sdist no longer builds)
    wheel, wheel_package = "resemblyzer==0.1.4", "resemblyzer"
    MIN_VOICED_SECONDS = 0.25

    def __init__(
        self,
        device: str = "cpu",
        weights_path: str | Path | None = None,
        rate: float = 1.3,
        min_coverage: float = 0.75,
    ):
        with warnings.catch_warnings():  # resemblyzer imports scipy.ndimage.morphology
            warnings.simplefilter("ignore", DeprecationWarning)
            from resemblyzer import VoiceEncoder, audio
        if weights_path is not None and not Path(weights_path).is_file():
            raise FileNotFoundError(f"resemblyzer: weights file {weights_path} does not exist")
        self._audio = audio
        self._model = VoiceEncoder(device=device, verbose=False, weights_fpath=weights_path)
        self._rate, self._min_coverage = rate, min_coverage
        self.name = "resemblyzer" if weights_path is None else f"resemblyzer:{weights_path}"

    @classmethod
    def from_spec(cls, source: str, device: str) -> ResemblyzerEncoder:
        """The shipped weights, or those of the weights file ``source``."""
        return cls(device=device, weights_path=source or None)

    @classmethod
    def spec_help(cls) -> str:
        return "resemblyzer[:<weights.pt>]"

    def preprocess(self, wav: np.ndarray) -> np.ndarray:
        """Resemblyzer's preprocessing (a quieter clip raised to -30 dBFS, long silences trimmed by
        webrtcvad), falling back to the untrimmed, volume-normalised clip when trimming leaves less than
        ``MIN_VOICED_SECONDS``.

        Arguments
        ---------
        wav : numpy.ndarray
            A 16 kHz mono float clip.

        Returns
        -------
        numpy.ndarray
            The clip the LSTM hears, float32.

        Example
        -------
        >>> import numpy as np
        >>> quiet = 0.01 * np.sin(np.arange(16000) / 7).astype(np.float32)
        >>> clip = ResemblyzerEncoder().preprocess(quiet)
        >>> clip.dtype, round(float(np.sqrt(np.mean(clip**2))), 4)  # its RMS raised to -30 dBFS
        (dtype('float32'), 0.0316)
        """
        trimmed = self._audio.preprocess_wav(wav)
        if trimmed.size >= self.MIN_VOICED_SECONDS * SAMPLING_RATE:
            return trimmed
        return self._audio.normalize_volume(wav, self._audio.audio_norm_target_dBFS, increase_only=True)

    def _encode_batch(self, clips: list[np.ndarray]) -> np.ndarray:
        import torch

        means = []
        for clip in clips:  # one LSTM call per clip: its rows never share a matrix with another clip's
            wav = self.preprocess(clip)
            wav_slices, mel_slices = self._model.compute_partial_slices(wav.size, self._rate, self._min_coverage)
            wav = np.pad(wav, (0, max(0, wav_slices[-1].stop - wav.size)))
            mel = self._audio.wav_to_mel_spectrogram(wav)
            with torch.no_grad():
                partials = self._model(torch.from_numpy(np.stack([mel[s] for s in mel_slices])).to(self._model.device))
            means.append(partials.cpu().numpy().mean(axis=0))
        means = np.stack(means)
        return means / np.linalg.norm(means, axis=1, keepdims=True)
