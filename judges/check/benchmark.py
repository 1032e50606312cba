"""The benchmark's own rows through the check's entry point (``check_dialogues``), as predictions.

Each row of a built dataset folder becomes a dialogue of one speaker: a detection or localization
row its N target turns (and its reference clip, for the reference method); a discrimination row
its N-1 context turns and one more turn given by its candidates A, B, C alone. Checked, the
report gives the predictions file's lines: detection from whether any turn is flagged (with the
speaker's ``detection_score``), localization the flagged turns' positions, discrimination the
candidates' ranking. Rows are read and checked in chunks of ``CHUNK_ROWS``, the clips of a row in
the order the embedding judges embed them, so the encoder sees the same batches as
``judges.run.run_judge`` and the two writes the same predictions (``tests/judges/test_check_benchmark.py``).

    python -m speakersleuth.judges.check.benchmark --dataset speakersleuth --compare --predictions-out check-preds/
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check.checker import check_dialogues
from speakersleuth.judges.check.dialogue import Clip, Dialogue, Turn
from speakersleuth.judges.embedding import DISCRIMINATION_COLUMNS, TURN_COLUMNS, iter_rows, parse_tasks, write_jsonl

#: Rows per check, as ``judges.embedding.embed_variant`` reads them per cache call.
CHUNK_ROWS = 16
SPEAKER = "target"


def row_dialogue(row: dict, config: str, with_reference: bool) -> Dialogue:
    """One benchmark row as a dialogue of the speaker ``target``, named by the row's id."""
    name = f"{config} id {row['id']!r}"

    def clip(value: dict, column: str) -> Clip:
        if not value or not value.get("bytes"):
            raise ValueError(f"{name}: {column} has no embedded audio bytes")
        return Clip(data=value["bytes"], name=f"{name} {column}")

    references = {SPEAKER: clip(row["reference_audio"], "reference_audio")} if with_reference else {}
    if "candidates" in row:
        turns = [
            Turn(str(i), SPEAKER, clip(v, f"context_audio[{i - 1}]")) for i, v in enumerate(row["context_audio"], 1)
        ]
        labels = list(row["candidate_labels"])
        choices = {label: clip(v, f"candidates[{i}]") for i, (label, v) in enumerate(zip(labels, row["candidates"]))}
        if len(choices) != len(row["candidates"]) or len(labels) != len(row["candidates"]):
            raise ValueError(f"{name}: {len(row['candidates'])} candidates for labels {labels}")
        turns.append(Turn("masked", SPEAKER, None, candidates=choices))
    else:
        turns = [
            Turn(str(i), SPEAKER, clip(v, f"target_audio[{i - 1}]")) for i, v in enumerate(row["target_audio"], 1)
        ]
    return Dialogue(turns, references, str(row["id"]), config)


def benchmark_predictions(
    folder: str | os.PathLike,
    variant: str,
    *,
    tasks=None,
    split: str = "test",
    encoder: str | None = None,
    method: str | None = None,
    threshold: float | None = None,
    cache: EmbeddingCache | None = None,
    progress: bool = False,
) -> list[dict]:
    """Predictions lines (``metrics.submission``'s format) for a built folder's rows, made by
    ``check_dialogues``.

    Arguments
    ---------
    folder : str or os.PathLike
        A built dataset folder (or a blind copy's public folder).
    variant : str
        ``main``, ``4vc`` or ``10turn``.
    tasks : str or sequence of str, optional
        Default: every task the variant has in ``split``.
    split : str
        Default ``"test"``.
    encoder, method, threshold : optional
        As ``check_dialogues`` takes them (default: the shipped calibration's).
    cache : EmbeddingCache, optional
        Default: a new one of the encoder (memory only).
    progress : bool
        Show a progress bar per task (default False).

    Returns
    -------
    list of dict
        One line per row and task.

    Example
    -------
    >>> lines = benchmark_predictions("speakersleuth", "main", encoder="campplus")  # doctest: +SKIP
    >>> sorted({line["task"] for line in lines})  # doctest: +SKIP
    ['detection', 'discrimination', 'localization']
    """
    tasks = parse_tasks(tasks) if tasks is not None else ssd.tasks_present(folder, variant, split)
    from speakersleuth.judges.check.calibration import resolve_settings

    settings = resolve_settings(cache.encoder.name if cache is not None else encoder, method, threshold)
    if cache is None:
        from speakersleuth.speech.encoders import get_encoder

        cache = EmbeddingCache(get_encoder(settings.encoder))
    # whole clips, as the judges embed a row: the builder's final stage already trimmed them
    options = {"method": settings.method, "threshold": settings.threshold, "cache": cache, "cut_to_speech": False}
    with_reference = settings.method == "reference"  # rows carry their reference clip only then, as the judges embed
    lines: list[dict] = []
    for task in tasks:
        config = ssd.config_name(task, variant)
        is_disc = task == "discrimination"
        columns = list(DISCRIMINATION_COLUMNS if is_disc else TURN_COLUMNS)
        chunks = iter_rows(folder, config, split, columns, CHUNK_ROWS)
        for rows in chunks if not progress else _bar(chunks, config):
            report = check_dialogues([row_dialogue(r, config, with_reference) for r in rows], **options)
            lines += [_line(task, speaker) for speaker in report.speakers]
    return lines


