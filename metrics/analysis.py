"""Automatic analyses of one scored submission (issue 17): where a judge is right and wrong.

Per turn-task instance (detection and localization share their instances) the analyses group
detection accuracy and localization F1 (per instance, as the scorer counts them: an instance
without an answer is wrong, an S1 answered ``[]`` has F1 1) by

- ``duration``: the quartile of the judged target clip's duration (paper Fig. 6). The judged
  clip is the converted turn for S2 and S3 (the one turn that differs) and, for S1, where every
  target turn is judged alike, the mean duration of the target turns. Quartiles are by rank
  over all instances of the gold (ties in gold order), so Q1..Q4 hold a quarter each;
- ``source``: the source corpus (``source_dataset``);
- ``vc_model``: the voice-conversion model of S2 and S3 (S1 has none; one value except in 4vc);
- ``scenario``: S1, S2 and S3 (S2 vs S3: gender switch vs similar speaker).

Every cell has its instance count per scenario and 95 % percentile bootstrap intervals that
resample dialogues (``metrics.score``'s convention). A cell's value mixes scenarios in the cell's
proportions; read it with its counts.

``setting_deltas`` gives the paper's Table 3/8 comparison across one submitter's settings
(``SETTINGS``): each setting's headline scores minus those of ``main``.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.parquet as pq

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.core import SCENARIOS, grouped_mean, percentile_interval, prf, resample_counts, set_sizes
from speakersleuth.metrics.score import CONFIDENCE
from speakersleuth.metrics.submission import Gold, Submission

#: The settings a submitter may tag a file with (paper Tables 3 and 8): the main protocol, with
#: the dialogue context, without the reference clip, one target turn at a time.
SETTINGS = ("main", "context", "no_reference", "per_turn")
#: The leaderboard-row keys compared across settings.
DELTA_KEYS = ("det_s1_acc", "det_s2_acc", "det_s3_acc", "det_bal_acc", "loc_bal_f1", "disc_acc_avg")
GROUPINGS = ("duration", "source", "vc_model", "scenario")
DURATION_BASIS = (
    "duration of the judged target clip: the converted turn for S2/S3, the mean of the target turns for S1"
)
_TURN_TASKS = ("detection", "localization")


@dataclass(frozen=True)
class Provenance:
    """What the analyses group by, per turn-task instance of one variant and split."""

    ids: list[str]
    dialogue: list[str]
    scenario: list[str]
    source: list[str]
    vc_model: list[str | None]
    seconds: np.ndarray  # the judged target clip's duration (``DURATION_BASIS``)


def read_provenance(
    dataset: str | os.PathLike, variant: str = "main", split: str = "test", *, gold: str | os.PathLike | None = None
) -> Provenance:
    """The provenance of a built folder's turn-task instances; ``gold``: the private gold folder of
    a blind ``dataset`` (the audio is read from ``dataset``, the rest from ``gold``)."""
    if gold is None and ssd.is_blind(dataset, split):
        raise ValueError(
            f"{dataset}: a blind copy has no provenance in its {split} split; give its gold folder (gold=...)"
        )
    present = [t for t in ssd.tasks_present(dataset, variant, split) if t in _TURN_TASKS]
    if not present:
        raise FileNotFoundError(f"{dataset}: no detection or localization {split} shards for variant {variant!r}")
    config = ssd.config_name(present[0], variant)
    columns = ["id", "dialogue_id", "scenario", "source_dataset", "vc_model", "converted_turn"]
    rows = ssd.read_rows(dataset if gold is None else gold, config, split, columns=columns).to_pylist()
    seconds = _clip_seconds(dataset, config, split)
    missing = [row["id"] for row in rows if row["id"] not in seconds]
    if missing:
        raise ValueError(
            f"{dataset}: {len(missing)} gold id(s) of {config} have no target audio there "
            f"(e.g. {missing[0]!r}); give the dataset that this gold belongs to"
        )
    judged = [
        seconds[row["id"]][row["converted_turn"] - 1] if row["converted_turn"] else float(np.mean(seconds[row["id"]]))
        for row in rows
    ]
    return Provenance(
        ids=[row["id"] for row in rows],
        dialogue=[row["dialogue_id"] for row in rows],
        scenario=[row["scenario"] for row in rows],
        source=[row["source_dataset"] for row in rows],
        vc_model=[row["vc_model"] for row in rows],
        seconds=np.array(judged, dtype=np.float64),
    )


def _clip_seconds(dataset: str | os.PathLike, config: str, split: str) -> dict[str, list[float]]:
    """Each instance's target clip durations in seconds, from the FLAC headers (nothing decoded)."""
    import soundfile

    seconds = {}
    for path in ssd.shard_paths(dataset, config, split):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=64, columns=["id", "target_audio"]):
            for rid, clips in zip(batch.column("id").to_pylist(), batch.column("target_audio").to_pylist()):
                seconds[rid] = [soundfile.info(io.BytesIO(clip["bytes"])).duration for clip in clips]
    return seconds


