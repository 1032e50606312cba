"""The audio of a dataset: any accepted value (path, bytes, array, dict) decoded to 16 kHz mono
(``load_waveform``) and encoded as the one stored format, 16-bit FLAC that ``datasets``' own decoder
reads back sample for sample (``encode_audio``, ``stock_decoder``, ``FLAC_LEVELS``). The cache of
recent encodings (``_RECENT_FLAC``) lives here and only here."""

from __future__ import annotations

import hashlib
import io
import os
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from speakersleuth.speakersleuth_format.schema import _AUDIO, AUDIO_FORMAT
from speakersleuth.speech.audio import SAMPLING_RATE, check_waveform, resample


def load_waveform(source: Any, *, where: str = "audio") -> np.ndarray:
    """Return a float32 mono waveform at 16 kHz from a path, bytes, a ``{path|bytes|array}`` dict
    or a 1-D array (taken to be at 16 kHz). ``where`` names the value in error messages."""
    sr = SAMPLING_RATE
    if isinstance(source, Mapping):
        if source.get("array") is not None:
            array, sr = np.asarray(source["array"]), int(source.get("sampling_rate", SAMPLING_RATE))
        elif source.get("bytes") is not None:
            return load_waveform(source["bytes"], where=where)
        elif source.get("path"):
            return load_waveform(source["path"], where=where)
        else:
            raise ValueError(f"{where}: audio dict has no array, bytes or path")
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"{where}: audio file not found: {path}")
        try:
            array, sr = sf.read(path, dtype="float32", always_2d=True)
        except Exception as err:  # soundfile raises LibsndfileError/RuntimeError variants
            raise ValueError(f"{where}: cannot read audio file {path}: {err}") from None
        array = array.mean(axis=1)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        try:
            array, sr = sf.read(io.BytesIO(bytes(source)), dtype="float32", always_2d=True)
        except Exception as err:
            raise ValueError(f"{where}: cannot decode audio bytes: {err}") from None
        array = array.mean(axis=1)
    else:
        array = np.asarray(source)
    return resample(check_waveform(array, where), sr)


#: FLAC of the most recently encoded clips, by content: a dialogue's S1/S2/S3 rows, its detection
#: and localization copies and its discrimination record share most of their clips.
_RECENT_FLAC: OrderedDict[bytes, bytes] = OrderedDict()
_RECENT_FLAC_CLIPS = 64

#: FLAC compression levels (soundfile's 0-1 scale: 1.0 is libFLAC's -8), tried in order until the
#: stock decoder reads the clip back bit-exact. FFmpeg 5.1's FLAC parser splits the last frame of a
#: few streams at a false sync code ("invalid residual"); which streams depends on the bits a level
#: writes, so another level of the same samples decodes. All levels keep one container (FLAC).
FLAC_LEVELS = (1.0, 0.0, 0.5, 0.75)


def encode_audio(source: Any, name: str, *, where: str = "audio") -> dict[str, Any]:
    """Encode any accepted audio value as the stored ``{"bytes", "path"}`` struct (16 kHz FLAC).

    The bytes are decoded once by ``datasets``' own decoder (torchcodec on FFmpeg) before they are
    returned: a clip it cannot read back sample for sample is never published."""
    pcm = pcm16(load_waveform(source, where=where))
    key = hashlib.blake2b(pcm.tobytes(), digest_size=16).digest()
    data = _RECENT_FLAC.get(key)
    if data is None:
        data = _RECENT_FLAC[key] = _verified_flac(pcm, where)
        if len(_RECENT_FLAC) > _RECENT_FLAC_CLIPS:
            _RECENT_FLAC.popitem(last=False)
    else:
        _RECENT_FLAC.move_to_end(key)
    return {"bytes": data, "path": f"{name}.flac"}


def pcm16(wave: np.ndarray) -> np.ndarray:
    """16-bit samples of a float waveform, quantized as libsndfile does (x 32768, rounded, clipped)."""
    return np.clip(np.rint(wave * 32768.0), -32768, 32767).astype(np.int16)


def stock_decoder(clip: Mapping[str, Any]):
    """The decoder ``datasets`` gives for a stored clip (torchcodec ``AudioDecoder`` on FFmpeg)."""
    return _AUDIO.decode_example({"bytes": clip["bytes"], "path": clip.get("path")})


def _verified_flac(pcm: np.ndarray, where: str) -> bytes:
    """FLAC of ``pcm`` at the first of ``FLAC_LEVELS`` that ``stock_decoder`` reads back exactly."""
    for level in FLAC_LEVELS:
        buffer = io.BytesIO()
        sf.write(buffer, pcm, SAMPLING_RATE, format=AUDIO_FORMAT, subtype="PCM_16", compression_level=level)
        try:
            decoded = stock_decoder({"bytes": buffer.getvalue()}).get_all_samples().data.numpy()
        except RuntimeError:  # torchcodec's error for a stream FFmpeg rejects
            continue
        if decoded.shape == (1, pcm.size) and np.array_equal(np.rint(decoded[0] * 32768.0), pcm):
            return buffer.getvalue()
    raise ValueError(
        f"{where}: FFmpeg (torchcodec, what datasets decodes with) reads none of the FLAC encodings "
        f"of this clip (compression levels {FLAC_LEVELS}) back sample for sample"
    )
