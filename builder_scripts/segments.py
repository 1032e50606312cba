"""Segments (ARCHITECTURE.md, "The benchmark"): one window per dialogue, and its reference.

Rules, for a dialogue and a seed:

- The target speaker is drawn among the speakers that admit a valid window; the window is drawn
  among that speaker's valid windows. Both draws use ``random.Random(f"{seed}/{source}/{id}")``,
  so a segment depends only on the seed and the dialogue.
- A window is the span of N consecutive turns of the target speaker (N = ``num_target_turns``)
  with every turn between them: it holds exactly N target turns, starts and ends on one (the
  smallest window around them, so the most audio is left for the reference), and counts at most
  ``max_turns`` turns of all speakers. Every one of its target turns lasts at least
  ``min_target_seconds`` (shorter turns cannot be judged) and, when ``max_target_seconds`` is
  set, at most that (a cap that keeps clips of comparable length; its misses count as
  ``target_turns_too_short``).
- The reference is the target speaker's audio from outside the window, at least
  ``min_reference_seconds`` long: the fewest consecutive target turns (in the speaker's own turn
  order) all on one side of the window whose durations add up to the minimum; a single long
  enough turn when there is one. Among runs of as many turns the shortest wins (the least audio
  to voice and to listen to), then the one nearest the window, then the earlier one. Its turns
  are concatenated in dialogue order to make the clip.
- ``nested_segment`` places a short segment inside a long one of the same dialogue: N
  consecutive target turns of the long window, drawn from the seed, with the long segment's
  reference. The builder nests ``main``'s segment (N = 5) in the dialogue's ``10turn`` segment
  when the dialogue has one, so that the two share their voiced turns and ``10turn`` extends
  exactly the context ``main`` judges.
- A dialogue with no valid (speaker, window, reference) is skipped, with the reason of the
  furthest rule any candidate passed: ``too_few_target_turns`` (no speaker has N turns),
  ``target_turns_too_short`` (no N consecutive turns of a speaker all long enough),
  ``window_too_long`` (all such runs span more than ``max_turns`` turns), ``no_reference`` (no
  such window leaves enough of the speaker's audio on one side).

Durations are ``Turn.duration`` (an estimate from the word count for TTS sources) unless real
ones are passed; after voicing, ``check_durations`` re-checks a segment on the real durations, and
a reference that came out too short is widened by ``widen_reference`` (its run grows by the
speaker's next turn away from the window) rather than losing the voiced segment.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from tqdm.auto import tqdm

from speakersleuth.builder_scripts.sources.base import Dialogue
from speakersleuth.speakersleuth_dataset import MAX_SEGMENT_TURNS
from speakersleuth.speech.files import atomic_path

#: Tolerance of duration comparisons (seconds), so float rounding never decides a rule.
EPSILON = 1e-9
#: The shortest target turn that can be judged, and the shortest reference clip.
MIN_TARGET_SECONDS, MIN_REFERENCE_SECONDS = 1.0, 3.0
SKIP_REASONS = ("too_few_target_turns", "target_turns_too_short", "window_too_long", "no_reference")


@dataclass(frozen=True)
class Segment:
    """One dialogue's segment; every index is a position in ``dialogue.turns``."""

    dialogue_id: str
    source: str
    target_speaker: str
    target_gender: str
    window: tuple[int, ...]  # all turns of the segment, contiguous
    target_turns: tuple[int, ...]  # the N target-speaker turns of the window, in order
    reference_turns: tuple[int, ...]  # target-speaker turns outside the window, concatenated
    seed: int

    @property
    def segment_id(self) -> str:
        return f"{self.source}-{self.dialogue_id}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Mapping) -> Segment:
        names = {f.name for f in fields(cls)}
        if set(obj) != names:
            raise ValueError(f"segment fields {sorted(obj)} differ from {sorted(names)}")
        return cls(**{k: tuple(int(i) for i in v) if isinstance(v, list) else v for k, v in obj.items()})


