"""The audits a build runs on its published units, what they warn of and their tables on the card.

Per variant (test and validation splits together), three readings of ``shortcuts.ShortcutAudit``:

- **voice-free** (``audit_features.VOICE_FREE``: quiet frames, DC, quantisation, the band above the
  low-pass, the FLAC rate net of the voice): no voice should carry these features, so every cell must
  sit at chance, under the card's classifier and gradient boosting, on all the variant's units and
  on each generation method's alone. A cell above chance is a processing difference: a warning.
- **non-speaker** (``audit_features.NON_SPEAKER``: every feature; the card's classifier): these carry
  the voice too, so a real other voice is found by them as well; the table is shown, not judged
  against chance.
- **converted minus re-spoken**: for each DSP method of a variant that mixes methods (4vc), the
  non-speaker cells of its units minus the same dialogues' re-spoken units (main's: the same
  segment, turn and substitutes, the turn said by the substitute's own voice), with a paired
  interval (discrimination: each reading of the candidates' rows too). An interval above 0 is what
  the conversion adds beyond a real other voice: a warning.
"""

from __future__ import annotations

from . import shortcuts
from .audit_features import NON_SPEAKER, VOICE_FREE
from .shortcut_measures import MeasuredUnit, measure_unit
from .shortcuts import TASK_LABELS, ShortcutAudit, cell_text
from .vc.respeak import RESPEAK

#: the classifiers of the voice-free family: the card's and an independent one
MODELS = ("logistic", "boosting")
#: random golds pooled in each classifier's control (boosting is the slower)
CONTROL_DRAWS = {"logistic": shortcuts.CONTROL_DRAWS, "boosting": 5}
#: the variant whose units are the re-spoken counterpart of another variant's conversions
RESPOKEN_VARIANT = "main"


