"""``python -m speakersleuth.judges``: run a judge, sweep embedding thresholds, run all embedding baselines, check your own dialogue.

    python -m speakersleuth.judges run --judge centroid-resemblyzer --dataset speakersleuth --variant main \\
        --task detection,localization,discrimination --predictions-out preds.jsonl [--threshold T] [--calibrate]
    python -m speakersleuth.judges run --judge vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B --dataset <folder or Hub id> --predictions-out <file>
    python -m speakersleuth.judges run --judge centroid-ecapa --model-dir ecapa=/models/spkrec-ecapa-voxceleb --dataset <folder> --predictions-out <file>
    python -m speakersleuth.judges sweep --dataset speakersleuth --variant main --sweep-out sweep/ \\
        [--judge pairwise-resemblyzer,centroid-campplus]
    python -m speakersleuth.judges baselines --dataset speakersleuth --results-out baselines/ [--encoder resemblyzer,campplus] [--jobs 2]
    python -m speakersleuth.judges check --manifest dialogue/manifest.csv [--plot-out check.png] [--report-out check.json]
    python -m speakersleuth.judges check --rttm talk.rttm --recording talk.mp3 [--reference SPEAKER=clip.wav]
    python -m speakersleuth.judges convert --log logs/*.eval --predictions-out preds.jsonl [--gold <gold_dir>]
    python -m speakersleuth.judges lmms-tasks [--dataset <folder or Hub id> --tasks-out <dir>]

``check`` judges your own dialogue's audio (``judges.check``; its ``--help`` says where its τ comes from).
``convert`` turns Inspect logs and lmms-eval samples files of our tasks into a predictions file, and
``lmms-tasks`` prints the lmms-eval task folder (``judges.harnesses``).

Without ``--judge`` (sweep) / ``--encoder`` (baselines), sweep and baselines run every encoder whose weights ship in an
installed package (``speech.encoders.offline_encoders``: CAM++, the d-vector, ERes2Net, Resemblyzer)
with each of the three methods. Baselines run each judge at the paper's τ and, where the variant
has a validation split, also at the τ calibrated there (``<judge>-calibrated``).

Embedding judges run torch (and the d-vector's onnxruntime) on one thread unless ``--threads``
says otherwise: on the 2-core build machine CAM++, the d-vector and Resemblyzer were faster on one
thread than on two, ERes2Net 11 % slower (benchmarks/bench_judge_threads.py).

Outputs are the submission format (``metrics.submission``); score them with
``python -m speakersleuth.metrics.score --predictions preds.jsonl --dataset speakersleuth``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from speakersleuth.judges.check.cli import add_check_parser, run_check
from speakersleuth.judges.harnesses.cli import add_harness_parsers, run_harness_command
from speakersleuth.judges.lalm.backends.base import BackendError
from speakersleuth.judges.names import METHODS, EmbeddingJudgeName, parse_judge_name
from speakersleuth.judges.run import run_baselines, run_judge
from speakersleuth.judges.sweep import THRESHOLDS, run_sweep
from speakersleuth.speakersleuth_dataset import local_folder
from speakersleuth.speech.encoders import folder_encoders, offline_encoders
from speakersleuth.speech.extras import missing_extra
from speakersleuth.speech.model_dirs import parse_model_dirs, refuse_unused, use_model_dirs

#: ``--model-dir`` names: the encoders that load from a local folder
MODEL_DIR_NAMES = tuple(folder_encoders())
#: what sweep and baselines run by default: every encoder that needs no folder, each method
OFFLINE_ENCODERS = ",".join(offline_encoders())
OFFLINE_JUDGES = ",".join(f"{method}-{encoder}" for encoder in offline_encoders() for method in METHODS)


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.replace("-", "_"), json.loads(value)
    except json.JSONDecodeError:
        return key.replace("-", "_"), value


def _grid(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m speakersleuth.judges", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = _common_options()
    _add_run(sub, common)
    _add_sweep(sub, common)
    _add_baselines(sub, common)
    add_check_parser(sub)
    add_harness_parsers(sub)
    return parser


def _common_options() -> argparse.ArgumentParser:
    """The options every command takes: the dataset and split, the embedding cache, batches,
    progress bars, threads and model folders."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", required=True, help="the dataset to judge: a built folder or a Hub dataset id")
    common.add_argument("--split", default="test", help="split to judge (default: test)")
    common.add_argument("--cache", default=None, metavar="DIR", help="on-disk embedding cache (default: memory only)")
    common.add_argument("--batch-size", type=int, default=32, help="clips per encoder batch (default: 32)")
    common.add_argument("--no-progress", action="store_true", help="no progress bars")
    common.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads of torch and onnxruntime (default: 1 for embedding judges, the library's "
        "default for LALM judges)",
    )
    common.add_argument(
        "--model-dir",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help=f"local model folder of an encoder (repeatable), NAME one of {', '.join(MODEL_DIR_NAMES)}; "
        "then e.g. --judge centroid-ecapa loads from it",
    )
    return common


