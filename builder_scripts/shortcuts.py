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

The fits and their intervals are in ``builder_scripts.shortcut_fits``; what is measured of a unit
(features, artefacts) in ``builder_scripts.shortcut_measures``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .audit_features import NON_SPEAKER, FeatureSet
from .shortcut_fits import cross_validated, make_model, paired_difference, permuted, score_cell
from .shortcut_measures import ArtifactRates, MeasuredUnit, measure_unit

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
    task: str, names: list[str], family: tuple[str, ...] | None, copies: tuple[int, ...] | None = None
) -> np.ndarray:
    """Column indices of ``family``'s features in a task's rows (all columns when None), in the
    ``copies`` of them given (all when None)."""
    count = 3 if task == "discrimination" else 2
    wanted = np.array([family is None or n in family for n in names])
    kept = np.repeat([copies is None or c in copies for c in range(count)], len(names))
    return np.flatnonzero(np.tile(wanted, count) & kept)


@dataclass(frozen=True)
class Cell:
    """One fitted cell: a ``task`` of a ``stage`` on the features of ``family`` (all when None),
    with the labels permuted when ``control``, on the ``copies`` of each row (``READINGS``; all when None)."""

    stage: str
    task: str
    family: tuple[str, ...] | None = None
    control: bool = False
    copies: tuple[int, ...] | None = None


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
        self._results: dict[str, dict] = {}  # stage -> result, "flagged" -> families
        self._fits: dict[Cell, tuple] = {}  # fitted credits and backends of each cell

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
        self._fits.clear()

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

    def _credits(self, cell: Cell) -> tuple:
        """``(credits, truth, groups)`` of the cell's cross-validated guesses (NaN-free), fitted once;
        the control pools ``control_draws`` random golds (a dialogue's draws resampled together)."""
        return self._credits_and_backends(cell)[:3]

    def _credits_and_backends(self, cell: Cell) -> tuple:
        """``_credits``' cell and, per guess, the backend of its unit (fitted once)."""
        if cell not in self._fits:
            self._fits[cell] = self._fit(cell)
        return self._fits[cell]

    def _fit(self, cell: Cell) -> tuple:
        tables, groups, backends = self._tables(cell.stage)
        task = cell.task
        table, groups = tables[task], np.array(groups[task])
        backends = np.array([b or "" for b in backends[task]])
        columns = _columns(task, self.features.names, cell.family, cell.copies)
        draws = (
            [permuted(task, table, np.random.default_rng(d)) for d in range(1, self.control_draws + 1)]
            if cell.control
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

    def _cell(self, cell: Cell) -> dict[str, float]:
        """The cell's score and dialogue-bootstrap interval (NaN when no guess is left)."""
        credits, truth, groups = self._credits(cell)
        if not credits.size:
            return {"score": float("nan"), "low": float("nan"), "high": float("nan")}
        return score_cell(cell.task, credits, truth, groups)

    def difference(self, other: ShortcutAudit) -> dict[str, dict[str, float]]:
        """Per task, this audit's published score (all features) minus ``other``'s, in points, with
        a paired dialogue-bootstrap interval; both must hold the same dialogues (the converted turns,
        and another voice put in their place)."""
        return {
            task: paired_difference(
                task, self._credits(Cell("published", task)), other._credits(Cell("published", task))
            )
            for task in self.tasks
        }

    def by_backend(self, task: str) -> dict[str, dict[str, float]]:
        """The published cell on all features split by the VC backend of each unit (the same fit's
        guesses, each backend's dialogues resampled alone). Empty unless the audit holds units of
        two named backends or more."""
        credits, truth, groups, backends = self._credits_and_backends(Cell("published", task))
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
            name: self._cell(Cell("published", "discrimination", copies=copies)) for name, copies in READINGS.items()
        }

    def readings_difference(self, other: ShortcutAudit) -> dict[str, dict[str, float]]:
        """``readings`` minus ``other``'s, in points, with a paired dialogue-bootstrap interval (as ``difference``)."""
        if "discrimination" not in self.tasks:
            return {}
        return {
            name: paired_difference(
                "discrimination",
                self._credits(Cell("published", "discrimination", copies=copies)),
                other._credits(Cell("published", "discrimination", copies=copies)),
            )
            for name, copies in READINGS.items()
        }

    def scores(self) -> dict[str, dict[str, float]]:
        """Per task, the published cell on all features (no control): to set one collection beside another."""
        return {task: self._cell(Cell("published", task)) for task in self.tasks}

    def result(self, stage: str) -> dict:
        """``{task: {chance, all, control}}`` (raw: no control), each cell ``{score, low, high}`` in
        percent; empty when the stage has no units."""
        if stage not in self._results:
            out = {}
            for task in self.tasks if self._units[stage] else ():
                out[task] = {"chance": self.chance(task), "all": self._cell(Cell(stage, task))}
                if stage == "published":
                    out[task]["control"] = self._cell(Cell(stage, task, control=True))
            self._results[stage] = out
        return self._results[stage]

    def flagged(self) -> dict[str, dict[str, dict[str, float]]]:
        """Published tasks whose interval lies above chance -> each family's cell alone (empty
        with ``families=False``)."""
        above = [task for task, r in self.result("published").items() if r["all"]["low"] > r["chance"]]
        if "flagged" not in self._results:
            self._results["flagged"] = {
                task: {
                    f: self._cell(Cell("published", task, tuple(names))) for f, names in self.features.families.items()
                }
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
        shown = {task: families for task, families in flagged.items() if families}
        if shown:
            lines += _cells_table("family alone (published)", shown)
        splits = {task: cells for task in flagged if (cells := self.by_backend(task))}
        if splits:
            lines += _cells_table("backend (published, all features)", splits)
        if "discrimination" in flagged:
            lines += [
                "",
                "| discrimination fitted on part of each candidate's row | published, all features |",
                "|---|---|",
            ]
            lines += [f"| {name} | {cell_text(c)} |" for name, c in self.readings().items()]
        return "\n".join(lines)


def _cells_table(corner: str, cells: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """A blank line and a Markdown table: a column per task of ``cells`` (``{task: {row: cell}}``),
    a row per row name of the first task."""
    lines = ["", f"| {corner} | " + " | ".join(TASK_LABELS[t] for t in cells) + " |", "|---" * (len(cells) + 1) + "|"]
    rows = next(iter(cells.values()))
    return lines + [
        f"| {row} | " + " | ".join(cell_text(by_row[row]) for by_row in cells.values()) + " |" for row in rows
    ]


def _strongest(families: dict[str, dict[str, float]]) -> tuple[str, dict[str, float]]:
    """The family that scores highest alone (families that tie with it named together)."""
    best = max(cell["score"] for cell in families.values())
    names = [f for f, cell in families.items() if cell["score"] == best]
    return ", ".join(names), families[names[0]]


def cell_text(cell: dict[str, float]) -> str:
    return f"{cell['score']:.1f} % [{cell['low']:.1f}–{cell['high']:.1f}]"
