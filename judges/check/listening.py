"""Every clip of a check heard once, before any model loads: decoded (a file cut short or damaged
is refused here, naming it) and, for people's audio, cut to its speech (``judges.check.speech``).

What the check embeds is what ``Heard.samples`` holds, under a cache key of its own
(``Heard.key``): the speech of a clip is keyed apart from the whole clip, so an embedding of one is
never taken for the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from speakersleuth.judges.check.dialogue import Clip
from speakersleuth.judges.check.speech import AGGRESSIVENESS, HANGOVER_FRAMES, MIN_RUN_FRAMES, speech_of
from speakersleuth.speech.audio import SAMPLING_RATE

#: Names the speech-cutting settings in the cache keys of cut clips: change them, change this.
SPEECH_KEY = f"speech-v1:{AGGRESSIVENESS}:{HANGOVER_FRAMES}:{MIN_RUN_FRAMES}"


@dataclass(frozen=True)
class Heard:
    """One clip as heard: its ``seconds`` decoded, the ``samples`` the encoder gets (the speech, or
    the whole clip when not cut), how many ``speech_seconds`` it holds (None when not cut) and
    the embedding cache ``key`` of those samples."""

    seconds: float
    samples: np.ndarray
    speech_seconds: float | None
    key: str


def hear(clips: Sequence[Clip], *, cut_to_speech: bool, progress: bool = False) -> dict[int, Heard]:
    """Each distinct clip (by identity) decoded and, with ``cut_to_speech``, cut to its speech.

    Arguments
    ---------
    clips : sequence of Clip
        Every clip of the check (turns, candidates, references).
    cut_to_speech : bool
        Keep only the speech (people's audio); False keeps the clip whole (the benchmark's rows,
        whose clips the builder's final stage already trimmed).
    progress : bool
        Show a progress bar.

    Returns
    -------
    dict
        ``id(clip)`` -> ``Heard``. Raises ``CheckInputError`` naming the clip that cannot be
        decoded, is cut short, or is digital silence.
    """
    heard: dict[int, Heard] = {}
    # the bar shows only when reading takes a while, so a refusal stays one line on stderr
    for clip in tqdm(clips, desc="read audio", unit="clip", disable=not progress, delay=2.0):
        if id(clip) in heard:
            continue
        wave = clip.load()
        seconds = round(len(wave) / SAMPLING_RATE, 3)
        if not cut_to_speech:
            heard[id(clip)] = Heard(seconds, wave, None, clip.key())
            continue
        speech = speech_of(wave)
        key = hashlib.sha256(f"{SPEECH_KEY}:{clip.key()}".encode()).hexdigest()
        heard[id(clip)] = Heard(seconds, speech.samples, speech.seconds, key)
    return heard
