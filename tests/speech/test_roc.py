"""``speech.verification``, the one AUROC/EER of the project (scorer and speaker-pool card), against
scikit-learn directly: ``roc_curve`` with ``sample_weight`` (its default ``drop_intermediate``),
``auc`` and ``roc_auc_score``, the EER read off sklearn's curve by hand. Random inputs with ties,
zero weights and integer bootstrap weights, and the degenerate cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import auc, roc_auc_score, roc_curve

from speakersleuth.speech.verification import equal_error_rate, roc_summaries, roc_summary


def reference(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """AUROC and EER of sklearn's weighted ROC curve: the EER at the first point where
    fnr <= fpr, linearly interpolated with the point before; NaN when a class weighs 0."""
    if not (weights[labels == 1].sum() > 0 and weights[labels == 0].sum() > 0):
        return np.nan, np.nan
    fpr, tpr, _ = roc_curve(labels, scores, sample_weight=weights)
    fnr = 1.0 - tpr
    k = next(j for j in range(len(fpr)) if fnr[j] <= fpr[j])
    a, b = fnr[k - 1] - fpr[k - 1], fnr[k] - fpr[k]
    eer = fpr[k - 1] + a / (a - b) * (fpr[k] - fpr[k - 1])
    area = auc(fpr, tpr)
    assert area == pytest.approx(roc_auc_score(labels, scores, sample_weight=weights), abs=1e-12)
    return area, eer


def random_case(rng: np.random.Generator, n: int):
    """Labels, scores with many ties (few distinct values, or ranks as the scorer makes them) and
    integer weights with zeros (bootstrap counts)."""
    labels = rng.integers(0, 2, n)
    kind = rng.integers(3)
    if kind == 0:
        scores = rng.integers(0, max(1, n // 3), n).astype(np.float64)  # heavy ties
    elif kind == 1:
        scores = rng.normal(size=n).round(1)  # some ties
    else:
        from scipy.stats import rankdata

        scores = rankdata(rng.integers(0, 5, n))  # tied ranks, as metrics.score passes them
    return labels, scores


@pytest.mark.parametrize("seed", range(40))
def test_matches_sklearn_on_random_ties_and_bootstrap_weights(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    labels, scores = random_case(rng, n)
    weights = rng.multinomial(n, np.ones(n) / n, size=25).astype(np.float64)  # integer, many zeros
    weights[0] = 1.0
    weights[1] = rng.random(n) * (rng.random(n) < 0.7)  # fractional weights, zeros among them
    aurocs, eers = roc_summaries(labels, scores, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.array([reference(labels, scores, w) for w in weights])
    np.testing.assert_allclose(aurocs, expected[:, 0], rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(eers, expected[:, 1], rtol=0, atol=1e-12, equal_nan=True)
    assert roc_summary(labels, scores) == pytest.approx(tuple(expected[0]), abs=1e-12, nan_ok=True)


def test_a_resample_without_one_class_is_nan_and_the_others_are_not():
    labels = np.array([0, 0, 1, 1])
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    weights = np.array([[1, 1, 0, 0], [0, 0, 2, 1], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=np.float64)
    aurocs, eers = roc_summaries(labels, scores, weights)
    assert np.isnan(aurocs[[0, 1, 3]]).all() and np.isnan(eers[[0, 1, 3]]).all()
    assert (aurocs[2], eers[2]) == pytest.approx((0.75, 0.5))
    assert np.isnan(roc_summary(np.ones(3, dtype=int), np.arange(3.0))).all()
    assert np.isnan(roc_summary(np.zeros(0, dtype=int), np.zeros(0))).all()


def test_all_tied_scores_give_a_half():
    rng = np.random.default_rng(0)
    labels = np.array([0, 1] * 10)
    weights = rng.multinomial(20, np.ones(20) / 20, size=30).astype(np.float64)
    aurocs, eers = roc_summaries(labels, np.full(20, 3.0), weights)
    valid = (weights[:, labels == 1].sum(1) > 0) & (weights[:, labels == 0].sum(1) > 0)
    np.testing.assert_allclose(aurocs[valid], 0.5)
    np.testing.assert_allclose(eers[valid], 0.5)


def test_perfect_and_reversed_scores():
    labels = np.array([0, 0, 1, 1])
    assert roc_summary(labels, np.array([1.0, 2.0, 3.0, 4.0])) == (1.0, 0.0)
    assert roc_summary(labels, np.array([4.0, 3.0, 2.0, 1.0])) == (0.0, 1.0)


def test_the_eer_is_interpolated_between_curve_points():
    # two positives, one negative between them: the curve (0,0) (0,.5) (1,.5) (1,1); fnr = fpr at 0.5
    assert roc_summary(np.array([1, 0, 1]), np.array([3.0, 2.0, 1.0])) == (0.5, 0.5)
    # three positives, one negative above one of them: fnr - fpr crosses 0 between (0, 2/3) and (1, 2/3)
    labels, scores = np.array([1, 1, 0, 1]), np.array([4.0, 3.0, 2.0, 1.0])
    assert (
        roc_summary(labels, scores)[1]
        == pytest.approx(reference(labels, scores, np.ones(4))[1])
        == pytest.approx(1 / 3)
    )


def test_equal_error_rate_of_speaker_trials():
    rng = np.random.default_rng(3)
    for _ in range(20):
        same, different = (
            rng.normal(1, 1, rng.integers(1, 30)).round(1),
            rng.normal(0, 1, rng.integers(1, 30)).round(1),
        )
        labels = np.r_[np.ones(len(same), int), np.zeros(len(different), int)]
        expected = 100 * reference(labels, np.r_[same, different], np.ones(len(labels)))[1]
        assert equal_error_rate(same, different) == pytest.approx(expected, abs=1e-10)
    with pytest.raises(ValueError, match="same- and different-speaker trials; got 0 and 1"):
        equal_error_rate([], [0.5])


def test_the_scorer_and_the_speaker_bank_use_this_one_definition():
    import speakersleuth.builder_scripts.speaker_bank as bank
    import speakersleuth.metrics.score as score

    assert bank.equal_error_rate is equal_error_rate
    assert score.roc_summary is roc_summary and score.roc_summaries is roc_summaries


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="do not match"):
        roc_summaries(np.array([0, 1]), np.array([0.1, 0.2]), np.ones((3, 4)))


def test_a_full_size_bootstrap_matches_sklearn_resample_by_resample():
    """The scorer's case: 1,818 instances of 606 dialogues, tied ranks, 200 dialogue resamples."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(7)
    dialogue = np.repeat(np.arange(606), 3)
    labels = np.tile([0, 1, 1], 606)
    scores = rankdata((rng.random(1818) + 0.3 * labels).round(2))
    counts = rng.multinomial(606, np.ones(606) / 606, size=200).astype(np.float64)
    aurocs, eers = roc_summaries(labels, scores, counts, dialogue)  # as metrics.score calls it
    expected = np.array([reference(labels, scores, w) for w in counts[:, dialogue]])
    np.testing.assert_allclose(aurocs, expected[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(eers, expected[:, 1], rtol=0, atol=1e-12)


def test_group_weights_equal_the_instance_weights_they_stand_for():
    rng = np.random.default_rng(11)
    for _ in range(10):
        n, g = int(rng.integers(2, 50)), int(rng.integers(1, 20))
        labels, scores = random_case(rng, n)
        groups = rng.integers(0, g, n)
        counts = rng.multinomial(g, np.ones(g) / g, size=15).astype(np.float64)
        by_group = roc_summaries(labels, scores, counts, groups)
        np.testing.assert_allclose(
            by_group, roc_summaries(labels, scores, counts[:, groups]), rtol=0, atol=1e-12, equal_nan=True
        )
    with pytest.raises(ValueError, match="do not match"):
        roc_summaries(np.array([0, 1]), np.array([0.1, 0.2]), np.ones((3, 2)), np.array([0, 2]))