class SegmentSkipped(Exception):
    """No segment in this dialogue; ``reason`` is one of ``SKIP_REASONS``."""

    def __init__(self, reason: str, dialogue: Dialogue):
        super().__init__(f"{dialogue.source} dialogue {dialogue.dialogue_id}: {reason}")
        self.reason = reason


def _side_sums(positions: list[int], durations: Sequence[float]) -> list[float]:
    """Prefix sums of the durations of the speaker's turns."""
    sums = [0.0]
    for p in positions:
        sums.append(sums[-1] + durations[p])
    return sums


def _windows(positions, durations, n, max_turns, min_target, min_reference, max_target=None):
    """(stage reached, valid windows as (first, last) target-turn ordinals) for one speaker."""
    if len(positions) < n:
        return 0, []
    prefix = _side_sums(positions, durations)
    stage, valid = 1, []
    for j in range(len(positions) - n + 1):
        if any(
            durations[p] < min_target or (max_target is not None and durations[p] > max_target)
            for p in positions[j : j + n]
        ):
            continue
        stage = max(stage, 2)
        if positions[j + n - 1] - positions[j] + 1 > max_turns:
            continue
        stage = max(stage, 3)
        left, right = prefix[j], prefix[-1] - prefix[j + n]
        if max(left, right) >= min_reference - EPSILON:  # prefix-sum differences carry rounding error
            stage = 4
            valid.append((j, j + n - 1))
    return stage, valid


def _reference(positions: list[int], first: int, last: int, durations, min_reference) -> tuple[int, ...]:
    """The fewest consecutive outside turns, on one side, adding up to ``min_reference`` seconds
    (the shortest such run, then the nearest, then the earliest)."""
    sides = [positions[:first][::-1], positions[last + 1 :]]  # each ordered from the window outwards
    best = None
    for side in sides:
        for i in range(len(side)):  # i = distance from the window, in the speaker's turns
            total = 0.0
            for k, p in enumerate(side[i:]):
                total += durations[p]
                if total >= min_reference - EPSILON:
                    run = tuple(sorted(side[i : i + k + 1]))
                    key = (k + 1, round(total, 6), i, run[0])
                    if best is None or key < best[0]:
                        best = (key, run)
                    break
    if best is None:  # _windows only keeps windows with enough audio on one side
        raise AssertionError("no reference for a window that was checked to have one")
    return best[1]


def select_segment(
    dialogue: Dialogue,
    seed: int = 0,
    num_target_turns: int = 5,
    max_turns: int = MAX_SEGMENT_TURNS,
    min_target_seconds: float = MIN_TARGET_SECONDS,
    min_reference_seconds: float = MIN_REFERENCE_SECONDS,
    durations: Sequence[float] | None = None,
    max_target_seconds: float | None = None,
) -> Segment:
    """The dialogue's segment under the module's rules; raises ``SegmentSkipped`` when none exists."""
    if num_target_turns < 1 or max_turns < num_target_turns:
        raise ValueError(f"need 1 <= num_target_turns <= max_turns, got {num_target_turns} and {max_turns}")
    if durations is None:
        durations = [t.duration for t in dialogue.turns]
    elif len(durations) != len(dialogue.turns):
        raise ValueError(
            f"{len(durations)} durations for {len(dialogue.turns)} turns of dialogue {dialogue.dialogue_id}"
        )
    positions: dict[str, list[int]] = {}
    for i, turn in enumerate(dialogue.turns):
        positions.setdefault(turn.speaker, []).append(i)
    stage, candidates = 0, {}
    for speaker in sorted(positions):
        reached, valid = _windows(
            positions[speaker],
            durations,
            num_target_turns,
            max_turns,
            min_target_seconds,
            min_reference_seconds,
            max_target_seconds,
        )
        stage = max(stage, reached)
        if valid:
            candidates[speaker] = valid
    if not candidates:
        raise SegmentSkipped(SKIP_REASONS[stage], dialogue)
    rng = random.Random(f"{seed}/{dialogue.source}/{dialogue.dialogue_id}")
    speaker = rng.choice(sorted(candidates))
    first, last = rng.choice(candidates[speaker])
    pos = positions[speaker]
    return Segment(
        dialogue_id=dialogue.dialogue_id,
        source=dialogue.source,
        target_speaker=speaker,
        target_gender=dialogue.turns[pos[first]].gender,
        window=tuple(range(pos[first], pos[last] + 1)),
        target_turns=tuple(pos[first : last + 1]),
        reference_turns=_reference(pos, first, last, durations, min_reference_seconds),
        seed=seed,
    )


