"""NDCG@k of candidate rankings (SpeakerSleuth discrimination), as an ``evaluate`` metric module.

The folder stands alone, as a metric repo on the Hub does: the math is in ``rankings.py`` and ``discounted_gain.py`` beside this
file (pure numpy), which the project's scorer imports too. Load the folder by its path::

    evaluate.load("path/to/ndcg")
"""

from functools import partial

import evaluate
import numpy as np

from .discounted_gain import ndcg
from .rankings import metric_info, ranking_features, ranking_scores, refuse_empty

_DESCRIPTION = """\
Normalised discounted cumulative gain of a predicted ranking of candidates against a gold ranking
(best first). With C candidates, the candidate at gold rank index j (0 = best) has relevance
C - 1 - j (2, 1, 0 for SpeakerSleuth's three candidates: original > similar speaker > gender
switch), gain 2^rel - 1, and the candidate at predicted position i = 1..k is discounted by
log2(i + 1); NDCG@k = DCG@k / IDCG@k, averaged over instances. Any number of candidates works
(3 for discrimination, 4 for the paper's VC-quality ranking), also mixed within one call; a k
larger than an instance's number of candidates is read as that number.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `str` or `int`): the predicted ranking of each instance,
        best first; it must be a permutation of the instance's gold ranking.
    references (`list` of `list` of `str` or `int`): the gold ranking of each instance, best first;
        empty input raises `ValueError`.
    k (`int`, default 2): the cut-off.
    every_k (`bool`, default False): also return NDCG@1 .. NDCG@(k-1).
Returns:
    ndcg@k (`float` in [0, 1]): mean NDCG@k (plus ndcg@1 .. with `every_k`); higher is better.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("metrics/ndcg")
    >>> results = metric.compute(
    ...     predictions=[["B", "A", "C"], ["A", "C", "B"]],
    ...     references=[["B", "A", "C"], ["C", "A", "B"]],
    ...     k=2,
    ...     every_k=True,
    ... )
    >>> print({k: round(v, 4) for k, v in results.items()})
    {'ndcg@1': 0.6667, 'ndcg@2': 0.8984}

    Four candidates (a VC-quality ranking), with k beyond the list length:
    >>> results = metric.compute(predictions=[[1, 2, 4, 3]], references=[[1, 2, 3, 4]], k=10)
    >>> print(round(results["ndcg@10"], 4))
    0.9926
"""


class Ndcg(evaluate.Metric):
    def _info(self):
        return metric_info(_DESCRIPTION, _KWARGS_DESCRIPTION, ranking_features())

    def _compute(self, predictions, references, k=2, every_k=False):
        cut_offs = range(1, k + 1) if every_k else [k]
        scores = ranking_scores(predictions, references, {f"ndcg@{j}": partial(ndcg, k=j) for j in cut_offs})
        return {name: float(np.mean(values)) for name, values in scores.items()}

    def add_batch(self, **columns):
        """Add a batch of instances (keyword arguments only); an empty batch is refused."""
        refuse_empty(columns)
        return super().add_batch(**columns)
