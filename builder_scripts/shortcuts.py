"""Shortcut audit: can anything but the voice tell the converted turn?

Every clip is described by non-speaker features (``FEATURES``, grouped in ``FAMILIES``: band edge,
spectrum, compressibility, activity, quantisation, clicks, noise floor, level, duration, DC), all
measured on the clip's 16-bit samples as published. A classifier over all of them together (by
default logistic regression on standardised features; ``model="boosting"``: scikit-learn's
histogram gradient boosting, an independent check) is trained and scored with dialogue-grouped
5-fold cross-validation, per task:

- detection: is an instance (its N target turns) consistent or not; balanced accuracy, chance 50 %.
  An instance is described by, per feature, the largest and the smallest deviation of a turn from
  the instance's median turn;
- localization (S2, S3, both): each turn of an inconsistent instance is scored (its features and
  their deviation from the instance's median turn) and the instance's best-scored turn is the
  guess; accuracy, chance 1/N;
- discrimination: each of the three candidates is scored (its features, their deviation from the
  context turns' median and from the candidates' mean) and the best-scored one is the guess for
  the original; accuracy, chance 1/3.

A tie between the best-scored turns shares the credit, so identical clips score chance. Every
cell has a 95 % interval from a dialogue bootstrap, and a random-gold control: the same
classifier trained and scored with the labels permuted within each instance (the converted turn,
the original candidate, which of a unit's three instances is consistent; ``CONTROL_DRAWS``
permutations pooled by default), which must come out at chance. ``warnings()`` names every cell
whose interval lies above chance, with the family that scores highest alone (each family is scored
alone for those cells: the breakdown that names what leaks). Where two VC backends or more
converted the variant's units, it also gives the same fit's score on each backend's units
(``by_backend``); for discrimination, the cell fitted on each part of the candidates' rows alone
(``READINGS``: against the context turns, or among the three candidates, which say the same words).

Beside the classifier, ``ArtifactRates`` counts audible resynthesis artefacts per scenario
(S1: the original candidate, S2/S3: the converted ones; ``builder_scripts/artifacts.py``): the
share of clips with an impulse (click), the share with an exact-zero run inside the speech, and
the median harmonics-to-noise ratio. A converted candidate should carry them no more often than
the original (issue 16: S2's impulse rate within 1.5 x of S1's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from .artifacts import harmonicity, impulse_windows, zero_runs
from .audit_features import NON_SPEAKER, FeatureSet

#: cross-validation folds (groups: dialogues) and bootstrap resamples of the intervals
FOLDS = 5
BOOTSTRAP = 1000
#: random golds pooled in the control by default (one draw on a small build lands far from chance too often)
CONTROL_DRAWS = 20
TASKS = ("detection", "localization_S2", "localization_S3", "localization", "discrimination")
TASK_LABELS = {
    "detection": "detection (balanced accuracy)",
    "localization_S2": "localization, S2",
    "localization_S3": "localization, S3",
    "localization": "localization, S2 + S3",
    "discrimination": "discrimination (pick the original)",
}


# ----------------------------------------------------------------------------- task tables


def _relative(rows: np.ndarray, context: np.ndarray) -> np.ndarray:
    """Each row's features and their deviation from the context rows' median."""
    return np.hstack([rows, rows - np.median(context, axis=0)])


def task_tables(
    turns: np.ndarray, k: int, converted: dict[str, np.ndarray]
) -> dict[str, list[tuple[np.ndarray, int]]]:
    """One unit's rows for each task: ``{task: [(feature rows, index of the true row)]}`` (detection:
    one row per instance, the truth 1 when inconsistent). ``turns``: N x F original turns, ``k``:
    the converted turn (0-based), ``converted``: S2/S3 -> F features of the converted turn k."""
    tables: dict[str, list] = {task: [] for task in TASKS}
    for scenario in ("S1", "S2", "S3"):
        instance = turns.copy()
        if scenario != "S1":
            instance[k] = converted[scenario]
        deviation = instance - np.median(instance, axis=0)
        tables["detection"].append(
            (np.hstack([deviation.max(axis=0), deviation.min(axis=0)])[None], int(scenario != "S1"))
        )
        if scenario != "S1":
            rows = _relative(instance, instance)
            tables[f"localization_{scenario}"].append((rows, k))
            tables["localization"].append((rows, k))
    candidates = np.stack([turns[k], converted["S2"], converted["S3"]])
    context = np.delete(turns, k, axis=0)
    rows = np.hstack([_relative(candidates, context), candidates - candidates.mean(axis=0)])
    tables["discrimination"].append((rows, 0))
    return tables


#: discrimination fitted on one part of each candidate's row (which copies of the features, in
#: ``task_tables``' order: the candidate's own, minus the context turns' median, minus the
#: candidates' mean). Each part sets what a model can learn from: the candidates against the
#: voice's other turns (other words), or against each other (the same words, which cancel, so a
#: small shift both converted candidates share is learnt). A linear model ranks the candidates of
#: an instance by a weighted sum of their own features under any part, only its weights differ;
#: a nonlinear one can also score closeness to the context (a voice the context has).
READINGS = {"against the context": (0, 1), "among the candidates": (2,)}


def _columns(
    task: str, names: list[str], family: list[str] | None, copies: tuple[int, ...] | None = None
) -> np.ndarray:
    """Column indices of ``family``'s features in a task's rows (all columns when None), in the
    ``copies`` of them given (all when None)."""
    count = 3 if task == "discrimination" else 2
    wanted = np.array([family is None or n in family for n in names])
    kept = np.repeat([copies is None or c in copies for c in range(count)], len(names))
    return np.flatnonzero(np.tile(wanted, count) & kept)


def make_model(model: str):
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if model == "logistic":
        return make_pipeline(
            StandardScaler(), LogisticRegression(C=1.0, solver="liblinear", class_weight="balanced", random_state=0)
        )
    if model == "boosting":
        return HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, class_weight="balanced", random_state=0)
    raise ValueError(f"unknown shortcut-audit model {model!r}; use 'logistic' or 'boosting'")


def _credits(scores: np.ndarray, truth: int) -> float:
    best = np.flatnonzero(np.isclose(scores, scores.max(), rtol=1e-9, atol=1e-12))
    return 1.0 / best.size if truth in best else 0.0


def _folds(groups: np.ndarray):
    from sklearn.model_selection import GroupKFold

    n = min(FOLDS, np.unique(groups).size)
    return GroupKFold(n_splits=n).split(groups, groups=groups) if n >= 2 else []


def cross_validated(task: str, instances: list[tuple[np.ndarray, int]], groups: np.ndarray, model: str) -> np.ndarray:
    """Per instance, the credit of the cross-validated guess (detection: 1/0 guess of the class)."""
    sizes = np.array([rows.shape[0] for rows, _ in instances])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    X = np.vstack([rows for rows, _ in instances])
    if task == "detection":
        y = np.array([truth for _, truth in instances])
    else:
        y = np.concatenate([np.arange(size) == truth for size, (_, truth) in zip(sizes, instances)]).astype(int)
    out = np.full(len(instances), np.nan)
    with threadpool_limits(limits=1):  # small fits: threads only contend (OpenMP in boosting)
        _fit_folds(task, X, y, starts, instances, groups, model, out)
    return out


def _fit_folds(task, X, y, starts, instances, groups, model, out) -> None:
    for train, test in _folds(groups):
        rows_train = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in train])
        if np.unique(y[rows_train]).size < 2:
            continue
        fitted = make_model(model).fit(X[rows_train], y[rows_train])
        rows_test = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in test])
        scores = dict(zip(rows_test, fitted.predict_proba(X[rows_test])[:, 1]))
        for i in test:
            mine = np.array([scores[r] for r in range(starts[i], starts[i + 1])])
            out[i] = float(mine[0] >= 0.5) if task == "detection" else _credits(mine, instances[i][1])


def _dialogue_parts(
    task: str, credits: np.ndarray, truth: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The dialogues (sorted) and, per dialogue, the sums a score is made of: (correct, count)
    pairs, one pair per class for detection (balanced accuracy), one pair otherwise."""
    names, inverse = np.unique(groups, return_inverse=True)
    if task == "detection":  # per dialogue: correct and all instances of each class
        parts = [
            np.bincount(inverse, weights=w, minlength=names.size)
            for c in (0, 1)
            for w in ((truth == c) & (credits == c), truth == c)
        ]
    else:
        parts = [
            np.bincount(inverse, weights=credits, minlength=names.size),
            np.bincount(inverse, minlength=names.size),
        ]
    return names, np.array(parts, dtype=np.float64)


