"""``python -m speakersleuth.judges check``: the check of one's own dialogue on the command line.

    python -m speakersleuth.judges check --manifest dialogue/manifest.csv [--plot-out check.png] [--report-out check.json]
    python -m speakersleuth.judges check --rttm talk.rttm --recording talk.mp3 --reference host=host_intro.wav
    python -m speakersleuth.judges check --manifest dialogue/manifest.csv --candidates 7=takes/7a.wav,takes/7b.wav
    python -m speakersleuth.judges check --manifest dialogue/manifest.csv --calibrate labelled/manifest.csv

Prints a table (``--json``: the report as JSON); a problem with the input is one ``error:`` line
naming the file, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from speakersleuth.judges.check.calibration import CAVEAT
from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.judges.names import METHODS
from speakersleuth.speech.encoders import folder_encoders

DESCRIPTION = (
    "Check your own dialogue: per speaker, how consistent each turn's voice is, which turns slipped "
    "(flagged at a calibrated τ) and which candidate (regeneration) of a turn to keep. Input: a manifest "
    "of turn files (CSV/TSV/JSONL: turn, speaker, path; optional text, reference, candidate_for, label, "
    "dialogue; paths relative to the manifest), or a recording and its RTTM (each segment a turn). "
    "Any format soundfile or FFmpeg reads (wav, flac, mp3, ...), any rate, any channels. "
    f"Where the numbers come from: {CAVEAT}."
)


def _pairs(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return key, value


def add_check_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``check`` subcommand of ``python -m speakersleuth.judges``."""
    from speakersleuth.judges.check.calibration import load_calibration

    calibration = load_calibration()
    shipped = " Default judge: " + default_figures(calibration) + " (judges/check/calibration.json)."
    check = sub.add_parser(
        "check", help="check your own dialogue's speaker consistency", description=DESCRIPTION + shipped
    )
    given = check.add_argument_group("the dialogue (a manifest, or an RTTM and its recording)")
    given.add_argument("--manifest", metavar="FILE", help="CSV/TSV/JSONL: turn, speaker, path [, text, ...]")
    given.add_argument("--rttm", metavar="FILE", help="an RTTM file; each SPEAKER segment is a turn")
    given.add_argument("--recording", metavar="FILE", help="the recording the RTTM describes")
    given.add_argument(
        "--recording-id", metavar="ID",
        help="the recording's file id in the RTTM, when it describes several (default: the recording's file name "
        "without extension)",
    )  # fmt: skip
    given.add_argument(
        "--reference", type=_pairs, action="append", default=[], metavar="SPEAKER=FILE",
        help="a reference clip of a speaker (repeatable); a speaker with one turn needs one",
    )  # fmt: skip
    given.add_argument(
        "--candidates", type=_pairs, action="append", default=[], metavar="TURN=FILE[,FILE...]",
        help="candidate files for a turn (regenerations), ranked with its current take (repeatable)",
    )  # fmt: skip
    given.add_argument(
        "--skip-short", action="store_true",
        help="leave out turns shorter than 0.5 s (say which) instead of refusing the dialogue",
    )  # fmt: skip
    judge = check.add_argument_group("the judge (default: the calibration shipped with the package)")
    judge.add_argument("--encoder", default=None, help="campplus, dvector, eres2net, resemblyzer, ecapa:<folder>, ...")
    judge.add_argument("--method", default=None, choices=METHODS)
    judge.add_argument("--threshold", type=float, default=None, help="τ (default: the calibrated one)")
    judge.add_argument(
        "--calibrate", metavar="FILE",
        help="a manifest with a 'label' column (consistent/inconsistent, or 0/1 with 1 = inconsistent, per turn; "
        "empty: unlabelled): pick τ on it, "
        "say its balanced accuracy there, and use it",
    )  # fmt: skip
    out = check.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    out.add_argument("--report-out", metavar="FILE", help="write the report as JSON")
    out.add_argument("--plot-out", metavar="FILE", help="draw the per-turn scores per speaker (PNG)")
    run = check.add_argument_group("running")
    run.add_argument("--cache", metavar="DIR", help="on-disk embedding cache, keyed by file content and encoder")
    run.add_argument("--batch-size", type=int, default=32, help="clips per encoder batch (default: 32)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--threads", type=int, default=1, metavar="N", help="CPU threads of torch (default: 1)")
    run.add_argument(
        "--model-dir", action="append", default=[], metavar="NAME=DIR",
        help=f"local model folder of a folder encoder ({', '.join(folder_encoders())}), then --encoder ecapa",
    )  # fmt: skip
    return check


def default_figures(calibration) -> str:
    """The default judge and its figures, where the calibration file has them: on each labelled
    source of speech we did not make (planted turns found, clean turns flagged) and on the
    benchmark's test splits."""
    default = calibration.default
    entry = calibration.entry(default["encoder"], default["method"]) or {}
    line = f"the {default['method']} method under {default['encoder']} at τ = {default['threshold']:g}"
    figures = [
        f"on {name} speech we did not make, {f['planted_found']:g} % of planted turns found and "
        f"{f['false_flags']:g} % of clean turns flagged"
        for name, f in entry.get("labelled", {}).items()
    ]
    if "test" in entry:
        figures.append(
            f"on the benchmark's test splits, detection balanced accuracy {entry['test']['det_bal_acc']:g} %"
        )
    return line + (f" ({'; '.join(figures)})" if figures else "")


