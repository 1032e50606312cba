"""The scorer's command line and its text report (``python -m speakersleuth.metrics.score`` and ``python -m speakersleuth.metrics.report``
run ``main``; ``metrics.score`` only hands its ``__main__`` over to this module and imports nothing of it).

``metrics.score`` computes the scores as data; this module only presents them. The gold comes
from a built folder (``--dataset``) or, for a blind copy, from its private gold folder (``--gold``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from speakersleuth.metrics.core import SCENARIOS
from speakersleuth.metrics.score import leaderboard_row, score_submission
from speakersleuth.metrics.submission import IdMismatch, SubmissionError, load_gold, parse_submission, submission_variant
from speakersleuth.speakersleuth_dataset import local_folder


def format_report(scores: dict) -> str:
    """The human-readable Table-2 row: one block per scored task (detection with AUROC and EER
    when its lines carry scores), percent with one decimal, 95 % intervals beside the headline
    metrics, then the row as tab-separated paper columns."""
    boot = scores["bootstrap"]
    lines = [
        f"SpeakerSleuth scores: variant {scores['variant']}, split {scores['split']}, "
        f"{scores['num_lines']:,} lines, sha256 {scores['sha256'][:12]}",
    ]
    if boot["resamples"]:
        lines.append(
            f"[low, high] = {boot['level']}% bootstrap interval ({boot['resamples']} resamples of "
            f"{boot['dialogues']} dialogues, seed {boot['seed']})"
        )
    if not scores["tasks"]:
        lines.append("no task answered")
    det, loc, disc = scores.get("detection"), scores.get("localization"), scores.get("discrimination")
    if det:
        lines += _detection_block(det)
    if loc:
        lines += _localization_block(loc)
    if disc:
        lines += _discrimination_block(disc)
    row = leaderboard_row(scores)
    keys = [k for k in row if not k.endswith("_ci") and row[k] is not None]
    lines += ["", "Table-2 row (tab-separated):", "\t".join(keys), "\t".join(f"{row[k]:.1f}" for k in keys)]
    return "\n".join(lines)


def _detection_block(det: dict) -> list[str]:
    """Detection: accuracy per scenario, balanced and paired, and AUROC and EER when the lines carry scores."""
    return _block(
        "Detection (accuracy)",
        det,
        [
            *[(s, det["accuracy"][s], None) for s in SCENARIOS],
            ("Bal", det["balanced_accuracy"], det["ci"]["balanced_accuracy"]),
            (
                f"Paired ({det['paired_dialogues']} dialogues)",
                det["paired_accuracy"],
                det["ci"]["paired_accuracy"],
            ),
            *(
                [
                    ("AUROC (scores)", det["auroc"], det["ci"]["auroc"]),
                    ("EER (scores)", det["eer"], det["ci"]["eer"]),
                ]
                if det["auroc"] is not None
                else []
            ),
        ],
    )


def _localization_block(loc: dict) -> list[str]:
    """Localization: S1 F1, precision, recall and F1 of S2 and S3, balanced F1 and paired accuracy."""
    entries = [("S1 F1", loc["f1"]["S1"], None)]
    for s in SCENARIOS[1:]:
        entries += [
            (f"{s} P", loc["precision"][s], None),
            (f"{s} R", loc["recall"][s], None),
            (f"{s} F1", loc["f1"][s], None),
        ]
    entries += [
        ("Bal F1", loc["balanced_f1"], loc["ci"]["balanced_f1"]),
        (f"Paired ({loc['paired_dialogues']} dialogues)", loc["paired_accuracy"], loc["ci"]["paired_accuracy"]),
    ]
    return _block("Localization", loc, entries)


def _discrimination_block(disc: dict) -> list[str]:
    """Discrimination: accuracy per source and on average, NDCG, exact match and ranking coverage."""
    entries = [(f"Acc {s}", v, None) for s, v in disc["accuracy_by_source"].items()]
    entries += [
        ("Acc Avg", disc["accuracy"], disc["ci"]["accuracy"]),
        ("NDCG@1", disc["ndcg@1"], None),
        ("NDCG@2", disc["ndcg@2"], disc["ci"]["ndcg@2"]),
        ("Exact match", disc["exact_match"], disc["ci"]["exact_match"]),
        (f"Ranking coverage ({disc['ranked']}/{disc['instances']})", disc["ranking_coverage"], None),
    ]
    return _block("Discrimination", disc, entries)


def _block(title: str, task: dict, entries: list[tuple[str, float | None, list | None]]) -> list[str]:
    lines = ["", f"{title}: coverage {_fmt(task['coverage'])}% ({task['answered']}/{task['instances']})"]
    width = max(len(name) for name, _, _ in entries)
    for name, value, interval in entries:
        text = f"  {name:<{width}}  {_fmt(value):>5}"
        if interval:
            text += f"  [{_fmt(interval[0])}, {_fmt(interval[1])}]"
        lines.append(text)
    return lines


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    """Score a predictions file and print the report (or the scores as JSON); returns the exit
    status: 0, 1 for a refused file, 2 for a dataset that cannot be read."""
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.metrics.score", description="Score a SpeakerSleuth predictions JSONL."
    )
    parser.add_argument("--predictions", required=True, metavar="FILE", help="the predictions file (JSONL, UTF-8)")
    parser.add_argument("--dataset", help="the dataset the predictions answer: a built folder or a Hub dataset id")
    parser.add_argument(
        "--gold",
        help="the private gold of a blind copy (python -m speakersleuth.speakersleuth_dataset blind): a "
        "folder or a Hub dataset id; read instead of --dataset",
    )
    parser.add_argument("--variant", help="main, 4vc or 10turn (default: the variant the ids belong to)")
    parser.add_argument("--split", default="test", help="test or validation (default: test)")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument(
        "--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples, 0 for none (default: 1000)"
    )
    parser.add_argument(
        "--bootstrap-seed", type=int, default=0, metavar="N", help="seed of the bootstrap resampling (default: 0)"
    )
    args = parser.parse_args(argv)
    if not (args.gold or args.dataset):
        parser.error("give --dataset (a labelled build) or --gold (a blind copy's private gold)")
    try:
        root = local_folder(args.gold, "gold") if args.gold else local_folder(args.dataset)
        variant = submission_variant(Path(args.predictions), root, args.split, args.variant)
        gold = load_gold(root, variant, args.split)
    except (IdMismatch, SubmissionError) as err:
        print(f"{args.predictions}: {err}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        sub = parse_submission(Path(args.predictions), gold)
    except SubmissionError as err:
        print(f"{args.predictions}: {err}", file=sys.stderr)
        return 1
    scores = score_submission(sub, gold, n_bootstrap=args.bootstrap, seed=args.bootstrap_seed)
    print(json.dumps(scores, indent=2) if args.json else format_report(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
