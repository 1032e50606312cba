"""Stage 1 of the build, the plan: which segments become units, and which units are published.

Every source's dialogues in a seeded order; per variant group (the variants that share segments,
``speakersleuth_dataset.segment_sharing``) and split, ``dialogues * (1 + margin)`` candidate
segments that pass the text filter. Shorter segments are nested in the longest variant's where a
dialogue has one, so that the groups share voiced turns. A validation split (threshold
calibration) is drawn the same way from the far end of the order, never from a dialogue the test
split may use, so asking for it leaves the test split unchanged.

The plan also decides what the later stages do: the first units each shard makes, likely
replacements included (``unit_jobs``, ``deal``), and, from the units' verdicts, which candidates replace dropped ones
(``missing_units``) and which units are published (``select``). It depends only on the options
and the sources, so every process and machine plans alike.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest

import speakersleuth.speakersleuth_dataset as ssd

from .scenarios import unit_rng
from .segments import (
    MIN_REFERENCE_SECONDS,
    MIN_TARGET_SECONDS,
    Segment,
    SegmentSkipped,
    nested_segment,
    select_segment,
)
from .sources.base import Dialogue, DialogueSource
from .vc import PAPER_4VC_SHARES
from .vc.respeak import BANK_SOURCE, RESPEAK

#: CPU seconds a variant's conversion, resynthesis and checks take per second of target audio
#: (WORLD/Praat on one core, measured by benchmarks/bench_build.py); balances the shards.
CONVERSION_SECONDS_PER_SECOND = 0.1
#: The variant with the longest segments: shorter segments nest in its segment where a dialogue has one.
LONGEST = max(ssd.VARIANT_SPECS.values(), key=lambda spec: spec.target_turns)
#: Spare units made with the first ones, as a share of the dialogues a part and source want (rounded
#: down): the voice check and the other checks drop about 15 % of the demo build's units, and a
#: spare made in the parallel shards costs less wall time than a replacement made after them.
SPARE_SHARE = 0.15
#: What a unit's verdict is before it is made (``Plan.select``'s ``verdict`` callback).
MISSING = object()

Part = tuple[str, str]  # (variant, split)
Candidate = tuple[Segment, Dialogue]


@dataclass(frozen=True)
class UnitJob:
    """One dialogue's segment, to be made into a unit for each of ``variants`` (one group)."""

    variants: tuple[str, ...]
    segment: Segment
    dialogue: Dialogue

    @property
    def key(self) -> tuple[str, str]:
        return self.segment.source, self.segment.dialogue_id


@dataclass
class Selection:
    """A part's candidates in order, sorted by their verdicts until enough are kept."""

    kept: list[Candidate] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # the reasons, one per dropped candidate
    missing: list[Candidate] = field(default_factory=list)  # not made yet, counted as if kept


@dataclass
class Plan:
    """Candidates per (variant, split) in build order, and how many dialogues each source owes."""

    candidates: dict[Part, list[Candidate]] = field(default_factory=lambda: defaultdict(list))
    wanted: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (variant, split, source) -> dialogues
    skipped: Counter = field(default_factory=Counter)  # segment and text-filter reasons

    def group(self, part: Part) -> tuple[str, ...]:
        """The planned variants built on the same segments as ``part``'s."""
        variant, split = part
        return tuple(v for v in ssd.segment_sharing(variant) if (v, split) in self.candidates)

    def unit_jobs(self) -> list[UnitJob]:
        """The first ``wanted`` candidates of every part and source and ``SPARE_SHARE`` of that more
        (the likely replacements; a spare that no part needs is not published), one job per group
        and dialogue."""
        jobs, seen = [], set()
        for part, chosen in self.candidates.items():
            variants, rank = self.group(part), Counter()
            for segment, dialogue in chosen:
                rank[segment.source] += 1
                key = (variants, segment.source, segment.dialogue_id)
                wanted = self.wanted[(*part, segment.source)]
                if rank[segment.source] <= wanted + math.floor(SPARE_SHARE * wanted) and key not in seen:
                    seen.add(key)
                    jobs.append(UnitJob(variants, segment, dialogue))
        return jobs

    def select(self, part: Part, verdict: Callable[[str, Segment], object]) -> Selection:
        """Per source, the candidates of ``part`` in order until ``wanted`` are kept: ``verdict``
        gives a unit's drop reason, None when it is kept, or ``MISSING``."""
        variant, _ = part
        selection, counted = Selection(), Counter()
        for segment, dialogue in self.candidates.get(part, []):
            if counted[segment.source] >= self.wanted[(*part, segment.source)]:
                continue
            reason = verdict(variant, segment)
            if reason is None or reason is MISSING:
                counted[segment.source] += 1
                (selection.kept if reason is None else selection.missing).append((segment, dialogue))
            else:
                selection.dropped.append(reason)
        return selection

    def missing_units(self, verdict: Callable[[str, Segment], object]) -> list[UnitJob]:
        """The units publishing still needs: candidates not made yet among those that would be
        published if they pass, replacements for dropped ones included."""
        jobs = {}
        for part in self.candidates:
            for segment, dialogue in self.select(part, verdict).missing:
                job = UnitJob(self.group(part), segment, dialogue)
                jobs.setdefault((job.variants, *job.key), job)
        return list(jobs.values())


