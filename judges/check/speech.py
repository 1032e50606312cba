"""What of a clip is speech: webrtcvad's voice activity, so that silence, pauses and padding are
not taken for the voice.

People's turns come with leading and trailing silence, pauses and padding that a speaker encoder
embeds with the voice: 2 s of silence added to a turn moved its score from 0.535 to 0.479. The
check embeds only the speech of a turn (``speech_of``: the frames webrtcvad calls speech, each
kept with ``HANGOVER_FRAMES`` around it so onsets and word ends stay whole), and a turn with less
than ``MIN_SPEECH_SECONDS`` of speech is reported as too short to judge instead of being scored:
below a second an embedding says more about the words than the voice (every encoder flagged
sub-second turns of the same speaker).

>>> import numpy as np
>>> silence = np.zeros(16000, np.float32)
>>> speech_of(silence).seconds
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speakersleuth.speech.audio import SAMPLING_RATE

#: webrtcvad's frame (it takes 10, 20 or 30 ms at 16 kHz).
FRAME_SECONDS = 0.03
#: webrtcvad's aggressiveness, 0 (keeps most) to 3 (keeps least): 2 drops room noise and breaths
#: and keeps quiet speech.
AGGRESSIVENESS = 2
#: Frames kept on each side of a speech frame (90 ms).
HANGOVER_FRAMES = 3
#: Runs of speech frames shorter than this are clicks or noise bursts, not speech (90 ms).
MIN_RUN_FRAMES = 3
#: The least speech, in seconds, the check judges a turn on: below a second an embedding says more
#: about the words than the voice; 0.9 s, as a turn of one second of speech loses up to 0.1 s to
#: its edges when counted in 30 ms frames.
MIN_SPEECH_SECONDS = 0.9


@dataclass(frozen=True)
class Speech:
    """The speech of a clip: ``samples`` (the kept frames, in order, 16 kHz float32) and
    ``seconds``, how much of it webrtcvad calls speech (hangover not counted)."""

    samples: np.ndarray
    seconds: float


def speech_frames(wave: np.ndarray) -> np.ndarray:
    """One bool per ``FRAME_SECONDS`` frame of a 16 kHz waveform: webrtcvad's speech decision, on
    a copy scaled to a fixed peak (its decisions depend on the level), runs shorter than
    ``MIN_RUN_FRAMES`` dropped."""
    import webrtcvad

    hop = int(round(FRAME_SECONDS * SAMPLING_RATE))
    n = len(wave) // hop
    if n == 0:
        return np.zeros(0, dtype=bool)
    peak = float(np.max(np.abs(wave[: n * hop]))) or 1.0
    pcm = np.clip(wave[: n * hop] / peak * 0.9 * 32767, -32768, 32767).astype("<i2").tobytes()
    vad = webrtcvad.Vad(AGGRESSIVENESS)
    voiced = np.array([vad.is_speech(pcm[2 * i * hop : 2 * (i + 1) * hop], SAMPLING_RATE) for i in range(n)])
    edges = np.flatnonzero(np.diff(np.concatenate([[0], voiced.astype(np.int8), [0]])))
    for start, end in zip(edges[::2], edges[1::2]):
        if end - start < MIN_RUN_FRAMES:
            voiced[start:end] = False
    return voiced


def speech_of(wave: np.ndarray) -> Speech:
    """The speech of a 16 kHz mono waveform (``Speech``): its speech frames and their
    neighbours within ``HANGOVER_FRAMES``, joined in order; ``seconds`` counts speech frames only.

    Arguments
    ---------
    wave : numpy.ndarray
        1-D float32 at 16 kHz (``Clip.load``).

    Returns
    -------
    Speech
        Empty samples and 0.0 seconds when no frame is speech.
    """
    voiced = speech_frames(wave)
    hop = int(round(FRAME_SECONDS * SAMPLING_RATE))
    kept = np.convolve(voiced, np.ones(2 * HANGOVER_FRAMES + 1), mode="same") > 0
    frames = wave[: len(kept) * hop].reshape(len(kept), hop)[kept]
    seconds = round(float(voiced.sum()) * FRAME_SECONDS, 3)
    return Speech(np.ascontiguousarray(frames.reshape(-1), dtype=np.float32), seconds)
