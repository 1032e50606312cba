"""Scoring a validated submission: the paper's Table-2 row, paired accuracy, coverage and
bootstrap confidence intervals.

Usage (the command line and its text report are ``metrics.report``)::

    python -m speakersleuth.metrics.score --predictions predictions.jsonl --dataset speakersleuth [--variant main] [--json]

Conventions (all values in percent):

- A task is scored when the file has at least one line for it. Every gold instance of a scored task
  counts: one without an answer (no line, or ``null``) is wrong. Detection: a wrong label.
  Localization: precision = recall = F1 = 0, also for S1 (no answer is not the empty set).
  Discrimination: not the original. ``coverage`` is the share of instances answered.
- Threshold-free detection (AUROC, EER) is scored when the detection lines carry a ``score``
  (higher = more likely inconsistent; ``metrics.submission``): the ROC curve of the scores against
  the gold labels (``speech.verification``: scikit-learn's ``roc_curve`` definitions, every
  bootstrap resample computed at once). An instance without a line counts as ranked wrong (an
  inconsistent one below every score, a consistent one above). EER is the rate where the
  false-positive and false-negative rates meet, interpolated on the curve (the builder's speaker
  pool EER is the same function). Perfect scores give
  AUROC 100 and EER 0, constant scores AUROC 50 and EER 50, reversed ones AUROC 0.
- Ranking metrics (NDCG@1, NDCG@2, exact match) are scored when at least one discrimination line
  has a ``ranking``; an instance without one gets NDCG 0 and no exact match, and
  ``ranking_coverage`` says how many had one.
- Paired accuracy (detection, localization): the share of dialogues whose S1, S2 and S3 are all
  answered correctly; for localization "correct" means the predicted set equals the gold set.
  Only dialogues with all three scenarios in the gold count.
- Confidence intervals: percentile bootstrap (95 %), seeded, resampling dialogues with
  replacement, so the S1/S2/S3 instances of a dialogue and its discrimination instance stay
  together; one set of resamples serves every metric.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.core import (
    SCENARIOS,
    balanced,
    exact_match,
    grouped_mean,
    ndcg,
    percentile_interval,
    prf,
    ranking_scores,
    resample_counts,
    scenario_codes,
)
from speakersleuth.metrics.submission import Gold, Submission, load_gold, parse_submission, submission_variant
from speakersleuth.speech.verification import roc_summaries, roc_summary  # noqa: F401  (roc_summary: part of this module's API)

CONFIDENCE = 0.95
_LABEL_CODE = {"consistent": 0, "inconsistent": 1}
# The process's BLAS libraries, found once: threadpool_limits() searches them on every call, a
# few percent of what scoring one submission costs.
_THREADPOOLS = ThreadpoolController()

#: Key suffixes of the paper's source datasets, in Table-2 order.
PAPER_SOURCES = ("bazinga", "ami", "behavior_sd", "dailytalk")

#: The keys of a leaderboard row in the paper's Table-2 order, then ours (paired accuracy,
#: coverage); they equal the column names of the paper's tables in ``space/data/paper/*.tsv``.
TABLE2_KEYS: tuple[str, ...] = (
    "det_s1_acc",
    "det_s2_acc",
    "det_s3_acc",
    "det_bal_acc",
    "loc_s1_f1",
    "loc_s2_p",
    "loc_s2_r",
    "loc_s2_f1",
    "loc_s3_p",
    "loc_s3_r",
    "loc_s3_f1",
    "loc_bal_f1",
    *[f"disc_acc_{key}" for key in PAPER_SOURCES],
    "disc_acc_avg",
    "ndcg_at_1",
    "ndcg_at_2",
    "exact_match",
    "det_paired_acc",
    "loc_paired_acc",
    "det_auroc",
    "det_eer",
    "det_coverage",
    "loc_coverage",
    "disc_coverage",
    "rank_coverage",
)

#: The leaderboard keys that one score of a task's output gives: key -> (task, the score's name
#: there, whether the row also carries its 95 % interval), the keys with an interval first.
#: ``leaderboard_row`` spells out the keys of each scenario and each source.
_TASK_SCORES: dict[str, tuple[str, str, bool]] = {
    "det_bal_acc": ("detection", "balanced_accuracy", True),
    "loc_bal_f1": ("localization", "balanced_f1", True),
    "disc_acc_avg": ("discrimination", "accuracy", True),
    "ndcg_at_2": ("discrimination", "ndcg@2", True),
    "exact_match": ("discrimination", "exact_match", True),
    "det_paired_acc": ("detection", "paired_accuracy", True),
    "loc_paired_acc": ("localization", "paired_accuracy", True),
    "det_auroc": ("detection", "auroc", True),
    "det_eer": ("detection", "eer", True),
    "det_coverage": ("detection", "coverage", False),
    "loc_coverage": ("localization", "coverage", False),
    "ndcg_at_1": ("discrimination", "ndcg@1", False),
    "disc_coverage": ("discrimination", "coverage", False),
    "rank_coverage": ("discrimination", "ranking_coverage", False),
}

#: The keys that come with a 95 % interval (``<key>_ci`` in a leaderboard row).
INTERVAL_KEYS: tuple[str, ...] = tuple(key for key, (_, _, interval) in _TASK_SCORES.items() if interval)

#: The detection scores that only a file with detection scores has (the rest are always there).
_SCORED_ONLY = ("auroc", "eer")

# ------------------------------------------------------------------------------------- scoring


def score_submission(sub: Submission, gold: Gold, *, n_bootstrap: int = 1000, seed: int = 0) -> dict:
    """Scores of every task the submission answers, in percent (JSON-serialisable).

    ``n_bootstrap=0`` skips the confidence intervals (``ci`` values are then None).
    """
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be >= 0, got {n_bootstrap}")
    dialogues = _dialogue_index(gold)
    counts = resample_counts(len(dialogues), n_bootstrap, seed).astype(np.float64) if n_bootstrap else None
    result: dict[str, Any] = {
        "variant": gold.variant,
        "split": gold.split,
        "num_lines": sub.num_lines,
        "sha256": sub.sha256,
        "tasks": [t for t in gold.tasks if t in sub.predictions],
        "bootstrap": {
            "resamples": n_bootstrap,
            "seed": seed,
            "level": round(100 * CONFIDENCE),
            "unit": "dialogue",
            "dialogues": len(dialogues),
        },
    }
    scorers = {
        "detection": _score_detection,
        "localization": _score_localization,
        "discrimination": _score_discrimination,
    }
    # The products here are small ((resamples x dialogues) by a few columns): BLAS threads only
    # add contention (10x slower on a busy 2-core machine), so they are limited to one.
    with _THREADPOOLS.limit(limits=1, user_api="blas"):
        for task in result["tasks"]:
            result[task] = scorers[task](sub.predictions[task], _task_arrays(gold, task, dialogues), counts)
    return result


def score_predictions(
    predictions, dataset, *, variant: str | None = None, split: str = "test", n_bootstrap: int = 1000, seed: int = 0
) -> dict:
    """Score predictions held in memory, as ``python -m speakersleuth.metrics.score --json`` scores a file.

    The predictions are written as the JSON Lines of a predictions file (``predictions_jsonl``),
    validated against the gold (``metrics.submission.parse_submission``) and scored
    (``score_submission``), so the result equals what ``python -m speakersleuth.metrics.score --json`` prints for
    the same lines in a file; ``leaderboard_row`` of it is the flat Table-2 row. A file on disk is
    not read here: score it with ``python -m speakersleuth.metrics.score --predictions FILE``, or in Python with
    ``score_submission(parse_submission(path, gold), gold)``.

    Arguments
    ---------
    predictions : list or tuple of dict, pandas.DataFrame or datasets.Dataset
        One item (or table row) per line of a predictions file: ``task``, ``id``, ``prediction``, and
        ``ranking`` (discrimination) or ``score`` (detection) where the line has one. In a table, a
        missing cell (None, NaN, NA) leaves its key out of the line, except ``prediction``, which
        becomes null (no answer). Any value with a ``tolist`` method (a numpy or torch scalar or
        array) is written as the JSON value it holds, so a model's score may be a 0-d torch tensor.
        Any other type of ``predictions`` raises ``TypeError``.
    dataset : str, os.PathLike or metrics.submission.Gold
        The gold to score against: what ``--dataset`` or ``--gold`` takes (a built dataset folder,
        the private gold folder of a blind copy, or the Hub dataset id of either, which is
        downloaded), or a ``Gold`` already loaded (``metrics.submission.load_gold``), which is used
        as it is: load it once to score many predictions.
    variant : str, optional
        The variant to score (``main``, ``4vc`` or ``10turn``). None (default) takes the variant the
        ids belong to; a given one must be it (``IdMismatch`` otherwise), and with a ``Gold`` it
        must be the gold's (``ValueError`` otherwise).
    split : str
        The split of a folder's gold: ``"test"`` (default) or ``"validation"``; ids of the other
        split are refused with a hint to it. Not used with a ``Gold``, which has its own.
    n_bootstrap : int
        Bootstrap resamples of the 95 % confidence intervals (default 1000); 0 computes none (the
        ``ci`` values are then None).
    seed : int
        Seed of the bootstrap resampling (default 0).

    Returns
    -------
    dict
        The scores in percent, JSON-serialisable: ``variant``, ``split``, ``num_lines``,
        ``sha256`` (of the lines written one ``json.dumps`` line each), ``tasks`` (those scored:
        the tasks with at least one line), ``bootstrap`` (its settings), and per scored task its
        breakdown (``detection``: ``accuracy`` per scenario, ``balanced_accuracy``,
        ``paired_accuracy``, ``auroc`` and ``eer`` when the lines carry scores, ``coverage``, ``ci``;
        ``localization`` and ``discrimination`` likewise, see the module docstring).

    Raises ``SubmissionError`` for a bad row, naming it as ``line N`` (the N-th row, from 1) with
    the file's message, and ``IdMismatch`` for ids of another variant, split or copy.

    Example
    -------
    >>> import numpy as np
    >>> from speakersleuth.metrics.score import leaderboard_row, score_predictions
    >>> from speakersleuth.metrics.submission import Gold
    >>> labels = {"S1": "consistent", "S2": "inconsistent", "S3": "inconsistent"}
    >>> gold = Gold("main", "test", {"detection": {
    ...     f"d-{s}": {"id": f"d-{s}", "dialogue_id": "d", "scenario": s, "label": label}
    ...     for s, label in labels.items()
    ... }})
    >>> rows = [
    ...     {"task": "detection", "id": "d-S1", "prediction": "consistent", "score": np.float32(0.1)},
    ...     {"task": "detection", "id": "d-S2", "prediction": "inconsistent", "score": np.float32(0.9)},
    ...     {"task": "detection", "id": "d-S3", "prediction": "consistent", "score": np.float32(0.2)},
    ... ]
    >>> scores = score_predictions(rows, gold, n_bootstrap=0)
    >>> scores["tasks"], scores["detection"]["accuracy"], scores["detection"]["auroc"]
    (['detection'], {'S1': 100.0, 'S2': 100.0, 'S3': 0.0}, 100.0)
    >>> leaderboard_row(scores)["det_bal_acc"]  # S1 and the mean of S2 and S3, averaged
    75.0

    A ``datasets.Dataset`` (or a pandas DataFrame) of the same rows scores the same:

    >>> import datasets
    >>> score_predictions(datasets.Dataset.from_list(rows), gold, n_bootstrap=0)["detection"] == scores["detection"]
    True

    Against a dataset folder (or a Hub id) the gold is read from it; skipped here, as it needs a
    built folder and rows with its ids:

    >>> score_predictions(judge_rows, "speakersleuth", variant="main")  # doctest: +SKIP
    """
    data = predictions_jsonl(predictions)
    if not isinstance(dataset, Gold):
        root = ssd.local_folder(dataset)
        dataset = load_gold(root, submission_variant(data, root, split, variant), split)
    elif variant not in (None, dataset.variant):
        raise ValueError(f"the gold is of variant {dataset.variant}, not {variant}")
    return score_submission(parse_submission(data, dataset), dataset, n_bootstrap=n_bootstrap, seed=seed)


def predictions_jsonl(predictions) -> bytes:
    """A list of line dicts or a pandas DataFrame as the JSON Lines of a predictions file.

    >>> predictions_jsonl([{"task": "detection", "id": "d1", "prediction": "consistent"}])
    b'{"task": "detection", "id": "d1", "prediction": "consistent"}\\n'
    """
    if hasattr(predictions, "to_dict") and hasattr(predictions, "columns"):  # a pandas DataFrame
        rows = predictions.to_dict("records")
    elif hasattr(predictions, "to_list") and hasattr(predictions, "features"):  # a datasets.Dataset
        rows = predictions.to_list()
    elif isinstance(predictions, (list, tuple)):
        rows = None
    else:
        raise TypeError(
            f"predictions: a list of dicts, a pandas DataFrame or a datasets.Dataset, got {type(predictions).__name__}"
        )
    if rows is not None:  # table rows: a missing cell leaves its key out (a missing prediction is no answer)
        predictions = [
            {k: (None if _missing(v) else v) for k, v in row.items() if k == "prediction" or not _missing(v)}
            for row in rows
        ]
    return "".join(json.dumps(row, default=_plain) + "\n" for row in predictions).encode("utf-8")


def _missing(value) -> bool:
    """Whether a table cell is a missing value (None, NaN, pandas' NA); a list or an array never is."""
    import pandas as pd

    return not isinstance(value, (list, tuple)) and not hasattr(value, "tolist") and bool(pd.isna(value))


def _plain(value):
    """Arrays and scalars of numpy or torch (a table's cells, a model's scores: anything with
    ``tolist``) as the JSON values they hold."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a {type(value).__name__} is not a JSON value")


def _dialogue_index(gold: Gold) -> dict[str, int]:
    if "dialogues" not in gold.cache:
        names = sorted({row["dialogue_id"] for rows in gold.tasks.values() for row in rows.values()})
        gold.cache["dialogues"] = {name: i for i, name in enumerate(names)}
    return gold.cache["dialogues"]


def _task_arrays(gold: Gold, task: str, dialogues: dict[str, int]) -> dict[str, Any]:
    """Gold of one task as arrays in a fixed id order (memoised on ``gold.cache``)."""
    if task in gold.cache:
        return gold.cache[task]
    rows = list(gold.tasks[task].values())
    arrays: dict[str, Any] = {
        "ids": [row["id"] for row in rows],
        "dialogue": np.array([dialogues[row["dialogue_id"]] for row in rows], dtype=np.int64),
    }
    if task == "discrimination":
        sources = sorted({row["source_dataset"] for row in rows})
        arrays["sources"] = sources
        arrays["source"] = np.array([sources.index(row["source_dataset"]) for row in rows], dtype=np.int64)
        arrays["answer"] = [row["answer"] for row in rows]
        arrays["gold_ranking"] = [list(row["gold_ranking"]) for row in rows]
    else:
        arrays["scenario"] = scenario_codes(row["scenario"] for row in rows)
        if task == "detection":
            arrays["label"] = np.array([_LABEL_CODE[row["label"]] for row in rows], dtype=np.int64)
        else:
            arrays["mask"] = np.array([_mask(row["inconsistent_turns"]) for row in rows], dtype=np.int64)
    gold.cache[task] = arrays
    return arrays


def _mask(positions) -> int:
    return sum(1 << (p - 1) for p in set(positions))


def _score_detection(answers: dict[str, dict], gold: dict[str, Any], counts: np.ndarray | None) -> dict:
    predicted = np.array([_LABEL_CODE.get(answers.get(i, {}).get("prediction"), -1) for i in gold["ids"]])
    correct = (predicted == gold["label"]).astype(np.float64)
    accuracy = grouped_mean(correct, gold["scenario"], len(SCENARIOS))
    out = {
        **_coverage(predicted >= 0),
        "accuracy": _per_scenario(accuracy),
        "balanced_accuracy": _pct(balanced(*accuracy)),
        **_paired_and_intervals("balanced_accuracy", correct, correct == 1, gold, counts),
    }
    auroc, eer, ci = _threshold_free([answers.get(i, {}).get("score") for i in gold["ids"]], gold, counts)
    out.update(scored=sum(i in answers and "score" in answers[i] for i in gold["ids"]), auroc=auroc, eer=eer)
    out["ci"].update(ci)
    return out


def _threshold_free(scores: list[float | None], gold: dict[str, Any], counts: np.ndarray | None):
    """AUROC and EER in percent of the detection ``scores`` and their intervals (all None when
    no instance has a score)."""
    ranked = _ranked_scores(scores, gold["label"])
    if ranked is None:
        return None, None, {"auroc": None, "eer": None}
    auroc, eer = roc_summary(gold["label"], ranked)
    intervals = {"auroc": None, "eer": None}
    if counts is not None:  # every resample at once: its weights are the counts of the dialogues
        aurocs, eers = roc_summaries(gold["label"], ranked, counts, gold["dialogue"])
        intervals = {"auroc": _ci(aurocs), "eer": _ci(eers)}
    return _pct(auroc), _pct(eer), intervals


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values``, ties sharing the mean of the ranks they span (scipy's
    ``rankdata`` default, without scipy in the core install).

    Example:
        >>> average_ranks(np.array([0.5, 0.1, 0.5, 0.9])).tolist()
        [2.5, 1.0, 2.5, 4.0]
    """
    order = np.argsort(values, kind="stable")
    _, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    return ranks


def _ranked_scores(scores: list[float | None], labels: np.ndarray) -> np.ndarray | None:
    """The detection scores as ranks (ties share one), an instance without a score placed wrong:
    an inconsistent one below every score, a consistent one above; None when nothing is scored."""
    given = np.array([s is not None for s in scores])
    if not given.any():
        return None
    ranks = np.empty(given.size)
    ranks[given] = average_ranks(np.array([s for s in scores if s is not None], dtype=float))
    ranks[~given] = np.where(labels[~given] == 1, 0.0, given.sum() + 1.0)
    return ranks


def _score_localization(answers: dict[str, dict], gold: dict[str, Any], counts: np.ndarray | None) -> dict:
    given = [answers.get(i, {}).get("prediction") for i in gold["ids"]]
    answered = np.array([p is not None for p in given])
    predicted = np.array([_mask(p) if p is not None else 0 for p in given], dtype=np.int64)
    sizes = (np.bitwise_count(predicted), np.bitwise_count(gold["mask"]), np.bitwise_count(predicted & gold["mask"]))
    # an instance without an answer scores 0 (an S1 answered [] scores F1 1; no answer is not [])
    precision, recall, f1 = (np.where(answered, values, 0.0) for values in prf(*sizes))
    means = {
        name: grouped_mean(values, gold["scenario"], len(SCENARIOS))
        for name, values in (("precision", precision), ("recall", recall), ("f1", f1))
    }
    exact = answered & (predicted == gold["mask"])
    return {
        **_coverage(answered),
        **{name: _per_scenario(m) for name, m in means.items()},
        "balanced_f1": _pct(balanced(*means["f1"])),
        **_paired_and_intervals("balanced_f1", f1, exact, gold, counts),
    }


def _paired_and_intervals(
    balanced_name: str, values: np.ndarray, exact: np.ndarray, gold: dict[str, Any], counts: np.ndarray | None
) -> dict:
    """Paired accuracy of a turn task and the intervals of its balanced metric (over the
    per-instance ``values``) and of its paired accuracy (``exact``: the instance is fully right)."""
    paired, paired_samples, dialogues = _paired(exact, gold, counts)
    return {
        "paired_dialogues": dialogues,
        "paired_accuracy": _pct(paired),
        "ci": {
            balanced_name: _interval(counts, lambda c: _balanced_samples(values, gold, c)),
            "paired_accuracy": _ci(paired_samples),
        },
    }


def _score_discrimination(answers: dict[str, dict], gold: dict[str, Any], counts: np.ndarray | None) -> dict:
    given = [answers.get(i, {}) for i in gold["ids"]]
    answered = np.array([a.get("prediction") is not None for a in given])
    correct = np.array([a.get("prediction") == ans for a, ans in zip(given, gold["answer"])], dtype=np.float64)
    by_source = grouped_mean(correct, gold["source"], len(gold["sources"]))
    out: dict[str, Any] = {
        **_coverage(answered),
        "accuracy_by_source": {s: _pct(a) for s, a in zip(gold["sources"], by_source)},
        "accuracy": _pct(correct.mean()),
    }
    ci = {"accuracy": _interval(counts, lambda c: _mean(correct, c, gold["dialogue"]))}
    ranked = np.array([a.get("ranking") is not None for a in given])
    out["ranked"] = int(ranked.sum())
    out["ranking_coverage"] = _pct(ranked.mean())
    if ranked.any():
        rows = np.flatnonzero(ranked)
        predicted = [given[i]["ranking"] for i in rows]
        reference = [gold["gold_ranking"][i] for i in rows]
        metrics = {"ndcg@1": partial(ndcg, k=1), "ndcg@2": partial(ndcg, k=2), "exact_match": exact_match}
        scores = {name: np.zeros(len(given)) for name in metrics}
        for name, values in ranking_scores(predicted, reference, metrics).items():
            scores[name][rows] = values
            out[name] = _pct(scores[name].mean())
        ci["ndcg@2"] = _interval(counts, lambda c: _mean(scores["ndcg@2"], c, gold["dialogue"]))
        ci["exact_match"] = _interval(counts, lambda c: _mean(scores["exact_match"], c, gold["dialogue"]))
    else:
        out.update({"ndcg@1": None, "ndcg@2": None, "exact_match": None})
        ci.update({"ndcg@2": None, "exact_match": None})
    out["ci"] = ci
    return out


def _mean(values: np.ndarray, counts: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Bootstrap samples of the mean of ``values`` (instances of dialogues ``units``)."""
    return grouped_mean(values, np.zeros(values.size, dtype=np.int64), 1, counts, units)[:, 0]


def _interval(counts: np.ndarray | None, statistic) -> list[float] | None:
    return None if counts is None else _ci(statistic(counts))


def _balanced_samples(values: np.ndarray, gold: dict[str, Any], counts: np.ndarray) -> np.ndarray:
    per_scenario = grouped_mean(values, gold["scenario"], len(SCENARIOS), counts, gold["dialogue"])
    return balanced(*per_scenario.T)


def _ci(samples: np.ndarray | None) -> list[float] | None:
    if samples is None:
        return None
    interval = percentile_interval(samples, CONFIDENCE)
    return None if interval is None else [_pct(interval[0]), _pct(interval[1])]


def _paired(correct: np.ndarray, gold: dict[str, Any], counts: np.ndarray | None):
    """Share of complete dialogues (S1, S2, S3 all in the gold) with every instance correct;
    returns (value, bootstrap samples, number of complete dialogues)."""
    dialogue = gold["dialogue"]
    num = int(dialogue.max()) + 1
    present = np.zeros(num, dtype=np.int64)
    np.bitwise_or.at(present, dialogue, 1 << gold["scenario"])
    complete = np.flatnonzero(present == (1 << len(SCENARIOS)) - 1)
    if not complete.size:
        return None, None, 0
    mistakes = np.bincount(dialogue, weights=(~correct).astype(np.float64), minlength=num)
    all_correct = (mistakes[complete] == 0).astype(np.float64)
    samples = None if counts is None else _mean(all_correct, counts, complete)
    return all_correct.mean(), samples, int(complete.size)


def _coverage(answered: np.ndarray) -> dict[str, Any]:
    return {"instances": int(answered.size), "answered": int(answered.sum()), "coverage": _pct(answered.mean())}


def _per_scenario(values: np.ndarray) -> dict[str, float | None]:
    return {s: _pct(v) for s, v in zip(SCENARIOS, values)}


def _pct(value) -> float | None:
    """A fraction as percent, rounded to 4 decimals (None for NaN/None)."""
    if value is None or not np.isfinite(value):
        return None
    return round(float(value) * 100.0, 4)


# --------------------------------------------------------------------------------- leaderboard


def source_key(name: str) -> str:
    """Column suffix of a source dataset name: ``"Behavior-SD"`` -> ``"behavior_sd"``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def table2_order(keys) -> list[str]:
    """``keys`` in the order of ``TABLE2_KEYS``, ``disc_acc_<source>`` of sources that are not in
    the paper placed before ``disc_acc_avg`` (in their given order); other keys are dropped."""
    keys = list(keys)
    extra = [k for k in keys if k.startswith("disc_acc_") and k not in TABLE2_KEYS]
    order = []
    for key in TABLE2_KEYS:
        if key == "disc_acc_avg":
            order += extra
        if key in keys:
            order.append(key)
    return order


def leaderboard_row(scores: dict) -> dict:
    """The flat leaderboard row of ``score_submission`` output, in percent rounded to one decimal.

    Has every key of ``TABLE2_KEYS`` (None where a task was not submitted), plus
    ``disc_acc_<source>`` for source datasets not in the paper, in ``table2_order``, then
    ``<key>_ci`` = ``[low, high]`` (or None) for the ``INTERVAL_KEYS``.
    """
    det, loc, disc = scores.get("detection"), scores.get("localization"), scores.get("discrimination")
    flat: dict[str, Any] = dict.fromkeys(TABLE2_KEYS)
    ci: dict[str, Any] = {}
    for key, (task, name, interval) in _TASK_SCORES.items():
        if scores.get(task):
            read = dict.get if name in _SCORED_ONLY else dict.__getitem__
            flat[key] = read(scores[task], name)
            if interval:
                ci[key] = read(scores[task]["ci"], name)
    if det:
        for s in SCENARIOS:
            flat[f"det_{s.lower()}_acc"] = det["accuracy"][s]
    if loc:
        flat["loc_s1_f1"] = loc["f1"]["S1"]
        for s in SCENARIOS[1:]:
            for metric, short in (("precision", "p"), ("recall", "r"), ("f1", "f1")):
                flat[f"loc_{s.lower()}_{short}"] = loc[metric][s]
    if disc:
        for source, value in disc["accuracy_by_source"].items():
            flat[f"disc_acc_{source_key(source)}"] = value
    row = {key: _one_decimal(flat[key]) for key in table2_order(flat)}
    for key in INTERVAL_KEYS:
        interval = ci.get(key)
        row[f"{key}_ci"] = None if interval is None else [_one_decimal(v) for v in interval]
    return row


def _one_decimal(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


if (
    __name__ == "__main__"
):  # ``python -m speakersleuth.metrics.score`` runs the command line, ``metrics.report`` (which imports this module)
    import runpy

    runpy.run_module("speakersleuth.metrics.report", run_name="__main__", alter_sys=True)