def _score(totals: np.ndarray) -> np.ndarray:
    """The score (a share) of parts summed over (drawn) dialogues (axis 0: the parts)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = totals[0::2] / totals[1::2]
    return np.nanmean(shares, axis=0)


def _draws(n: int) -> np.ndarray:
    """The dialogue bootstrap's draws: the same for every cell over ``n`` dialogues, so that cells of
    two audits over the same dialogues are resampled together."""
    return np.random.default_rng(0).integers(0, n, (BOOTSTRAP, n))


def _interval(point: float, drawn: np.ndarray) -> dict[str, float]:
    """A share and its bootstrap draws as a percent cell with its 95 % interval."""
    low, high = np.percentile(drawn, [2.5, 97.5])
    return {
        "score": round(100 * float(point), 1),
        "low": round(100 * float(low), 1),
        "high": round(100 * float(high), 1),
    }


def score_cell(task: str, credits: np.ndarray, truth: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    """Percent score (balanced accuracy for detection) with a 95 % dialogue-bootstrap interval."""
    names, parts = _dialogue_parts(task, credits, truth, groups)
    return _interval(_score(parts.sum(axis=1)), _score(parts[:, _draws(names.size)].sum(axis=2)))


def paired_difference(task: str, first: tuple, second: tuple) -> dict[str, float]:
    """``first``'s score minus ``second``'s in points, each given as ``(credits, truth, groups)`` over
    the same dialogues, with a 95 % interval from a paired dialogue bootstrap (both sides resampled
    by the same draws)."""
    (names, a), (other, b) = _dialogue_parts(task, *first), _dialogue_parts(task, *second)
    if not np.array_equal(names, other):
        raise ValueError(
            f"a paired difference needs the same dialogues on both sides (here {names.size} and {other.size})"
        )
    draws = _draws(names.size)
    return _interval(
        _score(a.sum(axis=1)) - _score(b.sum(axis=1)),
        _score(a[:, draws].sum(axis=2)) - _score(b[:, draws].sum(axis=2)),
    )


def permuted(
    task: str, instances: list[tuple[np.ndarray, int]], rng: np.random.Generator
) -> list[tuple[np.ndarray, int]]:
    """The random-gold control: the true row of each instance drawn at random; for detection,
    the labels of each unit's three instances (S1, S2, S3, in that order) shuffled among them."""
    if task != "detection":
        return [(rows, int(rng.integers(rows.shape[0]))) for rows, _ in instances]
    labels = np.array([truth for _, truth in instances]).reshape(-1, 3)
    shuffled = np.concatenate([rng.permutation(unit) for unit in labels])
    return [(rows, int(t)) for (rows, _), t in zip(instances, shuffled)]


