"""The shortcut audit's fitting and scoring: the classifiers (``make_model``), dialogue-grouped
cross-validation of one task's instances (``cross_validated``), the random-gold control's
permuted labels (``permuted``), and each cell's score with its 95 % dialogue-bootstrap interval
(``score_cell``, ``paired_difference``). ``builder_scripts.shortcuts`` describes the audit."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

#: cross-validation folds (groups: dialogues) and bootstrap resamples of the intervals
FOLDS = 5
BOOTSTRAP = 1000


def make_model(model: str):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if model == "logistic":
        return make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, solver="liblinear", class_weight="balanced", random_state=0)
        )
    if model == "boosting":
        return HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, class_weight="balanced", random_state=0)
    raise ValueError(f"unknown shortcut-audit model {model!r}; use 'logistic' or 'boosting'")


def _credits(scores: np.ndarray, truth: int) -> float:
    best = np.flatnonzero(np.isclose(scores, scores.max(), rtol=1e-9, atol=1e-12))
    return 1.0 / best.size if truth in best else 0.0


def _folds(groups: np.ndarray):
    from sklearn.model_selection import GroupKFold

    n = min(FOLDS, np.unique(groups).size)
    return GroupKFold(n_splits=n).split(groups, groups=groups) if n >= 2 else []


def cross_validated(task: str, instances: list[tuple[np.ndarray, int]], groups: np.ndarray, model: str) -> np.ndarray:
    """Per instance, the credit of the cross-validated guess (detection: 1/0 guess of the class)."""
    sizes = np.array([rows.shape[0] for rows, _ in instances])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    X = np.vstack([rows for rows, _ in instances])
    if task == "detection":
        y = np.array([truth for _, truth in instances])
    else:
        y = np.concatenate([np.arange(size) == truth for size, (_, truth) in zip(sizes, instances)]).astype(int)
    out = np.full(len(instances), np.nan)
    with threadpool_limits(limits=1):  # small fits: threads only contend (OpenMP in boosting)
        _fit_folds(task, X, y, starts, instances, groups, model, out)
    return out


def _fit_folds(task, X, y, starts, instances, groups, model, out) -> None:
    for train, test in _folds(groups):
        rows_train = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in train])
        if np.unique(y[rows_train]).size < 2:
            continue
        fitted = make_model(model).fit(X[rows_train], y[rows_train])
        rows_test = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in test])
        scores = dict(zip(rows_test, fitted.predict_proba(X[rows_test])[:, 1]))
        for i in test:
            mine = np.array([scores[r] for r in range(starts[i], starts[i + 1])])
            out[i] = float(mine[0] >= 0.5) if task == "detection" else _credits(mine, instances[i][1])


def _dialogue_parts(
    task: str, credits: np.ndarray, truth: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The dialogues (sorted) and, per dialogue, the sums a score is made of: (correct, count)
    pairs, one pair per class for detection (balanced accuracy), one pair otherwise."""
    names, inverse = np.unique(groups, return_inverse=True)
    if task == "detection":  # per dialogue: correct and all instances of each class
        parts = [
            np.bincount(inverse, weights=w, minlength=names.size)
            for c in (0, 1)
            for w in ((truth == c) & (credits == c), truth == c)
        ]
    else:
        parts = [
            np.bincount(inverse, weights=credits, minlength=names.size),
            np.bincount(inverse, minlength=names.size),
        ]
    return names, np.array(parts, dtype=np.float64)


def _score(totals: np.ndarray) -> np.ndarray:
    """The score (a share) of parts summed over (drawn) dialogues (axis 0: the parts)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = totals[0::2] / totals[1::2]
    return np.nanmean(shares, axis=0)


def _draws(n: int) -> np.ndarray:
    """The dialogue bootstrap's draws: the same for every cell over ``n`` dialogues, so that cells of
    two audits over the same dialogues are resampled together."""
    return np.random.default_rng(0).integers(0, n, (BOOTSTRAP, n))


def _interval(point: float, drawn: np.ndarray) -> dict[str, float]:
    """A share and its bootstrap draws as a percent cell with its 95 % interval."""
    low, high = np.percentile(drawn, [2.5, 97.5])
    return {
        "score": round(100 * float(point), 1),
        "low": round(100 * float(low), 1),
        "high": round(100 * float(high), 1),
    }


def score_cell(task: str, credits: np.ndarray, truth: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    """Percent score (balanced accuracy for detection) with a 95 % dialogue-bootstrap interval."""
    names, parts = _dialogue_parts(task, credits, truth, groups)
    return _interval(_score(parts.sum(axis=1)), _score(parts[:, _draws(names.size)].sum(axis=2)))


def paired_difference(task: str, first: tuple, second: tuple) -> dict[str, float]:
    """``first``'s score minus ``second``'s in points, each given as ``(credits, truth, groups)`` over
    the same dialogues, with a 95 % interval from a paired dialogue bootstrap (both sides resampled
    by the same draws)."""
    (names, a), (other, b) = _dialogue_parts(task, *first), _dialogue_parts(task, *second)
    if not np.array_equal(names, other):
        raise ValueError(
            f"a paired difference needs the same dialogues on both sides (here {names.size} and {other.size})"
        )
    draws = _draws(names.size)
    return _interval(
        _score(a.sum(axis=1)) - _score(b.sum(axis=1)),
        _score(a[:, draws].sum(axis=2)) - _score(b[:, draws].sum(axis=2)),
    )


def permuted(
    task: str, instances: list[tuple[np.ndarray, int]], rng: np.random.Generator
) -> list[tuple[np.ndarray, int]]:
    """The random-gold control: the true row of each instance drawn at random; for detection,
    the labels of each unit's three instances (S1, S2, S3, in that order) shuffled among them."""
    if task != "detection":
        return [(rows, int(rng.integers(rows.shape[0]))) for rows, _ in instances]
    labels = np.array([truth for _, truth in instances]).reshape(-1, 3)
    shuffled = np.concatenate([rng.permutation(unit) for unit in labels])
    return [(rows, int(t)) for (rows, _), t in zip(instances, shuffled)]
