"""Command line of the builder; a thin layer over ``builder_scripts.pipeline``.

python -m speakersleuth.builder_scripts build --dataset-out speakersleuth           # the embedded default
python -m speakersleuth.builder_scripts build --source dailytalk --source-dir dailytalk=/data/dailytalk
python -m speakersleuth.builder_scripts build <options> --vc freevc --model-dir freevc=/models/freevc24 --encoder ecapa --model-dir ecapa=/models/ecapa
python -m speakersleuth.builder_scripts build <options> --num-shards 8 --shard-index <i>   # then once more without them
python -m speakersleuth.builder_scripts review-export --dataset speakersleuth --review-out review/
python -m speakersleuth.builder_scripts build <options> --review-decisions review/review.csv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.encoders import available_encoders, folder_encoders
from speakersleuth.speech.model_dirs import ModelFolderError, parse_model_dirs, refuse_unused, use_model_dirs

from .pipeline import REFUSALS
from .sources import SOURCES, get_source_class
from .vc import MODEL_DIRS

#: ``--model-dir`` names: the neural voice-conversion backends' folders and the S3 encoders'
MODEL_DIR_NAMES = (*MODEL_DIRS, *folder_encoders())
#: the ``build`` options that ``BuildOptions`` takes as they are, under the same name
_AS_GIVEN = (
    "cache",
    "dialogues",
    "dialogues_10turn",
    "validation_dialogues",
    "max_target_seconds",
    "seed",
    "vc",
    "vc_recorded",
    "encoder",
    "text_filter",
    "review_decisions",
    "round",
    "margin",
    "num_shards",
    "shard_index",
    "threads",
)


def _source_args(sources: list[str], values: list[str]) -> dict[str, dict]:
    """``--source-dir NAME=DIR`` values as each source's ``corpus_dir``; raises ValueError naming a
    malformed value, a folder for a source not built, or a built source that needs a folder."""
    args: dict[str, dict] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not path or name not in SOURCES:
            raise ValueError(f"--source-dir {value!r}: expected SOURCE=DIR with SOURCE one of {', '.join(SOURCES)}")
        if name not in sources:
            raise ValueError(f"--source-dir {value!r}: {name} is not built; add --source {name}")
        args[name] = {"corpus_dir": Path(path)}
    for name in sources:
        cls = get_source_class(name)
        if cls.corpus_required and name not in args:
            raise ValueError(f"--source {name} needs --source-dir {name}=DIR, the corpus folder: {cls.layout}")
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.builder_scripts", description="Build the SpeakerSleuth benchmark offline."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or resume building) a dataset folder")
    _add_output_options(build)
    _add_content_options(build)
    _add_generation_options(build)
    _add_curation_options(build)
    _add_execution_options(build)
    _add_review_export(sub)
    return parser


def _add_folder(parser: argparse.ArgumentParser, flag: str, default: str, text: str) -> None:
    """Adds a folder option (``DIR``, a Path) whose help ends with its default."""
    parser.add_argument(flag, type=Path, default=Path(default), metavar="DIR", help=f"{text} (default: {default})")


def _add_number(parser: argparse.ArgumentParser, flag: str, default: int | float, text: str) -> None:
    """Adds a number option of its default's type (int or float) whose help ends with that default."""
    parser.add_argument(flag, type=type(default), default=default, help=f"{text} (default {default:g})")


def _add_output_options(build: argparse.ArgumentParser) -> None:
    """``build``'s folders: the dataset written and the stage cache."""
    _add_folder(build, "--dataset-out", "speakersleuth", "dataset folder to write")
    _add_folder(build, "--cache", "cache", "stage cache; a rerun skips finished work")


