"""SpeakerSleuth's scenarios and the scenario-balanced score (paper appendix B.3), pure numpy.

The two scenario-balanced metrics use it: ``metrics/balanced_accuracy/scenarios.py`` and
``metrics/balanced_f1/scenarios.py`` are one file in two folders (``tests/metrics/test_metrics.py`` fails
when they differ), because ``evaluate`` loads a metric folder alone and imports only the files beside
its module. The project's scorer imports it through ``metrics.core``. Values are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

SCENARIOS = ("S1", "S2", "S3")

PAPER_URL = "https://aclanthology.org/2026.acl-long.944/"

#: The paper's BibTeX entry on one line (the metric card lays it out).
CITATION = "@inproceedings{lee2026speakersleuth, title = {SpeakerSleuth: Can Large Audio-Language Models Judge Speaker Consistency across Multi-turn Dialogues?}, author = {Lee, Jonggeun and Pyo, Junseong and Seo, Gyuhyeon and Jo, Yohan}, booktitle = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)}, year = {2026}, pages = {20612--20636}, url = {https://aclanthology.org/2026.acl-long.944/}, eprint = {2601.04029}, archivePrefix = {arXiv} }"


def metric_info(description: str, inputs_description: str, features: list):
    """The ``evaluate.MetricInfo`` of a SpeakerSleuth metric: its own texts and features, the paper's citation and page."""
    import evaluate

    return evaluate.MetricInfo(description, CITATION, features, inputs_description, reference_urls=[PAPER_URL])


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


def group_means(values, groups, num_groups: int) -> np.ndarray:
    """Mean of ``values`` within each group ``0..num_groups-1``; NaN for an empty group.

    >>> group_means([1, 0, 1, 1], [0, 0, 1, 1], 3).tolist()
    [0.5, 1.0, nan]
    """
    groups = np.asarray(groups, dtype=np.int64)
    sums = np.bincount(groups, weights=np.asarray(values, dtype=np.float64), minlength=num_groups)
    totals = np.bincount(groups, minlength=num_groups).astype(np.float64)
    return np.divide(sums, totals, out=np.full_like(sums, np.nan), where=totals > 0)


def refuse_empty(columns: dict) -> None:
    """Refuse a batch without instances, naming its empty columns (``evaluate`` would index their first instance)."""
    empty = [name for name, values in columns.items() if values is not None and len(values) == 0]
    if empty:
        raise ValueError(f"no instances to score: {', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty")
