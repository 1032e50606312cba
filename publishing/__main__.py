"""``python -m publishing`` (in a clone: it is not part of the installed package): write the Hub
trees of a release (``--trees-out DIR``) or push them."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from publishing.release import Release, push, write_trees


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m publishing",
        description=(
            "Publish SpeakerSleuth on the Hugging Face Hub: the dataset <org>/<name> (with a blind copy, its "
            "gold as the private <org>/<name>-gold), the metric Spaces <org>/speakersleuth_<metric> and the "
            "leaderboard Space <org>/<name>-leaderboard. The token is HF_TOKEN or the saved login."
        ),
    )
    p.add_argument("--org", required=True, help="Hub user or organisation that owns the repos")
    p.add_argument("--name", default="speakersleuth", help="the dataset repo's name (default speakersleuth)")
    p.add_argument(
        "--dataset", type=Path, help="a built dataset folder, or the public folder of its blind copy; validated first"
    )
    p.add_argument(
        "--gold", type=Path, help="the gold folder the blind copy was written with (pushed to a private repo)"
    )
    p.add_argument(
        "--private", action="store_true", help="make the dataset repo private (needed for a labelled test split)"
    )
    p.add_argument("--metrics", action="store_true", help="publish the four metric Spaces")
    p.add_argument(
        "--space", action="store_true", help="publish the leaderboard Space (reads the dataset and gold repos)"
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="publish a blind copy of a build whose seed is known (its cards "
        "say so): its gold can be recomputed from the seed, so it is a demo, never a ranking",
    )
    p.add_argument("--results-repo", help="a private Hub dataset repo where the Space keeps its results")
    p.add_argument(
        "--trees-out", type=Path, metavar="DIR", help="write the trees to DIR (a new folder) and push nothing"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    release = Release(
        args.org,
        args.name,
        args.dataset,
        args.gold,
        args.private,
        args.metrics,
        args.space,
        args.results_repo,
        args.demo,
    )
    if args.no_progress:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    try:
        if args.trees_out is not None:
            repos = write_trees(release, args.trees_out, progress=not args.no_progress)
            print(json.dumps([r.plan() for r in repos], indent=2))
            print(f"the trees are in {args.trees_out} (plan.json); nothing was pushed")
            return 0
        with tempfile.TemporaryDirectory(prefix="speakersleuth-publish-") as out:
            repos = write_trees(release, Path(out) / "trees", copy_data=False)
            for url in push(repos):
                print(url)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