def _add_run(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``run`` command: one judge, its predictions written."""
    run = sub.add_parser("run", parents=[common], help="run one judge and write a predictions JSONL")
    run.add_argument(
        "--judge", required=True, help="e.g. centroid-resemblyzer, pairwise-ecapa:/path, openai:gpt-4o-audio-preview"
    )
    run.add_argument("--variant", default="main", help="main, 4vc or 10turn (default: main)")
    run.add_argument(
        "--task", default="detection,localization,discrimination", help="comma-separated tasks (default: all three)"
    )
    run.add_argument(
        "--predictions-out",
        default=None,
        metavar="FILE",
        help="predictions JSONL to write (default: results/<judge>.<variant>.jsonl)",
    )
    run.add_argument("--threshold", type=float, default=None, help="embedding judges: τ (default: the paper's)")
    run.add_argument("--calibrate", action="store_true", help="embedding judges: pick τ on the validation split")
    run.add_argument("--limit", type=int, default=None, help="judge only the first N instances of each task")
    run.add_argument("--setting", default="main", help="LALM judges: prompt setting (default: main)")
    run.add_argument(
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="LALM judges: a backend option (value read as JSON when it parses), repeatable",
    )


def _add_sweep(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``sweep`` command: embedding judges over a grid of τ."""
    sweep = sub.add_parser("sweep", parents=[common], help="threshold sweep of embedding judges (table + plot)")
    sweep.add_argument("--variant", default="main", help="main, 4vc or 10turn (default: main)")
    sweep.add_argument(
        "--judge",
        default=OFFLINE_JUDGES,
        help="comma-separated embedding judges (default: every method with every encoder that needs no folder)",
    )
    sweep.add_argument(
        "--threshold", type=_grid, default=THRESHOLDS, help="comma-separated τ values (default: 0.05, 0.10, ..., 0.95)"
    )
    sweep.add_argument("--sweep-out", required=True, metavar="DIR", help="folder for the sweep's table, plot and JSON")


def _add_baselines(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``baselines`` command: every embedding method with each encoder, scored."""
    base = sub.add_parser(
        "baselines", parents=[common], help="all embedding methods x encoders on every variant, scored"
    )
    base.add_argument(
        "--results-out", required=True, metavar="DIR", help="folder for the predictions files and the summary"
    )
    base.add_argument(
        "--encoder", default=OFFLINE_ENCODERS, help=f"comma-separated encoder specs (default: {OFFLINE_ENCODERS})"
    )
    base.add_argument("--variant", default=None, help="comma-separated variants (default: all present)")
    base.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples for the intervals (default: 1000)",
    )
    base.add_argument(
        "--bootstrap-seed", type=int, default=0, metavar="N", help="seed of the bootstrap resampling (default: 0)"
    )
    base.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="processes judging (encoder, variant) pairs at once, each on --threads threads; the same "
        "predictions files (default: 1)",
    )


def _encoders(args: argparse.Namespace) -> set[str]:
    """The encoder kinds (``ecapa``, ...) the command's judges load."""
    if args.command == "baselines":
        specs = args.encoder.split(",")
    else:
        parsed = (
            [parse_judge_name(j.strip()) for j in args.judge.split(",")]
            if args.command == "sweep"
            else [parse_judge_name(args.judge)]
        )
        specs = [p.encoder for p in parsed if isinstance(p, EmbeddingJudgeName)]
    return {spec.partition(":")[0].strip().lower() for spec in specs}


def _threads(args: argparse.Namespace) -> int | None:
    """``--threads``, else 1 when the command runs embedding judges only (None: leave torch's default)."""
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads {args.threads}: expected a positive number of threads")
        return args.threads
    lalm = args.command == "run" and not isinstance(parse_judge_name(args.judge), EmbeddingJudgeName)
    return None if lalm else 1


def default_predictions_path(judge: str, variant: str) -> Path:
    """Where ``run`` writes without ``--predictions-out``: ``results/<judge>.<variant>.jsonl``, the judge's name
    made a file name.

    >>> default_predictions_path("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B", "4vc").as_posix()
    'results/vllm_http_127.0.0.1_8000_v1_Qwen_Qwen2.5-Omni-7B.4vc.jsonl'
    """
    return Path("results") / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', judge)}.{variant}.jsonl"


def main(argv: list[str] | None = None) -> int:
    """The command line ``python -m speakersleuth.judges`` (console script ``speakersleuth-judges``): ``run`` one
    judge (``judges.run.run_judge``), ``sweep`` embedding judges' τ (``judges.sweep.run_sweep``),
    run the embedding ``baselines`` (``judges.run.run_baselines``) or ``check`` your own dialogue
    (``judges.check.cli.run_check``); the module docstring shows each.

    ``--dataset`` may be a Hub dataset id, downloaded first. Embedding judges run torch on one
    thread unless ``--threads`` says otherwise. What a command made is printed on stdout: ``run``'s
    summary as JSON, the sweep's and the baselines' tables as Markdown.

    Arguments
    ---------
    argv : list of str, optional
        The arguments after the program's name (default None: ``sys.argv[1:]``); ``--help`` and
        ``<command> --help`` list them.

    Returns
    -------
    int
        The exit status: 0 when the command did its work; 2 when it refused its input (a bad value,
        a dataset or model folder that is not there, an API key not set, a server not reachable, an
        extra not installed), with one ``error:`` line on stderr. An option that argparse refuses
        exits with status 2 and the usage instead (``SystemExit``).

    Example
    -------
    >>> main(["run", "--judge", "openai:gpt-4o-audio-preview", "--dataset", "/no/such/folder"])
    2

    (stderr: ``error: dataset /no/such/folder: no such folder, and not a Hub dataset id
    (owner/name)``). Judging a built folder takes minutes, so it is skipped here:

    >>> main(["run", "--judge", "centroid-campplus", "--dataset", "speakersleuth"])  # doctest: +SKIP
    0
    """
    args = build_parser().parse_args(argv)
    if args.command == "check":  # its own inputs, no --dataset (judges.check.cli)
        return run_check(args)
    if args.command in ("convert", "lmms-tasks"):  # a harness's files (judges.harnesses.cli)
        return run_harness_command(args)
    shared = {"cache_dir": args.cache, "batch_size": args.batch_size, "progress": not args.no_progress}
    try:
        _register_model_dirs(args)
        _set_threads(args)
        dataset = local_folder(args.dataset)
        {"run": _run, "sweep": _sweep, "baselines": _baselines}[args.command](args, dataset, shared)
    except (ValueError, FileNotFoundError, BackendError) as err:  # BackendError: a key missing, a server not there
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:  # the core install: API judges only; the encoders come with the builder extra
        print(missing_extra(err, "builder", "python -m speakersleuth.judges"), file=sys.stderr)
        return 2
    return 0


def _register_model_dirs(args: argparse.Namespace) -> None:
    """Registers the ``--model-dir`` folders, refusing one that no judge of the command loads."""
    option = {"run": "--judge centroid-{}", "sweep": "--judge centroid-{}", "baselines": "--encoder {}"}[args.command]
    users = {name: option.format(name) for name in MODEL_DIR_NAMES}
    use_model_dirs(refuse_unused(parse_model_dirs(args.model_dir, MODEL_DIR_NAMES), _encoders(args), users))


def _set_threads(args: argparse.Namespace) -> None:
    """Sets torch's CPU threads as ``_threads`` says (None: torch's default left as it is)."""
    threads = _threads(args)
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def _run(args: argparse.Namespace, dataset: Path, shared: dict) -> None:
    """``run``: one judge's predictions written, its summary printed as JSON."""
    out = args.predictions_out or default_predictions_path(args.judge, args.variant)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    summary = run_judge(
        args.judge,
        dataset,
        args.variant,
        args.task,
        out,
        split=args.split,
        threshold=args.threshold,
        calibrate=args.calibrate,
        limit=args.limit,
        setting=args.setting,
        **shared,
        **dict(args.option),
    )
    print(json.dumps(summary, indent=2, default=str))


def _sweep(args: argparse.Namespace, dataset: Path, shared: dict) -> None:
    """``sweep``: the embedding judges' τ sweep written, its table printed."""
    result = run_sweep(
        dataset,
        args.variant,
        [j.strip() for j in args.judge.split(",") if j.strip()],
        args.sweep_out,
        grid=args.threshold,
        split=args.split,
        **shared,
    )
    print(open(result["files"]["markdown"], encoding="utf-8").read())
    print("wrote", ", ".join(result["files"].values()))


def _baselines(args: argparse.Namespace, dataset: Path, shared: dict) -> None:
    """``baselines``: every embedding baseline's predictions written and scored, the summary printed."""
    summary = run_baselines(
        dataset,
        args.results_out,
        encoders=[e.strip() for e in args.encoder.split(",") if e.strip()],
        variants=args.variant.split(",") if args.variant else None,
        split=args.split,
        n_bootstrap=args.bootstrap,
        seed=args.bootstrap_seed,
        jobs=args.jobs,
        **shared,
    )
    print(open(f"{args.results_out}/summary.md", encoding="utf-8").read())
    print(f"wrote {len(summary['results'])} prediction files and summary.json/summary.md to {args.results_out}")


if __name__ == "__main__":
    sys.exit(main())