@dataclass(frozen=True)
class MeasuredUnit:
    """One unit's clips measured (``measure_unit``): what ``ShortcutAudit.add_measured`` collects.
    Plain data, so that units can be measured in other processes than the one that fits."""

    group: str  # the unit's dialogue
    backend: str | None  # the generation method that altered it, when known
    k: int  # the altered turn's index
    #: stage -> (the target turns' feature vectors, {"S2": vector, "S3": vector})
    stages: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]
    #: (stage, scenario, gender, ``ArtifactRates.measure``) per clip counted; empty without artefacts
    artifacts: tuple = ()


def measure_unit(unit, features: FeatureSet = NON_SPEAKER, artifacts: bool = True) -> MeasuredUnit:
    """``features`` of a unit's published clips (``unit.targets``, ``unit.converted``) and of its raw
    ones when it has them (``raw_targets``, ``raw_converted``); with ``artifacts``, the S1/S2/S3
    clips' artefact measures too (``ArtifactRates.measure``)."""
    k = unit.converted_turn - 1
    stages = {"published": (unit.targets, unit.converted)}
    if unit.raw_targets and unit.raw_converted:
        stages = {"raw": (unit.raw_targets, unit.raw_converted), **stages}
    counted = []
    for stage, (originals, conversions) in stages.items():
        voices = (
            ("S1", originals[k], unit.segment.target_gender),
            ("S2", conversions["S2"], unit.s2.gender),
            ("S3", conversions["S3"], unit.s3.gender),
        )
        counted += [
            (stage, scenario, gender, ArtifactRates.measure(stage, clip))
            for scenario, clip, gender in voices
            if artifacts
        ]
    vectors = {
        stage: (
            np.stack([features.vector(c) for c in originals]),
            {s: features.vector(conversions[s]) for s in ("S2", "S3")},
        )
        for stage, (originals, conversions) in stages.items()
    }
    return MeasuredUnit(
        f"{unit.segment.source}/{unit.segment.dialogue_id}",
        getattr(unit, "vc_model", None),
        k,
        vectors,
        tuple(counted),
    )


