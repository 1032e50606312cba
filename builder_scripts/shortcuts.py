"""Shortcut audit: can the converted turn be found from anything but the voice?

For every kept S2/S3 instance, each non-voice feature of a clip (duration, loudness, and three
resynthesis-artefact measures: high-band energy share, spectral flatness and DC offset) is turned into a
guess three ways — the turn with the largest value, the smallest, and the one farthest from the
others (|z|) — and the best of the three is scored as the feature's accuracy at picking the
converted turn (chance 1/N) and, among the three discrimination candidates, the original
(chance 1/3). The audit runs twice: on the clips as voice conversion leaves them next to
untouched originals ("raw"), and on the published clips, where every turn went through the same
analysis-resynthesis path and the same loudness normalisation ("published").

Beside the guessing game, ``ArtifactRates`` counts audible resynthesis artefacts per scenario
(S1: the original candidate, S2/S3: the converted ones; ``builder_scripts/artifacts.py``): the
share of clips with an impulse (click), the share with an exact-zero run inside the speech, and
the median harmonics-to-noise ratio. A converted candidate should carry them no more often than
the original (issue 16: S2's impulse rate within 1.5 x of S1's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import speakersleuth_dataset as ssd

from .artifacts import harmonicity, impulse_windows, zero_runs
from .vc.base import rms


def _spectrum(clip: np.ndarray) -> np.ndarray:
    frames = np.lib.stride_tricks.sliding_window_view(clip, 512)[::256]
    return np.abs(np.fft.rfft(frames * np.hanning(512), axis=1)) ** 2 + 1e-12


def duration(clip: np.ndarray) -> float:
    return clip.size / ssd.SAMPLING_RATE


def loudness(clip: np.ndarray) -> float:
    """RMS level in dB, to 0.01 dB: published clips are all normalised to one level, and what is
    left below that (16-bit rounding, ~1e-5 dB) is no cue to anyone but made ties look unequal.

    >>> loudness(np.full(16000, 0.05, dtype=np.float32)) == loudness(np.full(16000, 0.0500001, dtype=np.float32))
    True
    """
    return round(float(10 * np.log10(np.mean(np.square(clip, dtype=np.float64)) + 1e-12)), 2)


def high_band_share(clip: np.ndarray) -> float:
    """Share of energy above 4 kHz (vocoders and PSOLA reshape the top band)."""
    spec = _spectrum(clip)
    return float(spec[:, 128:].sum() / spec.sum())


def spectral_flatness(clip: np.ndarray) -> float:
    spec = _spectrum(clip)
    return float(np.mean(np.exp(np.mean(np.log(spec), axis=1)) / np.mean(spec, axis=1)))


def dc_offset(clip: np.ndarray) -> float:
    """The clip's mean relative to its RMS level (a resynthesis can shift the waveform's zero)."""
    level = rms(clip)
    return abs(float(np.mean(clip, dtype=np.float64))) / level if level else 0.0


FEATURES: dict[str, Callable[[np.ndarray], float]] = {
    "duration": duration,
    "loudness": loudness,
    "high_band_share": high_band_share,
    "spectral_flatness": spectral_flatness,
    "dc_offset": dc_offset,
}


def _credit(values: Sequence[float], truth: int) -> dict[str, float]:
    """Credit of each guessing rule for picking index ``truth``; a tie shares the credit, so
    equal values (e.g. every candidate of a clip has the same duration) score chance."""
    v = np.asarray(values, dtype=np.float64)
    spread = v.std() or 1.0
    scores = {"max": v, "min": -v, "outlier": np.abs((v - v.mean()) / spread)}
    credit = {}
    for rule, score in scores.items():
        best = np.flatnonzero(np.isclose(score, score.max(), rtol=1e-9, atol=1e-12))
        credit[rule] = 1.0 / best.size if truth in best else 0.0
    return credit


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
        if (stage, scenario) not in self._clips or gender not in self.GENDERS:
            raise ValueError(
                f"unknown stage/scenario/gender {stage!r}/{scenario!r}/{gender!r}; use {self.STAGES} x {self.SCENARIOS} x {self.GENDERS}"
            )
        self._clips[(stage, scenario)].append((impulse_windows(clip) > 0, zero_runs(clip) > 0))
        if stage == "published":
            self._hnr[(scenario, gender)].append(harmonicity(clip))

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
            out[scenario] = {"clips": len(rows), "impulse_pct": round(float(share[0]), 1), "zero_run_pct": round(float(share[1]), 1)}
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
    """Accumulates the audit unit by unit (memory stays flat), then reports percentages.

    The converted-turn figure is also reported per scenario: S2 changes the gender, so part of
    what a spectral feature finds there is the new voice itself; S3 (a similar voice of the same
    gender) shows the artefacts more purely.
    """

    RULES = ("max", "min", "outlier")
    TASKS = ("converted_turn", "converted_turn_S2", "converted_turn_S3", "original_candidate")

    def __init__(self) -> None:
        self.num_turns: int | None = None
        self.artifacts = ArtifactRates()
        self._hits = {
            (stage, task, name): {r: [] for r in self.RULES}
            for stage in ("raw", "published") for task in self.TASKS for name in FEATURES
        }

    def add(self, unit) -> None:
        k = unit.converted_turn - 1
        self.num_turns = len(unit.targets)
        stages = (("raw", unit.raw_targets, unit.raw_converted), ("published", unit.targets, unit.converted))
        for stage, originals, conversions in stages:
            voices = (("S1", originals[k], unit.segment.target_gender), ("S2", conversions["S2"], unit.s2.gender), ("S3", conversions["S3"], unit.s3.gender))
            for scenario, clip, gender in voices:
                self.artifacts.add(stage, scenario, clip, gender)
            for name, feature in FEATURES.items():
                base = [feature(c) for c in originals]
                converted = {s: feature(conversions[s]) for s in ("S2", "S3")}
                for scenario in ("S2", "S3"):
                    values = list(base)
                    values[k] = converted[scenario]
                    for rule, credit in _credit(values, k).items():
                        self._hits[(stage, "converted_turn", name)][rule].append(credit)
                        self._hits[(stage, f"converted_turn_{scenario}", name)][rule].append(credit)
                candidates = [base[k], converted["S2"], converted["S3"]]
                for rule, credit in _credit(candidates, 0).items():
                    self._hits[(stage, "original_candidate", name)][rule].append(credit)

    def result(self, stage: str) -> dict:
        """Best-rule accuracy (percent) per feature, with the chance levels, and the artefact rates."""
        out = {task: {} for task in self.TASKS} | {"chance_turn": None, "chance_candidate": round(100 / 3, 1)}
        out["artifacts"] = self.artifacts.result(stage)
        if self.num_turns is None:
            return out
        out["chance_turn"] = round(100 / self.num_turns, 1)
        for task in self.TASKS:
            for name in FEATURES:
                hits = self._hits[(stage, task, name)]
                out[task][name] = round(100 * max(float(np.mean(h)) for h in hits.values()), 1)
        return out

    def table(self) -> str:
        """Markdown table of both stages, for the dataset card (the artefact rates: ``artifacts.table()``)."""
        raw, published = self.result("raw"), self.result("published")
        lines = [
            "| feature | converted turn, raw | converted turn, published | of which S2 / S3 | original candidate, raw | original candidate, published |",
            "|---|---|---|---|---|---|",
        ]
        for name in FEATURES:
            cells = [raw["converted_turn"], published["converted_turn"]]
            split = f"{published['converted_turn_S2'].get(name, float('nan')):.1f} / {published['converted_turn_S3'].get(name, float('nan')):.1f}"
            lines.append(
                f"| {name} | {cells[0].get(name, float('nan')):.1f} | {cells[1].get(name, float('nan')):.1f} | {split} "
                f"| {raw['original_candidate'].get(name, float('nan')):.1f} | {published['original_candidate'].get(name, float('nan')):.1f} |"
            )
        chance = published["chance_turn"] or float("nan")
        lines.append(f"| *chance* | {chance:.1f} | {chance:.1f} | {chance:.1f} / {chance:.1f} | {100 / 3:.1f} | {100 / 3:.1f} |")
        return "\n".join(lines)