def _add_content_options(build: argparse.ArgumentParser) -> None:
    """``build``'s content: variants, sources and their folders, dialogue counts, turn length, seed."""
    build.add_argument(
        "--variant", default=",".join(ssd.VARIANTS), help="comma-separated among main,4vc,10turn (default: all three)"
    )
    build.add_argument(
        "--source", action="append", choices=sorted(SOURCES), help="source corpus (repeatable; default chitchat_tts)"
    )
    build.add_argument(
        "--source-dir",
        action="append",
        default=[],
        metavar="SOURCE=DIR",
        help="local corpus folder of a source (repeatable; needed by every source but chitchat_tts)",
    )
    _add_number(build, "--dialogues", 60, "dialogues per source for main and 4vc")
    _add_number(build, "--dialogues-10turn", 30, "dialogues per source for 10turn")
    build.add_argument(
        "--validation-dialogues",
        type=int,
        default=None,
        metavar="N",
        help="the validation split (threshold calibration): N dialogues per source for main and 4vc, "
        "N/2 for 10turn, disjoint from the test split (default: a fifth of --dialogues; 0: none)",
    )
    _add_number(build, "--max-target-seconds", 6.0, "longest target turn a segment may hold, in (estimated) seconds")
    build.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the build's seed: which turn is altered, the candidate order "
        "(default 0; a leaderboard build takes a secret one)",
    )


def _add_generation_options(build: argparse.ArgumentParser) -> None:
    """``build``'s generation: voice-conversion methods, the S3 encoder, model folders, substitutes."""
    build.add_argument(
        "--vc",
        default="respeak",
        help="generation method of main and 10turn (default respeak: the substitute's "
        "own TTS voice says the turn, for sources voiced by the bank; a recorded corpus's units take --vc-recorded)",
    )
    build.add_argument(
        "--vc-4vc",
        default="respeak,world,praat",
        help="generation methods drawn per dialogue for 4vc "
        "(default respeak,world,praat; respeak only where the source is voiced by the bank)",
    )
    build.add_argument(
        "--vc-recorded",
        default="world",
        help="conversion backend that takes respeak's place for a recorded "
        "corpus (real speakers cannot re-speak a turn; default world)",
    )
    build.add_argument(
        "--encoder",
        default="campplus",
        help="speaker encoder that chooses S3 (default: campplus; any of "
        f"{', '.join(available_encoders())}; a folder encoder as ecapa:/dir)",
    )
    build.add_argument(
        "--model-dir",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help=f"local model folder (repeatable), NAME one of {', '.join(MODEL_DIR_NAMES)}; "
        "default for the backends: $SPEAKERSLEUTH_VC_DIR/<folder>",
    )
    build.add_argument(
        "--substitute-pool",
        action="append",
        default=[],
        choices=["embedded"],
        help="more S2/S3 substitute speakers than the built sources' (repeatable): embedded = the "
        "embedded TTS voices, for a corpus with few speakers such as DailyTalk",
    )


def _add_curation_options(build: argparse.ArgumentParser) -> None:
    """``build``'s curation: the text filter, human review decisions, spare candidates."""
    build.add_argument("--text-filter", default="heuristic", help="heuristic, or openai-compatible:<base_url>:<model>")
    build.add_argument("--review-decisions", type=Path, help="filled review.csv; rejected dialogues are dropped")
    _add_number(build, "--margin", 0.5, "extra candidates (text only) that replace dropped dialogues")
    build.add_argument(
        "--round",
        action="store_true",
        help="a leaderboard round's build: one variant, each test dialogue publishes one instance "
        "(S1, S2, S3 or discrimination), so no test dialogue or clip is shared",
    )


def _add_execution_options(build: argparse.ArgumentParser) -> None:
    """``build``'s execution: shards, local processes, threads, progress bars."""
    build.add_argument("--num-shards", type=int, default=1, help="split the conversion stage over this many processes")
    build.add_argument("--shard-index", type=int, default=0, help="which shard this process builds (0-based)")
    build.add_argument(
        "--jobs", type=int, default=1, help="run the conversion stage in this many local processes, then merge"
    )
    build.add_argument(
        "--threads", type=int, default=None, help="CPU threads per process for TTS and torch (default: all)"
    )
    build.add_argument("--no-progress", action="store_true", help="no progress bars")


