"""The maintainer's commands for a blind round (``space.disclosure``): open one from a build made
with a secret seed, close it, publish its gold and standings.

::

    python -m speakersleuth.space.round open --build leaderboard-build --public-out public --gold-out gold
    python -m speakersleuth.space.round close --dataset public --gold gold --data-dir data --out round-1
    python -m speakersleuth.space.round publish --round round-1 --repo <org>/speakersleuth-round-1

``open`` writes the build's ``--unpaired`` blind copy (refused for a build whose seed is known),
checks that each variant's test split splits into two parts, and prints each part's size and
Ladder steps and the Space's settings. ``close`` freezes each identity's selection at the moment
of the close (``frozen_selection``) and writes the round's release folder: the gold (``gold/``),
which test ids are in which part (``parts.json``), the selected files' canonical predictions
(``predictions/<id>.jsonl``), the standings with their private headline metrics
(``standings.json``) and a card (``README.md``); it prints the settings that restart the Space
closed. ``publish`` pushes that folder to a public Hub dataset repo (``HF_TOKEN``), after which
nothing of the round is left to protect and anyone can score the files again; the next round is
built anew with a new secret seed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.config import SpaceConfig, parse_moment
from speakersleuth.space.disclosure import RELEASED, BlindRound, frozen_selection, headline, split_parts
from speakersleuth.space.store import open_store
from speakersleuth.speech.files import write_bytes_atomic

RELEASE_CARD = """\
---
license: cc-by-4.0
---
# SpeakerSleuth blind round, closed {closed_at}

The round is closed and its hidden test split retired. `gold/` is its test gold (read it with
`speakersleuth.metrics.submission.load_gold`), `parts.json` the test ids of its public and
private parts per variant and task, `predictions/` each identity's selected file (its newest file
of the variant not withdrawn at the close), and `standings.json` their private headline metrics
(detection balanced accuracy, localization balanced F1, discrimination accuracy), which decided
the ranking. Anyone can score the files again: score a file against `gold/` restricted to the
private ids of `parts.json`.
"""


def open_round(build: Path, public: Path, gold: Path) -> dict[str, dict]:
    """Write the ``--unpaired`` blind copy of ``build`` (made with a secret seed) and check it can
    run a round; returns, per variant, each part's instances per task and the Ladder's steps."""
    ssd.write_blind(build, public, gold, unpaired=True)
    summary = {}
    for variant in ssd.variants_present(gold):
        parts = split_parts(load_gold(gold, variant))
        summary[variant] = {
            "public": {task: len(rows) for task, rows in parts.public.tasks.items()},
            "private": {task: len(rows) for task, rows in parts.private.tasks.items()},
            "step": parts.step,
        }
    return summary


def close_round(config: SpaceConfig, out: Path, closed_at: float) -> list[dict]:
    """Freeze each identity's selection at ``closed_at`` in the store ``config`` names, and write
    the round's release folder ``out`` (the module docstring); returns the standings."""
    if out.exists():
        raise ValueError(f"{out}: exists; close writes a new release folder")
    gold_dir = config.gold_folder()
    store = open_store(config)
    policy = BlindRound(n_bootstrap=0, closed_at=closed_at)
    try:
        standings, parts_ids = _selected(store, gold_dir, out, policy)
    finally:
        store.close()
    shutil.copytree(gold_dir, out / "gold")
    when = moment(closed_at)
    write_bytes_atomic(out / "parts.json", json.dumps(parts_ids, indent=1).encode())
    document = {"closed_at": when, "standings": standings}
    write_bytes_atomic(out / "standings.json", json.dumps(document, indent=1).encode())
    write_bytes_atomic(out / "README.md", RELEASE_CARD.format(closed_at=when).encode())
    return standings


