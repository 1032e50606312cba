"""τ that carries over: the shipped calibration refitted on labelled dialogues of speech we did not
make, mixed with the benchmark's validation curves where the file has them.

    python -m speakersleuth.judges.check.calibrate_labelled --calibration judges/check/calibration.json \\
        --labelled real=other/real/manifest.csv --labelled espeak=other/espeak/manifest.csv \\
        --labelled dectalk=other/dectalk/manifest.csv --default-method core

Each labelled source is a manifest the check reads (``judges.check.inputs``) whose turns carry a
``label`` (``inconsistent`` for a turn planted from another voice, ``consistent`` for every other
turn, the other speakers' included) and a ``dialogue`` column. For every judge (wheel encoder x
method) the check scores each source's turns as it scores a user's (cut to speech, too-short turns
left out), and per τ of the grid reads, per source: the share of planted turns flagged
(``planted_found``), the share of dialogues whose planted turn is flagged and no other turn of that
speaker (``only_planted``), the share of clean turns flagged (``false_flags``), the share of
dialogues whose flags are exactly their planted turns (``dialogues_right``: the user's question,
one slip found and nothing else flagged, or nothing flagged in a clean dialogue) and the per-turn
balanced accuracy. Every judge but reference whose entry has the build's figures at every τ of
the grid (``build_figures``, which ``make_calibration`` writes), or no τ from a build at all,
takes the τ with the best value averaged over the curves: each source's ``dialogues_right`` and
the build's pooled validation detection balanced accuracy; its ``validation`` and ``test``
figures are then the build's at that τ, and the file records every source and every judge's
figures on each at its τ (the reference method keeps its benchmark τ alone: the dialogues have
no reference clips). ``benchmarks/bench_check_other_speech.py`` writes the
sources (``--manifests-out``) from ``tests/support/other_speech.py``.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from speakersleuth.judges.check.calibration import RECALIBRATION_GRID, parse_label
from speakersleuth.judges.check.checker import check_dialogues
from speakersleuth.judges.check.inputs import read_manifest
from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS, HIGHER_IS_CONSISTENT
from speakersleuth.judges.names import METHODS
from speakersleuth.judges.sweep import pick_threshold
from speakersleuth.speech.files import write_text_atomic


@dataclass(frozen=True)
class ScoredTurns:
    """A judge's scores of one labelled source's judged turns: ``scores``, ``planted`` (label
    inconsistent), and ``speaker_of`` each turn (``(dialogue, speaker)``), for the per-dialogue readings."""

    method: str
    scores: np.ndarray
    planted: np.ndarray
    speaker_of: list[tuple[str, str]]

    @property
    def dialogue_of(self) -> np.ndarray:
        return np.array([dialogue for dialogue, _ in self.speaker_of])


def score_source(dialogues, encoder: str, method: str, cache) -> ScoredTurns:
    """Every judged, labelled turn of ``dialogues`` scored by ``method`` on ``cache``'s encoder."""
    report = check_dialogues(dialogues, encoder=encoder, method=method, threshold=0.5, cache=cache)
    labels = {(d.name, t.id): parse_label(t.label, f"{d.source} turn {t.id!r}") for d in dialogues for t in d.turns}
    rows = [
        (t.score, labels[(s.dialogue, t.turn)], (s.dialogue, s.speaker))
        for s in report.speakers
        for t in s.turns
        if t.score is not None and labels[(s.dialogue, t.turn)] is not None
    ]
    scores, planted, speakers = zip(*rows)
    return ScoredTurns(method, np.asarray(scores), np.asarray(planted, dtype=bool), list(speakers))


def figures_at(scored: ScoredTurns, tau: float) -> dict:
    """Percent figures of a source at τ: planted turns found, speakers with a planted turn of whom
    only that turn is flagged, clean turns flagged, dialogues whose flags are exactly their planted
    turns (none for a clean one: ``dialogues_right``), and the per-turn balanced accuracy."""
    flagged = scored.scores < tau if HIGHER_IS_CONSISTENT[scored.method] else scored.scores > tau
    found = float(flagged[scored.planted].mean()) if scored.planted.any() else 0.0
    false_flags = float(flagged[~scored.planted].mean())
    slipped = {scored.speaker_of[i] for i in np.flatnonzero(scored.planted)}
    only = [
        all(flagged[i] == scored.planted[i] for i, who in enumerate(scored.speaker_of) if who == speaker)
        for speaker in slipped
    ]
    dialogues = scored.dialogue_of
    right = [np.array_equal(flagged[dialogues == d], scored.planted[dialogues == d]) for d in np.unique(dialogues)]
    return {
        "planted_found": round(100 * found, 2),
        "only_planted": round(100 * float(np.mean(only)), 2) if only else None,
        "false_flags": round(100 * false_flags, 2),
        "dialogues_right": round(100 * float(np.mean(right)), 2),
        "bal_acc": round(50 * (found + 1 - false_flags), 2),
        "planted_turns": int(scored.planted.sum()),
        "clean_turns": int((~scored.planted).sum()),
    }


