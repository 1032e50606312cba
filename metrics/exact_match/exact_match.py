"""Exact match of candidate rankings (SpeakerSleuth discrimination), as an ``evaluate`` module.

The folder stands alone, as a metric repo on the Hub does: the math is in ``rankings.py`` and ``matching.py`` beside this
file (pure numpy), which the project's scorer imports too. Load the folder by its path::

    evaluate.load("path/to/exact_match")
"""

import evaluate
import numpy as np

from .matching import exact_match
from .rankings import metric_info, ranking_features, ranking_scores, refuse_empty

_DESCRIPTION = """\
The share of instances whose whole predicted ranking of candidates equals the gold ranking. For
SpeakerSleuth's three discrimination candidates the gold order is original > similar speaker >
gender switch; any number of candidates works (e.g. 4 for the VC-quality ranking).
Unlike the generic string `exact_match` metric, inputs are rankings: each prediction must be a
permutation of its gold ranking.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str` or `int`): the predicted ranking of each instance,
        best first; a permutation of the instance's gold ranking.
    references (`list` of `list` of `str` or `int`): the gold ranking of each instance, best first;
        empty input raises `ValueError`.
Returns:
    exact_match (`float` in [0, 1]): the share of rankings equal to gold; higher is better.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("metrics/exact_match")
    >>> results = metric.compute(
    ...     predictions=[["B", "A", "C"], ["A", "C", "B"], ["D", "C", "B", "A"]],
    ...     references=[["B", "A", "C"], ["C", "A", "B"], ["D", "C", "B", "A"]],
    ... )
    >>> print(results)
    {'exact_match': 0.6666666666666666}
"""


class ExactMatch(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ranking_features())

    def _compute(self, predictions, references):
        scores = ranking_scores(predictions, references, {"exact_match": exact_match})
        return {"exact_match": float(np.mean(scores["exact_match"]))}

    def add_batch(self, **columns):
        """Add a batch of instances (keyword arguments only); an empty batch is refused."""
        refuse_empty(columns)
        return super().add_batch(**columns)
