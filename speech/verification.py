"""The one ROC summary of the project: AUROC and EER of scores against binary labels.

Used by the scorer (detection AUROC/EER and their bootstrap intervals, ``metrics.score``) and by
the builder (the speaker pool's verification EER on the dataset card,
``builder_scripts.speaker_bank``), so the card and the leaderboard give one EER for one curve.

Definitions (those of scikit-learn's ``roc_curve`` with ``sample_weight`` and ``auc``, which the
tests check against): instances weighted (a weight of 0 removes one), higher score = class 1, one
curve point per distinct score, (0, 0) first. AUROC is the trapezoid area under the curve (ties
count half). EER is where the false-negative rate 1 - tpr meets the false-positive rate: at the
first point with fnr <= fpr, linearly interpolated with the point before it. Both are NaN when a
class has no weight; all-tied scores give 0.5 and 0.5.

``roc_summaries`` computes every row of a weight matrix (bootstrap resamples x instances) at
once: the instances are sorted by score once, and the cumulative weights of each row are read at
the last instance of each distinct score.

>>> roc_summary(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.3, 0.4]))
(1.0, 0.0)
>>> roc_summary(np.array([0, 0, 1, 1]), np.array([0.4, 0.3, 0.2, 0.1]))
(0.0, 1.0)
>>> roc_summary(np.array([0, 0, 1, 1]), np.zeros(4))
(0.5, 0.5)
>>> roc_summary(np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.3, 0.4]), np.array([1, 1, 0, 1]))
(1.0, 0.0)
>>> equal_error_rate([0.1, 0.7, 0.8, 0.9], [0.2, 0.3, 0.4, 0.95])
25.0
"""

from __future__ import annotations

import numpy as np


def roc_summaries(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and EER (fractions, shape ``(R,)``) of ``scores`` (higher = class 1) against binary
    ``labels`` (``(n,)``) under each row of ``weights`` (``(R, n)``, non-negative); NaN in a row
    where a class has no weight."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=np.float64)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if not (labels.shape == scores.shape == weights.shape[1:] and labels.ndim == 1):
        raise ValueError(f"labels {labels.shape}, scores {scores.shape} and weights {weights.shape} do not match")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    if not scores.size:
        return np.full(len(weights), np.nan), np.full(len(weights), np.nan)
    order = np.argsort(-scores, kind="stable")
    # the last instance of each distinct score, in descending score order: one curve point each
    ends = np.append(np.flatnonzero(np.diff(scores[order])), scores.size - 1)
    positive = (labels[order] == 1).astype(np.float64)
    w = weights[:, order]
    tps = np.cumsum(w * positive, axis=1)[:, ends]
    fps = np.cumsum(w * (1.0 - positive), axis=1)[:, ends]
    valid = (tps[:, -1] > 0) & (fps[:, -1] > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.column_stack([np.zeros(len(w)), tps / tps[:, -1:]])
        fpr = np.column_stack([np.zeros(len(w)), fps / fps[:, -1:]])
    # a point of a score whose instances all weigh 0 repeats the point before: it adds no area
    # and, fnr - fpr being unchanged there, is never the first point at or past the crossing
    auroc = np.sum(np.diff(fpr, axis=1) * (tpr[:, 1:] + tpr[:, :-1]) / 2.0, axis=1)
    eer = np.full(len(w), np.nan)
    if valid.any():
        fnr, fp = 1.0 - tpr[valid], fpr[valid]
        i = np.argmax(fnr <= fp, axis=1)  # >= 1: the curve starts at fnr 1 > fpr 0, ends at fnr 0 < fpr 1
        rows = np.arange(len(i))
        above, below = fnr[rows, i - 1] - fp[rows, i - 1], fnr[rows, i] - fp[rows, i]
        eer[valid] = fp[rows, i - 1] + above / (above - below) * (fp[rows, i] - fp[rows, i - 1])
    auroc[~valid] = np.nan
    return auroc, eer


def roc_summary(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
    """AUROC and EER (fractions) of ``scores`` against ``labels``, instances weighted by
    ``weights`` (default 1 each); NaN when a class has no weight (``roc_summaries``)."""
    w = np.ones(np.shape(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    auroc, eer = roc_summaries(labels, scores, w[None, :])
    return float(auroc[0]), float(eer[0])


def equal_error_rate(same, different) -> float:
    """EER in percent of speaker-verification scores: ``same``-speaker trials against
    ``different``-speaker ones (a trial accepted at or above the threshold; ``roc_summary``)."""
    if not len(same) or not len(different):
        raise ValueError(f"an EER needs same- and different-speaker trials; got {len(same)} and {len(different)}")
    labels = np.concatenate([np.ones(len(same), dtype=np.int64), np.zeros(len(different), dtype=np.int64)])
    return 100.0 * roc_summary(labels, np.concatenate([np.asarray(same, np.float64), np.asarray(different, np.float64)]))[1]
