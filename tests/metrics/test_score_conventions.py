"""The scorer's conventions checked against hand-computed values, and the distribution of the
bootstrap's resample counts (``core.resample_counts``), which the plain-loop references of
``tests/metrics/test_score.py`` rely on, checked against scipy."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from scipy import stats

from speakersleuth.metrics import core
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import parse_submission
from tests.support.scoring_fixtures import synthetic_gold


def _localization_scores(gold, skip: set[str]) -> dict:
    lines = [
        {"task": "localization", "id": rid, "prediction": row["inconsistent_turns"]}
        for rid, row in gold.tasks["localization"].items()
        if rid not in skip
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return score_submission(parse_submission(data, gold), gold, n_bootstrap=0)["localization"]


def test_an_unanswered_s1_localization_instance_scores_f1_0_not_1():
    """Two dialogues, every localization instance answered right but one S1: the S1 that answered
    [] scores F1 1 (both sets empty), the unanswered one 0, so S1's F1 is (1 + 0) / 2."""
    gold = synthetic_gold(2, random.Random(0))
    s1 = sorted(rid for rid, row in gold.tasks["localization"].items() if row["scenario"] == "S1")
    assert len(s1) == 2

    all_answered = _localization_scores(gold, set())
    assert all_answered["f1"] == {"S1": 100.0, "S2": 100.0, "S3": 100.0} and all_answered["balanced_f1"] == 100.0

    loc = _localization_scores(gold, {s1[0]})
    assert (loc["answered"], loc["instances"]) == (5, 6)
    assert loc["f1"] == {"S1": 50.0, "S2": 100.0, "S3": 100.0}
    assert loc["precision"]["S1"] == loc["recall"]["S1"] == 0.0  # |P| = 0 and |G| = 0 give 0 by convention
    assert loc["balanced_f1"] == 75.0  # 1/2 (50 + (100 + 100) / 2)
    assert loc["paired_accuracy"] == 50.0  # the dialogue with the unanswered S1 is not all right


@pytest.mark.parametrize("num_units", [1, 7, 40])
def test_resample_counts_are_multinomial_draws_with_replacement(num_units):
    """Each resample draws ``num_units`` units uniformly with replacement: a row sums to n, the count
    of one unit is Binomial(n, 1/n) (chi-square over all cells pooled), and the units are exchangeable."""
    n_bootstrap = 4000
    counts = core.resample_counts(num_units, n_bootstrap, seed=123)
    assert counts.shape == (n_bootstrap, num_units) and counts.dtype.kind == "i"
    assert (counts >= 0).all() and (counts.sum(axis=1) == num_units).all()
    if num_units == 1:
        assert (counts == 1).all()
        return
    binom = stats.binom(num_units, 1 / num_units)
    cells = counts.ravel()
    top = 4  # counts 0..3 and ">= 4" as the last bin
    observed = np.array([(cells == k).sum() for k in range(top)] + [(cells >= top).sum()])
    expected = cells.size * np.array([binom.pmf(k) for k in range(top)] + [binom.sf(top - 1)])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # every unit is drawn as often on average (one unit's total over resamples ~ n_bootstrap)
    totals = counts.sum(axis=0)
    z = (totals - n_bootstrap) / np.sqrt(n_bootstrap * binom.var())
    assert np.abs(z).max() < 4.5
    # two units' counts in one resample are negatively correlated, as in a multinomial: -1/(n-1)
    corr = np.corrcoef(counts[:, 0], counts[:, 1])[0, 1]
    assert corr == pytest.approx(-1 / (num_units - 1), abs=0.06)


def test_resample_counts_are_seeded_and_resamples_differ():
    a, b, c = (core.resample_counts(30, 50, seed) for seed in (5, 5, 6))
    assert (a == b).all() and not (a == c).all()
    assert len({row.tobytes() for row in a}) == 50  # no two resamples alike
