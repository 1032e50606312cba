"""The scorer against the metric modules (``metrics/<name>/``): a random answer to every instance of
a gold set (the scorer's tests use it too), the same answers as each module's ``compute`` arguments, and the scorer's numbers under
the modules' result keys."""

from __future__ import annotations

import random

#: A random answer of each task, drawn from ``rng``.
_DRAW = {
    "detection": lambda rng: {"prediction": rng.choice(["consistent", "inconsistent"])},
    "localization": lambda rng: {"prediction": sorted(rng.sample(range(1, 6), rng.randint(0, 2)))},
    "discrimination": lambda rng: {"prediction": rng.choice("ABC"), "ranking": rng.sample("ABC", 3)},
}


def random_answers(gold, rng: random.Random, tasks=tuple(_DRAW)) -> list[dict]:
    """An answer for every instance of ``tasks`` (the modules have no notion of a missing answer),
    some wrong; task by task in the order of ``_DRAW``."""
    return [
        {"task": task, "id": rid, **_DRAW[task](rng)} for task in _DRAW if task in tasks for rid in gold.tasks[task]
    ]


def module_inputs(gold, lines: list[dict]) -> dict[str, dict]:
    """The same submission as ``compute`` keyword arguments of each module."""
    answer = {(line["task"], line["id"]): line for line in lines}
    det, loc, disc = gold.tasks["detection"], gold.tasks["localization"], gold.tasks["discrimination"]
    rankings = {
        "predictions": [answer["discrimination", rid]["ranking"] for rid in disc],
        "references": [row["gold_ranking"] for row in disc.values()],
    }
    return {
        "balanced_accuracy": {
            "predictions": [answer["detection", rid]["prediction"] for rid in det],
            "references": [row["label"] for row in det.values()],
            "scenarios": [row["scenario"] for row in det.values()],
        },
        "balanced_f1": {
            "predictions": [answer["localization", rid]["prediction"] for rid in loc],
            "references": [row["inconsistent_turns"] for row in loc.values()],
            "scenarios": [row["scenario"] for row in loc.values()],
        },
        "ndcg": {**rankings, "k": 2, "every_k": True},
        "exact_match": rankings,
    }


def scorer_values(scores: dict) -> dict[str, dict[str, float]]:
    """The scorer's numbers (percent) under the modules' result keys."""
    det, loc, disc = scores["detection"], scores["localization"], scores["discrimination"]
    return {
        "balanced_accuracy": {
            **{f"accuracy_{s}": v for s, v in det["accuracy"].items()},
            "balanced_accuracy": det["balanced_accuracy"],
        },
        "balanced_f1": {
            **{f"{metric}_{s}": v for metric in ("precision", "recall", "f1") for s, v in loc[metric].items()},
            "balanced_f1": loc["balanced_f1"],
        },
        "ndcg": {"ndcg@1": disc["ndcg@1"], "ndcg@2": disc["ndcg@2"]},
        "exact_match": {"exact_match": disc["exact_match"]},
    }
