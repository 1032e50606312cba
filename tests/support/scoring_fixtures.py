"""An in-memory gold set of any size for the scorer's tests and benchmark (labels only, no audio).

Each dialogue has S1/S2/S3 detection and localization instances (N = 5 target turns, one converted
turn) and one discrimination instance with shuffled candidate labels; sources cycle through the
paper's four corpora. Test data only, never a benchmark result.
"""

from __future__ import annotations

import random

from speakersleuth.metrics.submission import Gold

SOURCES = ("bazinga", "ami", "behavior_sd", "dailytalk")
N_TURNS = 5


def synthetic_gold(dialogues: int, rng: random.Random, variant: str = "main") -> Gold:
    tasks: dict[str, dict[str, dict]] = {"detection": {}, "localization": {}, "discrimination": {}}
    for d in range(dialogues):
        dialogue_id, source, k = f"dlg{d:05d}", SOURCES[d % len(SOURCES)], rng.randint(1, N_TURNS)
        for scenario in ("S1", "S2", "S3"):
            rid = f"{variant}-{d:05d}-{scenario}"
            common = {
                "id": rid,
                "dialogue_id": dialogue_id,
                "source_dataset": source,
                "scenario": scenario,
                "num_target_turns": N_TURNS,
            }
            tasks["detection"][rid] = {**common, "label": "consistent" if scenario == "S1" else "inconsistent"}
            tasks["localization"][rid] = {**common, "inconsistent_turns": [] if scenario == "S1" else [k]}
        order = ["S1", "S2", "S3"]
        rng.shuffle(order)
        label = dict(zip(order, "ABC"))
        rid = f"{variant}-{d:05d}-D"
        tasks["discrimination"][rid] = {
            "id": rid,
            "dialogue_id": dialogue_id,
            "source_dataset": source,
            "candidate_labels": ["A", "B", "C"],
            "answer": label["S1"],
            "gold_ranking": [label[s] for s in ("S1", "S3", "S2")],
        }
    return Gold(variant, "test", tasks)


def sklearn_ndcg(predictions: list[list], references: list[list], k: int) -> float:
    """Mean NDCG@k by sklearn's ``ndcg_score``, an independent reference: the true relevance of a
    candidate is supplied as its exponential gain 2^(C - 1 - gold index) - 1 (sklearn's DCG is
    linear in what it is given), the predicted score as C - predicted position."""
    import numpy as np
    from sklearn.metrics import ndcg_score

    values = []
    for predicted, gold in zip(predictions, references, strict=True):
        c = len(gold)
        gains = [[2.0 ** (c - 1 - gold.index(x)) - 1 for x in gold]]
        score = [[float(c - predicted.index(x)) for x in gold]]
        values.append(ndcg_score(gains, score, k=k))
    return float(np.mean(values))