class ArtifactRates:
    """Per stage and scenario: clips, % with an impulse, % with an exact-zero run; on the published
    stage also the median HNR (dB) per gender of the voice heard (a male voice is less periodic
    than a female one, and S2 holds the other gender than S1, so only same-gender medians compare;
    measured on the published clips only, to keep the audit's cost down)."""

    SCENARIOS = ("S1", "S2", "S3")
    STAGES = ("raw", "published")
    GENDERS = ("female", "male")

    def __init__(self) -> None:
        self._clips = {(stage, s): [] for stage in self.STAGES for s in self.SCENARIOS}
        self._hnr = {(s, g): [] for s in self.SCENARIOS for g in self.GENDERS}

    def add(self, stage: str, scenario: str, clip: np.ndarray, gender: str) -> None:
        """Measure one clip of ``scenario`` (S1/S2/S3) at ``stage`` (raw/published), voiced as ``gender``."""
        self.add_measured(stage, scenario, gender, self.measure(stage, clip))

    @staticmethod
    def measure(stage: str, clip: np.ndarray) -> tuple[bool, bool, float | None]:
        """What ``add`` counts of one clip: an impulse, an exact-zero run, and (published) its HNR."""
        return impulse_windows(clip) > 0, zero_runs(clip) > 0, harmonicity(clip) if stage == "published" else None

    def add_measured(self, stage: str, scenario: str, gender: str, measured: tuple[bool, bool, float | None]) -> None:
        """Count one clip already measured (``measure``)."""
        if (stage, scenario) not in self._clips or gender not in self.GENDERS:
            raise ValueError(
                f"unknown stage/scenario/gender {stage!r}/{scenario!r}/{gender!r}; use {self.STAGES} x {self.SCENARIOS} x {self.GENDERS}"
            )
        impulse, zero_run, hnr = measured
        self._clips[(stage, scenario)].append((impulse, zero_run))
        if stage == "published":
            self._hnr[(scenario, gender)].append(hnr)

    def _median_hnr(self, scenario: str, gender: str) -> float:
        values = np.array(self._hnr[(scenario, gender)], dtype=np.float64)
        values = values[~np.isnan(values)]
        return round(float(np.median(values)), 1) if values.size else float("nan")

    def result(self, stage: str) -> dict[str, dict[str, float]]:
        """``{scenario: {clips, impulse_pct, zero_run_pct[, hnr_db_female, hnr_db_male]}}`` (NaN where empty)."""
        out = {}
        for scenario in self.SCENARIOS:
            rows = np.array(self._clips[(stage, scenario)], dtype=np.float64).reshape(-1, 2)
            share = rows.mean(axis=0) * 100 if len(rows) else [float("nan")] * 2
            out[scenario] = {
                "clips": len(rows),
                "impulse_pct": round(float(share[0]), 1),
                "zero_run_pct": round(float(share[1]), 1),
            }
            if stage == "published":
                out[scenario] |= {f"hnr_db_{g}": self._median_hnr(scenario, g) for g in self.GENDERS}
        return out

    def table(self) -> str:
        """Markdown table of both stages; the impulse column also gives each scenario's rate over S1's."""
        lines = [
            "| stage | scenario | clips | impulse (click) rate | x S1 | exact-zero runs | median HNR, female / male voices (dB) |",
            "|---|---|---|---|---|---|---|",
        ]
        for stage in self.STAGES:
            result = self.result(stage)
            base = result["S1"]["impulse_pct"]
            for scenario, r in result.items():
                times = f"{r['impulse_pct'] / base:.2f}" if base else "-"  # S1 without impulses: no ratio
                hnr = f"{r['hnr_db_female']:.1f} / {r['hnr_db_male']:.1f}" if stage == "published" else "-"
                lines.append(
                    f"| {stage} | {scenario} | {r['clips']} | {r['impulse_pct']:.1f} % | {times} | {r['zero_run_pct']:.1f} % | {hnr} |"
                )
        return "\n".join(lines)


