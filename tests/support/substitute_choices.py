"""The substitutes ``scenarios.choose`` draws from a hand-made speaker bank, without a build."""

from __future__ import annotations

from speakersleuth.builder_scripts.scenarios import Choice, choose
from speakersleuth.builder_scripts.segments import Segment
from speakersleuth.builder_scripts.speaker_bank import SpeakerBank


def ten_turn_segment(dialogue_id: str, source: str, speaker: str, gender: str) -> Segment:
    """A segment of turns 0..9 of a dialogue in which ``speaker`` speaks every other turn from 0."""
    window = tuple(range(10))
    return Segment(dialogue_id, source, speaker, gender, window, window[::2], (), 0)


def choices(bank: SpeakerBank, target: str, seeds: int, **choose_kw) -> list[Choice]:
    """``choose(segment, bank, seed, target=target, **choose_kw)`` for seeds 0..``seeds``-1, where
    ``target`` is a ``source/speaker`` name of ``bank`` and the segment a ten-turn one of dialogue
    "0" with the target on turns 0, 2, 4, 6, 8."""
    source, speaker = target.split("/")
    segment = ten_turn_segment("0", source, speaker, bank.gender(target))
    return [choose(segment, bank, seed, target=target, **choose_kw) for seed in range(seeds)]
