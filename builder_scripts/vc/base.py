"""The one interface every voice-conversion backend implements, and the audio plumbing they share.

A backend turns a source turn into the same words, with the same timing, in a target speaker's
voice: ``convert(source, target_clips, source_clips=None, text=..., speaker=...)``. A method that
re-speaks the turn instead (``respeak``: ``respeaks = True``) says ``text`` again in ``speaker``'s
own voice, at that voice's rate (its own length); the conversions use the audio alone. All audio
is 16 kHz mono float32; a conversion's output has exactly the source's length and the source's RMS
loudness, so duration and level never reveal which turn was converted. ``resynthesize(audio)`` passes audio through the same
analysis-resynthesis path without changing the speaker, so every turn and every candidate of an
instance can carry the same processing artefacts (the shortcut audit).

Backends that need weights (``offline = False``) read them from local folders: the one given
as ``--model-dir NAME=DIR`` (``speech.model_dirs``), else ``$SPEAKERSLEUTH_VC_DIR/<default>``
(``MODEL_DIRS``; the root defaults to ``~/.cache/speakersleuth/vc``); nothing is ever downloaded.
A folder that lacks files raises ``ModelFolderError`` naming the folder, every missing file and
how to stage it.

>>> fit_length(np.ones(5, dtype=np.float32), 3).tolist()
[1.0, 1.0, 1.0]
>>> fit_length(np.ones(2, dtype=np.float32), 4).tolist()
[1.0, 1.0, 0.0, 0.0]
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE, check_waveform
from speakersleuth.speech.model_dirs import ModelFolder, check_model_folders, model_dir

#: Environment variable naming the folder that holds the neural backends' local model folders.
VC_DIR_ENV = "SPEAKERSLEUTH_VC_DIR"
#: ``--model-dir`` name of each neural backend's folder -> its default under ``$SPEAKERSLEUTH_VC_DIR``
MODEL_DIRS = {
    "freevc": "freevc24",
    "yourtts": "your_tts",
    "openvoice": "openvoice_v2",
    "cosyvoice3": "Fun-CosyVoice3-0.5B",
    "cosyvoice3-repo": "CosyVoice",
}
#: clips of one speaker, 16 kHz mono
Clips = Sequence[np.ndarray]


def vc_dir() -> Path:
    """The root folder of locally staged voice-conversion models."""
    return Path(os.environ.get(VC_DIR_ENV, "~/.cache/speakersleuth/vc")).expanduser()


def model_folder(name: str, given: str | Path | None = None) -> Path:
    """Folder ``name`` of ``MODEL_DIRS``: ``given`` (a constructor argument), else the one of
    ``--model-dir name=DIR``, else its default under ``$SPEAKERSLEUTH_VC_DIR``."""
    if given is not None:
        return Path(given)
    return model_dir(name, vc_dir() / MODEL_DIRS[name])


def fit_length(audio: np.ndarray, length: int) -> np.ndarray:
    """Trim or zero-pad ``audio`` at the end to exactly ``length`` samples."""
    if audio.size >= length:
        return audio[:length]
    return np.concatenate([audio, np.zeros(length - audio.size, dtype=audio.dtype)])


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio, dtype=np.float64))))


def match_loudness(audio: np.ndarray, reference: np.ndarray, peak_limit: float = 0.999) -> np.ndarray:
    """Scale ``audio`` to the RMS of ``reference``; scale down further only if that would clip."""
    level = rms(audio)
    if level == 0.0:
        return audio.astype(np.float32)
    out = audio * (rms(reference) / level)
    peak = float(np.abs(out).max())
    if peak > peak_limit:
        out = out * (peak_limit / peak)
    return out.astype(np.float32)


def low_pass(audio: np.ndarray, cutoff_hz: float) -> np.ndarray:
    """Zero-phase low-pass (8th-order Butterworth) at ``cutoff_hz``, float32."""
    from scipy.signal import butter, sosfiltfilt

    sos = butter(8, cutoff_hz, btype="low", fs=SAMPLING_RATE, output="sos")
    return sosfiltfilt(sos, np.asarray(audio, dtype=np.float64)).astype(np.float32)


class VoiceConverter(ABC):
    """A voice-conversion backend. See the module docstring for the contract.

    ``convert`` and ``resynthesize`` check the input clip, hand it to the backend's own step
    (``_convert``, ``_resynthesize``: any length and level) and finish its output alike: low-passed
    to ``bandwidth_hz`` where set, then the input's exact length, no DC offset, and the input's
    loudness.
    """

    name: str
    offline: bool  # True when it needs no downloaded weights
    #: low-pass cutoff (Hz) of every output, converted or resynthesised; None keeps the full band
    bandwidth_hz: float | None = None
    #: True for a method that says the turn's text again in the substitute's voice (no conversion)
    respeaks: bool = False

    def convert(
        self,
        source: np.ndarray,
        target_clips: Sequence[np.ndarray],
        source_clips: Sequence[np.ndarray] | None = None,
        *,
        text: str | None = None,
        speaker: str | None = None,
    ) -> np.ndarray:
        """``source`` spoken by the speaker of ``target_clips``: same length, timing and loudness.

        ``source_clips`` are other clips of the source speaker, used by backends that need the
        source speaker's statistics (the source itself is used when they are not given).
        ``text`` (the turn's words) and ``speaker`` (the substitute's pool name) are what a method
        that re-speaks needs; a conversion ignores them.
        """
        source = check_waveform(source, "source")
        if self.respeaks:
            return self._respeak(text, speaker)
        return self._finish(self._convert(source, target_clips, source_clips), source)

    def resynthesize(self, audio: np.ndarray) -> np.ndarray:
        """``audio`` through the same analysis-resynthesis path with no identity change."""
        audio = check_waveform(audio)
        return self._finish(self._resynthesize(audio), audio)

    @abstractmethod
    def _convert(self, source: np.ndarray, target_clips: Clips, source_clips: Clips | None) -> np.ndarray:
        """The backend's conversion of a checked ``source`` clip."""

    @abstractmethod
    def _resynthesize(self, audio: np.ndarray) -> np.ndarray:
        """The backend's analysis-resynthesis of a checked clip."""

    def _respeak(self, text: str | None, speaker: str | None) -> np.ndarray:
        """A re-speaking method's new take of ``text`` in ``speaker``'s voice (``respeaks = True``)."""
        raise NotImplementedError(f"{self.name} converts audio; it does not re-speak")

    def _finish(self, audio: np.ndarray, source: np.ndarray) -> np.ndarray:
        """``audio`` band-limited to ``bandwidth_hz`` (if set), with the source's exact length, its
        mean removed (Praat's pitch raising leaves a DC offset that the resynthesised originals
        lack: a shortcut to the converted turn) and the source's loudness."""
        if self.bandwidth_hz is not None:
            audio = low_pass(audio, self.bandwidth_hz)
        audio = fit_length(np.asarray(audio, dtype=np.float32), source.size)
        return match_loudness(audio - np.mean(audio, dtype=np.float64), source)

    #: how to stage the model folders, appended to the missing-files error
    staging: str = ""

    @classmethod
    def model_folders(cls, **paths) -> list[ModelFolder]:
        """Local folders (and files) the backend loads, at the given or resolved locations; none for DSP."""
        return []

    @classmethod
    def missing_files(cls, **paths) -> list[Path]:
        return [f.path / name for f in cls.model_folders(**paths) for name in f.missing()]

    @classmethod
    def check_files(cls, **paths) -> None:
        """Raise ``ModelFolderError`` naming every folder that lacks files, before anything is loaded."""
        check_model_folders(cls.model_folders(**paths), cls.staging)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class NeuralConverter(VoiceConverter):
    """Shared plumbing of the weight-based adapters.

    A subclass names its files (``model_files``, or its own ``model_folders``), loads its model
    from them (``_load``) and implements ``_run(source, targets)`` on audio at ``input_rate``,
    returning ``(waveform, its sampling rate)``. This class checks the files before loading,
    resamples in and out, and checks that the model kept the source's timing (within
    ``length_tolerance`` seconds or 10 %, whichever is larger); ``VoiceConverter`` fixes the exact
    length and loudness. The models take the source speaker from the source turn itself, so
    ``source_clips`` is not used.

    ``resynthesis`` chooses what ``resynthesize`` does: ``"self"`` converts the clip to its own
    voice (the model's analysis-resynthesis path, so its artefacts are shared by every turn);
    ``"identity"`` returns the clip unchanged (for models where self-conversion is unwanted).
    """

    offline = False
    #: sampling rate of the audio ``_run`` gets (a property where the loaded model sets it)
    input_rate: int = SAMPLING_RATE
    length_tolerance: float = 0.1
    #: longest reference audio (seconds) handed to the model, all target clips together
    max_reference_seconds: float = 25.0
    #: files the model folder must hold (the one folder of ``model_folders`` unless overridden)
    model_files: tuple[str, ...] = ()

    def __init__(
        self,
        model_dir: str | Path | None = None,
        device: str = "cpu",
        resynthesis: str = "self",
        model=None,
        **paths,
    ):
        """Load the model onto ``device`` from ``model_dir`` (resolved by ``model_folder``) and the
        backend's other ``paths``, after checking that they hold every file; ``model``: one already
        loaded (skips both)."""
        if resynthesis not in ("self", "identity"):
            raise ValueError(f"resynthesis must be 'self' or 'identity', got {resynthesis!r}")
        self.resynthesis = resynthesis
        if model is None:
            self.check_files(model_dir=model_dir, **paths)
            model = self._load(model_folder(self.name, model_dir), device, **paths)
        self._model = model

    @classmethod
    def model_folders(cls, model_dir=None) -> list[ModelFolder]:
        return [ModelFolder(cls.name, model_folder(cls.name, model_dir), cls.model_files)]

    @staticmethod
    @abstractmethod
    def _load(model_dir: Path, device: str, **paths):
        """The model, from files that are all present."""

    @abstractmethod
    def _run(self, source: np.ndarray, targets: list[np.ndarray]) -> tuple[np.ndarray, int]:
        """The model call on float32 audio at ``input_rate``: its waveform (any array-like) and rate."""

    def _to_model_rate(self, clip: np.ndarray) -> np.ndarray:
        from speakersleuth.speech.audio import resample

        return resample(clip, SAMPLING_RATE, self.input_rate)

    def _references(self, target_clips: Clips) -> list[np.ndarray]:
        if len(target_clips) == 0:
            raise ValueError(f"{self.name}: convert needs at least one target clip")
        budget = int(self.max_reference_seconds * SAMPLING_RATE)
        kept = []
        for i, clip in enumerate(target_clips):
            if budget <= 0:
                break
            clip = check_waveform(clip, f"target clip {i}")[:budget]
            kept.append(self._to_model_rate(clip))
            budget -= clip.size
        return kept

    def _convert(self, source: np.ndarray, target_clips: Clips, source_clips: Clips | None) -> np.ndarray:
        """The model's output back at 16 kHz; refused if it lost the source's timing."""
        from speakersleuth.speech.audio import resample

        out, rate = self._run(self._to_model_rate(source), self._references(target_clips))
        out = resample(np.asarray(out, dtype=np.float32).reshape(-1), rate, SAMPLING_RATE)
        drift = abs(out.size - source.size) / SAMPLING_RATE
        if drift > max(self.length_tolerance, 0.1 * source.size / SAMPLING_RATE):
            raise RuntimeError(
                f"{self.name}: the model returned {out.size / SAMPLING_RATE:.2f} s for a "
                f"{source.size / SAMPLING_RATE:.2f} s source; the conversion did not keep the timing"
            )
        return out

    def resynthesize(self, audio: np.ndarray) -> np.ndarray:
        if self.resynthesis == "identity":
            return check_waveform(audio).copy()
        return super().resynthesize(audio)

    def _resynthesize(self, audio: np.ndarray) -> np.ndarray:
        return self._convert(audio, [audio], None)
