"""``calibration.json`` from a build, reproducibly: the embedding judges' threshold sweep
(``judges.sweep.run_sweep``, what ``python -m speakersleuth.judges sweep`` runs) on every variant's validation
split, pooled, and the best judge named as the check's default.

    python -m speakersleuth.judges.check.make_calibration --dataset /work/ab/after/D \\
        --calibration-out judges/check/calibration.json --sweep-out /tmp/check-sweep --cache /tmp/emb

Pooling: a judge's τ is the grid value with the best *mean over the variants* of the validation
detection balanced accuracy (ties as ``judges.sweep.pick_threshold`` breaks them: the τ closest
to the paper's, then the smaller), and the default judge is the one with the best such mean (ties:
the higher mean validation AUROC, then the name). The variants are pooled, not main alone, because
a variant's validation split is small (36 instances in main of the demo build) and a user's
dialogues differ in length (5 or 10 turns of a speaker) and in how a voice slips (re-spoken by
another voice, or DSP-converted: 4vc). Test figures are recorded beside, never used to choose.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import subprocess
import sys
from datetime import date
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS, embed_variant, predictions, score_variant
from speakersleuth.judges.names import METHODS
from speakersleuth.judges.sweep import THRESHOLDS, pick_threshold, run_sweep
from speakersleuth.metrics.score import score_predictions
from speakersleuth.speech.encoders import offline_encoders
from speakersleuth.speech.files import write_text_atomic

SELECTION = (
    "the judge (encoder, method) with the highest validation detection balanced accuracy, averaged "
    "over the variants {variants} of the build, each judge at its τ calibrated the same way (the grid "
    "value with the best mean; ties: closest to the paper's τ, then smaller); ties between judges: "
    "the higher mean validation AUROC, then the name. Test figures are reported, not used."
)


def make_calibration(
    dataset, *, variants=None, sweep_out, cache_dir=None, progress=True, command="", dataset_name=None
) -> dict:
    """Sweep every method x wheel encoder on each variant and pool the validation splits.

    Arguments
    ---------
    dataset : str or os.PathLike
        A built dataset folder with validation splits (and their gold).
    variants : sequence of str, optional
        The variants to pool (default: every variant with a validation detection split).
    sweep_out : str or os.PathLike
        A folder for each variant's sweep (``<sweep_out>/<variant>/sweep.{csv,md,png}``).
    cache_dir : str or os.PathLike, optional
        The judges' on-disk embedding cache.
    progress : bool
        Progress bars (default True).
    command : str
        The command line recorded in the file.
    dataset_name : str, optional
        How messages name the build (default: its folder).

    Returns
    -------
    dict
        The calibration file's content (``default``, ``judges``, ``selection``, ``source``).
    """
    variants = list(
        variants or [v for v in ssd.VARIANTS if "detection" in ssd.tasks_present(dataset, v, "validation")]
    )
    if not variants:
        raise FileNotFoundError(f"{dataset}: no validation detection split to calibrate on")
    judges = [f"{m}-{e}" for e in offline_encoders() for m in METHODS]
    caches: dict = {}
    rows = []
    for variant in variants:
        swept = run_sweep(
            dataset, variant, judges, Path(sweep_out) / variant, cache_dir=cache_dir, caches=caches, progress=progress
        )
        rows += swept["rows"]
    entries = [_entry(rows, judge, variants) for judge in judges]
    for entry in entries:  # threshold-free: the same at every τ, kept with each τ's figures
        auroc = _auroc(dataset, variants, caches[entry["encoder"]], entry)
        for figures in (entry, *entry["build_figures"].values()):
            figures["validation"]["auroc"] = auroc
    best = max(entries, key=lambda e: (e["validation"]["det_bal_acc"], e["validation"]["auroc"], e["judge"]))
    return {
        "format": 1,
        "default": {k: best[k] for k in ("encoder", "method", "threshold")},
        "selection": SELECTION.format(variants=", ".join(variants)),
        "judges": sorted(entries, key=lambda e: (-e["validation"]["det_bal_acc"], e["judge"])),
        "source": _source(dataset, variants, command, dataset_name),
    }


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 2) if values else None


def _entry(rows: list[dict], judge: str, variants: list[str]) -> dict:
    """One judge's pooled τ and its validation and test figures (percent) at that τ, and at every
    τ of the grid (``build_figures``: ``calibrate_labelled`` moves τ and reads them there)."""
    mine = [r for r in rows if r["judge"] == judge]
    method, encoder = mine[0]["method"], mine[0]["encoder"]

    def at(split: str, tau: float, key: str, variant: str):
        return next(r[key] for r in mine if (r["split"], r["threshold"], r["variant"]) == (split, tau, variant))

    def figures_at(tau: float) -> dict:
        figures = {
            split: {
                "per_variant": {
                    v: {
                        k: round(at(split, tau, k, v), 2)
                        for k in ("det_bal_acc", "loc_bal_f1")
                        if at(split, tau, k, v) is not None
                    }
                    for v in variants
                }
            }
            for split in ("validation", "test")
        }
        for split, keys in (("validation", ("det_bal_acc",)), ("test", ("det_bal_acc", "loc_bal_f1"))):
            for key in keys:
                figures[split][key] = _mean(at(split, tau, key, v) for v in variants)
        return figures

    by_threshold = {t: figures_at(t) for t in THRESHOLDS}
    pooled = [{"threshold": t, "det_bal_acc": f["validation"]["det_bal_acc"]} for t, f in by_threshold.items()]
    tau = pick_threshold(pooled, DEFAULT_THRESHOLDS[method])
    return {
        "judge": judge,
        "encoder": encoder,
        "method": method,
        "threshold": tau,
        **copy.deepcopy(by_threshold[tau]),
        "build_figures": {f"{t:g}": f for t, f in by_threshold.items()},
    }


def _auroc(dataset, variants: list[str], cache, entry: dict) -> float:
    """The judge's mean validation detection AUROC (percent; threshold-free: the tie-break)."""
    values = []
    for variant in variants:
        embeddings = embed_variant(
            dataset,
            variant,
            ["detection"],
            cache,
            split="validation",
            with_reference=entry["method"] == "reference",
            progress=False,
        )
        lines = predictions(score_variant(entry["method"], embeddings), entry["threshold"])
        values.append(score_predictions(lines, dataset, split="validation")["detection"]["auroc"])
    return _mean(values)


