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


def roc_summaries(
    labels: np.ndarray, scores: np.ndarray, weights: np.ndarray, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """AUROC and EER (fractions, shape ``(R,)``) of ``scores`` (higher = class 1) against binary
    ``labels`` (``(n,)``) under each row of ``weights``; NaN in a row where a class has no weight.

    ``weights`` is ``(R, n)``, non-negative: a weight per instance; or, with ``groups`` (``(n,)``
    integers), ``(R, G)``: instance i weighs ``weights[r, groups[i]]`` (bootstrap counts of
    dialogues, ``groups`` the dialogue of each instance).
    """
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=np.float64)
    weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if groups is None:
        if weights.shape[1:] != labels.shape:
            raise ValueError(f"labels {labels.shape} and weights {weights.shape} do not match")
        groups = np.arange(labels.size)
    groups = np.asarray(groups, dtype=np.int64)
    if not (
        labels.ndim == 1
        and labels.shape == scores.shape == groups.shape
        and weights.ndim == 2
        and (groups.size == 0 or 0 <= groups.min() <= groups.max() < weights.shape[1])
    ):
        raise ValueError(
            f"labels {labels.shape}, scores {scores.shape}, groups {groups.shape} and weights {weights.shape} do not match"
        )
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    if not scores.size:
        return np.full(len(weights), np.nan), np.full(len(weights), np.nan)
    tps, fps = _cumulative_weights(labels == 1, scores, weights, groups)
    positives, negatives = tps[:, -1], fps[:, -1]
    valid = (positives > 0) & (negatives > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr, fpr = np.divide(tps, positives[:, None], out=tps), np.divide(fps, negatives[:, None], out=fps)
        auroc = np.einsum("ij,ij->i", np.diff(fpr, axis=1), tpr[:, 1:] + tpr[:, :-1]) / 2.0  # trapezoids
        fnr = np.subtract(1.0, tpr, out=tpr)
        # the first point with fnr <= fpr: >= 1, the curve starts at fnr 1 > fpr 0 and ends at fnr 0 < fpr 1
        i = np.argmax(fnr <= fpr, axis=1)
        rows = np.arange(len(i))
        above, below = fnr[rows, i - 1] - fpr[rows, i - 1], fnr[rows, i] - fpr[rows, i]
        eer = fpr[rows, i - 1] + above / (above - below) * (fpr[rows, i] - fpr[rows, i - 1])
    auroc[~valid], eer[~valid] = np.nan, np.nan
    return auroc, eer


def _cumulative_weights(positive: np.ndarray, scores: np.ndarray, weights: np.ndarray, groups: np.ndarray):
    """The ROC curve's points, unnormalised: per row of ``weights``, the positive and the negative
    weight at or above each threshold, (0, 0) first, then in descending score order.

    A point per distinct score, but for runs of distinct scores whose instances are all of one
    class: such a run is a straight vertical (horizontal) stretch of the curve, kept as its last
    point only (sklearn's ``drop_intermediate`` drops such points too). Neither the area nor the
    EER, interpolated along that straight stretch, changes. A point whose instances all weigh 0
    in a row repeats the point before: it adds no area, and, fnr - fpr unchanged there, is never
    the first point at or past the crossing.
    """
    order = np.argsort(-scores, kind="stable")
    y, g, s = positive[order], groups[order], scores[order]
    distinct = np.cumsum(np.r_[True, s[1:] != s[:-1]]) - 1  # the distinct score of each sorted instance
    kind = np.zeros(distinct[-1] + 1, dtype=np.int64)  # 1 positives only, 2 negatives only, 3 both
    np.bitwise_or.at(kind, distinct, np.where(y, 1, 2))
    point = np.cumsum(np.r_[True, (kind[1:] == 3) | (kind[1:] != kind[:-1])]) - 1
    segment = point[distinct] + 1  # the curve point (after the origin) each sorted instance ends up in
    num_points = segment[-1] + 1

    def cumulative(of_class: np.ndarray) -> np.ndarray:
        sums = np.zeros((len(weights), num_points))
        at = segment[of_class]
        if at.size:
            starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
            sums[:, at[starts]] = np.add.reduceat(weights[:, g[of_class]], starts, axis=1)
        return np.cumsum(sums, axis=1, out=sums)

    return cumulative(y), cumulative(~y)


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
    return (
        100.0
        * roc_summary(labels, np.concatenate([np.asarray(same, np.float64), np.asarray(different, np.float64)]))[1]
    )
