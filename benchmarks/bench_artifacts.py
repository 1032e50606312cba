"""Resynthesis artefacts per scenario of a built dataset folder (issue 16).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_artifacts.py DATASET [AFTER] [--figure worst.png]

Reads the discrimination candidates of the test split of every variant in ``DATASET`` (S1: the
original, S2/S3: the converted turns, as published) and prints, per variant, scenario and
voice-conversion backend, the measures of the card's shortcut audit (``builder_scripts/artifacts.py``):
the share of clips with an impulse (click), the share with an exact-zero run inside the speech,
and the median harmonics-to-noise ratio, with each impulse rate over S1's (issue 16 asks for
<= 1.5). With ``AFTER`` (a second build of the same plan, e.g. after a change to the conversion)
it prints that folder's table too, and ``--figure`` draws the converted candidate of ``--backend``
(default world) with the most impulse windows in ``DATASET`` above the same candidate in ``AFTER``.
"""

from __future__ import annotations

import argparse
import io
from collections import defaultdict
from pathlib import Path

import numpy as np
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.artifacts import impulse_windows
from speakersleuth.builder_scripts.shortcut_measures import ArtifactRates


def candidates(root: Path, variant: str) -> dict[tuple[str, str], tuple[str, str, np.ndarray]]:
    """``(instance id, scenario) -> (backend, gender heard, clip)`` of the variant's discrimination test rows."""
    name = ssd.config_name("discrimination", variant)
    if not ssd.shard_paths(root, name, "test"):
        return {}
    out = {}
    columns = ["id", "vc_model", "target_gender", "candidates", "candidate_scenarios"]
    for row in ssd.read_rows(root, name, "test", columns=columns).to_pylist():
        other = next(g for g in ssd.GENDERS if g != row["target_gender"])
        for clip, scenario in zip(row["candidates"], row["candidate_scenarios"]):
            gender = other if scenario == "S2" else row["target_gender"]
            out[(row["id"], scenario)] = (
                row["vc_model"],
                gender,
                sf.read(io.BytesIO(clip["bytes"]), dtype="float32")[0],
            )
    return out


def report(root: Path) -> dict[str, dict]:
    """Print the per-scenario table of every variant (and backend); return the clips by variant."""
    clips_by_variant = {}
    for variant in ssd.VARIANTS:
        clips = candidates(root, variant)
        if not clips:
            continue
        clips_by_variant[variant] = clips
        by_backend = defaultdict(ArtifactRates)
        for (_, scenario), (backend, gender, clip) in clips.items():
            for label in ("all", backend):
                by_backend[label].add("published", scenario, clip, gender)
        for label, rates in by_backend.items():
            print(f"\n{root} · {variant} · backend {label}\n")
            print("\n".join(line for line in rates.table().splitlines() if "| raw |" not in line))
    return clips_by_variant


def figure(before: dict, after: dict, path: Path, backend: str) -> None:
    """The converted candidate of ``backend`` with the most impulse windows in ``before``, above the same one in ``after``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worst = max(
        (
            (impulse_windows(clip), variant, key)
            for variant, clips in before.items()
            for key, (vc, _, clip) in clips.items()
            if key[1] != "S1" and vc == backend
        ),
        key=lambda t: t[0],
    )
    _, variant, key = worst
    clip_before, clip_after = before[variant][key][-1], after[variant][key][-1]
    centre = int(np.argmax(np.abs(np.diff(clip_before))))
    span = slice(max(0, centre - 800), centre + 800)
    fig, axes = plt.subplots(2, 1, figsize=(10, 5), sharex=True, sharey=True)
    for ax, clip, label in ((axes[0], clip_before, "before"), (axes[1], clip_after, "after")):
        t = np.arange(clip.size)[span] / ssd.SAMPLING_RATE
        ax.plot(t, clip[span], lw=0.8)
        ax.set_title(
            f"{label}: {variant} {key[0]} candidate {key[1]} ({impulse_windows(clip)} impulse windows in the clip)"
        )
    axes[1].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"\nfigure: {path} ({variant} {key[0]} {key[1]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "dataset", type=Path, help="a built dataset folder (python -m speakersleuth.builder_scripts build --dataset-out DIR)"
    )
    parser.add_argument("after", type=Path, nargs="?", help="a second build of the same plan to compare with")
    parser.add_argument("--figure", type=Path, help="PNG of the worst converted candidate, before (and after)")
    parser.add_argument(
        "--backend", default="world", help="voice-conversion backend of the figure's candidate (default world)"
    )
    args = parser.parse_args()
    before = report(args.dataset)
    if not before:
        parser.error(f"{args.dataset} has no discrimination test shards; build it first")
    if args.after is not None:
        after = report(args.after)
        if args.figure:
            figure(before, after, args.figure, args.backend)
    elif args.figure:
        figure(before, before, args.figure, args.backend)


if __name__ == "__main__":
    main()
