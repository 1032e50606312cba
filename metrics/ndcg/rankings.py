"""Predicted rankings matched against gold rankings, for the ranking metrics (NDCG@k, exact match), pure numpy.

``metrics/ndcg/rankings.py`` and ``metrics/exact_match/rankings.py`` are one file in two folders
(``tests/metrics/test_metrics.py`` fails when they differ), because ``evaluate`` loads a metric folder alone
and imports only the files beside its module. The project's scorer imports it through ``metrics.core``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

PAPER_URL = "https://aclanthology.org/2026.acl-long.944/"

#: The paper's BibTeX entry on one line (the metric card lays it out).
CITATION = "@inproceedings{lee2026speakersleuth, title = {SpeakerSleuth: Can Large Audio-Language Models Judge Speaker Consistency across Multi-turn Dialogues?}, author = {Lee, Jonggeun and Pyo, Junseong and Seo, Gyuhyeon and Jo, Yohan}, booktitle = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)}, year = {2026}, pages = {20612--20636}, url = {https://aclanthology.org/2026.acl-long.944/}, eprint = {2601.04029}, archivePrefix = {arXiv} }"


def metric_info(description: str, inputs_description: str, features: list):
    """The ``evaluate.MetricInfo`` of a SpeakerSleuth metric: its own texts and features, the paper's citation and page."""
    import evaluate

    return evaluate.MetricInfo(description, CITATION, features, inputs_description, reference_urls=[PAPER_URL])


def gold_index_of_ranking(predicted: Sequence, gold: Sequence) -> list[int]:
    """For each position of a predicted ranking, the gold rank index (0 = best) of its candidate.

    Raises ``ValueError`` unless ``predicted`` is a permutation of ``gold`` (each candidate once).

    >>> gold_index_of_ranking(["B", "A", "C"], ["A", "C", "B"])
    [2, 0, 1]
    >>> gold_index_of_ranking(["A", "B", "C", "A"], ["A", "B", "C"])
    Traceback (most recent call last):
    ...
    ValueError: ranking ['A', 'B', 'C', 'A'] repeats 'A'; it must be a permutation of ['A', 'B', 'C']
    """
    index = {c: i for i, c in enumerate(gold)}
    if len(index) != len(gold):
        raise ValueError(f"gold ranking {list(gold)} repeats a candidate")
    repeated = [c for c, count in Counter(predicted).items() if count > 1]
    if repeated:
        raise ValueError(
            f"ranking {list(predicted)} repeats {', '.join(map(repr, repeated))}; it must be a permutation of {list(gold)}"
        )
    if set(predicted) != set(index):
        raise ValueError(f"ranking {list(predicted)} is not a permutation of {list(gold)}")
    return [index[c] for c in predicted]


def ranking_scores(predicted: Sequence[Sequence], gold: Sequence[Sequence], scores: dict) -> dict[str, np.ndarray]:
    """Per-instance values of each ``scores[name](gold_index_matrix)`` over rankings that may
    differ in length.

    Instances are grouped by their number of candidates, so 3-candidate discrimination and the
    4-candidate VC-quality ranking go through the same code. Raises ``ValueError`` naming the
    first instance whose prediction is not a permutation of its gold ranking.

    >>> best_first = lambda gold_index: (gold_index[:, 0] == 0).astype(float)
    >>> ranking_scores([["A", "B"], ["y", "x", "z"]], [["A", "B"], ["x", "y", "z"]], {"top": best_first})
    {'top': array([1., 0.])}
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted rankings for {len(gold)} gold rankings")
    if not len(gold):
        raise ValueError("no rankings to score")
    by_length: dict[int, tuple[list[int], list[list[int]]]] = {}
    for i, (p, g) in enumerate(zip(predicted, gold)):
        try:
            row = gold_index_of_ranking(p, g)
        except ValueError as err:
            raise ValueError(f"instance {i}: {err}") from None
        rows, matrix = by_length.setdefault(len(g), ([], []))
        rows.append(i)
        matrix.append(row)
    out = {name: np.empty(len(gold)) for name in scores}
    for rows, matrix in by_length.values():
        matrix = np.array(matrix, dtype=np.int64)
        for name, score in scores.items():
            out[name][rows] = score(matrix)
    return out


def ranking_features() -> list:
    """Input features of the ranking metrics: rankings of string labels or of integer ids."""
    import datasets

    return [
        datasets.Features(
            {
                "predictions": datasets.Sequence(datasets.Value(dtype)),
                "references": datasets.Sequence(datasets.Value(dtype)),
            }
        )
        for dtype in ("string", "int64")
    ]


def refuse_empty(columns: dict) -> None:
    """Refuse a batch without instances, naming its empty columns (``evaluate`` would index their first instance)."""
    empty = [name for name, values in columns.items() if values is not None and len(values) == 0]
    if empty:
        raise ValueError(f"no instances to score: {', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty")
