"""Stage 4 of the build, publishing: the finished units into the dataset folder.

Per (variant, split) and source, the first ``wanted`` units that passed verification, in
candidate order (``Plan.select``), every clip through the final audio stage
(``final_stage.finish``), through ``speakersleuth_dataset.DatasetWriter`` into the nine configs;
the audits of each variant (both splits; ``card_audit``) log their warnings; then the dataset card and the validator. Publishing reads units only: every unit
the selection needs must be made before (``Plan.missing_units``), else it refuses before writing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path

from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.files import write_text_atomic

from .card import TEMPLATE, write_dataset_card
from .card_audit import BuildAudit, measure
from .final_stage import finished
from .plan import Part, Plan, Selection
from .scenarios import Unit, unit_rng
from .units import UnitStore

log = logging.getLogger(__name__)

#: The code a published folder depends on besides its units (hashed into its fingerprint).
CODE = (
    Path(__file__).parent,
    Path(__file__).parents[1] / "speech",
    Path(ssd.__file__),
    Path(ssd.__file__).with_name("speakersleuth_format"),
    TEMPLATE,
)


def publish(opts, plan: Plan, store: UnitStore, sources: dict, banks: dict) -> dict:
    """Write the dataset folder ``opts.out`` (unless it is current) and return the report's part.
    ``banks`` (table label -> the speaker pool's bank under that encoder) are for the card."""
    stamp = opts.out / ".build_fingerprint.json"
    fingerprint = build_fingerprint(opts, plan, store)
    if stamp.is_file() and (opts.out / "README.md").is_file():
        previous = json.loads(stamp.read_text())
        if previous.get("fingerprint") == fingerprint:
            return previous["report"] | {"published": "unchanged (nothing to do)"}
    parts = [(v, s) for v in opts.variants for s in ssd.SPLITS if (v, s) in plan.candidates]
    selections = {part: plan.select(part, store.verdict) for part in parts}
    missing = [(part, segment) for part, selection in selections.items() for segment, _ in selection.missing]
    if missing:
        (variant, split), segment = missing[0]
        raise RuntimeError(
            f"cannot publish: {len(missing)} selected units are not made (first: {variant} {split} "
            f"{segment.source}/{segment.dialogue_id}); make the plan's missing_units first"
        )
    audit, counts, dropped = (
        BuildAudit(jobs=opts.threads or os.cpu_count() or 1),
        defaultdict(dict),
        Counter(),
    )  # per variant, both splits
    for part, selection in selections.items():
        dropped.update(selection.dropped)
        n = _write_part(opts, store, part, selection, audit)
        counts[part[1]][part[0]] = n
        wanted = sum(w for (v, s, _), w in plan.wanted.items() if (v, s) == part)
        if n < wanted:
            dropped[f"{part[0]} {part[1]}: {wanted - n} fewer dialogues than asked (raise --margin)"] += 1
    _remove_stale_shards(opts.out, plan)
    for line in audit.warnings():
        log.warning("warning: %s", line)
    verification = {"segment and text filter (before voicing)": dict(plan.skipped), "after conversion": dict(dropped)}
    write_dataset_card(opts.out, sources=sources, audit=audit, verification=verification, options=opts, banks=banks)
    validated = ssd.validate_folder(opts.out, check_audio=False)
    report = {
        "dialogues": counts["test"],
        "verification": verification,
        "rows": validated,
        "shortcut_audit": audit.report(),
    }
    if counts["validation"]:
        report["validation_dialogues"] = counts["validation"]
    write_text_atomic(stamp, json.dumps({"fingerprint": build_fingerprint(opts, plan, store), "report": report}))
    return report


def _write_part(opts, store: UnitStore, part: Part, selection: Selection, audit: BuildAudit) -> int:
    """The selected units of one (variant, split) into its three configs; returns how many. The
    units are finished and measured for the audit in ``audit.jobs`` processes, written here in order."""
    from joblib import Parallel, delayed

    variant, split = part
    order = unit_rng(opts.seed, "rows", variant, split)
    writers = {task: ssd.DatasetWriter(opts.out, ssd.config_name(task, variant), split) for task in ssd.TASKS}
    paths = [store.path(variant, segment) for segment, _ in selection.kept]
    prepared = Parallel(n_jobs=min(audit.jobs, len(paths) or 1), return_as="generator")(
        delayed(_finished_and_measured)(p) for p in paths
    )
    slots = round_slots(len(paths), unit_rng(opts.seed, "round", variant)) if opts.round and split == "test" else None
    try:
        for n, (unit, measured) in enumerate(
            tqdm(
                prepared,
                total=len(paths),
                desc=f"publish {variant} {split}",
                unit="dialogue",
                disable=not opts.progress,
            )
        ):
            rows, discrimination = unit.records(opts.seed)
            if slots is not None:  # a round: this dialogue's one instance
                rows = [row for row in rows if row["scenario"] == slots[n]]
            order.shuffle(rows)
            for task in ("detection", "localization"):
                writers[task].write_all(rows)
            if slots is None or slots[n] == "discrimination":
                writers["discrimination"].write(discrimination)
            audit.add_measured(variant, measured)
        for writer in writers.values():
            writer.close()
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    return len(selection.kept)


#: What one dialogue of a round's test split publishes: one of these instances.
ROUND_SLOTS = (*ssd.SCENARIOS, "discrimination")


def round_slots(dialogues: int, rng) -> list[str]:
    """The instance each of a round's ``dialogues`` publishes (``ROUND_SLOTS``), in the units'
    order: as many of each as ``dialogues`` allows (the counts differ by at most one), in an
    order drawn by ``rng``.

    >>> import random
    >>> slots = round_slots(10, random.Random(0))
    >>> sorted(Counter(slots).values()), len(slots)
    ([2, 2, 3, 3], 10)
    """
    slots = [ROUND_SLOTS[i % len(ROUND_SLOTS)] for i in range(dialogues)]
    rng.shuffle(slots)
    return slots


def _finished_and_measured(path: Path) -> tuple[Unit, tuple]:
    """The unit stored at ``path`` through the final stage, and its audit measures (``card_audit.measure``)."""
    unit = finished(Unit.load(path))
    return unit, measure(unit)


def build_fingerprint(opts, plan: Plan, store: UnitStore) -> str:
    """What the published folder depends on: options, the substitute pool (the store's), units,
    review decisions and the code."""
    digest = hashlib.sha256()
    options = {
        k: str(v)
        for k, v in asdict(opts).items()
        if k not in ("num_shards", "shard_index", "threads", "progress", "until")
    }
    digest.update(json.dumps(options, sort_keys=True).encode())
    digest.update("/".join(store.root.parts[-2:]).encode())  # pool-<bank key>/code-<unit code>
    for variant, split in sorted(plan.candidates):
        for segment, _ in plan.candidates[(variant, split)]:
            for path in (store.path(variant, segment), store.marker(variant, segment)):
                if path.is_file():
                    stat = path.stat()
                    digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    if opts.review_decisions:
        digest.update(Path(opts.review_decisions).read_bytes())
    for path in sorted(p for root in CODE for p in ([root] if root.is_file() else root.rglob("*.py"))):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _remove_stale_shards(out: Path, plan: Plan) -> None:
    """Shards of a (config, split) this build did not write (left by an earlier build with other
    variants or a validation split) would be described and loaded as if current."""
    for spec in ssd.CONFIGS.values():
        for split in ssd.SPLITS:
            if (spec.variant, split) not in plan.candidates:
                for path in ssd.shard_paths(out, spec.name, split):
                    path.unlink()
