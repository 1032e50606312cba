"""Exact match of rankings per instance, pure numpy."""

from __future__ import annotations

import numpy as np


def exact_match(gold_index: np.ndarray) -> np.ndarray:
    """Whether each predicted ranking equals the gold ranking (rows with -1 never match).

    >>> exact_match(np.array([[0, 1, 2], [0, 2, 1], [-1, -1, -1]])).tolist()
    [True, False, False]
    """
    gold_index = np.asarray(gold_index, dtype=np.int64)
    return (gold_index == np.arange(gold_index.shape[1])).all(axis=1)
