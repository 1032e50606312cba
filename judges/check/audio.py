"""A dialogue's audio as people have it, decoded to what the encoders take: 16 kHz mono float32.

Any container that soundfile (libsndfile) reads: WAV, FLAC, MP3, OGG/Vorbis and more; anything
else FFmpeg reads (M4A/AAC, Opus, WebM) through torchcodec, when it is installed. Any sampling
rate (8 to 48 kHz and beyond) is resampled with the project's one resampler
(``speech.audio.resample``); channels are averaged. A clip may be a span of a longer file (an
RTTM segment), read without decoding the rest. Problems raise ``CheckInputError`` naming the file.

>>> import tempfile, numpy as np, soundfile as sf
>>> path = tempfile.mkdtemp() + "/turn.wav"
>>> sf.write(path, np.zeros((44100, 2), np.float32) + 0.1, 44100)  # 1 s, stereo, 44.1 kHz
>>> audio_info(path)
AudioInfo(seconds=1.0, sampling_rate=44100, channels=2)
>>> decode(path, 0.25, 0.75).shape  # half a second at 16 kHz
(8000,)
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.speech.audio import SAMPLING_RATE, resample


@dataclass(frozen=True)
class AudioInfo:
    """What a file's header says: its length, sampling rate and channel count."""

    seconds: float
    sampling_rate: int
    channels: int