def seeded_order(source: DialogueSource, seed: int) -> list[Dialogue]:
    """The source's dialogues in the build's order (a seeded shuffle)."""
    return sorted(source.dialogues(), key=lambda d: unit_rng(seed, "order", d.source, d.dialogue_id).random())


def candidates(
    order: list[Dialogue], spec: ssd.VariantSpec, wanted: int, opts, text_filter, skipped: Counter, slack: float = 1.0
) -> list[Candidate]:
    """The first ``wanted`` segments (``spec``'s) of dialogues in ``order`` that pass the text filter.

    For a shorter N, dialogues that also have a longest segment come first, their segment nested
    in it: the variant groups then share dialogues and voiced turns. ``slack`` scales the rules'
    minimum durations (``DialogueSource.duration_slack``).
    """
    nested, plain = [], []
    rules = dict(
        seed=opts.seed,
        max_target_seconds=opts.max_target_seconds,
        min_target_seconds=MIN_TARGET_SECONDS * slack,
        min_reference_seconds=MIN_REFERENCE_SECONDS * slack,
    )
    for dialogue in order:
        if len(nested) >= wanted:
            break
        try:
            if spec.target_turns == LONGEST.target_turns:
                segment, found = _segment(dialogue, spec, rules), nested
            else:
                try:
                    segment, found = nested_segment(_segment(dialogue, LONGEST, rules), spec.target_turns), nested
                except SegmentSkipped:
                    if len(plain) >= wanted:
                        continue
                    segment, found = _segment(dialogue, spec, rules), plain
        except SegmentSkipped as skip:
            skipped[f"segment: {skip.reason}"] += 1
            continue
        turns = [
            {
                "speaker": dialogue.turns[i].speaker,
                "text": dialogue.turns[i].text,
                "is_target": i in segment.target_turns,
            }
            for i in segment.window
        ]
        reason = text_filter.check(turns)
        if reason:
            skipped[reason] += 1
            continue
        found.append((segment, dialogue))
    return (nested + plain)[:wanted]


def _segment(dialogue: Dialogue, spec: ssd.VariantSpec, rules: dict) -> Segment:
    return select_segment(dialogue, num_target_turns=spec.target_turns, max_turns=spec.max_window_turns, **rules)


def make_plan(opts, sources: dict[str, DialogueSource], text_filter) -> Plan:
    """The candidates of every built source, split and variant group (``opts.variants``)."""
    plan = Plan()
    for name, source in sources.items():
        order = seeded_order(source, opts.seed)
        _plan_split(plan, opts, source, order, "test", opts.dialogues, opts.dialogues_10turn, text_filter)
        if opts.validation_dialogues:
            used = {
                d.dialogue_id
                for (_, split), chosen in plan.candidates.items()
                if split == "test"
                for _, d in chosen
                if d.source == name
            }
            rest = [d for d in reversed(order) if d.dialogue_id not in used]
            _plan_split(
                plan,
                opts,
                source,
                rest,
                "validation",
                opts.validation_dialogues,
                math.ceil(opts.validation_dialogues / 2),
                text_filter,
            )
    return plan


