"""Per-instance precision, recall and F1 of predicted turn sets (balanced F1's math) and the checks
of its input, pure numpy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .scenarios import SCENARIOS


def check_turn_sets(
    predictions: Sequence[Iterable[int]], references: Sequence[Iterable[int]], scenario_code: np.ndarray
) -> None:
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
                raise ValueError(
                    f"instance {i}: {name} {list(turns)} has position(s) {', '.join(map(str, below))}; turn positions start at 1"
                )
    for i, (turns, scenario) in enumerate(zip(references, scenario_code, strict=True)):
        if len(set(turns)) != (1 if scenario > 0 else 0):
            rule = "whose gold set is exactly the converted turn" if scenario > 0 else "whose gold set is empty"
            raise ValueError(
                f"instance {i}: reference {list(turns)} contradicts scenario {SCENARIOS[scenario]}, {rule}"
            )


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
