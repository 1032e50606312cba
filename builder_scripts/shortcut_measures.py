"""What the shortcut audit measures of each unit, as plain data so that units can be measured in
other processes than the one that fits: its clips' feature vectors (``measure_unit``,
``MeasuredUnit``) and the resynthesis artefacts per scenario (``ArtifactRates``).
``builder_scripts.shortcuts`` describes the audit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .artifacts import harmonicity, impulse_windows, zero_runs
from .audit_features import NON_SPEAKER, FeatureSet


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