def _bar(chunks, config: str):
    from tqdm.auto import tqdm

    return tqdm(chunks, desc=f"check {config}", unit="chunk")


def _line(task: str, speaker) -> dict:
    """The predictions line of one checked row."""
    if task == "discrimination":
        order = [c.label for c in speaker.turns[-1].candidates]
        return {"task": task, "id": speaker.dialogue, "prediction": order[0], "ranking": order}
    if task == "localization":
        return {"task": task, "id": speaker.dialogue, "prediction": [t.position for t in speaker.flagged]}
    return {
        "task": task,
        "id": speaker.dialogue,
        "prediction": "consistent" if speaker.consistent else "inconsistent",
        "score": speaker.detection_score,
    }


def compare_with_judge(folder, out_dir, *, split: str = "test", encoder=None, method=None, threshold=None) -> dict:
    """For every variant of ``folder``'s ``split``: the check's predictions and ``run_judge``'s with
    the same encoder, method and τ, both written to ``out_dir`` and scored by the scorer.

    Returns ``{variant: {"check": row, "judge": row, "equal": bool}}``, rows as
    ``metrics.score.leaderboard_row`` gives them (no bootstrap)."""
    from speakersleuth.judges.check.calibration import resolve_settings
    from speakersleuth.judges.run import run_judge
    from speakersleuth.metrics.score import leaderboard_row, score_predictions, score_submission
    from speakersleuth.metrics.submission import load_gold, parse_submission

    settings = resolve_settings(encoder, method, threshold)
    judge = f"{settings.method}-{settings.encoder}"
    out, result = Path(out_dir), {}
    out.mkdir(parents=True, exist_ok=True)
    for variant in ssd.variants_present(folder, split):
        lines = benchmark_predictions(
            folder,
            variant,
            split=split,
            encoder=settings.encoder,
            method=settings.method,
            threshold=settings.threshold,
        )
        write_jsonl(lines, out / f"check.{variant}.jsonl")
        judged = out / f"{judge}.{variant}.jsonl"
        run_judge(
            judge,
            folder,
            variant,
            ssd.tasks_present(folder, variant, split),
            judged,
            split=split,
            threshold=settings.threshold,
            progress=False,
        )
        gold = load_gold(folder, variant, split)
        rows = {
            "check": leaderboard_row(score_predictions(lines, gold, split=split, n_bootstrap=0)),
            "judge": leaderboard_row(score_submission(parse_submission(judged, gold), gold, n_bootstrap=0)),
        }
        result[variant] = {**rows, "equal": rows["check"] == rows["judge"]}
    return {"judge": judge, "threshold": settings.threshold, "split": split, "variants": result}


def main(argv: list[str] | None = None) -> int:
    """``python -m speakersleuth.judges.check.benchmark``: a built folder's rows through the check, as predictions
    (``--compare``: beside ``python -m speakersleuth.judges run``'s with the same settings, both scored)."""
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.judges.check.benchmark", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dataset", required=True, help="a built dataset folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--variant", default=None, help="the variant (default: main); not with --compare")
    parser.add_argument("--encoder", default=None)
    parser.add_argument("--method", default=None)
    parser.add_argument("--threshold", type=float, default=None)
    parser.add_argument(
        "--predictions-out", required=True, metavar="PATH", help="a JSONL file (a folder with --compare)"
    )
    parser.add_argument("--compare", action="store_true", help="every variant, beside run_judge's predictions, scored")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as python -m speakersleuth.judges runs embedding judges
    settings = {"encoder": args.encoder, "method": args.method, "threshold": args.threshold}
    if args.compare:
        print(
            json.dumps(compare_with_judge(args.dataset, args.predictions_out, split=args.split, **settings), indent=1)
        )
        return 0
    lines = benchmark_predictions(args.dataset, args.variant or "main", split=args.split, progress=True, **settings)
    write_jsonl(lines, args.predictions_out)
    print(f"wrote {len(lines)} lines to {args.predictions_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
