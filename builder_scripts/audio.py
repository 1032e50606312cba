"""Read a turn's audio (``AudioSpan``) as a 16 kHz mono float32 array.

Decoding is soundfile's (WAV, FLAC, OGG, ...); resampling is ``speech.audio.resample``. A span reads ``[start, end)`` seconds of the file; a span
with a channel reads that channel, otherwise all channels are averaged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from speakersleuth.builder_scripts.sources.base import AudioSpan
from speakersleuth.speech.audio import SAMPLING_RATE, resample


def load_span(span: AudioSpan | str | Path, sampling_rate: int = SAMPLING_RATE) -> np.ndarray:
    """The span's samples, mono float32 at ``sampling_rate``."""
    if not isinstance(span, AudioSpan):
        span = AudioSpan(Path(span))
    path = Path(span.path)
    if not path.is_file():
        raise FileNotFoundError(f"audio file {path} does not exist")
    with sf.SoundFile(str(path)) as f:
        rate, frames, channels = f.samplerate, f.frames, f.channels
        start = 0 if span.start is None else int(round(span.start * rate))
        stop = frames if span.end is None else min(frames, int(round(span.end * rate)))
        if not 0 <= start < stop:
            raise ValueError(
                f"{path}: span [{span.start}, {span.end}) s is empty or outside the file ({frames / rate:.3f} s)"
            )
        if span.channel is not None and not 0 <= span.channel < channels:
            raise ValueError(f"{path}: channel {span.channel} requested, the file has {channels}")
        f.seek(start)
        data = f.read(stop - start, dtype="float32", always_2d=True)
    mono = data[:, span.channel] if span.channel is not None else data.mean(axis=1)
    return resample(mono, rate, sampling_rate)