def pooled_threshold(curves: list[dict[float, float]], method: str) -> float:
    """The grid τ with the best value averaged over the curves (τ -> percent: each labelled
    source's ``dialogues_right``, the benchmark's validation detection balanced accuracy); ties as
    ``judges.sweep.pick_threshold`` breaks them (closest to the paper's τ, then the smaller)."""
    grid = [t for t in RECALIBRATION_GRID if all(t in c for c in curves)]  # the grids' common values
    rows = [{"threshold": t, "det_bal_acc": float(np.mean([c[t] for c in curves]))} for t in grid]
    return pick_threshold(rows, DEFAULT_THRESHOLDS[method])


def refit(calibration: dict, sources: dict[str, list], caches: dict, default_method: str | None) -> dict:
    """The calibration with every judge's figures on each labelled source (``labelled``), τ refitted
    for every judge but reference (pooled with the build's validation curve where the entry has
    ``build_figures``, whose figures at the new τ it then takes), and the default set to
    ``default_method`` on the default encoder.

    Arguments
    ---------
    calibration : dict
        The calibration file's content (``judges.check.make_calibration``).
    sources : dict
        Source name -> its labelled dialogues (``read_manifest``).
    caches : dict
        Encoder spec -> ``EmbeddingCache``: every wheel encoder of the file.
    default_method : str, optional
        The default's method (its τ as refitted); None keeps the file's default.

    Returns
    -------
    dict
        The new content (``format`` 2).
    """
    encoders = list(dict.fromkeys(j["encoder"] for j in calibration["judges"]))
    entries = {(j["encoder"], j["method"]): dict(j) for j in calibration["judges"]}
    for encoder in encoders:
        for method in (m for m in METHODS if m != "reference"):  # the sources have no reference clips
            entry = entries.setdefault(
                (encoder, method), {"judge": f"{method}-{encoder}", "encoder": encoder, "method": method}
            )
            scored = {name: score_source(d, encoder, method, caches[encoder]) for name, d in sources.items()}
            built = entry.get("build_figures")
            if built or "threshold" not in entry or entry.get("calibrated_on", "").startswith("labelled"):
                curves = [
                    {t: figures_at(s, t)["dialogues_right"] for t in RECALIBRATION_GRID} for s in scored.values()
                ]
                curves += [{float(t): f["validation"]["det_bal_acc"] for t, f in built.items()}] if built else []
                entry["threshold"] = pooled_threshold(curves, method)
                entry["calibrated_on"] = "labelled and validation" if built else "labelled"
                entry.update(copy.deepcopy(built[f"{entry['threshold']:g}"]) if built else {})  # the build's, at τ
            entry["labelled"] = {name: figures_at(s, entry["threshold"]) for name, s in scored.items()}
    data = {**calibration, "format": 2, "judges": sorted(entries.values(), key=lambda e: e["judge"])}
    if default_method is not None:
        encoder = calibration["default"]["encoder"]
        data["default"] = {
            "encoder": encoder,
            "method": default_method,
            "threshold": entries[(encoder, default_method)]["threshold"],
        }
    return data


def main(argv: list[str] | None = None) -> int:
    """``python -m speakersleuth.judges.check.calibrate_labelled``: refit the calibration file in place."""
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.judges.check.calibrate_labelled", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--calibration", required=True, metavar="FILE", help="the calibration JSON to refit")
    parser.add_argument(
        "--labelled", action="append", required=True, metavar="NAME=MANIFEST",
        help="a labelled source (repeatable): a manifest with dialogue and label columns",
    )  # fmt: skip
    parser.add_argument("--default-method", choices=METHODS, default=None, help="the default's method")
    parser.add_argument("--cache", default=None, metavar="DIR", help="on-disk embedding cache")
    args = parser.parse_args(argv)
    import torch

    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.speech.encoders import get_encoder

    torch.set_num_threads(1)
    calibration = json.loads(Path(args.calibration).read_text(encoding="utf-8"))
    specs = dict(item.split("=", 1) for item in args.labelled)
    sources = {name: read_manifest(path) for name, path in specs.items()}
    encoders = dict.fromkeys(j["encoder"] for j in calibration["judges"])
    caches = {e: EmbeddingCache(get_encoder(e), args.cache) for e in encoders}
    data = refit(calibration, sources, caches, args.default_method)
    data["labelled_sources"] = {
        name: {"manifest": specs[name], "dialogues": len(d), "turns": sum(len(x.turns) for x in d)}
        for name, d in sources.items()
    }
    data["labelled_command"] = "python -m speakersleuth.judges.check.calibrate_labelled " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    write_text_atomic(args.calibration, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(data["default"]), "->", args.calibration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