def nested_segment(outer: Segment, num_target_turns: int) -> Segment:
    """``num_target_turns`` consecutive target turns of ``outer`` (drawn from its seed and
    dialogue) with the smallest window around them and ``outer``'s reference."""
    n_outer = len(outer.target_turns)
    if not 1 <= num_target_turns <= n_outer:
        raise ValueError(f"cannot nest {num_target_turns} target turns in a segment of {n_outer}")
    rng = random.Random(f"{outer.seed}/{outer.source}/{outer.dialogue_id}/nested/{num_target_turns}")
    start = rng.randrange(n_outer - num_target_turns + 1)
    targets = outer.target_turns[start : start + num_target_turns]
    return replace(outer, window=tuple(range(targets[0], targets[-1] + 1)), target_turns=targets)


def widen_reference(segment: Segment, dialogue: Dialogue) -> Segment | None:
    """The segment with its reference run grown by the target speaker's next turn away from the
    window (so a nested segment and its outer one widen alike); None when that side has no more."""
    own = [i for i, turn in enumerate(dialogue.turns) if turn.speaker == segment.target_speaker]
    if segment.reference_turns[0] < segment.window[0]:
        further = [i for i in own if i < segment.reference_turns[0]]
        nxt = further[-1] if further else None
    else:
        further = [i for i in own if i > segment.reference_turns[-1]]
        nxt = further[0] if further else None
    return None if nxt is None else replace(segment, reference_turns=tuple(sorted((*segment.reference_turns, nxt))))


def select_segments(
    dialogues: Iterable[Dialogue], seed: int = 0, progress: bool = True, **rules
) -> tuple[list[Segment], Counter]:
    """One segment per dialogue where possible; also the count of each skip reason."""
    segments, skipped = [], Counter()
    for dialogue in tqdm(dialogues, desc="segments", unit="dialogue", disable=not progress):
        try:
            segments.append(select_segment(dialogue, seed=seed, **rules))
        except SegmentSkipped as skip:
            skipped[skip.reason] += 1
    return segments, skipped


def check_durations(
    segment: Segment,
    durations: Mapping[int, float] | Sequence[float],
    min_target_seconds: float = MIN_TARGET_SECONDS,
    min_reference_seconds: float = MIN_REFERENCE_SECONDS,
) -> str | None:
    """Re-check a segment on real durations (turn index -> seconds): a reason, or None if it holds."""
    try:
        if any(durations[i] < min_target_seconds for i in segment.target_turns):
            return "target_turns_too_short"
        if sum(durations[i] for i in segment.reference_turns) < min_reference_seconds:
            return "reference_too_short"
    except (KeyError, IndexError) as missing:
        raise ValueError(f"segment {segment.segment_id}: no duration for turn {missing}") from None
    return None


def write_manifest(segments: Iterable[Segment], path: str | Path) -> Path:
    """Write segments as JSONL (one object per line), atomically."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for segment in segments:
            f.write(json.dumps(segment.to_json(), ensure_ascii=False) + "\n")
    return path


def read_manifest(path: str | Path) -> list[Segment]:
    """Segments from a JSONL manifest; a bad line is reported with its number."""
    segments = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                segments.append(Segment.from_json(json.loads(line)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"{path}, line {number}: {err}") from None
    return segments
