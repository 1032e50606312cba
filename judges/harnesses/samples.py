"""What the Inspect and lmms-eval tasks share: the rows, the queries, the prediction line and its scores.

A task's rows are read with ``datasets`` (``datasets.load_dataset`` of a built folder or a Hub id,
the clips left as their FLAC bytes), each row becomes the job that ``judges run`` asks
(``judges.lalm.harness.instance_job``: the same prompts), its raw answers become the same
prediction line (``Job.prediction_line``: the same parsing), and the line is scored per instance
with the scorer's own math (``metrics.core``); ``scenario_summary`` turns the per-instance values
into the scenario-balanced figure and its per-scenario breakdown, as ``metrics.score`` computes them.
"""

from __future__ import annotations

import base64
import math
from functools import partial

import datasets
import numpy as np

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.lalm.backends.base import Audio, Prompt, wav_bytes
from speakersleuth.judges.lalm.harness import DISCRIMINATION_COLUMNS, TURN_COLUMNS, Job, instance_job
from speakersleuth.judges.lalm.prompts import Query, check_setting
from speakersleuth.metrics.core import SCENARIOS, balanced, exact_match, group_means, ndcg, prf, ranking_scores

TASKS = ("detection", "localization", "discrimination")
#: Per-instance values of a discrimination line (0 for an instance without a line or a ranking).
DISCRIMINATION_VALUES = ("accuracy", "ndcg_at_1", "ndcg_at_2", "exact_match")
_RANKING_METRICS = {"ndcg_at_1": partial(ndcg, k=1), "ndcg_at_2": partial(ndcg, k=2), "exact_match": exact_match}


def check_task_options(task: str, variant: str, setting: str) -> None:
    """Refuse, in one line, a task, variant or setting that we do not have."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if variant not in ssd.VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(ssd.VARIANTS)}")
    check_setting(setting, task)


def undecoded(rows: datasets.Dataset) -> datasets.Dataset:
    """``rows`` with every audio column (a clip or a list of clips) left as its file bytes, which
    is how ``judges run`` reads them (no torchcodec needed)."""
    for name, feature in rows.features.items():
        if isinstance(feature, datasets.Audio):
            rows = rows.cast_column(name, datasets.Audio(decode=False))
        elif isinstance(feature, datasets.List) and isinstance(feature.feature, datasets.Audio):
            rows = rows.cast_column(name, datasets.List(datasets.Audio(decode=False), length=feature.length))
    return rows


def load_rows(dataset: str, task: str, variant: str = "main", split: str = "test") -> datasets.Dataset:
    """The rows of one task and variant with ``datasets.load_dataset`` (``dataset``: a built folder
    or a Hub id, resolved as ``--dataset`` is), their clips undecoded."""
    folder = ssd.local_folder(dataset)
    return undecoded(datasets.load_dataset(str(folder), ssd.config_name(task, variant), split=split))


def row_job(task: str, setting: str, row: dict, *, ranking: bool = True) -> Job:
    """The job ``judges run`` asks for this row (the columns the prompts read, nothing else)."""
    columns = DISCRIMINATION_COLUMNS if task == "discrimination" else TURN_COLUMNS
    return instance_job(task, setting, {c: row[c] for c in columns}, ranking=ranking)


def parsing_job(task: str, rid: str, queries: list[tuple[str, int | None]], num_turns: int, labels) -> Job:
    """A job as far as parsing its answers needs it (``Job.parse``, ``Job.prediction_line``): its
    queries' kinds and turns, without their prompts (a harness scores without the audio)."""
    return Job(task, rid, [Query(kind, Prompt("", ()), turn) for kind, turn in queries], num_turns, tuple(labels))


def gold_of(task: str, row: dict) -> dict | None:
    """The row's gold as the scorer reads it (``GOLD_COLUMNS``), or None on a blind copy's test rows."""
    columns = ssd.GOLD_COLUMNS[task]
    if any(row.get(c) is None for c in columns):
        return None
    return {c: row[c] for c in columns if c != "target_turn_positions"}


def audio_data_uri(clip: Audio) -> str:
    """A clip as the data URI of the 16-bit WAV that ``judges run`` sends (``wav_bytes``)."""
    return "data:audio/wav;base64," + base64.b64encode(wav_bytes(clip.samples)).decode("ascii")


def prompt_parts(prompt: Prompt) -> list[tuple[str, str]]:
    """``("text", text)`` and ``("audio", data URI)`` in prompt order, empty texts left out, as the
    OpenAI-compatible backend sends them (``Prompt.wav_and_text``)."""
    return [
        ("audio", audio_data_uri(p)) if isinstance(p, Audio) else ("text", p.text)
        for p in prompt.parts
        if isinstance(p, Audio) or p.text
    ]


def instance_values(task: str, line: dict | None, gold: dict) -> dict[str, float]:
    """The per-instance values of a prediction line (None: no line) against its gold, which the
    scorer averages: detection ``correct``; localization ``f1`` (the paper's conventions, 0 without
    a line); discrimination ``DISCRIMINATION_VALUES``.

    >>> instance_values("localization", {"prediction": [2, 3]}, {"inconsistent_turns": [3]})
    {'f1': 0.6666666666666666}
    >>> instance_values("discrimination", {"prediction": "B", "ranking": ["B", "C", "A"]},
    ...                 {"answer": "B", "gold_ranking": ["B", "C", "A"]})
    {'accuracy': 1.0, 'ndcg_at_1': 1.0, 'ndcg_at_2': 1.0, 'exact_match': 1.0}
    """
    prediction = None if line is None else line.get("prediction")
    if task == "detection":
        return {"correct": float(prediction == gold["label"])}
    if task == "localization":
        if prediction is None:
            return {"f1": 0.0}
        found, wanted = set(prediction), set(gold["inconsistent_turns"])
        return {"f1": float(prf([len(found)], [len(wanted)], [len(found & wanted)])[2][0])}
    values = dict.fromkeys(DISCRIMINATION_VALUES, 0.0)
    values["accuracy"] = float(prediction is not None and prediction == gold["answer"])
    if line is not None and line.get("ranking") is not None:
        ranked = ranking_scores([line["ranking"]], [list(gold["gold_ranking"])], _RANKING_METRICS)
        values.update({name: float(v[0]) for name, v in ranked.items()})
    return values


def scenario_means(values: list[float], scenarios: list[str]) -> tuple[float, dict[str, float]]:
    """The scenario-balanced mean of per-instance ``values`` (``metrics.core.balanced`` of the
    per-scenario means, as ``metrics.score`` computes it) and each scenario's mean (NaN for a
    scenario without instances).

    >>> scenario_means([1, 0, 1, 1], ["S1", "S1", "S2", "S3"])
    (0.75, {'S1': 0.5, 'S2': 1.0, 'S3': 1.0})
    """
    if not values:  # Inspect asks a metric for its value on no samples
        return math.nan, dict.fromkeys(SCENARIOS, math.nan)
    codes = np.array([SCENARIOS.index(s) for s in scenarios], dtype=np.int64)
    means = group_means(np.asarray(values, dtype=np.float64), codes, len(SCENARIOS))
    return float(balanced(*means)), {s: float(m) for s, m in zip(SCENARIOS, means)}


def percent(value: float) -> float | None:
    """A fraction as the scorer reports it: percent, four decimals (None for NaN)."""
    return None if value is None or math.isnan(value) else round(value * 100.0, 4)
