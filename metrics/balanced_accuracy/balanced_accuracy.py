"""Scenario-balanced accuracy of SpeakerSleuth detection, as an ``evaluate`` metric module.

The folder stands alone, as a metric repo on the Hub does: the math is in ``scenarios.py`` and ``detection.py`` beside this
file (pure numpy), which the project's scorer imports too. Load the folder by its path::

    evaluate.load("path/to/balanced_accuracy")
"""

import datasets
import evaluate

from .detection import detection_codes
from .scenarios import SCENARIOS, balanced, group_means, metric_info, refuse_empty, scenario_codes

_DESCRIPTION = """\
Balanced accuracy of a speaker-consistency detector over the three SpeakerSleuth scenarios:
S1 (fully consistent), S2 (one turn converted to an opposite-gender voice) and S3 (one turn
converted to the most similar voice). Accuracy is computed within each scenario, then
Bal = 1/2 (Acc_S1 + (Acc_S2 + Acc_S3) / 2), so the consistent class and the inconsistent class
weigh the same: a judge that always answers "consistent" (or always "inconsistent") scores 0.5.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str` or `int`): the predicted label of each instance, "consistent" /
        "inconsistent" or its code 0 / 1; any other label raises `ValueError`.
    references (`list` of `str` or `int`): the gold label of each instance, same type; it must
        match the scenario ("consistent" for S1, "inconsistent" for S2 and S3).
    scenarios (`list` of `str`): the scenario of each instance, "S1", "S2" or "S3"; every
        scenario needs at least one instance (empty input raises `ValueError`).
Returns:
    accuracy_S1, accuracy_S2, accuracy_S3 (`float` in [0, 1]): accuracy within each scenario.
    balanced_accuracy (`float` in [0, 1]): 1/2 (accuracy_S1 + (accuracy_S2 + accuracy_S3) / 2);
        higher is better.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("metrics/balanced_accuracy")
    >>> results = metric.compute(
    ...     predictions=["consistent", "consistent", "inconsistent", "consistent"],
    ...     references=["consistent", "inconsistent", "inconsistent", "inconsistent"],
    ...     scenarios=["S1", "S2", "S2", "S3"],
    ... )
    >>> print(results)
    {'accuracy_S1': 1.0, 'accuracy_S2': 0.5, 'accuracy_S3': 0.0, 'balanced_accuracy': 0.625}

    A judge that always answers "consistent" gets 0.5, however the scenarios are balanced:
    >>> results = metric.compute(
    ...     predictions=[0, 0, 0, 0, 0], references=[0, 0, 0, 1, 1], scenarios=["S1", "S1", "S1", "S2", "S3"]
    ... )
    >>> print(results["balanced_accuracy"])
    0.5
"""


def _features() -> list:
    """Labels as strings or as their codes, with the scenario of each instance."""
    return [
        datasets.Features(
            {
                "predictions": datasets.Value(dtype),
                "references": datasets.Value(dtype),
                "scenarios": datasets.Value("string"),
            }
        )
        for dtype in ("string", "int64")
    ]


class BalancedAccuracy(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, _features())

    def _compute(self, predictions, references, scenarios):
        codes = scenario_codes(scenarios)
        predicted, gold = detection_codes(predictions, references, codes)
        accuracy = group_means(predicted == gold, codes, len(SCENARIOS))
        return {
            **{f"accuracy_{s}": float(a) for s, a in zip(SCENARIOS, accuracy)},
            "balanced_accuracy": float(balanced(*accuracy)),
        }

    def add_batch(self, **columns):
        """Add a batch of instances (keyword arguments only); an empty batch is refused."""
        refuse_empty(columns)
        return super().add_batch(**columns)
