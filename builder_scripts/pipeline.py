"""The build: sources -> segments -> scenarios (voice conversion) -> verification -> shards + card.

Stages and their cache (under ``BuildOptions.cache``), each idempotent:

1. *candidates*: every source's dialogues in a seeded order, one segment each (text only), the
   text-coherence filter; ``dialogues * (1 + margin)`` candidates per source and variant group
   (N = 10 for ``10turn``; N = 5 for ``main``/``4vc``, dialogues with a 10-turn segment first and
   nested in it, so the groups share voiced turns). With ``validation_dialogues`` a validation
   split (for threshold calibration) is drawn the same way from the far end of the order, never
   from a dialogue the test split may use, so asking for it leaves the test split unchanged.
   Cheap, recomputed by every process.
2. *speaker bank*: the substitute pool S2 and S3 draw from, one over the speakers of every
   source of the build and of the extra ``substitute_pool`` sources (speaker ids qualified by
   their source), voiced (TTS sources; the shard processes of one machine share that work) and
   embedded with the encoder, cached by content. A pool too small to serve S2 and S3 (a
   DailyTalk-only build: two voices) is refused here, before any conversion.
3. *units*: one file per (variant, dialogue) holding the converted, resynthesised, verified clips
   (``units/pool-<bank key>/<variant>/<source>/<dialogue>.npz``: another pool, e.g. one more
   source, makes new units), for the first ``dialogues`` candidates. This is
   the expensive stage, the one ``num_shards``/``shard_index`` split across processes or machines
   (a Slurm array, a Ray job, ``--jobs``): a dialogue's units go to one shard, dealt by
   estimated CPU time so that shards finish together. A killed build resumes here: finished
   units are loaded, not rebuilt.
4. *publish* (not in a shard of several): per source the first ``dialogues`` units that passed
   verification, in candidate order; a dropped unit is replaced by the next candidate, built
   here. They go through ``speakersleuth_dataset.DatasetWriter`` into the nine configs, then the
   dataset card, then the validator. Every unit depends only on the seed and its dialogue, so
   the result is the same however the work was split.
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

import speakersleuth_dataset as ssd

from .audio import load_span
from .scenarios import Unit, build_unit, check_pool, choose, unit_rng
from .segments import MIN_REFERENCE_SECONDS, MIN_TARGET_SECONDS, Segment, SegmentSkipped, check_durations, nested_segment, select_segment, widen_reference
from .shortcuts import ShortcutAudit
from .sources import get_source_class
from .sources.base import Dialogue, DialogueSource
from .speaker_bank import SpeakerBank, pool_name
from .verification import audio_checks, get_text_filter, read_review_decisions
from .vc import PAPER_4VC_SHARES, get_converter

SHORT_TARGET_TURNS, LONG_TARGET_TURNS = 5, 10  # N of main/4vc and of 10turn
#: CPU seconds a variant's conversion, resynthesis and checks take per second of target audio
#: (WORLD/Praat on one core, measured by benchmarks/bench_build.py); balances the shards.
CONVERSION_SECONDS_PER_SECOND = 0.1
#: Names ``BuildOptions.substitute_pool`` accepts besides the registry's: the embedded TTS voices.
POOL_ALIASES = {"embedded": "chitchat_tts"}


@dataclass
class BuildOptions:
    out: Path = Path("speakersleuth")
    cache: Path = Path("cache")
    sources: tuple[str, ...] = ("chitchat_tts",)
    #: extra sources whose speakers join the substitute pool (their dialogues are not built),
    #: e.g. "embedded" (the embedded TTS voices) for a small corpus such as DailyTalk
    substitute_pool: tuple[str, ...] = ()
    source_args: dict[str, dict] = field(default_factory=dict)  # per source: constructor kwargs
    variants: tuple[str, ...] = ssd.VARIANTS
    dialogues: int = 60  # per source, main and 4vc
    dialogues_10turn: int = 30  # per source
    validation_dialogues: int = 0  # per source, main and 4vc; 10turn gets half (rounded up)
    seed: int = 0
    vc: str = "world"
    vc_4vc: tuple[str, ...] = ("world", "praat")
    encoder: str = "resemblyzer"
    text_filter: str = "heuristic"
    review_decisions: Path | None = None
    margin: float = 0.5
    max_target_seconds: float | None = 6.0  # longest target turn a segment may hold
    num_shards: int = 1
    shard_index: int = 0
    threads: int | None = None  # CPU threads of the TTS runtime and torch (None: all cores)
    until: str = "publish"  # or stop after "units"
    progress: bool = True

    def __post_init__(self) -> None:
        self.out, self.cache = Path(self.out), Path(self.cache)
        self.substitute_pool = tuple(dict.fromkeys(POOL_ALIASES.get(n, n) for n in self.substitute_pool))
        unknown = [v for v in self.variants if v not in ssd.VARIANTS]
        if unknown:
            raise ValueError(f"unknown variants {unknown}; known: {', '.join(ssd.VARIANTS)}")
        if self.until not in ("units", "publish"):
            raise ValueError(f"until must be units or publish, got {self.until!r}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(f"shard index {self.shard_index} is not in 0..{self.num_shards - 1}")


class Clock:
    """Seconds spent inside the model calls (TTS, voice conversion, speaker encoder)."""

    def __init__(self) -> None:
        self.seconds: Counter = Counter()

    @contextmanager
    def __call__(self, what: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[what] += time.perf_counter() - start


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def make_source(name: str, opts: BuildOptions) -> DialogueSource:
    """Source ``name`` by the one constructor contract: ``corpus_dir`` (from ``source_args``; None
    when not given) and ``output_dir`` in the cache (``tts/`` for the TTS voicing), plus options."""
    cls = get_source_class(name)
    output_dir = opts.cache / ("tts" if name == "chitchat_tts" else f"sources/{name}")
    kwargs = {"corpus_dir": None, "output_dir": output_dir, **opts.source_args.get(name, {})}
    if name == "chitchat_tts":
        kwargs.setdefault("seed", opts.seed)
        kwargs.setdefault("threads", opts.threads)
    return cls(**kwargs)


def seeded_order(source: DialogueSource, seed: int) -> list[Dialogue]:
    """The source's dialogues in the build's order (a seeded shuffle)."""
    return sorted(source.dialogues(), key=lambda d: unit_rng(seed, "order", d.source, d.dialogue_id).random())


def candidates(order: list[Dialogue], n_target: int, wanted: int, opts: BuildOptions, text_filter, skipped: Counter, slack: float = 1.0) -> list[tuple[Segment, Dialogue]]:
    """The first ``wanted`` segments of dialogues in ``order`` that pass the text filter.

    For the short N, dialogues that also have a long (10turn) segment come first, their segment
    nested in the long one: the two variant groups then share dialogues and voiced turns.
    ``slack`` scales the rules' minimum durations (``DialogueSource.duration_slack``).
    """
    nested, plain = [], []
    rules = dict(
        seed=opts.seed, max_target_seconds=opts.max_target_seconds,
        min_target_seconds=MIN_TARGET_SECONDS * slack, min_reference_seconds=MIN_REFERENCE_SECONDS * slack,
    )
    for dialogue in order:
        if len(nested) >= wanted:
            break
        try:
            if n_target == LONG_TARGET_TURNS:
                segment, found = select_segment(dialogue, num_target_turns=n_target, **rules), nested
            else:
                try:
                    segment, found = nested_segment(select_segment(dialogue, num_target_turns=LONG_TARGET_TURNS, **rules), n_target), nested
                except SegmentSkipped:
                    if len(plain) >= wanted:
                        continue
                    segment, found = select_segment(dialogue, num_target_turns=n_target, **rules), plain
        except SegmentSkipped as skip:
            skipped[f"segment: {skip.reason}"] += 1
            continue
        turns = [{"speaker": dialogue.turns[i].speaker, "text": dialogue.turns[i].text, "is_target": i in segment.target_turns} for i in segment.window]
        reason = text_filter.check(turns)
        if reason:
            skipped[reason] += 1
            continue
        found.append((segment, dialogue))
    return (nested + plain)[:wanted]


def backend_for_4vc(segment: Segment, opts: BuildOptions) -> str:
    """The 4vc backend of a dialogue: the paper's shares for the backends it used; backends it
    did not use share equally what is left (all equal when none of the paper's is present)."""
    names = list(opts.vc_4vc)
    leftover = max(0.0, 1.0 - sum(PAPER_4VC_SHARES.get(n, 0.0) for n in names))
    unlisted = [n for n in names if n not in PAPER_4VC_SHARES]
    weights = [PAPER_4VC_SHARES.get(n, leftover / len(unlisted) if unlisted else 0.0) for n in names]
    if sum(weights) == 0:
        weights = [1.0] * len(names)
    return unit_rng(opts.seed, "4vc", segment.source, segment.dialogue_id).choices(names, weights=weights)[0]


class Builder:
    """Runs the stages for one set of options; ``run()`` returns the build report."""

    def __init__(self, opts: BuildOptions, sources: dict[str, DialogueSource] | None = None):
        self.opts = opts
        self._given_sources = sources or {}
        self.clock = Clock()
        self.skipped: Counter = Counter()
        self.dropped: Counter = Counter()
        self._converters: dict = {}
        self._encoder = None
        self._review = read_review_decisions(opts.review_decisions) if opts.review_decisions else {}
        self._sources: dict[str, DialogueSource] = {}  # registry name -> source, those built
        self._bank: SpeakerBank | None = None  # the substitute pool, names "<source>/<speaker>"
        self._pool: dict[str, tuple[str, list]] = {}  # pool name -> (gender, clips)
        if opts.threads:
            import torch

            torch.set_num_threads(opts.threads)
        self._clips: dict[str, list[np.ndarray]] = {}

    def converter(self, name: str):
        if name not in self._converters:
            self._converters[name] = get_converter(name)
        return self._converters[name]

    def encoder(self):
        if self._encoder is None:
            from judges.encoders import get_encoder

            self._encoder = get_encoder(self.opts.encoder)
        return self._encoder

    def unit_path(self, variant: str, segment: Segment) -> Path:
        return self.opts.cache / "units" / f"pool-{self._bank.key}" / variant / segment.source / f"{_safe(segment.dialogue_id)}.npz"

    def substitute_bank(self, sources: list[DialogueSource]) -> tuple[SpeakerBank, dict]:
        """One bank over the speakers of all ``sources`` (each pool from its whole corpus, so it
        does not change with ``--dialogues``), named ``<source>/<speaker>``; refused by
        ``check_pool`` before any embedding when it cannot serve S2 and S3."""
        pool = {}
        for source in sources:
            with self.clock("tts"):
                speakers = source.speaker_pool(list(source.dialogues()), clips_per_speaker=3, share=(self.opts.shard_index, self.opts.num_shards))
            pool |= {pool_name(source.name, speaker): entry for speaker, entry in speakers.items()}
        check_pool({name: gender for name, (gender, _) in pool.items()})
        with self.clock("encoder"):
            bank = SpeakerBank.build(pool, self.encoder(), cache_dir=self.opts.cache, progress=self.opts.progress)
        return bank, pool

    def open_source(self, name: str) -> DialogueSource:
        """The source registered as ``name`` (the one given to the builder, else made from the
        options), prepared."""
        source = self._given_sources.get(name) or make_source(name, self.opts)
        source.prepare(workers=self.opts.threads or os.cpu_count() or 1)
        return source

    def run(self) -> dict:
        opts = self.opts
        start = time.perf_counter()
        text_filter = get_text_filter(opts.text_filter)
        plan: dict[tuple[str, str], list[tuple[Segment, Dialogue]]] = defaultdict(list)  # (variant, split) -> candidates
        self.wanted: dict[tuple[str, str, str], int] = {}  # (variant, split, source) -> dialogues
        sources = self._sources
        for name in opts.sources:
            source = sources[name] = self.open_source(name)
            order = seeded_order(source, opts.seed)
            self._plan_split(plan, source, order, "test", opts.dialogues, opts.dialogues_10turn, text_filter)
            if opts.validation_dialogues:
                used = {d.dialogue_id for (_, split), chosen in plan.items() if split == "test" for _, d in chosen if d.source == name}
                rest = [d for d in reversed(order) if d.dialogue_id not in used]
                self._plan_split(plan, source, rest, "validation", opts.validation_dialogues, math.ceil(opts.validation_dialogues / 2), text_filter)
        extra = {name: self.open_source(name) for name in opts.substitute_pool if name not in sources}
        self._bank, self._pool = self.substitute_bank([*sources.values(), *extra.values()])
        self._make_units(plan)
        report = {"options": {k: str(v) for k, v in asdict(opts).items()}, "skipped": dict(self.skipped)}
        if opts.num_shards == 1 and opts.until == "publish":
            report |= self.publish(plan, sources | extra)  # the card credits the pool's voices too
        report["seconds"] = {"wall": round(time.perf_counter() - start, 1), **{k: round(v, 1) for k, v in self.clock.seconds.items()}}
        report["peak_memory_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        return report

    def _plan_split(self, plan: dict, source: DialogueSource, order: list[Dialogue], split: str, short: int, long: int, text_filter) -> None:
        """Candidates of one source and split for every variant group, ``margin`` spare ones included."""
        for n_target, variants, wanted in ((SHORT_TARGET_TURNS, ("main", "4vc"), short), (LONG_TARGET_TURNS, ("10turn",), long)):
            wanted_variants = [v for v in variants if v in self.opts.variants]
            if not wanted_variants or not wanted:
                continue
            wanted_with_spares = math.ceil(wanted * (1 + self.opts.margin))
            chosen = candidates(order, n_target, wanted_with_spares, self.opts, text_filter, self.skipped, source.duration_slack)
            for v in wanted_variants:
                plan[(v, split)] += chosen
                self.wanted[(v, split, source.name)] = wanted

    # ----------------------------------------------------------------------------------- units

    @staticmethod
    def group(part: tuple[str, str], plan: dict) -> list[str]:
        """The variants built on the same segments as ``part``'s (main and 4vc share theirs)."""
        variant, split = part
        shared = ("main", "4vc") if variant in ("main", "4vc") else (variant,)
        return [v for v in shared if (v, split) in plan]

    def _make_units(self, plan: dict) -> None:
        """This shard's share of the first ``wanted`` candidates of every variant group; the
        publish stage makes any unit still missing (e.g. replacements for dropped ones)."""
        opts = self.opts
        work, seen = [], set()
        for part in plan:
            variants = self.group(part, plan)
            rank: Counter = Counter()
            for segment, dialogue in plan[part]:
                i = rank[segment.source]
                rank[segment.source] += 1
                key = (tuple(variants), segment.source, segment.dialogue_id)
                if i >= self.wanted[(*part, segment.source)] or key in seen:
                    continue
                seen.add(key)
                work.append((variants, segment, dialogue))
        mine = self.shard_of(work)
        work = [item for item in work if mine[(item[1].source, item[1].dialogue_id)] == opts.shard_index]
        work = [(variants, segment, dialogue) for variants, segment, dialogue in work if not all(self.done(v, segment) for v in variants)]
        # interleave the variant groups so that a partial run has made progress on each of them,
        # a dialogue's units one after the other (the converter's analysis cache then serves both)
        by_group: dict[tuple, list] = defaultdict(list)
        for item in work:
            by_group[tuple(item[0])].append(item)
        work = [item for batch in zip_longest(*by_group.values()) for item in batch if item is not None]
        first: dict[tuple[str, str], int] = {}
        for _, segment, _ in work:
            first.setdefault((segment.source, segment.dialogue_id), len(first))
        work.sort(key=lambda item: first[(item[1].source, item[1].dialogue_id)])
        for variants, segment, dialogue in tqdm(work, desc="units", unit="dialogue", disable=not opts.progress):
            self.make_unit(variants, segment, dialogue)

    def shard_of(self, work: list) -> dict[tuple[str, str], int]:
        """Dialogue -> shard: all units of a dialogue in one shard (they share voiced turns), dealt
        costliest first to the least loaded shard by estimated CPU seconds (voicing and
        conversion), so that the shards finish together. Depends only on the plan, so every
        process and machine deals alike."""
        seconds: Counter = Counter()
        voiced: dict[tuple[str, str], set[int]] = defaultdict(set)
        for variants, segment, dialogue in work:
            key = (segment.source, segment.dialogue_id)
            source = self._sources[segment.source]
            for i in set(segment.target_turns) | set(segment.reference_turns):
                if i not in voiced[key]:
                    voiced[key].add(i)
                    seconds[key] += source.voicing_seconds(dialogue.turns[i])
            seconds[key] += len(variants) * CONVERSION_SECONDS_PER_SECOND * sum(dialogue.turns[i].duration for i in segment.target_turns)
        load = [0.0] * self.opts.num_shards
        shard = {}
        for key in sorted(seconds, key=lambda k: (-seconds[k], k)):
            shard[key] = min(range(len(load)), key=lambda i: (load[i], i))
            load[shard[key]] += seconds[key]
        return shard

    def _substitute_clips(self, name: str) -> list[np.ndarray]:
        """The clips of the pool speaker ``name`` (``<source>/<speaker>``), read once."""
        if name not in self._clips:
            self._clips[name] = [load_span(c) for c in self._pool[name][1]]
        return self._clips[name]

    def make_unit(self, variants: list[str], segment: Segment, dialogue: Dialogue) -> None:
        """Voice, convert, resynthesise and check one segment for each of ``variants``; cached."""
        opts = self.opts
        source = self._sources[segment.source]
        audio: dict[int, np.ndarray] = {}
        while True:  # a reference voiced shorter than planned grows by a turn instead of being dropped
            needed = sorted((set(segment.target_turns) | set(segment.reference_turns)) - set(audio))
            with self.clock("tts"):
                source.ensure_audio(dialogue, needed)
            audio |= {i: load_span(dialogue.turns[i].audio) for i in needed}
            reason = check_durations(segment, {i: a.size / ssd.SAMPLING_RATE for i, a in audio.items()})
            wider = widen_reference(segment, dialogue) if reason == "reference_too_short" else None
            if wider is None:
                break
            segment = wider
        choice = None if reason else choose(
            segment, self._bank, opts.seed, target=pool_name(segment.source, segment.target_speaker),
            exclude=tuple(pool_name(segment.source, s) for s in dialogue.speakers),
        )
        for variant in variants:
            path = self.unit_path(variant, segment)
            if self.done(variant, segment):
                continue
            if reason is not None:
                self._save_dropped(path, variant, segment, f"segment: {reason} (after voicing)")
                continue
            backend = opts.vc if variant != "4vc" else backend_for_4vc(segment, opts)
            clips = {s.speaker: self._substitute_clips(s.speaker) for s in (choice.s2, choice.s3)}
            with self.clock("vc"):
                unit = build_unit(
                    variant, segment, dialogue, [audio[i] for i in segment.target_turns],
                    [audio[i] for i in segment.reference_turns], choice, clips, self.converter(backend),
                )
            unit.dropped, unit.checks = audio_checks(unit)
            unit.save(path)

    def done(self, variant: str, segment: Segment) -> bool:
        path = self.unit_path(variant, segment)
        return path.is_file() or path.with_suffix(".dropped.json").is_file()

    def _save_dropped(self, path: Path, variant: str, segment: Segment, reason: str) -> None:
        """A unit dropped before conversion leaves a small marker instead of audio."""
        marker = path.with_suffix(".dropped.json")
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f".{marker.name}.tmp")
        tmp.write_text(json.dumps({"variant": variant, "segment": segment.to_json(), "dropped": reason}))
        tmp.replace(marker)

    # --------------------------------------------------------------------------------- publish

    def kept_units(self, part: tuple[str, str], plan: dict):
        """Per source, the first ``wanted`` verified units of a (variant, split) in candidate
        order; a unit not built yet (a replacement for a dropped one) is built here."""
        variant, _ = part
        kept: Counter = Counter()
        for segment, dialogue in plan.get(part, []):
            if kept[segment.source] >= self.wanted[(*part, segment.source)]:
                continue
            path = self.unit_path(variant, segment)
            marker = path.with_suffix(".dropped.json")
            if marker.is_file():
                self.dropped[json.loads(marker.read_text())["dropped"]] += 1
                continue
            if not self.done(variant, segment):
                self.make_unit(self.group(part, plan), segment, dialogue)
            if marker.is_file():
                self.dropped[json.loads(marker.read_text())["dropped"]] += 1
                continue
            unit = Unit.load(path)
            reason = unit.dropped or self._review.get((variant, f"{segment.source}/{segment.dialogue_id}"))
            if reason:
                self.dropped[reason] += 1
                continue
            kept[segment.source] += 1
            yield unit

    def fingerprint(self, plan: dict) -> str:
        """What the published folder depends on: options, the substitute pool, units, review
        decisions and the code."""
        import hashlib

        digest = hashlib.sha256()
        options = {k: str(v) for k, v in asdict(self.opts).items() if k not in ("num_shards", "shard_index", "threads", "progress", "until")}
        digest.update(json.dumps(options, sort_keys=True).encode())
        digest.update(self._bank.key.encode())
        for variant, split in sorted(plan):
            for segment, _ in plan[(variant, split)]:
                for path in (self.unit_path(variant, segment), self.unit_path(variant, segment).with_suffix(".dropped.json")):
                    if path.is_file():
                        stat = path.stat()
                        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        if self.opts.review_decisions:
            digest.update(Path(self.opts.review_decisions).read_bytes())
        code = sorted(Path(__file__).parent.rglob("*.py")) + [Path(ssd.__file__), Path(__file__).parents[1] / "dataset_card.md"]
        for path in code:
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def publish(self, plan: dict, sources: dict) -> dict:
        from .publish import write_dataset_card

        opts = self.opts
        stamp = opts.out / ".build_fingerprint.json"
        fingerprint = self.fingerprint(plan)
        if stamp.is_file() and (opts.out / "README.md").is_file():
            previous = json.loads(stamp.read_text())
            if previous.get("fingerprint") == fingerprint:
                return previous["report"] | {"published": "unchanged (nothing to do)"}
        audits, counts = {}, defaultdict(dict)
        for variant, split in [(v, s) for v in opts.variants for s in ssd.SPLITS]:
            if (variant, split) not in plan:
                continue
            wanted = sum(n for (v, s, _), n in self.wanted.items() if (v, s) == (variant, split))
            audit = ShortcutAudit()
            if split == "test":  # the audit describes the benchmark itself
                audits[variant] = audit
            order = unit_rng(opts.seed, "rows", variant, split)
            writers = {task: ssd.DatasetWriter(opts.out, ssd.config_name(task, variant), split) for task in ssd.TASKS}
            try:
                n = 0
                units = self.kept_units((variant, split), plan)
                for unit in tqdm(units, total=wanted, desc=f"publish {variant} {split}", unit="dialogue", disable=not opts.progress):
                    rows, discrimination = unit.records(opts.seed)
                    order.shuffle(rows)
                    for task in ("detection", "localization"):
                        writers[task].write_all(rows)
                    writers["discrimination"].write(discrimination)
                    audit.add(unit)
                    n += 1
                for writer in writers.values():
                    writer.close()
            except BaseException:
                for writer in writers.values():
                    writer.abort()
                raise
            counts[split][variant] = n
            if n < wanted:
                self.dropped[f"{variant} {split}: {wanted - n} fewer dialogues than asked (raise --margin)"] += 1
        self._remove_stale_shards(plan)
        verification = {"segment and text filter (before voicing)": dict(self.skipped), "after conversion": dict(self.dropped)}
        write_dataset_card(opts.out, sources=sources, audits=audits, verification=verification, options=opts)
        validated = ssd.validate_folder(opts.out, check_audio=False)
        report = {"dialogues": counts["test"], "verification": verification, "rows": validated,
                  "shortcut_audit": {v: {"raw": a.result("raw"), "published": a.result("published")} for v, a in audits.items()}}
        if counts["validation"]:
            report["validation_dialogues"] = counts["validation"]
        stamp.write_text(json.dumps({"fingerprint": self.fingerprint(plan), "report": report}))
        return report

    def _remove_stale_shards(self, plan: dict) -> None:
        """Shards of a (config, split) this build did not write (left by an earlier build with
        other variants or a validation split) would be described and loaded as if current."""
        for spec in ssd.CONFIGS.values():
            for split in ssd.SPLITS:
                if (spec.variant, split) not in plan:
                    for path in ssd.shard_paths(self.opts.out, spec.name, split):
                        path.unlink()