class ShortcutAudit:
    """Collects every unit's features (memory stays small: features, not clips), then fits.

    ``add(unit)`` measures the published clips (``unit.targets``, ``unit.converted``) and, when the
    unit has them, the raw ones (``raw_targets``, ``raw_converted``: the originals as voiced next to
    the conversion's output, a contrast that shows what resynthesis and the final stage remove).
    ``model``: ``"logistic"`` (the card's) or ``"boosting"``; ``families=False`` skips the
    per-family breakdown of the cells above chance; ``tasks``: which of ``TASKS`` to fit;
    ``control_draws``: how many random golds the control pools.
    """

    STAGES = ("raw", "published")

    def __init__(
        self,
        model: str = "logistic",
        families: bool = True,
        tasks: tuple[str, ...] = TASKS,
        control_draws: int = CONTROL_DRAWS,
        features: FeatureSet = NON_SPEAKER,
    ) -> None:
        make_model(model)  # an unknown model is refused now, not after the build
        unknown = set(tasks) - set(TASKS)
        if unknown:
            raise ValueError(f"unknown shortcut-audit tasks {sorted(unknown)}; use {', '.join(TASKS)}")
        self.model, self.families, self.tasks, self.control_draws = model, families, tuple(tasks), control_draws
        self.features = features
        self.num_turns: int | None = None
        self.artifacts = ArtifactRates()
        self._units: dict[str, list] = {stage: [] for stage in self.STAGES}  # measured units: task_tables' arguments
        self._built: dict = {}  # stage -> (tables, groups, backends), made once every unit is in
        self._results: dict = {}  # stage -> result, "flagged" -> families, ("credits", ...) -> fitted credits and backends

    def add(self, unit, artifacts: bool = True) -> None:
        """Measure one unit's clips; ``artifacts=False`` leaves out the resynthesis-artefact counts
        (``self.artifacts``, the card's table: per clip their HNR costs about four times the features)."""
        self.add_measured(measure_unit(unit, self.features, artifacts))

    def add_measured(self, measured: MeasuredUnit) -> None:
        """Add one unit measured by ``measure_unit`` (in any process) with this audit's features."""
        for stage, scenario, gender, clip in measured.artifacts:
            self.artifacts.add_measured(stage, scenario, gender, clip)
        for stage, (turns, converted) in measured.stages.items():
            self.add_features(stage, turns, measured.k, converted, measured.group, measured.backend)

    def add_features(
        self,
        stage: str,
        turns: np.ndarray,
        k: int,
        converted: dict[str, np.ndarray],
        group: str,
        backend: str | None = None,
    ) -> None:
        """Add one unit already measured (``task_tables``' arguments, each clip's ``features.vector``;
        ``group``: its dialogue, ``backend``: the generation method that altered it, when known)."""
        self.num_turns = len(turns)
        self._units[stage].append((turns, k, converted, group, backend))
        self._built.pop(stage, None)
        self._results.clear()

    def _tables(self, stage: str) -> tuple[dict, dict, dict]:
        """Per task: the instances (``task_tables``), their dialogues and their units' methods, from
        every unit's clips turned into the classifier's columns together (``FeatureSet.columns``)."""
        if stage not in self._built:
            units = self._units[stage]
            clips = [np.vstack([turns, converted["S2"], converted["S3"]]) for turns, _, converted, _, _ in units]
            columns = self.features.columns(np.vstack(clips)) if clips else np.zeros((0, 0))
            tables, groups, backends = ({task: [] for task in TASKS} for _ in range(3))
            start = 0
            for (turns, k, _, group, backend), measured in zip(units, clips):
                rows, start = columns[start : start + len(measured)], start + len(measured)
                n = len(turns)
                for task, instances in task_tables(rows[:n], k, {"S2": rows[n], "S3": rows[n + 1]}).items():
                    tables[task] += instances
                    groups[task] += [group] * len(instances)
                    backends[task] += [backend] * len(instances)
            self._built[stage] = (tables, groups, backends)
        return self._built[stage]

    def with_model(
        self, model: str, families: bool = True, tasks: tuple[str, ...] = TASKS, control_draws: int = CONTROL_DRAWS
    ) -> ShortcutAudit:
        """The same collected units, fitted by another ``model`` (on ``tasks`` only)."""
        other = ShortcutAudit(model, families, tasks, control_draws, self.features)
        other.num_turns, other.artifacts, other._units, other._built = (
            self.num_turns,
            self.artifacts,
            self._units,
            self._built,
        )
        return other

    def subset(self, method: str | None = None, groups: list[str] | None = None) -> ShortcutAudit:
        """The same audit over the units one generation method altered (``vc_model``) and/or of the
        given dialogues only (None: all)."""
        other = ShortcutAudit(self.model, self.families, self.tasks, self.control_draws, self.features)
        other.num_turns = self.num_turns
        wanted = None if groups is None else set(groups)
        other._units = {
            stage: [u for u in units if (method is None or u[4] == method) and (wanted is None or u[3] in wanted)]
            for stage, units in self._units.items()
        }
        return other

    def groups(self) -> list[str]:
        """The dialogues of the published units."""
        return [u[3] for u in self._units["published"]]

    def methods(self) -> list[str]:
        """The generation methods of the published units (sorted; unnamed ones left out)."""
        return sorted({u[4] for u in self._units["published"]} - {None})

    def chance(self, task: str) -> float:
        if task == "detection":
            return 50.0
        return round(100 / 3, 1) if task == "discrimination" else round(100 / (self.num_turns or 1), 1)

    def _credits(
        self,
        stage: str,
        task: str,
        family: list[str] | None,
        control: bool = False,
        copies: tuple[int, ...] | None = None,
    ) -> tuple:
        """``(credits, truth, groups)`` of one cell's cross-validated guesses (NaN-free), fitted once;
        the control pools ``control_draws`` random golds (a dialogue's draws resampled together)."""
        return self._credits_and_backends(stage, task, family, control, copies)[:3]

    def _credits_and_backends(
        self,
        stage: str,
        task: str,
        family: list[str] | None,
        control: bool = False,
        copies: tuple[int, ...] | None = None,
    ) -> tuple:
        """``_credits``' cell and, per guess, the backend of its unit (fitted once); ``copies``:
        the part of each row fitted (``READINGS``; all when None)."""
        key = ("credits", stage, task, None if family is None else tuple(family), control, copies)
        if key not in self._results:
            self._results[key] = self._fit(stage, task, family, control, copies)
        return self._results[key]

    def _fit(
        self, stage: str, task: str, family: list[str] | None, control: bool, copies: tuple[int, ...] | None = None
    ) -> tuple:
        tables, groups, backends = self._tables(stage)
        table, groups = tables[task], np.array(groups[task])
        backends = np.array([b or "" for b in backends[task]])
        columns = _columns(task, self.features.names, family, copies)
        draws = (
            [permuted(task, table, np.random.default_rng(d)) for d in range(1, self.control_draws + 1)]
            if control
            else [table]
        )
        credits, truth = [], []
        for instances in draws:
            instances = [(rows[:, columns], t) for rows, t in instances]
            credits.append(cross_validated(task, instances, groups, self.model))
            truth.append(np.array([t for _, t in instances]))
        credits, truth, groups = np.concatenate(credits), np.concatenate(truth), np.tile(groups, len(draws))
        kept = ~np.isnan(credits)
        return credits[kept], truth[kept], groups[kept], np.tile(backends, len(draws))[kept]

    def _cell(
        self,
        stage: str,
        task: str,
        family: list[str] | None,
        control: bool = False,
        copies: tuple[int, ...] | None = None,
    ) -> dict[str, float]:
        credits, truth, groups = self._credits(stage, task, family, control, copies)
        if not credits.size:
            return {"score": float("nan"), "low": float("nan"), "high": float("nan")}
        return score_cell(task, credits, truth, groups)

    def difference(self, other: ShortcutAudit) -> dict[str, dict[str, float]]:
        """Per task, this audit's published score (all features) minus ``other``'s, in points, with
        a paired dialogue-bootstrap interval; both must hold the same dialogues (the converted turns,
        and another voice put in their place)."""
        return {
            task: paired_difference(
                task, self._credits("published", task, None), other._credits("published", task, None)
            )
            for task in self.tasks
        }

    def by_backend(self, task: str) -> dict[str, dict[str, float]]:
        """The published cell on all features split by the VC backend of each unit (the same fit's
        guesses, each backend's dialogues resampled alone). Empty unless the audit holds units of
        two named backends or more."""
        credits, truth, groups, backends = self._credits_and_backends("published", task, None)
        names = sorted(set(backends) - {""})
        if len(names) < 2:
            return {}
        return {
            b: score_cell(task, credits[backends == b], truth[backends == b], groups[backends == b]) for b in names
        }

    def readings(self) -> dict[str, dict[str, float]]:
        """The published discrimination cell (all features) fitted on each part of the candidates'
        rows alone (``READINGS``); empty when the audit does not fit discrimination."""
        if "discrimination" not in self.tasks:
            return {}
        return {
            name: self._cell("published", "discrimination", None, copies=copies) for name, copies in READINGS.items()
        }

    def readings_difference(self, other: ShortcutAudit) -> dict[str, dict[str, float]]:
        """``readings`` minus ``other``'s, in points, with a paired dialogue-bootstrap interval (as ``difference``)."""
        if "discrimination" not in self.tasks:
            return {}
        return {
            name: paired_difference(
                "discrimination",
                self._credits("published", "discrimination", None, copies=copies),
                other._credits("published", "discrimination", None, copies=copies),
            )
            for name, copies in READINGS.items()
        }

    def scores(self) -> dict[str, dict[str, float]]:
        """Per task, the published cell on all features (no control): to set one collection beside another."""
        return {task: self._cell("published", task, None) for task in self.tasks}

    def result(self, stage: str) -> dict:
        """``{task: {chance, all, control}}`` (raw: no control), each cell ``{score, low, high}`` in
        percent; empty when the stage has no units."""
        if stage not in self._results:
            out = {}
            for task in self.tasks if self._units[stage] else ():
                out[task] = {"chance": self.chance(task), "all": self._cell(stage, task, None)}
                if stage == "published":
                    out[task]["control"] = self._cell(stage, task, None, control=True)
            self._results[stage] = out
        return self._results[stage]

    def flagged(self) -> dict[str, dict[str, dict[str, float]]]:
        """Published tasks whose interval lies above chance -> each family's cell alone (empty
        with ``families=False``)."""
        above = [task for task, r in self.result("published").items() if r["all"]["low"] > r["chance"]]
        if "flagged" not in self._results:
            self._results["flagged"] = {
                task: {f: self._cell("published", task, names) for f, names in self.features.families.items()}
                if self.families
                else {}
                for task in above
            }
        return self._results["flagged"]

    def warnings(self, where: str = "") -> list[str]:
        """One line per published cell whose interval lies above chance, naming the family that
        scores highest alone, with two backends or more each backend's score, and for
        discrimination its ``readings``."""
        lines = []
        for task, families in self.flagged().items():
            r = self.result("published")[task]
            line = (
                f"shortcut audit{' ' + where if where else ''}: {TASK_LABELS[task]} from non-speaker features "
                f"{cell_text(r['all'])} is above chance ({r['chance']:.1f} %)"
            )
            if families:
                family, cell = _strongest(families)
                alone = "above chance alone" if cell["low"] > r["chance"] else "within chance alone"
                line += f"; strongest family: {family} ({cell_text(cell)}, {alone})"
            split = self.by_backend(task)
            if split:
                line += "; by backend: " + ", ".join(f"{b} {cell_text(c)}" for b, c in split.items())
            if task == "discrimination":
                line += "; read " + ", ".join(f"{name} {cell_text(c)}" for name, c in self.readings().items())
            lines.append(line)
        return lines

    def table(self) -> str:
        """Markdown: per task, the classifier on all features (published and raw) and the random-gold
        control; for a task above chance, the strongest family alone, every family's cell and, with
        two backends or more, each backend's share of the cell (``by_backend``); for discrimination
        above chance, its ``readings``."""
        published, raw, flagged = self.result("published"), self.result("raw"), self.flagged()
        lines = [
            "| task | chance | published, all features | random-gold control | above chance: strongest family alone | raw, all features |",
            "|---|---|---|---|---|---|",
        ]
        for task, r in published.items():
            best = _strongest(flagged[task]) if flagged.get(task) else None
            strongest = f"{best[0]}: {cell_text(best[1])}" if best else ("yes" if task in flagged else "-")
            contrast = cell_text(raw[task]["all"]) if task in raw else "-"
            lines.append(
                f"| {TASK_LABELS[task]} | {r['chance']:.1f} % | {cell_text(r['all'])} | {cell_text(r['control'])} "
                f"| {strongest} | {contrast} |"
            )
        shown = [task for task, families in flagged.items() if families]
        if shown:
            lines += [
                "",
                "| family alone (published) | " + " | ".join(TASK_LABELS[t] for t in shown) + " |",
                "|---" * (len(shown) + 1) + "|",
            ]
            lines += [
                f"| {family} | " + " | ".join(cell_text(flagged[t][family]) for t in shown) + " |"
                for family in self.features.families
            ]
        splits = {task: cells for task in flagged if (cells := self.by_backend(task))}
        if splits:
            lines += [
                "",
                "| backend (published, all features) | " + " | ".join(TASK_LABELS[t] for t in splits) + " |",
                "|---" * (len(splits) + 1) + "|",
            ]
            lines += [
                f"| {b} | " + " | ".join(cell_text(cells[b]) for cells in splits.values()) + " |"
                for b in next(iter(splits.values()))
            ]
        if "discrimination" in flagged:
            lines += [
                "",
                "| discrimination fitted on part of each candidate's row | published, all features |",
                "|---|---|",
            ]
            lines += [f"| {name} | {cell_text(c)} |" for name, c in self.readings().items()]
        return "\n".join(lines)


def _strongest(families: dict[str, dict[str, float]]) -> tuple[str, dict[str, float]]:
    """The family that scores highest alone (families that tie with it named together)."""
    best = max(cell["score"] for cell in families.values())
    names = [f for f, cell in families.items() if cell["score"] == best]
    return ", ".join(names), families[names[0]]


def cell_text(cell: dict[str, float]) -> str:
    return f"{cell['score']:.1f} % [{cell['low']:.1f}–{cell['high']:.1f}]"