def _selected(store, gold_dir: Path, out: Path, policy: BlindRound) -> tuple[list[dict], dict]:
    """The standings of ``policy``'s frozen selection in ``store`` (each selected file's canonical
    predictions written to ``out/predictions``) and each variant's test ids per part and task."""
    standings, parts_ids = [], {}
    (out / "predictions").mkdir(parents=True)
    for variant in ssd.variants_present(gold_dir):
        parts = BlindRound.parts(load_gold(gold_dir, variant))
        parts_ids[variant] = {
            task: {"public": sorted(parts.public.tasks[task]), "private": sorted(parts.private.tasks[task])}
            for task in parts.public.tasks
        }
        for record in frozen_selection(store.results(variant, include_withdrawn=True), policy.closed_at).values():
            write_bytes_atomic(out / "predictions" / f"{record.id}.jsonl", store.predictions(record.id))
            standings.append(standing(record, policy))
    standings.sort(key=lambda s: (s["variant"], *(-(s[key] or 0.0) for key in RELEASED), s["id"]))
    return standings, parts_ids


def standing(record, policy: BlindRound) -> dict:
    """One row of the standings: who (a Hugging Face user; a network address is not published),
    which file, and its private headline metrics as the closed table shows them."""
    who = record.submitter.removeprefix("hf:") if record.submitter.startswith("hf:") else "(network address)"
    row = policy.row(record)
    return {
        "variant": record.variant,
        "identity": who,
        "model_name": record.metadata.model_name,
        "organisation": record.metadata.organisation,
        "id": record.id,
        "sha256": record.sha256,
        **{key: row[key] for key in RELEASED},
        "private_raw": headline(record.scores["private"]),
    }


def publish_round(folder: Path, repo: str, token: str | None) -> str:
    """Push a closed round's release ``folder`` to the public Hub dataset repo ``repo``; its URL."""
    from huggingface_hub import HfApi

    if not (folder / "standings.json").is_file():
        raise ValueError(f"{folder}: not a closed round's release folder (no standings.json); run close first")
    api = HfApi(token=token)
    api.create_repo(repo, repo_type="dataset", private=False, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="dataset", commit_message="Close the round")
    return f"https://huggingface.co/datasets/{repo}"


def moment(timestamp: float) -> str:
    """A Unix time as ISO 8601 UTC (what ``SPEAKERSLEUTH_ROUND_CLOSED_AT`` reads).

    >>> moment(86_400.0)
    '1970-01-02T00:00:00+00:00'
    """
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "open":
            for variant, summary in open_round(args.build, args.public_out, args.gold_out).items():
                print(f"{variant}: public {summary['public']}, private {summary['private']}, steps {summary['step']}")
            print(
                f"SPEAKERSLEUTH_DATASET={args.public_out} SPEAKERSLEUTH_GOLD={args.gold_out} SPEAKERSLEUTH_ROUND=open"
            )
        elif args.command == "close":
            closed_at = parse_moment(args.at, "--at") if args.at else time.time()
            config = SpaceConfig.from_env(dataset=args.dataset, gold=args.gold, data_dir=args.data_dir)
            standings = close_round(config, args.out, closed_at)
            print(f"{len(standings)} selected files; the release folder: {args.out}")
            print(f"SPEAKERSLEUTH_ROUND=closed SPEAKERSLEUTH_ROUND_CLOSED_AT={moment(closed_at)}")
        else:
            print(publish_round(args.round, args.repo, args.token))
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m speakersleuth.space.round", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    opening = commands.add_parser("open", help="the blind copy of a secret-seed build, checked for a round")
    opening.add_argument("--build", type=Path, required=True, help="a built dataset folder (made with a secret seed)")
    opening.add_argument("--public-out", type=Path, required=True, help="the public copy the Space serves")
    opening.add_argument("--gold-out", type=Path, required=True, help="its test gold (keep private until the close)")
    closing = commands.add_parser("close", help="freeze the selection and write the round's release folder")
    closing.add_argument("--dataset", required=True, help="the public copy the Space serves")
    closing.add_argument("--gold", required=True, help="its gold folder (or private Hub dataset id)")
    closing.add_argument("--data-dir", type=Path, required=True, help="the Space's data folder (its results store)")
    closing.add_argument("--out", type=Path, required=True, help="the release folder to write (new)")
    closing.add_argument("--at", help="the moment of the close, ISO 8601 (default: now)")
    publishing = commands.add_parser("publish", help="push a closed round's release folder to a public Hub dataset")
    publishing.add_argument("--round", type=Path, required=True, help="the release folder close wrote")
    publishing.add_argument("--repo", required=True, help="the public Hub dataset repo, <org>/<name>")
    publishing.add_argument("--token", help="a Hub token with write access (default: HF_TOKEN)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
