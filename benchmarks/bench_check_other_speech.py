"""The check on speech we did not make: each method x encoder on dialogues of real recordings,
eSpeak NG voices and DECtalk voices (``tests/support/other_speech.py``), with one turn of the target
planted from another voice of the same source (same gender, other gender) and clean dialogues.

    python benchmarks/bench_check_other_speech.py --manifests-out /tmp/other-speech [--encoders eres2net,campplus]

Writes each source's dialogues as a labelled manifest (``<out>/<source>/manifest.csv``: the planted
turn ``inconsistent``, every other turn ``consistent``), the input of
``python -m speakersleuth.judges.check.calibrate_labelled``, then prints, per encoder and method at
the τ of the shipped calibration file and at the τ pooled over these sources: per source, the
planted turns found, the dialogues where only the planted turn of its speaker is flagged, and the
clean turns flagged; and the τ window (the grid values where, over all sources, at least 85 % of
dialogues flag only their planted turn and at most 5 % of clean turns are flagged).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.other_speech import (  # noqa: E402
    DECTALK,
    ESPEAK,
    dectalk_voice,
    dialogue,
    espeak_voice,
    real_voice,
    voices,
)

#: Target speakers per source (each with at least five turns).
SOURCES = {
    "real": (["allison", "june", "carlo", "ru_f", "paola"], real_voice),
    "espeak": (list(ESPEAK), espeak_voice),
    "dectalk": (list(DECTALK), dectalk_voice),
}
SEEDS = (100, 101)


def write_source(name: str, out: Path) -> Path:
    """One source's dialogues (per target and seed: a plant of the target's gender and one of the
    other gender, drawn among every voice of every source, and a clean dialogue; the other speaker
    the source's next target) as files and a labelled manifest."""
    targets, make = SOURCES[name]
    rows = []
    for t_index, target_name in enumerate(targets):
        target, other = make(target_name), make(targets[(t_index + 1) % len(targets)])
        pool = [v for v in voices() if v.name != target.name]
        for seed in SEEDS:
            rng = np.random.default_rng([seed, t_index])
            same = [v for v in pool if v.gender == target.gender]
            different = [v for v in pool if v.gender != target.gender]
            plants = {
                "same": same[rng.integers(len(same))],
                "other": different[rng.integers(len(different))],
                "clean": None,
            }
            for kind, planted in plants.items():
                made = dialogue(target, other, 5, planted, seed=seed + t_index)
                rows += _write_dialogue(out / name, f"{target_name}-{seed}-{kind}", made)
    manifest = out / name / "manifest.csv"
    with manifest.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dialogue", "turn", "speaker", "path", "label"])
        writer.writerows(rows)
    return manifest


def _write_dialogue(folder: Path, name: str, made) -> list[list[str]]:
    rows = []
    for i, (speaker, wave) in enumerate(made.turns, 1):
        path = folder / "audio" / f"{name}-{i:02d}.flac"
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(path, wave, 16000, subtype="PCM_16")
        label = "inconsistent" if i - 1 == made.planted else "consistent"
        rows.append([name, str(i), speaker, str(path.relative_to(folder)), label])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manifests-out", required=True, type=Path)
    parser.add_argument("--encoders", default="eres2net,campplus,resemblyzer,dvector")
    args = parser.parse_args()
    import torch

    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.judges.check import load_calibration, read_manifest
    from speakersleuth.judges.check.calibrate_labelled import figures_at, pooled_threshold, score_source
    from speakersleuth.judges.check.calibration import RECALIBRATION_GRID
    from speakersleuth.judges.names import METHODS
    from speakersleuth.speech.encoders import get_encoder

    torch.set_num_threads(1)
    sources = {name: read_manifest(write_source(name, args.manifests_out)) for name in SOURCES}
    calibration = load_calibration()
    print(
        "| encoder | method | τ | "
        + " | ".join(f"{s}: found / only / false flags / right" for s in sources)
        + " | τ window |"
    )
    print("|---" * (4 + len(sources)) + "|")
    for encoder in args.encoders.split(","):
        cache = EmbeddingCache(get_encoder(encoder))
        for method in (m for m in METHODS if m != "reference"):
            scored = {name: score_source(d, encoder, method, cache) for name, d in sources.items()}
            curves = [{t: figures_at(s, t)["dialogues_right"] for t in RECALIBRATION_GRID} for s in scored.values()]
            window = [t for t in RECALIBRATION_GRID if _holds([figures_at(s, t) for s in scored.values()])]
            shipped = calibration.entry(encoder, method)
            for label, tau in (
                ("shipped", shipped and shipped["threshold"]),
                ("pooled", pooled_threshold(curves, method)),
            ):
                if tau is None:
                    continue
                cells = [_cell(figures_at(s, tau)) for s in scored.values()]
                span = f"{window[0]:g}-{window[-1]:g} ({len(window)})" if window else "none"
                print(f"| {encoder} | {method} | {tau:g} ({label}) | " + " | ".join(cells) + f" | {span} |")
    return 0


def _holds(figures: list[dict]) -> bool:
    only = np.mean([f["only_planted"] for f in figures])
    return only >= 85 and max(f["false_flags"] for f in figures) <= 5


def _cell(f: dict) -> str:
    return f"{f['planted_found']:.0f} / {f['only_planted']:.0f} / {f['false_flags']:.1f} / {f['dialogues_right']:.0f}"


if __name__ == "__main__":
    sys.exit(main())
