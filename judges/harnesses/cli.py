"""The harness commands of ``python -m speakersleuth.judges``: ``convert`` (a harness run -> predictions)
and ``lmms-tasks`` (where the lmms-eval task folder is, or a copy of it for another dataset)."""

from __future__ import annotations

import argparse
import json
import sys

from speakersleuth.judges.harnesses.convert import HarnessLogError, convert
from speakersleuth.metrics.submission import SubmissionError


def add_harness_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``convert`` and ``lmms-tasks`` subcommands."""
    conv = sub.add_parser(
        "convert",
        help="turn Inspect logs or lmms-eval samples files of SpeakerSleuth tasks into a predictions JSONL",
    )
    conv.add_argument(
        "--log",
        nargs="+",
        required=True,
        metavar="FILE",
        help="Inspect .eval/.json logs or lmms-eval *_samples_*.jsonl",
    )
    conv.add_argument("--predictions-out", required=True, metavar="FILE", help="the predictions JSONL to write")
    conv.add_argument(
        "--gold",
        default=None,
        help="the gold to check against (default: the dataset the run names; a blind copy's gold folder)",
    )
    lmms = sub.add_parser(
        "lmms-tasks", help="print the lmms-eval task folder (--include_path), or write a copy for a dataset"
    )
    lmms.add_argument("--dataset", default=None, help="the dataset the copy's tasks read (a built folder or a Hub id)")
    lmms.add_argument("--variant", default="main", help="main, 4vc or 10turn (default: main)")
    lmms.add_argument("--setting", default="main", help="main, context or no_reference (default: main)")
    lmms.add_argument("--tasks-out", default=None, metavar="DIR", help="write the copy here (with --dataset)")


def run_harness_command(args: argparse.Namespace) -> int:
    """Run ``convert`` or ``lmms-tasks``; a refused input is one ``error:`` line and status 2."""
    from speakersleuth.judges.harnesses.lmms import TASK_FOLDER, write_task_folder

    try:
        if args.command == "lmms-tasks":
            if args.tasks_out is None:
                print(TASK_FOLDER)
                return 0
            print(write_task_folder(args.tasks_out, args.dataset, args.variant, args.setting))
            return 0
        summary = convert(args.log, args.predictions_out, gold=args.gold)
    except (HarnessLogError, SubmissionError, ValueError, FileNotFoundError) as err:
        print(f"error: {str(err).splitlines()[0] if isinstance(err, HarnessLogError) else err}", file=sys.stderr)
        return 2
    scores = summary["scores"]
    figures = {task: {k: v for k, v in scores[task].items() if k != "ci"} for task in scores["tasks"]}
    print(
        json.dumps(
            {"out": summary["out"], "run": summary["run"], "lines": summary["lines"], "scores": figures}, indent=1
        )
    )
    return 0
