"""The metric math of SpeakerSleuth (paper appendix B.3) and the modules' input checks, in one place.

Pure numpy, values are fractions in [0, 1]. The scorer (``metrics.score``) imports this file; each
``evaluate`` module imports a byte copy of it beside itself, ``metrics/<name>/core.py``, because a
metric published on the Hub is one folder and ``evaluate`` imports only files next to the module.
``tests/test_metrics.py`` fails when a copy differs from this file; after editing it, run
``for d in metrics/*/core.py; do cp metrics/core.py "$d"; done``. Everything is vectorised over
instances; ``grouped_mean`` is also vectorised over bootstrap resamples (a ``(B, n)`` matrix of
instance weights).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

SCENARIOS = ("S1", "S2", "S3")

#: Detection labels; an integer label is the code here (0 = consistent, 1 = inconsistent).
DETECTION_LABELS = ("consistent", "inconsistent")

PAPER_URL = "https://aclanthology.org/2026.acl-long.944/"

CITATION = """\
@inproceedings{speakersleuth2026,
  title     = {SpeakerSleuth: Can Large Audio-Language Models Judge Speaker Consistency across Multi-turn Dialogues?},
  booktitle = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},
  year      = {2026},
  pages     = {20612--20636},
  url       = {https://aclanthology.org/2026.acl-long.944/},
  note      = {arXiv:2601.04029; see the Anthology page for the author list}
}
"""


def balanced(s1, s2, s3):
    """The scenario-balanced score ``1/2 (S1 + (S2 + S3) / 2)``; floats or arrays.

    >>> balanced(1.0, 0.0, 0.0)
    0.5
    >>> balanced(0.8, 0.4, 0.0)
    0.5
    """
    return 0.5 * (s1 + 0.5 * (s2 + s3))


def scenario_codes(scenarios: Iterable[str]) -> np.ndarray:
    """Scenario names as codes 0, 1, 2; raises ``ValueError`` on an unknown name or a scenario
    with no instance (a balanced score needs all three).

    >>> scenario_codes(["S2", "S1", "S3", "S1"]).tolist()
    [1, 0, 2, 0]
    """
    index = {s: i for i, s in enumerate(SCENARIOS)}
    codes = []
    for i, s in enumerate(scenarios):
        if s not in index:
            raise ValueError(f"instance {i}: unknown scenario {s!r}; expected one of {', '.join(SCENARIOS)}")
        codes.append(index[s])
    codes = np.array(codes, dtype=np.int64)
    missing = [s for i, s in enumerate(SCENARIOS) if not (codes == i).any()]
    if missing:
        raise ValueError(f"no instance of scenario {', '.join(missing)}: a balanced score needs S1, S2 and S3")
    return codes


def detection_codes(predictions: Sequence, references: Sequence, scenario_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predicted and gold detection labels as codes 0 (consistent) and 1 (inconsistent).

    Labels are ``DETECTION_LABELS`` or their codes 0 / 1. Raises ``ValueError`` naming the first
    instance with another label, or whose reference contradicts its scenario (``scenario_code``
    from ``scenario_codes``): S1 is consistent, S2 and S3 are inconsistent.

    >>> [c.tolist() for c in detection_codes(["inconsistent", "consistent"], [0, 1], np.array([0, 2]))]
    [[1, 0], [0, 1]]
    >>> detection_codes(["consistent"], ["inconsistent"], np.array([0]))
    Traceback (most recent call last):
    ...
    ValueError: instance 0: reference 'inconsistent' contradicts scenario S1, which is consistent
    """
    code = {label: i for i, label in enumerate(DETECTION_LABELS)} | {0: 0, 1: 1}
    columns = {}
    for name, labels in (("prediction", predictions), ("reference", references)):
        codes = []
        for i, label in enumerate(labels):
            if label not in code:
                raise ValueError(f"instance {i}: {name} {label!r} is not a detection label; expected one of "
                                 f"{', '.join(map(repr, DETECTION_LABELS))} (or 0 / 1)")
            codes.append(code[label])
        columns[name] = np.array(codes, dtype=np.int64)
    gold = columns["reference"]
    contradicting = np.flatnonzero(gold != (np.asarray(scenario_code) > 0))
    if contradicting.size:
        i = contradicting[0]
        expected = DETECTION_LABELS[int(scenario_code[i] > 0)]
        raise ValueError(f"instance {i}: reference {references[i]!r} contradicts scenario {SCENARIOS[scenario_code[i]]}, which is {expected}")
    return columns["prediction"], gold


