"""Scenario-balanced F1 of SpeakerSleuth localization, as an ``evaluate`` metric module.

The folder stands alone, as a metric repo on the Hub does: the math is in ``scenarios.py`` and ``localization.py`` beside this
file (pure numpy), which the project's scorer imports too. Load the folder by its path::

    evaluate.load("path/to/balanced_f1")
"""

import datasets
import evaluate

from .localization import check_turn_sets, prf, set_sizes
from .scenarios import SCENARIOS, balanced, group_means, metric_info, refuse_empty, scenario_codes

_DESCRIPTION = """\
Localization scores of SpeakerSleuth: for each instance, the predicted set P of inconsistent
target turns is compared with the gold set G (empty for S1, the converted turn for S2 and S3):
precision = |P∩G|/|P|, recall = |P∩G|/|G|, F1 = 2PR/(P+R), with the paper's conventions for empty
sets: precision = 0 when |P| = 0, recall = 0 when |G| = 0, F1 = 1 when both are empty, and F1 = 0
when P + R = 0 otherwise. Precision, recall and F1 are macro-averaged over the instances of each
scenario, and Bal F1 = 1/2 (F1_S1 + (F1_S2 + F1_S3) / 2).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `int`): the predicted inconsistent turn positions of each
        instance, 1-based (read as a set; an empty list predicts "all consistent").
    references (`list` of `list` of `int`): the gold inconsistent turn positions of each instance:
        empty for S1, exactly the converted turn for S2 and S3.
    scenarios (`list` of `str`): the scenario of each instance, "S1", "S2" or "S3"; every
        scenario needs at least one instance.
    A position below 1, a gold set against its scenario, or empty input raises `ValueError`.
Returns:
    precision_S1, precision_S2, precision_S3 (`float` in [0, 1]): macro precision per scenario.
    recall_S1, recall_S2, recall_S3 (`float` in [0, 1]): macro recall per scenario (recall_S1 is
        always 0 since S1 has no gold turn).
    f1_S1, f1_S2, f1_S3 (`float` in [0, 1]): macro F1 per scenario (f1_S1 is the share of S1
        instances with an empty prediction).
    balanced_f1 (`float` in [0, 1]): 1/2 (f1_S1 + (f1_S2 + f1_S3) / 2); higher is better.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("metrics/balanced_f1")
    >>> results = metric.compute(
    ...     predictions=[[], [2], [1, 3], []],
    ...     references=[[], [2], [3], [4]],
    ...     scenarios=["S1", "S2", "S3", "S3"],
    ... )
    >>> print({k: round(v, 4) for k, v in results.items()})  # doctest: +NORMALIZE_WHITESPACE
    {'precision_S1': 0.0, 'precision_S2': 1.0, 'precision_S3': 0.25, 'recall_S1': 0.0, 'recall_S2': 1.0,
     'recall_S3': 0.5, 'f1_S1': 1.0, 'f1_S2': 1.0, 'f1_S3': 0.3333, 'balanced_f1': 0.8333}
"""


def _features() -> datasets.Features:
    """Sets of 1-based turn positions, with the scenario of each instance."""
    turns = datasets.Sequence(datasets.Value("int32"))
    return datasets.Features({"predictions": turns, "references": turns, "scenarios": datasets.Value("string")})


class BalancedF1(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, _features())

    def _compute(self, predictions, references, scenarios):
        codes = scenario_codes(scenarios)
        check_turn_sets(predictions, references, codes)
        scores = prf(*set_sizes(predictions, references))
        results = {}
        for name, values in zip(("precision", "recall", "f1"), scores):
            means = group_means(values, codes, len(SCENARIOS))
            results.update({f"{name}_{s}": float(m) for s, m in zip(SCENARIOS, means)})
            if name == "f1":
                results["balanced_f1"] = float(balanced(*means))
        return results

    def add_batch(self, **columns):
        """Add a batch of instances (keyword arguments only); an empty batch is refused."""
        refuse_empty(columns)
        return super().add_batch(**columns)
