"""NDCG@k per instance (the discrimination task's ranking metric), pure numpy."""

from __future__ import annotations

import numpy as np


def ndcg(gold_index: np.ndarray, k: int) -> np.ndarray:
    """NDCG@k per instance from an ``(n, C)`` array of gold rank indices at each predicted position.

    Relevance of a candidate = C - 1 - its gold rank index (2, 1, 0 for three candidates), gain
    2^rel - 1, discount log2(i + 1) for position i = 1..k; ``k`` larger than C is read as C.
    A row containing -1 (no ranking given) scores 0.

    >>> ndcg(np.array([[0, 1, 2], [1, 0, 2], [2, 1, 0]]), 2).round(4).tolist()
    [1.0, 0.7967, 0.1738]
    >>> ndcg(np.array([[1, 0, 2]]), 1).round(4).tolist(), ndcg(np.array([[1, 0, 2]]), 9).round(4).tolist()
    ([0.3333], [0.7967])
    """
    gold_index = np.asarray(gold_index, dtype=np.int64)
    if gold_index.ndim != 2:
        raise ValueError(f"expected an (instances, candidates) array, got shape {gold_index.shape}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    n, c = gold_index.shape
    k = min(k, c)
    missing = (gold_index < 0).any(axis=1)
    top = np.where(missing[:, None], c - 1, gold_index[:, :k])
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    gains = np.exp2(c - 1 - top) - 1.0
    ideal = (np.exp2(c - 1 - np.arange(k)) - 1.0) @ discount
    scores = gains @ discount / ideal if ideal > 0 else np.ones(n)
    scores[missing] = 0.0
    return scores