def _source(dataset, variants: list[str], command: str, name: str | None) -> dict:
    """Where the figures come from: the build (its name, shards' digests), the code, the command."""
    folder = Path(dataset)
    counts = {
        v: sum(
            pq.ParquetFile(p).metadata.num_rows
            for p in ssd.shard_paths(folder, ssd.config_name("detection", v), "validation")
        )
        for v in variants
    }
    return {
        "dataset": str(dataset),
        "dataset_name": name or f"the SpeakerSleuth build {folder.resolve()}",
        "build_seed": ssd.read_card(folder)[0].get("build_seed"),
        "build_fingerprint": _fingerprint(folder),
        "variants": variants,
        "validation_instances": counts,
        "grid": list(THRESHOLDS),
        "shards_sha256": ssd.shard_digests(folder),
        "commit": _commit(),
        "command": command,
        "made": date.today().isoformat(),
    }


def _fingerprint(folder: Path) -> str | None:
    """The build's fingerprint (its hidden stamp), when the folder has one."""
    stamp = folder / ".build_fingerprint.json"
    return json.loads(stamp.read_text(encoding="utf-8")).get("fingerprint") if stamp.is_file() else None


def _commit() -> str:
    """The code's git commit (``+dirty`` when the tree has changes), or ``unknown`` outside a checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain"], capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.strip() else "")


def main(argv: list[str] | None = None) -> int:
    """``python -m speakersleuth.judges.check.make_calibration``: write ``calibration.json`` from a build."""
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.judges.check.make_calibration", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dataset", required=True, help="a built dataset folder with validation splits")
    parser.add_argument(
        "--variant", default=None, help="comma-separated variants to pool (default: all with validation)"
    )
    parser.add_argument("--calibration-out", required=True, metavar="FILE", help="the calibration JSON to write")
    parser.add_argument("--sweep-out", required=True, metavar="DIR", help="folder for each variant's sweep")
    parser.add_argument("--cache", default=None, metavar="DIR", help="on-disk embedding cache")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--dataset-name", default=None, help="how the file names the build (default: its folder)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as the judges' command: the embeddings do not depend on the thread count run
    command = "python -m speakersleuth.judges.check.make_calibration " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    data = make_calibration(
        args.dataset,
        variants=args.variant.split(",") if args.variant else None,
        sweep_out=args.sweep_out,
        cache_dir=args.cache,
        progress=not args.no_progress,
        command=command,
        dataset_name=args.dataset_name,
    )
    write_text_atomic(args.calibration_out, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(data["default"]), "from", ", ".join(data["source"]["variants"]), "->", args.calibration_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