def check_turn_sets(predictions: Sequence[Iterable[int]], references: Sequence[Iterable[int]], scenario_code: np.ndarray) -> None:
    """Refuse localization input the paper's conventions rule out, naming the first such instance.

    Turn positions are 1-based; the gold set of an S1 instance is empty and that of an S2 or S3
    instance holds exactly the converted turn (``scenario_code`` from ``scenario_codes``).

    >>> check_turn_sets([[], [2]], [[], [2, 2]], np.array([0, 1]))
    >>> check_turn_sets([[0]], [[]], np.array([0]))
    Traceback (most recent call last):
    ...
    ValueError: instance 0: prediction [0] has position(s) 0; turn positions start at 1
    >>> check_turn_sets([[1]], [[1, 3]], np.array([2]))
    Traceback (most recent call last):
    ...
    ValueError: instance 0: reference [1, 3] contradicts scenario S3, whose gold set is exactly the converted turn
    """
    for name, sets in (("prediction", predictions), ("reference", references)):
        for i, turns in enumerate(sets):
            below = sorted({t for t in turns if t < 1})
            if below:
                raise ValueError(f"instance {i}: {name} {list(turns)} has position(s) {', '.join(map(str, below))}; turn positions start at 1")
    for i, (turns, scenario) in enumerate(zip(references, scenario_code, strict=True)):
        if len(set(turns)) != (1 if scenario > 0 else 0):
            rule = "whose gold set is exactly the converted turn" if scenario > 0 else "whose gold set is empty"
            raise ValueError(f"instance {i}: reference {list(turns)} contradicts scenario {SCENARIOS[scenario]}, {rule}")