def run_check(args: argparse.Namespace) -> int:
    """Run ``python -m speakersleuth.judges check``; returns the exit status (2, with one line, on bad input)."""
    from speakersleuth.speech.extras import missing_extra

    try:
        report = _check(args)
    except (CheckInputError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        print(missing_extra(err, "check", "python -m speakersleuth.judges check"), file=sys.stderr)
        return 2
    if report is not None:
        from speakersleuth.judges.check.report import format_table

        print(
            json.dumps(report.to_dict(), indent=1, ensure_ascii=False) if args.json else format_table(report),
            end="\n" if args.json else "",
        )
    return 0


def _check(args: argparse.Namespace):
    """The command's work: inputs read and checked, then the encoder loaded, then the check;
    returns the report (None after a calibration alone)."""
    from speakersleuth.judges.check.checker import check_dialogues
    from speakersleuth.judges.check.report import plot_report, recalibration_line, write_json

    _refuse_combinations(args)
    _prepare_outputs(args)
    labelled, dialogues, notes = _read(args)
    options = _options(args)
    recalibration = None
    if labelled:
        from dataclasses import asdict

        from speakersleuth.judges.check.checker import recalibrate_on

        recalibration = asdict(recalibrate_on(labelled, source=args.calibrate, **options)[0])
        options["threshold"] = recalibration["threshold"]
    if not dialogues:
        print(
            json.dumps(recalibration, indent=1, ensure_ascii=False) if args.json else recalibration_line(recalibration)
        )
        return None
    report = check_dialogues(dialogues, **options)
    report.notes = notes + report.notes
    if recalibration is not None:
        report.threshold_source = f"recalibrated on {args.calibrate}"
        report.recalibration = recalibration
    if args.report_out:
        write_json(report, args.report_out)
    if args.plot_out:
        plot_report(report, args.plot_out)
    return report


def _refuse_combinations(args: argparse.Namespace) -> None:
    if args.manifest is None and args.rttm is None and args.calibrate is None:
        raise CheckInputError("give --manifest FILE, or --rttm FILE with --recording FILE (or --calibrate FILE)")
    if args.manifest is not None and args.rttm is not None:
        raise CheckInputError("give --manifest or --rttm, not both")
    if (args.rttm is None) != (args.recording is None):
        raise CheckInputError("--rttm needs --recording (the audio it describes), and --recording needs --rttm")
    if args.recording_id is not None and args.rttm is None:
        raise CheckInputError("--recording-id names a recording of an RTTM file: give it with --rttm")
    if args.calibrate and args.threshold is not None:
        raise CheckInputError("give --threshold or --calibrate, not both")
    if args.threads < 1:
        raise CheckInputError(f"--threads {args.threads}: expected a positive number of threads")


def _prepare_outputs(args: argparse.Namespace) -> None:
    """Every output file's folder made (missing folders are created, as ``-o`` options do) and
    checked writable before any audio is read, so a check never ends without its outputs."""
    for option, path in (("--report-out", args.report_out), ("--plot-out", args.plot_out)):
        if path is None:
            continue
        folder = Path(path).parent
        if Path(path).is_dir():
            raise CheckInputError(f"{option} {path}: a folder; give a file name")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CheckInputError(f"{option} {path}: cannot make its folder {folder} ({err.strerror})") from None
        if not os.access(folder, os.W_OK):
            raise CheckInputError(f"{option} {path}: its folder {folder} is not writable")


def _read(args: argparse.Namespace) -> tuple[list, list, list[str]]:
    """The labelled dialogues (``--calibrate``), the dialogues to check and the notes of turns left
    out, every one validated before any model loads."""
    from speakersleuth.judges.check.calibration import resolve_settings
    from speakersleuth.judges.check.checker import read_dialogues
    from speakersleuth.judges.check.dialogue import validate
    from speakersleuth.judges.check.inputs import read_manifest

    labelled = read_manifest(args.calibrate) if args.calibrate else []
    dialogues = []
    if args.manifest is not None or args.rttm is not None:
        candidates = {turn: [f for f in files.split(",") if f] for turn, files in args.candidates}
        dialogues = read_dialogues(
            args.manifest, args.rttm, args.recording, dict(args.reference), candidates, args.recording_id
        )
    notes = _drop_short(labelled + dialogues) if args.skip_short else []
    needs_reference = resolve_settings(args.encoder, args.method).method == "reference"
    for dialogue in labelled + dialogues:
        validate(dialogue, needs_reference=needs_reference)
    return labelled, dialogues, notes


def _options(args: argparse.Namespace) -> dict:
    """``check_dialogues``' options from the command line: torch's threads set, model folders
    registered; the encoder is loaded by the check itself, once every clip is read (a file cut
    short is refused before any model loads)."""
    import torch

    from speakersleuth.judges.check.calibration import resolve_settings
    from speakersleuth.speech.model_dirs import parse_model_dirs, use_model_dirs

    torch.set_num_threads(args.threads)
    use_model_dirs(parse_model_dirs(args.model_dir, folder_encoders()))
    settings = resolve_settings(args.encoder, args.method)
    return {
        "encoder": settings.encoder,
        "method": settings.method,
        "threshold": args.threshold,
        "cache_dir": args.cache,
        "batch_size": args.batch_size,
        "progress": not args.no_progress,
    }


def _drop_short(dialogues) -> list[str]:
    """Turns shorter than ``MIN_TURN_SECONDS`` taken out of the dialogues; the notes that say which."""
    from speakersleuth.judges.check.dialogue import MIN_TURN_SECONDS

    notes = []
    for dialogue in dialogues:
        short = [t for t in dialogue.turns if t.audio is not None and t.audio.seconds() < MIN_TURN_SECONDS]
        if short:
            dialogue.turns = [t for t in dialogue.turns if t not in short]
            notes.append(
                f"{dialogue.source or dialogue.name}: left out {len(short)} turns shorter than "
                f"{MIN_TURN_SECONDS:g} s ({', '.join(t.id for t in short)})"
            )
    return notes
