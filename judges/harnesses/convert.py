"""From a harness run to the leaderboard: an Inspect log or an lmms-eval samples file -> our predictions JSONL.

    python -m speakersleuth.judges convert --log logs/*.eval --predictions-out preds.jsonl
    python -m speakersleuth.judges convert --log out/model/*_samples_speakersleuth_*.jsonl --predictions-out preds.jsonl

Every sample of a SpeakerSleuth task carries the prediction line its answers parsed into (the
Inspect scorer's ``Score.metadata["prediction"]``; the lmms-eval task's per-document results); a
sample whose answers did not parse has none and is left out, as ``judges run`` leaves it out.
Lines are written task by task (detection, localization, discrimination), each in the dataset's
row order: the order ``judges run`` writes with one request in flight. The file is checked by the
scorer's validator against the gold (``--dataset``, else the dataset the run names; a blind
copy's gold with ``--gold``) and scored; the run's model and settings go to
``<predictions>.run.json`` beside it. A file that is not a SpeakerSleuth run (another
benchmark's log, a truncated file, runs of different models, variants or settings) is refused
with one line naming it (``HarnessLogError``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from speakersleuth.judges.harnesses.samples import TASKS
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.speakersleuth_dataset import local_folder

#: What must agree between the runs converted into one file.
RUN_KEYS = ("harness", "model", "variant", "setting", "split", "prompt_version")


class HarnessLogError(ValueError):
    """A file that cannot be converted; the message is one line naming it and why."""


def read_inspect_log(path: str | os.PathLike) -> tuple[dict, str, list[dict | None]]:
    """(the run's identity, our task, a prediction line or None per sample in dataset order) of an
    Inspect log of one of our tasks."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except Exception as err:  # a truncated zip, bad JSON, a missing file: Inspect raises many kinds
        raise HarnessLogError(f"{path}: not a readable Inspect log ({type(err).__name__}: {err})") from None
    task = log.eval.task.removeprefix("speakersleuth_")
    if not log.eval.task.startswith("speakersleuth_") or task not in TASKS:
        raise HarnessLogError(
            f"{path}: an Inspect log of task {log.eval.task!r}, not of speakersleuth/{'|'.join(TASKS)}"
        )
    if log.status != "success" or not log.samples:
        raise HarnessLogError(
            f"{path}: the run did not finish (status {log.status}); run it again (inspect eval-retry)"
        )
    args = log.eval.task_args
    identity = {
        "harness": "inspect",
        "model": log.eval.model,
        "variant": args.get("variant", "main"),
        "setting": args.get("setting", "main"),
        "split": args.get("split", "test"),
        "prompt_version": log.eval.metadata["prompt_version"],
        "dataset": args.get("dataset"),
        "model_args": log.eval.model_args,
        "generate_config": log.eval.model_generate_config.model_dump(exclude_none=True),
    }
    lines = {}
    for sample in log.samples:
        (score,) = sample.scores.values()
        lines[str(sample.id)] = score.metadata["prediction"]
    return identity, task, [lines.get(str(i)) for i in log.eval.dataset.sample_ids]


def read_lmms_samples(path: str | os.PathLike) -> tuple[dict, str, list[dict | None]]:
    """(the run's identity, our task, a prediction line or None per document in order) of an
    lmms-eval samples file (``--log_samples``) of one of our tasks; the model and the task's
    settings come from the run's results file beside it (``<date>_results.json``)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise HarnessLogError(f"{path}: not a readable lmms-eval samples file ({type(err).__name__}: {err})") from None
    ours = [r.get("speakersleuth") if isinstance(r, dict) else None for r in records]
    if not records or not all(isinstance(o, dict) for o in ours):
        raise HarnessLogError(
            f"{path}: not the samples file of a SpeakerSleuth lmms-eval task (no 'speakersleuth' results)"
        )
    date, _, name = path.stem.partition("_samples_")
    results = path.with_name(f"{date}_results.json")
    try:
        run = json.loads(results.read_text(encoding="utf-8"))
        config, kwargs = run["config"], run["configs"][name]["lmms_eval_specific_kwargs"]
    except (OSError, ValueError, KeyError) as err:
        raise HarnessLogError(
            f"{path}: its run's results file {results.name} is missing or not lmms-eval's ({err})"
        ) from None
    settings = kwargs.get("default", kwargs)
    identity = {
        "harness": "lmms-eval",
        "model": f"{config['model']}:{config.get('model_args', '')}",
        "variant": settings["variant"],
        "setting": settings["setting"],
        "split": run["configs"][name].get("test_split", "test"),
        "prompt_version": ours[0]["prompt_version"],
        "dataset": run["configs"][name]["dataset_path"],
        "model_args": config.get("model_args"),
        "generate_config": run["configs"][name].get("generation_kwargs"),
    }
    ordered = sorted(zip((r["doc_id"] for r in records), ours), key=lambda pair: pair[0])
    return identity, ours[0]["task"], [o["prediction"] for _, o in ordered]


def _read(path: Path) -> tuple[dict, str, list[dict | None]]:
    if not path.is_file():
        raise HarnessLogError(f"{path}: no such file")
    if path.suffix == ".jsonl":
        return read_lmms_samples(path)
    return read_inspect_log(path)


def _merge(runs: list[tuple[Path, dict, str, list]]) -> tuple[dict, list[dict]]:
    """One identity for all runs (they must agree) and the lines in ``judges run``'s order."""
    first_path, identity, _, _ = runs[0]
    for path, other, _, _ in runs[1:]:
        differ = [f"{k} {other[k]!r} (not {identity[k]!r})" for k in RUN_KEYS if other[k] != identity[k]]
        if differ:
            raise HarnessLogError(f"{path}: another run than {first_path.name}: {', '.join(differ)}")
    by_id: dict[tuple[str, str], dict] = {}
    for task in TASKS:
        for _, _, run_task, lines in runs:
            for line in lines if run_task == task else []:
                if line is not None and "prediction" in line:
                    by_id[(task, line["id"])] = line
    for _, _, _, lines in runs:  # an lmms-eval ranking joins its choice's line (no choice, no line)
        for line in lines:
            if line is not None and "prediction" not in line and (line["task"], line["id"]) in by_id:
                by_id[(line["task"], line["id"])]["ranking"] = line["ranking"]
    return identity, list(by_id.values())


def convert(
    logs: list[str | os.PathLike], out: str | os.PathLike, *, gold: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Write the predictions of harness runs (Inspect logs, lmms-eval samples files) to ``out``,
    checked and scored by the scorer against ``gold`` (default: the dataset the runs name).

    Returns the summary: ``run`` (what ``<out>.run.json`` holds), ``lines`` per task and the
    scorer's ``scores`` (``metrics.score.score_submission``, percent, no intervals). Raises
    ``HarnessLogError`` for a file that is not a SpeakerSleuth run and ``SubmissionError`` for
    lines the scorer refuses.
    """
    runs = [(Path(p), *_read(Path(p))) for p in logs]
    identity, lines = _merge(runs)
    if not lines:
        raise HarnessLogError(f"{runs[0][0]}: no answer of the run parsed into a prediction; nothing to submit")
    data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    gold_root = local_folder(gold or identity["dataset"])
    reference = load_gold(gold_root, identity["variant"], identity["split"])
    scores = score_submission(parse_submission(data, reference), reference, n_bootstrap=0)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    run = {**identity, "logs": [str(p) for p, *_ in runs]}
    Path(str(out) + ".run.json").write_text(json.dumps(run, indent=1, default=str) + "\n", encoding="utf-8")
    counts = {task: sum(line["task"] == task for line in lines) for task in TASKS}
    return {"run": run, "out": str(out), "lines": counts, "scores": scores}
