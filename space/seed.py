"""Seed the leaderboard store with baseline predictions (e.g. the judges' JSONL files).

    python -m speakersleuth.space.seed --predictions results/ --dataset speakersleuth [--gold gold_dir] [--data-dir data/space]

Every ``*.jsonl`` under ``--predictions`` (a folder, e.g. what ``python -m speakersleuth.judges baselines
--results-out`` wrote) is validated, scored and stored exactly like an upload
(identical files are recognised, so seeding twice adds nothing), counted against the identity
``seed`` without a rate limit. What a file is comes from, in order:

1. a sidecar JSON beside it (``<name>.json`` or ``<name>.jsonl.json``) with any of ``variant``,
   ``model_name`` (or ``judge``, as in a judge's run summary), ``organisation``, ``model_type``,
   ``access``, ``link``, ``model_date``;
2. the variant as a folder name on its path (``results/4vc/x.jsonl``) or as the last
   ``.``/``_``/``-`` separated token of its name (``centroid-resemblyzer.10turn.jsonl``); otherwise
   ``main``;
3. the model name is the file name without the variant token; embedding judges
   (``pairwise-``/``centroid-``/``reference-``) get the type "embedding", others "other".
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from tqdm import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.names import BASELINE_ORGANISATION
from speakersleuth.space.store import BASELINE_SUBMITTER, open_store
from speakersleuth.space.submitter import Submitter, gold_folder

ORGANISATION = BASELINE_ORGANISATION  # reserved for the baselines (space.names)
EMBEDDING_METHODS = ("pairwise-", "centroid-", "reference-", "core-")


def _sidecar(path: Path) -> dict:
    for candidate in (path.with_suffix(".json"), path.with_name(path.name + ".json")):
        if candidate.is_file():
            data = json.loads(candidate.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError(f"{candidate}: expected a JSON object")
            return data
    return {}


def describe(path: Path, root: Path) -> tuple[str, dict]:
    """The variant and the form fields of one predictions file (see the module docstring).

    >>> describe(Path("r/4vc/centroid-resemblyzer.jsonl"), Path("r"))[0]
    '4vc'
    >>> variant, form = describe(Path("r/pairwise-ecapa.10turn.jsonl"), Path("r"))
    >>> variant, form["model_name"], form["model_type"]
    ('10turn', 'pairwise-ecapa', 'embedding')
    """
    side = _sidecar(path)
    tokens = re.split(r"([._-])", path.stem)
    variant = side.get("variant")
    name = path.stem
    if variant is None:
        folders = [p for p in path.relative_to(root).parts[:-1] if p in ssd.VARIANTS]
        if folders:
            variant = folders[-1]
        elif len(tokens) >= 3 and tokens[-1] in ssd.VARIANTS:
            variant, name = tokens[-1], "".join(tokens[:-2])
        else:
            variant = "main"
    name = side.get("model_name") or side.get("judge") or name
    form = {
        "model_name": name,
        "organisation": side.get("organisation", ORGANISATION),
        "model_type": side.get("model_type", "embedding" if name.startswith(EMBEDDING_METHODS) else "other"),
        "access": side.get("access", "open"),
        "link": side.get("link", ""),
        "model_date": side.get("model_date", ""),
    }
    return variant, form


def seed(submitter: Submitter, results: Path, *, progress: bool = True) -> dict[str, int]:
    """Submit every predictions file under ``results``; returns counts per outcome."""
    files = sorted(p for p in results.rglob("*.jsonl") if p.is_file())
    counts: dict[str, int] = {}
    for path in tqdm(files, desc="seeding", unit="file", disable=not progress):
        variant, form = describe(path, results)
        result = submitter.submit(path.read_bytes(), variant, form, as_user=BASELINE_SUBMITTER, rate_limited=False)
        counts[result.status] = counts.get(result.status, 0) + 1
        detail = "" if not result.errors else ": " + "; ".join(result.errors[:5])
        tqdm.write(f"{path.relative_to(results)} [{variant}] {result.status}{detail}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speakersleuth.space.seed", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--predictions",
        type=Path,
        required=True,
        metavar="DIR",
        help="a folder of predictions JSONL files (searched recursively)",
    )
    parser.add_argument("--dataset", help="built dataset folder or Hub id (env SPEAKERSLEUTH_DATASET)")
    parser.add_argument("--gold", help="private test gold of a blind dataset (env SPEAKERSLEUTH_GOLD)")
    parser.add_argument("--data-dir", type=Path, help="the Space's data folder (env SPEAKERSLEUTH_DATA_DIR)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if not args.predictions.is_dir():
        print(f"error: {args.predictions}: no such folder", file=sys.stderr)
        return 2
    try:
        config = SpaceConfig.from_env(dataset=args.dataset, gold=args.gold, data_dir=args.data_dir)
        dataset = config.dataset_folder()
        gold = gold_folder(config, dataset)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    with open_store(config) as store:
        submitter = Submitter(
            config, store, dataset, variants=ssd.variants_present(dataset, every_task=True), gold=gold
        )
        counts = seed(submitter, args.predictions, progress=not args.no_progress)
    print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no predictions files found")
    return 0 if not set(counts) - {"accepted", "duplicate"} else 1


if __name__ == "__main__":
    sys.exit(main())
