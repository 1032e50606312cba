"""Detection labels as codes, checked against the scenario (balanced accuracy's input), pure numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .scenarios import SCENARIOS

#: Detection labels; an integer label is the code here (0 = consistent, 1 = inconsistent).
DETECTION_LABELS = ("consistent", "inconsistent")


def detection_codes(
    predictions: Sequence, references: Sequence, scenario_code: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
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
                raise ValueError(
                    f"instance {i}: {name} {label!r} is not a detection label; expected one of "
                    f"{', '.join(map(repr, DETECTION_LABELS))} (or 0 / 1)"
                )
            codes.append(code[label])
        columns[name] = np.array(codes, dtype=np.int64)
    gold = columns["reference"]
    contradicting = np.flatnonzero(gold != (np.asarray(scenario_code) > 0))
    if contradicting.size:
        i = contradicting[0]
        expected = DETECTION_LABELS[int(scenario_code[i] > 0)]
        raise ValueError(
            f"instance {i}: reference {references[i]!r} contradicts scenario {SCENARIOS[scenario_code[i]]}, which is {expected}"
        )
    return columns["prediction"], gold