def analyse(sub: Submission, gold: Gold, provenance: Provenance, *, n_bootstrap: int = 1000, seed: int = 0) -> dict:
    """The grouped analyses of a submission's turn tasks (JSON-serialisable, values in percent):
    ``{"duration_basis", "groups": {grouping: [cell, ...]}}``, a cell being ``{"cell", "instances",
    "scenarios": {S: n}, "detection"/"localization": {"value", "ci"}}`` (None for a task the file
    does not answer); duration cells are named with their range in seconds."""
    values = {task: _instance_values(task, sub, gold, provenance) for task in _TURN_TASKS}
    dialogues = {name: i for i, name in enumerate(sorted(set(provenance.dialogue)))}
    units = np.array([dialogues[d] for d in provenance.dialogue], dtype=np.int64)
    counts = resample_counts(len(dialogues), n_bootstrap, seed) if n_bootstrap else None
    quartile = _quartiles(provenance.seconds)
    labels = {
        "duration": [f"Q{q + 1}" for q in quartile],
        "source": provenance.source,
        "vc_model": [m if s != "S1" else None for m, s in zip(provenance.vc_model, provenance.scenario)],
        "scenario": provenance.scenario,
    }
    names = {"duration": [_quartile_name(q, provenance.seconds[quartile == q]) for q in range(4)]}
    groups = {}
    for grouping, cell_of in labels.items():
        cells = sorted({c for c in cell_of if c is not None}) if grouping != "duration" else ["Q1", "Q2", "Q3", "Q4"]
        groups[grouping] = [
            _cell(shown, np.array([c == cell for c in cell_of]), values, units, counts, provenance.scenario)
            for cell, shown in zip(cells, names.get(grouping, cells))
        ]
    return {"duration_basis": DURATION_BASIS, "groups": groups}


def _quartile_name(q: int, seconds: np.ndarray) -> str:
    return f"Q{q + 1} ({seconds.min():.2f}-{seconds.max():.2f} s)" if seconds.size else f"Q{q + 1}"


def _quartiles(seconds: np.ndarray) -> np.ndarray:
    """Each instance's duration quartile 0..3 by rank (ties in gold order), so each holds a quarter.

    >>> _quartiles(np.array([4.0, 1.0, 3.0, 2.0, 2.0, 5.0, 6.0, 7.0])).tolist()
    [2, 0, 1, 0, 1, 2, 3, 3]
    """
    rank = np.empty(seconds.size, dtype=np.int64)
    rank[np.argsort(seconds, kind="stable")] = np.arange(seconds.size)
    return rank * 4 // seconds.size


def _instance_values(task: str, sub: Submission, gold: Gold, provenance: Provenance) -> np.ndarray | None:
    """Per instance (in ``provenance`` order): detection 1/0 correct, localization F1; None when the
    file does not answer the task."""
    if task not in sub.predictions:
        return None
    rows = gold.tasks[task]
    unknown = [rid for rid in provenance.ids if rid not in rows]
    if unknown or len(rows) != len(provenance.ids):
        raise ValueError(
            f"the provenance does not match the {task} gold (variant {gold.variant}, split {gold.split}): "
            f"{len(unknown)} of its ids are not gold ids; read both from the same build"
        )
    answers = [sub.predictions[task].get(rid, {}).get("prediction") for rid in provenance.ids]
    if task == "detection":
        return np.array([a == rows[rid]["label"] for a, rid in zip(answers, provenance.ids)], dtype=np.float64)
    reference = [rows[rid]["inconsistent_turns"] for rid in provenance.ids]
    f1 = prf(*set_sizes([a or () for a in answers], reference))[2]
    return np.where([a is not None for a in answers], f1, 0.0)


def _cell(
    name: str, member: np.ndarray, values: dict, units: np.ndarray, counts: np.ndarray | None, scenarios: list[str]
) -> dict:
    """One cell: its counts and each task's mean with its bootstrap interval."""
    in_cell = [s for s, m in zip(scenarios, member) if m]
    out: dict[str, Any] = {
        "cell": name,
        "instances": int(member.sum()),
        "scenarios": {s: in_cell.count(s) for s in SCENARIOS},
    }
    for task, per_instance in values.items():
        if per_instance is None or not member.any():
            out[task] = None
            continue
        selected, cell_units = per_instance[member], units[member]
        ci = None
        if counts is not None:
            samples = grouped_mean(selected, np.zeros(selected.size, dtype=np.int64), 1, counts, cell_units)[:, 0]
            interval = percentile_interval(samples, CONFIDENCE)
            ci = None if interval is None else [_percent(v) for v in interval]
        out[task] = {"value": _percent(selected.mean()), "ci": ci}
    return out


def _percent(fraction: float) -> float:
    return round(100.0 * float(fraction), 1)


def setting_deltas(rows: dict[str, dict]) -> list[dict]:
    """Paper Table 3/8 across settings: ``rows`` maps a setting (``SETTINGS``) to its leaderboard
    row (``metrics.score.leaderboard_row``); returns one entry per setting, in ``SETTINGS`` order,
    ``{"setting", "values": {key: v}, "delta": {key: v - main's}}`` over ``DELTA_KEYS`` (a delta
    is None without ``main``, or where either value is None).

    >>> [d["delta"]["det_bal_acc"] for d in setting_deltas({"context": {"det_bal_acc": 61.5}, "main": {"det_bal_acc": 60.0}})]
    [0.0, 1.5]
    """
    unknown = [s for s in rows if s not in SETTINGS]
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(map(repr, unknown))}; settings are {', '.join(SETTINGS)}")
    main = rows.get("main", {})
    out = []
    for setting in (s for s in SETTINGS if s in rows):
        values = {key: rows[setting].get(key) for key in DELTA_KEYS}
        delta = {
            key: None if values[key] is None or main.get(key) is None else round(values[key] - main[key], 1)
            for key in DELTA_KEYS
        }
        out.append({"setting": setting, "values": values, "delta": delta})
    return out
