"""The metric math of SpeakerSleuth (paper appendix B.3) for the scorer, in one import.

Each metric's math lives once, in its ``evaluate`` folder, as pure numpy modules beside the metric
module (a folder must stand alone: ``evaluate`` imports only the files beside a metric module):
``balanced_accuracy/{scenarios,detection}.py``, ``balanced_f1/{scenarios,localization}.py``,
``ndcg/{rankings,discounted_gain}.py`` and ``exact_match/{rankings,matching}.py``. The two
scenario-balanced folders share ``scenarios.py`` and the two ranking folders ``rankings.py``, each
one file in both folders (``tests/metrics/test_metrics.py`` fails when the two differ). This module imports
them for the scorer (``metrics.score``, ``metrics.analysis``) and adds what only the scorer needs:
the bootstrap (``grouped_mean`` over resample weights, ``resample_counts``, ``percentile_interval``),
and re-exports the paper's ``CITATION`` and ``PAPER_URL`` (``speakersleuth_dataset`` holds them).
Importing it does not import ``evaluate``. Values are fractions in [0, 1].
"""

from __future__ import annotations

import numpy as np

from speakersleuth.metrics.balanced_accuracy.detection import DETECTION_LABELS, detection_codes
from speakersleuth.metrics.balanced_accuracy.scenarios import SCENARIOS, balanced, group_means, scenario_codes
from speakersleuth.metrics.balanced_f1.localization import check_turn_sets, prf, set_sizes
from speakersleuth.metrics.exact_match.matching import exact_match
from speakersleuth.metrics.ndcg.discounted_gain import ndcg
from speakersleuth.metrics.ndcg.rankings import gold_index_of_ranking, ranking_features, ranking_scores
from speakersleuth.speakersleuth_dataset import CITATION, PAPER_URL

__all__ = [
    "CITATION",
    "DETECTION_LABELS",
    "PAPER_URL",
    "SCENARIOS",
    "balanced",
    "check_turn_sets",
    "detection_codes",
    "exact_match",
    "gold_index_of_ranking",
    "group_means",
    "grouped_mean",
    "ndcg",
    "percentile_interval",
    "prf",
    "ranking_features",
    "ranking_scores",
    "resample_counts",
    "scenario_codes",
    "set_sizes",
]


def grouped_mean(values, groups, num_groups: int, weights: np.ndarray | None = None, units=None) -> np.ndarray:
    """Mean of ``values`` within each group ``0..num_groups-1``; NaN for an empty group.

    With ``weights`` of shape ``(B, U)`` (e.g. bootstrap counts of U resampled units) returns the
    ``(B, G)`` weighted means, one row per resample; ``units`` gives each instance's unit
    ``0..U-1`` (default: every instance is its own unit). Without ``weights``, returns ``(G,)``.
    Sums are taken per unit first, so the cost is O(n + B*U*G).

    >>> grouped_mean([1, 0, 1, 1], [0, 0, 1, 1], 3).tolist()
    [0.5, 1.0, nan]
    >>> grouped_mean([1, 0, 1], [0, 0, 0], 1, weights=np.array([[2, 0], [0, 1]]), units=[0, 1, 1]).tolist()
    [[1.0], [0.5]]
    """
    if weights is None:
        return group_means(values, groups, num_groups)
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    num_units = weights.shape[1]
    units = np.arange(values.size) if units is None else np.asarray(units, dtype=np.int64)
    key = units * num_groups + groups
    size = num_units * num_groups
    sums = weights @ np.bincount(key, weights=values, minlength=size).reshape(num_units, num_groups)
    totals = weights @ np.bincount(key, minlength=size).reshape(num_units, num_groups).astype(np.float64)
    return np.divide(sums, totals, out=np.full_like(sums, np.nan), where=totals > 0)


def resample_counts(num_units: int, n_bootstrap: int, seed: int) -> np.ndarray:
    """``(n_bootstrap, num_units)`` counts of each unit in resamples drawn with replacement.

    >>> c = resample_counts(4, 3, seed=0)
    >>> c.shape, c.sum(axis=1).tolist()
    ((3, 4), [4, 4, 4])
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, num_units, size=(n_bootstrap, num_units))
    flat = draws + num_units * np.arange(n_bootstrap)[:, None]
    return np.bincount(flat.ravel(), minlength=n_bootstrap * num_units).reshape(n_bootstrap, num_units)


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """The percentile bootstrap interval of ``samples`` (NaNs ignored); None if all are NaN.

    >>> percentile_interval(np.arange(101.0), 0.5)
    (25.0, 75.0)
    """
    samples = np.asarray(samples, dtype=np.float64)
    if not np.isfinite(samples).any():
        return None
    tail = 50.0 * (1.0 - level)
    low, high = np.nanpercentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)