def _add_review_export(sub: argparse._SubParsersAction) -> None:
    """The ``review-export`` command and its options."""
    review = sub.add_parser("review-export", help="write a human-review sheet (CSV + HTML + audio) for a built folder")
    review.add_argument("--dataset", required=True, help="the dataset to review: a built folder or a Hub dataset id")
    _add_folder(review, "--review-out", "review", "folder for review.csv, review.html and the audio")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)

    if args.command == "review-export":
        from .verification import export_review

        try:
            print(export_review(ssd.local_folder(args.dataset), args.review_out))
        except ValueError as err:
            parser.exit(2, f"{parser.prog} review-export: error: {err}\n")
        return 0

    def refuse(err: Exception):
        parser.exit(2, f"{parser.prog} build: error: {err}\n")

    try:  # a wrong option, or a model folder that lacks files, is refused before any work
        opts = _options(args)
    except (ValueError, ModelFolderError) as err:
        refuse(err)
    try:
        return _build(opts, args.jobs)
    except REFUSALS as err:  # e.g. a corpus not in its layout: one line, no traceback
        refuse(err)


def _options(args: argparse.Namespace):
    """The build options of the command line, after checking the model folders it names."""
    from speakersleuth.speech.encoders import check_encoder

    from .pipeline import BuildOptions
    from .vc import converter_class

    variants = [v for v in args.variant.split(",") if v]
    _check_counts(args, variants)
    sources = args.source or ["chitchat_tts"]
    _register_model_dirs(args)
    opts = BuildOptions(
        out=args.dataset_out,
        sources=tuple(sources),
        substitute_pool=tuple(args.substitute_pool),
        source_args=_source_args(sources, args.source_dir),
        variants=tuple(variants),
        vc_4vc=tuple(v for v in args.vc_4vc.split(",") if v),
        progress=not args.no_progress,
        **{name: getattr(args, name) for name in _AS_GIVEN},
    )
    for backend in {opts.vc, opts.vc_recorded, *opts.vc_4vc}:
        converter_class(backend).check_files()
    check_encoder(opts.encoder)
    return opts


def _check_counts(args: argparse.Namespace, variants: list[str]) -> None:
    """Raises ValueError for a count the build cannot take: jobs, shards, validation or test dialogues."""
    for flag, value in (("--jobs", args.jobs), ("--num-shards", args.num_shards)):
        if value < 1:
            raise ValueError(f"{flag} {value}: must be at least 1")
    if args.validation_dialogues is not None and args.validation_dialogues < 0:
        raise ValueError(
            f"--validation-dialogues {args.validation_dialogues}: must be 0 (no validation split) or more"
        )
    if args.jobs > 1 and args.num_shards != 1:
        raise ValueError("--jobs runs its own shards; do not combine it with --num-shards")
    for flag, count, built in (
        ("--dialogues", args.dialogues, {"main", "4vc"}),
        ("--dialogues-10turn", args.dialogues_10turn, {"10turn"}),
    ):
        if count < 1 and built & set(variants):
            raise ValueError(
                f"{flag} {count}: must be at least 1 for {'/'.join(sorted(built & set(variants)))}; "
                f"to leave a variant out, list the others with --variant"
            )


def _register_model_dirs(args: argparse.Namespace) -> None:
    """Registers the ``--model-dir`` folders, refusing one that no backend or encoder of the build uses."""
    from .vc import CONVERTERS, converter_class

    backends = {args.vc, args.vc_recorded, *(v for v in args.vc_4vc.split(",") if v)}
    users = {
        folder.name: f"--vc/--vc-4vc {name}" for name in CONVERTERS for folder in converter_class(name).model_folders()
    }
    users |= {name: f"--encoder {name}" for name in folder_encoders()}
    used = {folder.name for name in backends for folder in converter_class(name).model_folders()} | {
        args.encoder.partition(":")[0].strip().lower()
    }
    use_model_dirs(refuse_unused(parse_model_dirs(args.model_dir, MODEL_DIR_NAMES), used, users))


def _build(opts, jobs: int) -> int:
    from .pipeline import BuildShardsFailed, build

    try:
        report = build(opts, jobs=jobs)
    except BuildShardsFailed as err:
        raise SystemExit(str(err)) from None
    except KeyboardInterrupt:
        print("interrupted; the finished units are cached: rerun the same command to resume", file=sys.stderr)
        return 130
    print(
        json.dumps(
            {k: report[k] for k in ("dialogues", "validation_dialogues", "seconds", "peak_memory_mb") if k in report},
            indent=2,
        )
    )
    print(f"report: {opts.report_path}" + (f"; dataset: {opts.out}" if opts.num_shards == 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