class BuildAudit:
    """Collects a build's published units per variant; fits and reports once all are in.

    Arguments:
        jobs: processes that fit the voice-free cells (each cell is fitted alike in any of them).
        control_draws: random golds pooled in each control, by classifier.
    """

    def __init__(self, jobs: int = 1, control_draws: dict[str, int] | None = None) -> None:
        self.jobs = jobs
        self.control_draws = control_draws or CONTROL_DRAWS
        self.non_speaker: dict[str, ShortcutAudit] = {}
        self.voice_free: dict[str, ShortcutAudit] = {}
        self._cells: dict | None = None
        self._differences: dict | None = None

    def add(self, variant: str, unit, artifacts: bool = True) -> None:
        """Measure one published unit (``finished``) of ``variant``; ``artifacts=False`` leaves out
        the card's resynthesis-artefact counts."""
        self.add_measured(variant, measure(unit, artifacts))

    def add_measured(self, variant: str, measured: tuple[MeasuredUnit, MeasuredUnit]) -> None:
        """Add one unit of ``variant`` measured by ``measure`` (in any process)."""
        draws = self.control_draws["logistic"]
        non_speaker, voice_free = measured
        self.non_speaker.setdefault(variant, ShortcutAudit(control_draws=draws)).add_measured(non_speaker)
        self.voice_free.setdefault(
            variant, ShortcutAudit(families=False, control_draws=draws, features=VOICE_FREE)
        ).add_measured(voice_free)
        self._cells = self._differences = None

    def voice_free_cells(self) -> dict[tuple[str, str, str], dict]:
        """``(variant, method or "all", model) -> ShortcutAudit.result("published")`` of the
        voice-free family: every variant, each of its methods alone where it has two or more."""
        if self._cells is None:
            from joblib import Parallel, delayed

            parts = {}
            for variant, audit in self.voice_free.items():
                methods = audit.methods()
                for method in ("all", *methods) if len(methods) > 1 else ("all",):
                    part = audit if method == "all" else audit.subset(method=method)
                    for model in MODELS:
                        parts[(variant, method, model)] = (
                            part
                            if model == "logistic"
                            else part.with_model(model, families=False, control_draws=self.control_draws[model])
                        )
            results = Parallel(n_jobs=min(self.jobs, len(parts) or 1))(
                delayed(_published)(part) for part in parts.values()
            )
            self._cells = dict(zip(parts, results))
        return self._cells

    def respoken_differences(self) -> dict[tuple[str, str], dict[str, dict]]:
        """``(variant, DSP method) -> {task or discrimination reading: paired difference}``: the
        method's units minus the re-spoken units of the same dialogues, non-speaker features."""
        if self._differences is not None:
            return self._differences
        respoken = self.non_speaker.get(RESPOKEN_VARIANT)
        out = self._differences = {}
        for variant, audit in self.non_speaker.items():
            if variant == RESPOKEN_VARIANT or respoken is None:
                continue
            for method in (m for m in audit.methods() if m != RESPEAK):
                converted = audit.subset(method=method)
                shared = sorted(set(converted.groups()) & set(respoken.subset(method=RESPEAK).groups()))
                if len(shared) < 2:
                    continue
                converted, spoken = converted.subset(groups=shared), respoken.subset(method=RESPEAK, groups=shared)
                out[(variant, method)] = converted.difference(spoken) | {
                    f"discrimination, {name}": cell for name, cell in converted.readings_difference(spoken).items()
                }
        return out

    def warnings(self) -> list[str]:
        """One line per voice-free cell above chance and per converted-minus-re-spoken interval above
        0. A method with no re-spoken counterpart to compare with (a recorded corpus's conversions,
        a 4vc built without main) warns of its non-speaker cells above chance instead
        (``ShortcutAudit.warnings``)."""
        lines = []
        for (variant, method, model), result in self.voice_free_cells().items():
            for task, r in result.items():
                if r["all"]["low"] > r["chance"]:
                    lines.append(
                        f"voice-free audit {variant} ({method}, {model}): {TASK_LABELS[task]} {cell_text(r['all'])} "
                        f"is above chance ({r['chance']:.1f} %): a processing difference tells the altered turn"
                    )
        differences = self.respoken_differences()
        for (variant, method), cells in differences.items():
            for task, cell in cells.items():
                if cell["low"] > 0:
                    lines.append(
                        f"converted minus re-spoken {variant} ({method}): {TASK_LABELS.get(task, task)} "
                        f"{_points(cell)}: the conversion is found beyond what a real other voice gives"
                    )
        for variant, audit in self.non_speaker.items():
            for method in audit.methods() or [None]:
                if method != RESPEAK and (variant, method) not in differences:
                    part = audit if method is None else audit.subset(method=method)
                    lines += part.warnings(
                        f"{variant} ({method or 'unnamed'}; no re-spoken counterpart: against chance)"
                    )
        return lines

    def tables(self) -> str:
        """The card's audit section: the voice-free cells, the non-speaker tables, the differences."""
        cells = self.voice_free_cells()
        lines = [
            "**Voice-free family** (must sit at chance):",
            "",
            "| variant | method | classifier | " + " | ".join(TASK_LABELS[t] for t in _tasks(cells)) + " |",
            "|---" * (3 + len(_tasks(cells))) + "|",
        ]
        for (variant, method, model), result in cells.items():
            lines.append(
                f"| {variant} | {method} | {model} | "
                + " | ".join(f"{cell_text(r['all'])} (control {r['control']['score']:.1f})" for r in result.values())
                + " |"
            )
        differences = self.respoken_differences()
        if differences:
            tasks = list(next(iter(differences.values())))
            lines += [
                "",
                "**Converted minus re-spoken** (non-speaker features, points, paired 95 % interval; above 0: the "
                "conversion is found beyond what a real other voice gives):",
                "",
                "| variant | method | " + " | ".join(TASK_LABELS.get(t, t) for t in tasks) + " |",
                "|---" * (2 + len(tasks)) + "|",
            ]
            lines += [
                f"| {variant} | {method} | " + " | ".join(_points(c) for c in cells_.values()) + " |"
                for (variant, method), cells_ in differences.items()
            ]
        for variant, audit in self.non_speaker.items():
            lines += [
                "",
                f"**{variant}, non-speaker features** (they carry the voice too: a real other voice is found by them)",
                "",
                audit.table(),
            ]
            split = {m: audit.subset(method=m).scores() for m in audit.methods()} if len(audit.methods()) > 1 else {}
            if split:
                lines += [
                    "",
                    "| method | " + " | ".join(TASK_LABELS[t] for t in audit.tasks) + " |",
                    "|---" * (1 + len(audit.tasks)) + "|",
                ]
                lines += [
                    f"| {m} | " + " | ".join(cell_text(c) for c in scores.values()) + " |"
                    for m, scores in split.items()
                ]
        return "\n".join(lines)

    def report(self) -> dict:
        """The build report's part: every cell, as data."""
        return {
            "voice_free": {f"{v} {m} {model}": result for (v, m, model), result in self.voice_free_cells().items()},
            "converted_minus_respoken": {f"{v} {m}": cells for (v, m), cells in self.respoken_differences().items()},
            "non_speaker": {
                v: {"raw": a.result("raw"), "published": a.result("published")} for v, a in self.non_speaker.items()
            },
            "warnings": self.warnings(),
        }


def measure(unit, artifacts: bool = True) -> tuple[MeasuredUnit, MeasuredUnit]:
    """What ``BuildAudit.add_measured`` takes of one published unit: its non-speaker features (and
    artefact counts, with ``artifacts``) and its voice-free features."""
    return measure_unit(unit, NON_SPEAKER, artifacts), measure_unit(unit, VOICE_FREE, artifacts=False)


def _published(audit: ShortcutAudit) -> dict:
    return audit.result("published")


def _tasks(cells: dict) -> list[str]:
    return list(next(iter(cells.values()))) if cells else []


def _points(cell: dict) -> str:
    return f"{cell['score']:+.1f} [{cell['low']:+.1f}, {cell['high']:+.1f}]"


def feature_lists() -> str:
    """The card's lists of both feature sets, by family."""
    return "\n\n".join(
        f"The {features.name} features, by family:\n\n"
        + "\n".join(f"- **{family}**: {', '.join(names)}" for family, names in features.families.items())
        for features in (VOICE_FREE, NON_SPEAKER)
    )