def _plan_split(
    plan: Plan, opts, source: DialogueSource, order: list[Dialogue], split: str, short: int, longest: int, text_filter
) -> None:
    """Candidates of one source and split for every variant group, ``margin`` spare ones included;
    the longest group wants ``longest`` dialogues, the others ``short``."""
    for spec in sorted(
        {ssd.VARIANT_SPECS[ssd.segment_sharing(v)[0]] for v in ssd.VARIANTS}, key=lambda s: s.target_turns
    ):
        variants = [v for v in ssd.segment_sharing(spec.name) if v in opts.variants]
        wanted = longest if spec.target_turns == LONGEST.target_turns else short
        if not variants or not wanted:
            continue
        chosen = candidates(
            order, spec, math.ceil(wanted * (1 + opts.margin)), opts, text_filter, plan.skipped, source.duration_slack
        )
        for v in variants:
            plan.candidates[(v, split)] += chosen
            plan.wanted[(v, split, source.name)] = wanted


def backend_for(variant: str, segment: Segment, opts) -> str:
    """The generation method of a unit: the build's ``vc``, or for a variant that draws its
    backend (4vc) one of ``vc_4vc`` drawn per dialogue with the paper's shares for the backends it
    used; backends it did not use share equally what is left (all equal when none is present).
    Re-speaking needs a source voiced by the TTS bank: elsewhere (a recorded corpus) it is not
    drawn, and ``vc_recorded`` takes the place of a ``vc`` of ``respeak``."""
    respeaks = segment.source == BANK_SOURCE
    if not ssd.VARIANT_SPECS[variant].draws_backend:
        return opts.vc if respeaks or opts.vc != RESPEAK else opts.vc_recorded
    names = [n for n in opts.vc_4vc if respeaks or n != RESPEAK] or [opts.vc_recorded]
    leftover = max(0.0, 1.0 - sum(PAPER_4VC_SHARES.get(n, 0.0) for n in names))
    unlisted = [n for n in names if n not in PAPER_4VC_SHARES]
    weights = [PAPER_4VC_SHARES.get(n, leftover / len(unlisted) if unlisted else 0.0) for n in names]
    if sum(weights) == 0:
        weights = [1.0] * len(names)
    return unit_rng(opts.seed, "4vc", segment.source, segment.dialogue_id).choices(names, weights=weights)[0]


def deal(jobs: list[UnitJob], sources: dict[str, DialogueSource], num_shards: int) -> dict[tuple[str, str], int]:
    """Dialogue -> shard: all units of a dialogue in one shard (they share voiced turns), dealt
    costliest first to the least loaded shard by estimated CPU seconds (voicing and conversion),
    so that the shards finish together."""
    seconds: Counter = Counter()
    voiced: dict[tuple[str, str], set[int]] = defaultdict(set)
    for job in jobs:
        segment, dialogue = job.segment, job.dialogue
        for i in set(segment.target_turns) | set(segment.reference_turns):
            if i not in voiced[job.key]:
                voiced[job.key].add(i)
                seconds[job.key] += sources[segment.source].voicing_seconds(dialogue.turns[i])
        seconds[job.key] += (
            len(job.variants)
            * CONVERSION_SECONDS_PER_SECOND
            * sum(dialogue.turns[i].duration for i in segment.target_turns)
        )
    load = [0.0] * num_shards
    shard = {}
    for key in sorted(seconds, key=lambda k: (-seconds[k], k)):
        shard[key] = min(range(len(load)), key=lambda i: (load[i], i))
        load[shard[key]] += seconds[key]
    return shard


def interleaved(jobs: list[UnitJob]) -> list[UnitJob]:
    """The variant groups interleaved, so that a partial run has made progress on each, and a
    dialogue's jobs one after the other (the converter's analysis cache then serves both)."""
    by_group: dict[tuple, list] = defaultdict(list)
    for job in jobs:
        by_group[job.variants].append(job)
    jobs = [job for batch in zip_longest(*by_group.values()) for job in batch if job is not None]
    first: dict[tuple[str, str], int] = {}
    for job in jobs:
        first.setdefault(job.key, len(first))
    return sorted(jobs, key=lambda job: first[job.key])
