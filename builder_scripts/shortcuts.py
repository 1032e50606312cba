"""Shortcut audit: can the converted turn be found from anything but the voice?

For every kept S2/S3 instance, each non-voice feature of a clip (duration, loudness, and two
resynthesis-artefact measures: high-band energy share and spectral flatness) is turned into a
guess three ways — the turn with the largest value, the smallest, and the one farthest from the
others (|z|) — and the best of the three is scored as the feature's accuracy at picking the
converted turn (chance 1/N) and, among the three discrimination candidates, the original
(chance 1/3). The audit runs twice: on the clips as voice conversion leaves them next to
untouched originals ("raw"), and on the published clips, where every turn went through the same
analysis-resynthesis path and the same loudness normalisation ("published").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import speakersleuth_dataset as ssd


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


FEATURES: dict[str, Callable[[np.ndarray], float]] = {
    "duration": duration,
    "loudness": loudness,
    "high_band_share": high_band_share,
    "spectral_flatness": spectral_flatness,
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
        self._hits = {
            (stage, task, name): {r: [] for r in self.RULES}
            for stage in ("raw", "published") for task in self.TASKS for name in FEATURES
        }

    def add(self, unit) -> None:
        k = unit.converted_turn - 1
        self.num_turns = len(unit.targets)
        stages = (("raw", unit.raw_targets, unit.raw_converted), ("published", unit.targets, unit.converted))
        for stage, originals, conversions in stages:
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
        """Best-rule accuracy (percent) per feature, with the chance levels."""
        out = {task: {} for task in self.TASKS} | {"chance_turn": None, "chance_candidate": round(100 / 3, 1)}
        if self.num_turns is None:
            return out
        out["chance_turn"] = round(100 / self.num_turns, 1)
        for task in self.TASKS:
            for name in FEATURES:
                hits = self._hits[(stage, task, name)]
                out[task][name] = round(100 * max(float(np.mean(h)) for h in hits.values()), 1)
        return out

    def table(self) -> str:
        """Markdown table of both stages, for the dataset card."""
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
