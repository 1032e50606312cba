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

With ``--follow PID`` it seeds the files as a running ``python -m speakersleuth.judges baselines``
(process ``PID``) writes them, in the order its ``progress.json`` lists them, until that process
has ended; meanwhile ``<data dir>/baselines-status.json`` (``STATUS_FILE``) says how many are
planned and seeded, and the Space's Leaderboard tab how many are still running
(``space.baselines_status.baselines_note``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from tqdm import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.space.baselines_status import STATUS_FILE, read_progress
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.names import BASELINE_ORGANISATION
from speakersleuth.space.store import BASELINE_SUBMITTER, open_store
from speakersleuth.space.submitter import Submitter, gold_folder
from speakersleuth.speech.files import write_text_atomic

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
        _seed_file(submitter, path, results, counts)
    return counts


def _seed_file(submitter: Submitter, path: Path, results: Path, counts: dict[str, int]) -> None:
    """Submit one predictions file, counted in ``counts`` by outcome and reported on one line."""
    variant, form = describe(path, results)
    result = submitter.submit(path.read_bytes(), variant, form, as_user=BASELINE_SUBMITTER, rate_limited=False)
    counts[result.status] = counts.get(result.status, 0) + 1
    detail = "" if not result.errors else ": " + "; ".join(result.errors[:5])
    tqdm.write(f"{path.relative_to(results)} [{variant}] {result.status}{detail}")


def follow(submitter: Submitter, results: Path, pid: int, status: Path, *, poll_s: float = 1.0) -> dict[str, int]:
    """Seed the files the baselines' process ``pid`` writes in ``results`` as they appear in its
    ``PROGRESS_FILE``, until it says it wrote them all or the process has ended; after each round
    ``status`` (``STATUS_FILE``) says how far it is. Returns counts per outcome.

    Arguments
    ---------
    submitter : Submitter
        Scores and stores each file, as ``seed`` does.
    results : Path
        The baselines' ``--results-out`` folder.
    pid : int
        The process id of ``python -m speakersleuth.judges baselines`` (or of a shell running it).
    status : Path
        The JSON file written after each round: ``planned`` (None before the baselines said),
        ``seeded``, ``running`` and ``finished``.
    poll_s : float
        Seconds between two looks at the progress file (default 1).

    Returns
    -------
    dict
        Files per outcome (``accepted``, ``duplicate``, ...), as ``seed`` returns them.
    """
    from speakersleuth.judges.run import PROGRESS_FILE  # inside: the Space imports judges only in functions

    counts: dict[str, int] = {}
    seeded: set[str] = set()
    while True:
        running = _alive(pid)  # asked before reading the progress, so that nothing is written after the last look
        progress = read_progress(results / PROGRESS_FILE)
        for name in progress.get("written", []):
            if name not in seeded:
                _seed_file(submitter, results / name, results, counts)
                seeded.add(name)
        finished = bool(progress.get("finished"))  # every file written, and so seeded by now
        record = {"planned": progress.get("planned"), "seeded": len(seeded), "running": running, "finished": finished}
        write_text_atomic(status, json.dumps(record))
        if finished or not running:
            return counts
        time.sleep(poll_s)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (an ended one its parent has not reaped yet still does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


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
    parser.add_argument(
        "--follow",
        type=int,
        metavar="PID",
        help="seed the files as the baselines' process PID writes them, until it ends (status in the data folder)",
    )
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
        if args.follow is None:
            counts = seed(submitter, args.predictions, progress=not args.no_progress)
        else:
            counts = follow(submitter, args.predictions, args.follow, config.data_dir / STATUS_FILE)
    print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no predictions files found")
    return 0 if not set(counts) - {"accepted", "duplicate"} else 1


if __name__ == "__main__":
    sys.exit(main())