def _existing(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_file():
        raise CheckInputError(f"{path}: no such audio file")
    return path


def audio_info(path: str | os.PathLike) -> AudioInfo:
    """The length, rate and channels of an audio file, from soundfile or else FFmpeg (torchcodec).

    Arguments
    ---------
    path : str or os.PathLike
        The audio file.

    Returns
    -------
    AudioInfo
        ``seconds``, ``sampling_rate``, ``channels``.

    Raises ``CheckInputError`` when the file is missing or neither decoder reads it. Read once per
    file version (path, size, modification time): the check validates before its model loads and
    again inside ``check_dialogues``.
    """
    return _audio_info(*_version(_existing(path)))


def _version(path: Path) -> tuple[str, int, int]:
    """What names one version of a file in the memos below: its resolved path, size and mtime."""
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


@lru_cache(maxsize=4096)
def _audio_info(path: str, size: int, mtime_ns: int) -> AudioInfo:
    try:
        with _decoder_messages():  # libmpg123 warns of a damaged stream here too: decode says it
            info = sf.info(path)
        return AudioInfo(info.frames / info.samplerate, int(info.samplerate), int(info.channels))
    except Exception as sf_error:  # noqa: BLE001 - libsndfile's errors vary by format; try FFmpeg
        decoder = _ffmpeg_decoder(Path(path), sf_error)
        meta = decoder.metadata
        seconds = meta.duration_seconds_from_header
        if seconds is None:  # some streams carry no duration: decode once to measure it
            try:
                seconds = decoder.get_all_samples().data.shape[-1] / meta.sample_rate
            except Exception as err:  # noqa: BLE001 - torchcodec raises RuntimeError on a broken frame
                raise CheckInputError(
                    f"{path}: cannot decode audio ({_short(sf_error)}; FFmpeg: {_short(err)})"
                ) from None
        return AudioInfo(float(seconds), int(meta.sample_rate), int(meta.num_channels))


def decode(path: str | os.PathLike, start: float | None = None, end: float | None = None) -> np.ndarray:
    """The file (or its span ``start``..``end``, in seconds) as a 16 kHz mono float32 waveform.

    Arguments
    ---------
    path : str or os.PathLike
        The audio file.
    start, end : float, optional
        The span to read (default: the whole file).

    Returns
    -------
    numpy.ndarray
        1-D float32 at 16 kHz, the channels averaged.

    Raises ``CheckInputError`` when the file is missing or cannot be decoded.
    """
    path = _existing(path)
    expected = _expected_seconds(audio_info(path).seconds, start, end)
    with _decoder_messages() as said:
        try:
            with sf.SoundFile(str(path)) as handle:
                rate = handle.samplerate
                first = 0 if start is None else int(round(start * rate))
                handle.seek(first)
                frames = -1 if end is None else max(int(round(end * rate)) - first, 0)
                array = handle.read(frames, dtype="float32", always_2d=True).mean(axis=1)
        except Exception as sf_error:  # noqa: BLE001 - not a format libsndfile reads: FFmpeg
            array, rate = _ffmpeg_samples(path, sf_error, start, end)
    if array.size == 0:
        raise CheckInputError(f"{path}: no samples between {start or 0:.3f} s and {end} s")
    _refuse_cut_short(path, array.size / rate, expected, start, end, said)
    return resample(np.ascontiguousarray(array, dtype=np.float32), rate)


@contextmanager
def _decoder_messages() -> Iterator[list[str]]:
    """What the C decoders print on the process's stderr while decoding (libmpg123 warns there of
    a damaged stream), kept instead of printed: the list fills when the block ends."""
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            said += [line.strip() for line in sink.read().decode(errors="replace").splitlines() if line.strip()]


#: A decoded length may fall short of what the header says by this share (or ``CUT_SHORT_SECONDS``,
#: the larger): compressed formats' headers estimate their length.
CUT_SHORT_SHARE = 0.05
CUT_SHORT_SECONDS = 0.1


def _expected_seconds(header_seconds: float, start: float | None, end: float | None) -> float:
    """The seconds a span should decode to, by the header's length."""
    stop = header_seconds if end is None else min(end, header_seconds)
    return max(stop - (start or 0.0), 0.0)


def _refuse_cut_short(
    path: Path, decoded: float, expected: float, start: float | None, end: float | None, said: list[str]
) -> None:
    """``CheckInputError`` when a file decodes to less than its header says: a file cut short or
    damaged is not a turn to judge (its few decoded frames would be scored as a voice). The
    decoder's own warning, when it gave one, is quoted."""
    if decoded >= expected - max(CUT_SHORT_SECONDS, CUT_SHORT_SHARE * expected):
        return
    stop = "the end" if end is None else f"{end:.2f} s"
    span = "" if start is None and end is None else f" (the span {start or 0:.2f} s to {stop})"
    warning = f" (the decoder: {_short(RuntimeError(said[0]))})" if said else ""
    raise CheckInputError(
        f"{path}: {decoded:.2f} s decode of the {expected:.2f} s its header gives{span}: "
        f"the file is damaged or cut short{warning}"
    )


def _ffmpeg_decoder(path: Path, sf_error: Exception):
    """torchcodec's decoder of ``path``; ``CheckInputError`` when FFmpeg cannot read it either."""
    try:
        from torchcodec.decoders import AudioDecoder
    except ImportError:  # the core install: soundfile's formats only
        raise CheckInputError(
            f"{path}: cannot read audio ({_short(sf_error)}); formats beyond WAV, FLAC, MP3 and OGG (M4A, "
            "AAC, Opus, WebM) are read by FFmpeg, which the 'check' extra installs: "
            "pip install 'speakersleuth[check]'"
        ) from None
    try:
        return AudioDecoder(str(path))
    except Exception as err:  # noqa: BLE001 - torchcodec raises RuntimeError/ValueError variants
        raise CheckInputError(f"{path}: cannot read audio ({_short(sf_error)}; FFmpeg: {_short(err)})") from None


def _ffmpeg_samples(path: Path, sf_error: Exception, start: float | None, end: float | None) -> tuple[np.ndarray, int]:
    """The span decoded by FFmpeg, channels averaged, and its rate; ``CheckInputError`` when the
    stream breaks off while decoding (a file cut short after a readable header)."""
    decoder = _ffmpeg_decoder(path, sf_error)
    try:
        samples = decoder.get_samples_played_in_range(start or 0.0, end)
    except Exception as err:  # noqa: BLE001 - torchcodec raises RuntimeError when a frame cannot be decoded
        raise CheckInputError(f"{path}: cannot decode audio ({_short(sf_error)}; FFmpeg: {_short(err)})") from None
    return samples.data.numpy().mean(axis=0), samples.sample_rate


def _short(err: Exception) -> str:
    return " ".join(str(err).split())[:160] or type(err).__name__


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of the file's bytes (remembered per path, size and modification time)."""
    return _file_digest(*_version(Path(path)))


@lru_cache(maxsize=4096)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def span_key(path: str | os.PathLike, start: float | None, end: float | None) -> str:
    """The embedding cache's key of a file or of a span of it: its bytes' digest and the span."""
    span = "" if start is None and end is None else f"@{start or 0:.4f}-{end if end is not None else 'end'}"
    return hashlib.sha256(f"check-file:{file_digest(path)}{span}".encode()).hexdigest()


__all__ = ["SAMPLING_RATE", "AudioInfo", "audio_info", "decode", "file_digest", "span_key"]