class MetricModule:
    """Mix-in for a SpeakerSleuth ``evaluate`` module, listed before ``evaluate.Metric``, that takes
    the module's texts and its input features (a function that makes them) as class arguments::

        class Ndcg(MetricModule, evaluate.Metric, description=_DESCRIPTION, inputs=_KWARGS_DESCRIPTION,
                   features=ranking_features):

    It makes ``_info`` from them with the paper's citation and page, sets the class docstring to the
    texts (as ``evaluate``'s ``add_start_docstrings`` does) and refuses a batch without instances
    with a clear ``ValueError`` (``evaluate`` would index its first instance to pick a feature format).
    ``evaluate`` is imported only when ``_info`` runs."""

    def __init_subclass__(cls, *, description: str, inputs: str, features, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._texts = (description, inputs)
        cls._make_features = staticmethod(features)
        cls.__doc__ = description + inputs

    def _info(self):
        import evaluate

        description, inputs = self._texts
        return evaluate.MetricInfo(description=description, citation=CITATION, inputs_description=inputs,
                                   features=self._make_features(), reference_urls=[PAPER_URL])

    def add_batch(self, **columns):
        """Add a batch of instances (keyword arguments only); an empty batch is refused."""
        empty = [name for name, values in columns.items() if values is not None and len(values) == 0]
        if empty:
            raise ValueError(f"no instances to score: {', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty")
        return super().add_batch(**columns)


def prf(num_predicted, num_gold, num_common) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-instance precision, recall and F1 of a predicted set P against a gold set G.

    Takes |P|, |G| and |P ∩ G| (arrays). Conventions of the paper: precision = 0 when |P| = 0,
    recall = 0 when |G| = 0, F1 = 1 when both sets are empty, F1 = 0 when P + R = 0 otherwise.

    >>> p, r, f = prf([0, 1, 0, 2], [0, 1, 1, 1], [0, 1, 0, 0])
    >>> p.tolist(), r.tolist(), f.tolist()
    ([0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0])
    """
    n_p = np.asarray(num_predicted, dtype=np.float64)
    n_g = np.asarray(num_gold, dtype=np.float64)
    n_c = np.asarray(num_common, dtype=np.float64)
    precision = np.divide(n_c, n_p, out=np.zeros_like(n_c), where=n_p > 0)
    recall = np.divide(n_c, n_g, out=np.zeros_like(n_c), where=n_g > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(n_c), where=total > 0)
    f1[(n_p == 0) & (n_g == 0)] = 1.0
    return precision, recall, f1


def set_sizes(predicted: Iterable[Iterable[int]], gold: Iterable[Iterable[int]]) -> tuple[np.ndarray, ...]:
    """|P|, |G| and |P ∩ G| for parallel lists of sets (lists are read as sets).

    >>> [a.tolist() for a in set_sizes([[1, 3], []], [[3], [2]])]
    [[2, 0], [1, 1], [1, 0]]
    """
    sizes = [(len(p), len(g), len(p & g)) for p, g in ((set(p), set(g)) for p, g in zip(predicted, gold, strict=True))]
    arr = np.array(sizes, dtype=np.int64).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def gold_index_of_ranking(predicted: Sequence, gold: Sequence) -> list[int]:
    """For each position of a predicted ranking, the gold rank index (0 = best) of its candidate.

    Raises ``ValueError`` unless ``predicted`` is a permutation of ``gold`` (each candidate once).

    >>> gold_index_of_ranking(["B", "A", "C"], ["A", "C", "B"])
    [2, 0, 1]
    >>> gold_index_of_ranking(["A", "B", "C", "A"], ["A", "B", "C"])
    Traceback (most recent call last):
    ...
    ValueError: ranking ['A', 'B', 'C', 'A'] repeats 'A'; it must be a permutation of ['A', 'B', 'C']
    """
    index = {c: i for i, c in enumerate(gold)}
    if len(index) != len(gold):
        raise ValueError(f"gold ranking {list(gold)} repeats a candidate")
    repeated = [c for c, count in Counter(predicted).items() if count > 1]
    if repeated:
        raise ValueError(f"ranking {list(predicted)} repeats {', '.join(map(repr, repeated))}; it must be a permutation of {list(gold)}")
    if set(predicted) != set(index):
        raise ValueError(f"ranking {list(predicted)} is not a permutation of {list(gold)}")
    return [index[c] for c in predicted]


def ranking_scores(predicted: Sequence[Sequence], gold: Sequence[Sequence], scores: dict) -> dict[str, np.ndarray]:
    """Per-instance values of each ``scores[name](gold_index_matrix)`` over rankings that may
    differ in length.

    Instances are grouped by their number of candidates, so 3-candidate discrimination and the
    4-candidate VC-quality ranking go through the same code. Raises ``ValueError`` naming the
    first instance whose prediction is not a permutation of its gold ranking.

    >>> ranking_scores([["A", "B"], ["y", "x", "z"]], [["A", "B"], ["x", "y", "z"]], {"em": exact_match})
    {'em': array([1., 0.])}
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted rankings for {len(gold)} gold rankings")
    if not len(gold):
        raise ValueError("no rankings to score")
    by_length: dict[int, tuple[list[int], list[list[int]]]] = {}
    for i, (p, g) in enumerate(zip(predicted, gold)):
        try:
            row = gold_index_of_ranking(p, g)
        except ValueError as err:
            raise ValueError(f"instance {i}: {err}") from None
        rows, matrix = by_length.setdefault(len(g), ([], []))
        rows.append(i)
        matrix.append(row)
    out = {name: np.empty(len(gold)) for name in scores}
    for rows, matrix in by_length.values():
        matrix = np.array(matrix, dtype=np.int64)
        for name, score in scores.items():
            out[name][rows] = score(matrix)
    return out


def ndcg(gold_index: np.ndarray, k: int) -> np.ndarray:
    """NDCG@k per instance from an ``(n, C)`` array of gold rank indices at each predicted position.

    Relevance of a candidate = C - 1 - its gold rank index (2, 1, 0 for three candidates), gain
    2^rel - 1, discount log2(i + 1) for position i = 1..k; ``k`` larger than C is read as C.
    A row containing -1 (no ranking given) scores 0.

    >>> ndcg(np.array([[0, 1, 2], [1, 0, 2], [2, 1, 0]]), 2).round(4).tolist()
    [1.0, 0.7967, 0.1738]
    >>> ndcg(np.array([[1, 0, 2]]), 1).round(4).tolist(), ndcg(np.array([[1, 0, 2]]), 9).round(4).tolist()
    ([0.3333], [0.7967])
    """
    gold_index = np.asarray(gold_index, dtype=np.int64)
    if gold_index.ndim != 2:
        raise ValueError(f"expected an (instances, candidates) array, got shape {gold_index.shape}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    n, c = gold_index.shape
    k = min(k, c)
    missing = (gold_index < 0).any(axis=1)
    top = np.where(missing[:, None], c - 1, gold_index[:, :k])
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    gains = np.exp2(c - 1 - top) - 1.0
    ideal = (np.exp2(c - 1 - np.arange(k)) - 1.0) @ discount
    scores = gains @ discount / ideal if ideal > 0 else np.ones(n)
    scores[missing] = 0.0
    return scores


def exact_match(gold_index: np.ndarray) -> np.ndarray:
    """Whether each predicted ranking equals the gold ranking (rows with -1 never match).

    >>> exact_match(np.array([[0, 1, 2], [0, 2, 1], [-1, -1, -1]])).tolist()
    [True, False, False]
    """
    gold_index = np.asarray(gold_index, dtype=np.int64)
    return (gold_index == np.arange(gold_index.shape[1])).all(axis=1)


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
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    if weights is None:
        sums = np.bincount(groups, weights=values, minlength=num_groups)
        totals = np.bincount(groups, minlength=num_groups).astype(np.float64)
    else:
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


def ranking_features() -> list:
    """Input features of the ranking metrics: rankings of string labels or of integer ids."""
    import datasets

    return [
        datasets.Features({
            "predictions": datasets.Sequence(datasets.Value(dtype)),
            "references": datasets.Sequence(datasets.Value(dtype)),
        })
        for dtype in ("string", "int64")
    ]
