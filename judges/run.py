"""Glue behind ``python -m speakersleuth.judges``: building a judge from its name (the grammar is in
``judges.names``), one judged run, the baselines."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.embedding import (
    DEFAULT_THRESHOLDS,
    METHODS,
    EmbeddingJudge,
    embed_variant,
    make_embedding_judge,
    parse_tasks,
    predictions,
    score_variant,
    write_jsonl,
)
from speakersleuth.judges.names import EmbeddingJudgeName, parse_judge_name
from speakersleuth.judges.sweep import cache_for
from speakersleuth.judges.sweep import calibrate as calibrate_threshold
from speakersleuth.metrics.score import leaderboard_row, score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.speech.encoders import encoder_label, offline_encoders
from speakersleuth.speech.files import write_text_atomic


def make_judge(
    name: str,
    *,
    threshold: float | None = None,
    setting: str = "main",
    cache_dir=None,
    batch_size: int = 32,
    progress: bool = True,
    **lalm_options,
):
    """An embedding judge or an LALM judge from its name (the grammar of ``judges.names``).

    Arguments
    ---------
    name : str
        ``<method>-<encoder spec>`` for an embedding judge (``centroid-resemblyzer``), or an LALM
        judge's name (``openai:<model>``, ``vllm:<base URL>:<model>``, ``gemini:<model>``,
        ``transformers:<folder>``).
    threshold : float, optional
        Embedding judges: τ (default None: the paper's). Given for an LALM judge, ``ValueError``.
    setting : str
        LALM judges: the prompt setting (default ``main``); another for an embedding judge raises
        ``ValueError``.
    cache_dir : str or os.PathLike, optional
        Embedding judges: a folder that keeps the embeddings on disk (default None: memory only).
    batch_size : int
        Embedding judges: the most clips per encoder call (default 32).
    progress : bool
        Whether to show progress bars (default True).
    **lalm_options
        LALM judges: the backend's options (``judges.lalm.backends.make_backend``); any given for
        an embedding judge raises ``ValueError``.

    Returns
    -------
    EmbeddingJudge or LALMJudge
        The judge; its ``run`` judges a dataset folder.

    Example
    -------
    >>> judge = make_judge("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B", setting="per_turn", progress=False)
    >>> type(judge).__name__, judge.setting
    ('LALMJudge', 'per_turn')
    >>> make_judge("centroid-resemblyzer", concurrency=4)
    Traceback (most recent call last):
    ...
    ValueError: centroid-resemblyzer: LALM options (setting, concurrency) do not apply to an embedding judge
    """
    if isinstance(parse_judge_name(name), EmbeddingJudgeName):
        if lalm_options or setting != "main":
            raise ValueError(
                f"{name}: LALM options ({', '.join(['setting', *lalm_options])}) do not apply to an embedding judge"
            )
        return make_embedding_judge(
            name, threshold=threshold, cache_dir=cache_dir, batch_size=batch_size, progress=progress
        )
    if threshold is not None:
        raise ValueError(f"{name}: --threshold applies to embedding judges only")
    from speakersleuth.judges.lalm import make_lalm_judge

    return make_lalm_judge(name, setting=setting, progress=progress, **lalm_options)


def run_judge(
    name: str,
    dataset: str | os.PathLike,
    variant: str,
    tasks,
    out: str | os.PathLike,
    *,
    split: str = "test",
    threshold: float | None = None,
    calibrate: bool = False,
    limit: int | None = None,
    setting: str = "main",
    cache_dir=None,
    batch_size: int = 32,
    progress: bool = True,
    **lalm_options,
) -> dict:
    """Judge ``tasks`` of one variant and write the predictions JSONL; ``python -m speakersleuth.judges run``.

    Arguments
    ---------
    name : str
        The judge's name, as ``make_judge`` takes it.
    dataset : str or os.PathLike
        A built dataset folder, or the public folder of a blind copy.
    variant : str
        ``main``, ``4vc`` or ``10turn``.
    tasks : str or sequence of str
        The tasks to judge: ``"detection,localization,discrimination"`` or a list of them.
    out : str or os.PathLike
        The predictions file to write (an embedding judge replaces it; an LALM judge appends to it
        and resumes, with its raw log beside it).
    split : str
        ``"test"`` (default) or ``"validation"``.
    calibrate : bool
        Embedding judges: pick τ on the dataset's validation split first, as the value of the grid
        with the best detection balanced accuracy there (``judges.sweep.calibrate``; default
        False). Not with ``threshold``.
    limit : int, optional
        Judge only the first ``limit`` instances of each task (default None: all).
    threshold : float, optional
        Embedding judges: τ (default None: the paper's).
    setting : str
        LALM judges: the prompt setting (default ``main``).
    cache_dir : str or os.PathLike, optional
        Embedding judges: a folder that keeps the embeddings on disk (default None: memory only).
    batch_size : int
        Embedding judges: the most clips per encoder call (default 32).
    progress : bool
        Whether to show progress bars (default True).
    **lalm_options
        LALM judges: the backend's options (``judges.lalm.backends.make_backend``).

    Returns
    -------
    dict
        The judge's ``run`` summary (``counts`` of lines per task, ``seconds``, ``out``, ...), with
        ``calibration`` (the τ picked and the validation sweep) when ``calibrate`` was asked.

    Example
    -------
    Skipped, as it needs a built dataset folder (``tests/support/synthetic.py`` writes a small one):

    >>> run_judge("centroid-resemblyzer", "speakersleuth", "main", "detection", "preds.jsonl")  # doctest: +SKIP
    {'judge': 'centroid-resemblyzer', 'variant': 'main', 'split': 'test', 'threshold': 0.3, ...}
    """
    tasks = parse_tasks(tasks)
    if calibrate and threshold is not None:
        raise ValueError("give either a threshold or calibrate, not both")
    judge = make_judge(
        name,
        threshold=threshold,
        setting=setting,
        cache_dir=cache_dir,
        batch_size=batch_size,
        progress=progress,
        **lalm_options,
    )
    calibration = None
    if calibrate:
        if not isinstance(judge, EmbeddingJudge):
            raise ValueError(f"{name}: calibration applies to embedding judges only")
        calibration = calibrate_threshold(judge.method, judge.cache, dataset, variant, progress=progress)
        judge.threshold = calibration["threshold"]
    summary = judge.run(dataset, variant, tasks, out, split=split, limit=limit)
    if calibration is not None:
        summary["calibration"] = calibration
    return summary


def display_name(method: str, encoder_name: str) -> str:
    """Table-2 style: ``Pairwise (Resemblyzer)``, ``Centroid (CAM++)``."""
    return f"{method.capitalize()} ({encoder_label(encoder_name)})"


def file_slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


#: The baselines' progress in their results folder, rewritten (atomically) as each predictions file
#: is written: ``{"planned": <files in all>, "written": [<file names, in the order written>],
#: "finished": <whether summary.json is written>}`` (``space.seed --follow`` reads it).
PROGRESS_FILE = "progress.json"


def run_baselines(
    dataset: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    encoders: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    split: str = "test",
    n_bootstrap: int = 1000,
    seed: int = 0,
    cache_dir=None,
    batch_size: int = 32,
    caches: dict[str, EmbeddingCache] | None = None,
    jobs: int = 1,
    progress: bool = True,
) -> dict:
    """Every embedding method x encoder (default: every encoder that needs no model folder) on
    every variant present: one JSONL per (judge, τ, variant), each parsed and scored by the
    metrics package; writes ``summary.json`` and ``summary.md``, and ``PROGRESS_FILE`` as it goes.

    Each judge runs at the paper's τ and, where the variant has a validation split, also at the τ
    calibrated there (``judges.sweep.calibrate``); the calibrated run is the judge
    ``<method>-<encoder>-calibrated``, so the two sit side by side in the table and on the
    leaderboard. Methods share one embedding pass per (encoder, variant); ``caches`` (encoder spec
    -> cache) shares embeddings with other calls. With ``jobs`` above 1 the (encoder, variant)
    pairs run in that many processes, each with torch on this process's number of threads: the
    same predictions files, byte for byte, and the same summary but for ``cache`` (each process
    keeps its own clips in memory).

    Arguments
    ---------
    dataset : str or os.PathLike
        A built dataset folder (with its gold: every run is scored).
    out_dir : str or os.PathLike
        The folder for the predictions files, ``summary.json`` and ``summary.md`` (made if needed).
    encoders : sequence of str, optional
        Encoder specs (default None: ``speech.encoders.offline_encoders()``).
    variants : sequence of str, optional
        The variants to judge (default None: every variant the folder has for ``split``).
    split : str
        The split judged and scored (default ``"test"``).
    n_bootstrap : int
        Bootstrap resamples of the scores' 95 % intervals (default 1000; 0: none).
    seed : int
        Seed of the bootstrap resampling (default 0).
    cache_dir, batch_size, caches
        Where each encoder's embeddings are kept (default: in memory, 32 clips per encoder call,
        new caches), as ``judges.sweep.cache_for`` takes them; ``caches`` only with ``jobs`` 1.
    jobs : int
        Processes that judge (default 1: this one).
    progress : bool
        Whether to show progress bars (default True).

    Returns
    -------
    dict
        ``dataset``, ``split``, ``results`` (per judge, τ and variant: ``judge``, ``method`` as
        Table 2 names it, ``variant``, ``threshold``, ``threshold_source`` (``paper`` or
        ``validation``), ``predictions`` (the file), ``row`` (``metrics.score.leaderboard_row``)
        and ``scores``) and ``cache`` (per encoder, clips held and sent to the encoder, all
        processes together).

    Example
    -------
    Skipped, as it embeds every clip of a built dataset folder (minutes):

    >>> summary = run_baselines("speakersleuth", "baselines", encoders=["campplus"])  # doctest: +SKIP
    >>> [r["judge"] for r in summary["results"]][:2]  # doctest: +SKIP
    ['pairwise-campplus', 'pairwise-campplus-calibrated']
    """
    if jobs < 1 or (jobs > 1 and caches is not None):
        raise ValueError(f"jobs={jobs}: expected 1 or more, and 1 when caches are shared")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    variants = list(variants) if variants else ssd.variants_present(dataset, split)
    if not variants:
        raise FileNotFoundError(f"{dataset}: no {split} shards for any variant")
    tasks = [(spec, variant) for spec in encoders or offline_encoders() for variant in variants]
    settings = {
        "dataset": dataset,
        "out": out,
        "split": split,
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "cache_dir": cache_dir,
        "batch_size": batch_size,
        "progress": progress,
    }
    planned = sum(len(METHODS) * (1 + _has_validation(dataset, variant)) for _, variant in tasks)
    written: list[str] = []
    _write_progress(out, planned, written, finished=False)
    done = {}
    for task, outcome in _completed(tasks, settings, jobs, {} if caches is None else caches):
        done[task] = outcome
        written += [Path(r["predictions"]).name for r in outcome["results"]]
        _write_progress(out, planned, written, finished=False)
    summary = {
        "dataset": str(dataset),
        "split": split,
        "results": [r for task in tasks for r in done[task]["results"]],
        "cache": _cache_stats(done[task] for task in tasks),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    _write_progress(out, planned, written, finished=True)
    return summary


def _has_validation(dataset, variant: str) -> bool:
    return "detection" in ssd.tasks_present(dataset, variant, "validation")


def _write_progress(out: Path, planned: int, written: list[str], *, finished: bool) -> None:
    record = {"planned": planned, "written": written, "finished": finished}
    write_text_atomic(out / PROGRESS_FILE, json.dumps(record, indent=1))


#: A judging process's caches, one per encoder spec, kept across the (encoder, variant) pairs it runs.
_PROCESS_CACHES: dict[str, EmbeddingCache] = {}


def _completed(tasks: list[tuple[str, str]], settings: dict, jobs: int, caches: dict):
    """``((encoder spec, variant), outcome of _baseline_task)`` for each task as it is done: in
    order in this process (``caches`` shared), or in ``jobs`` spawned processes as they finish."""
    if jobs == 1:
        for spec, variant in tasks:
            yield (spec, variant), _baseline_task(spec, variant, settings, caches)
        return
    import torch

    with ProcessPoolExecutor(
        min(jobs, len(tasks)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=torch.set_num_threads,
        initargs=(torch.get_num_threads(),),
    ) as pool:
        futures = {pool.submit(_baseline_task, spec, variant, settings): (spec, variant) for spec, variant in tasks}
        for future in as_completed(futures):
            yield futures[future], future.result()


def _baseline_task(spec: str, variant: str, settings: dict, caches: dict | None = None) -> dict:
    """Every method of encoder ``spec`` on ``variant`` at each τ, written and scored: ``results``
    (as ``run_baselines`` lists them), ``encoder`` (its name) and the clips the task added to the
    cache (``unique_clips``) and sent to the encoder (``encoder_calls``)."""
    cache = cache_for(
        spec, _PROCESS_CACHES if caches is None else caches, settings["cache_dir"], settings["batch_size"]
    )
    held, calls = cache.unique_clips, cache.encoded
    dataset, split, progress = settings["dataset"], settings["split"], settings["progress"]
    embeddings = embed_variant(
        dataset, variant, ssd.tasks_present(dataset, variant, split), cache, split=split, progress=progress
    )
    gold = load_gold(dataset, variant, split)
    results = []
    for method in METHODS:
        for judge, threshold, source in _thresholds(method, cache, dataset, variant, progress):
            path = write_jsonl(
                predictions(score_variant(method, embeddings), threshold),
                settings["out"] / f"{file_slug(judge)}.{variant}.jsonl",
            )
            scores = score_submission(
                parse_submission(path, gold), gold, n_bootstrap=settings["n_bootstrap"], seed=settings["seed"]
            )
            results.append(
                {
                    "judge": judge,
                    "method": display_name(method, cache.encoder.name),
                    "variant": variant,
                    "threshold": threshold,
                    "threshold_source": source,
                    "predictions": str(path),
                    "row": leaderboard_row(scores),
                    "scores": scores,
                }
            )
    added = {"unique_clips": cache.unique_clips - held, "encoder_calls": cache.encoded - calls}
    return {"results": results, "encoder": cache.encoder.name, **added}


def _cache_stats(outcomes) -> dict[str, dict[str, int]]:
    """Per encoder name: the clips its caches held and sent to it, over the tasks' ``outcomes``."""
    stats: dict[str, dict[str, int]] = {}
    for outcome in outcomes:
        entry = stats.setdefault(outcome["encoder"], {"unique_clips": 0, "encoder_calls": 0})
        entry["unique_clips"] += outcome["unique_clips"]
        entry["encoder_calls"] += outcome["encoder_calls"]
    return stats


def _thresholds(
    method: str, cache: EmbeddingCache, dataset, variant: str, progress: bool
) -> list[tuple[str, float, str]]:
    """``(judge, τ, where τ comes from)``: the paper's τ, plus the validation-calibrated τ when
    ``variant`` has a validation split."""
    judge = f"{method}-{cache.encoder.name}"
    runs = [(judge, DEFAULT_THRESHOLDS[method], "paper")]
    if _has_validation(dataset, variant):
        calibrated = calibrate_threshold(method, cache, dataset, variant, progress=progress)["threshold"]
        runs.append((f"{judge}-calibrated", calibrated, "validation"))
    return runs


def summary_markdown(summary: dict) -> str:
    """The baselines' table per variant, in percent; columns are the leaderboard row's keys that
    have a value, in the row's (Table-2) order."""
    results = summary["results"]
    keys = dict.fromkeys(k for r in results for k in r["row"] if not k.endswith("_ci"))
    columns = [k for k in keys if any(r["row"].get(k) is not None for r in results)]
    lines = [
        f"# Embedding baselines on {summary['dataset']} ({summary['split']} split)",
        "",
        "Values in percent. Columns (the keys of each row in summary.json) in the order of the paper's",
        "Table 2, plus paired accuracy and coverage. τ from: the paper's default, or calibrated on the",
        "validation split (max detection Bal acc) where the variant has one.",
        "",
    ]
    for variant in dict.fromkeys(r["variant"] for r in results):
        rows = [r for r in results if r["variant"] == variant]
        lines += [
            f"## Variant {variant}",
            "",
            "| method | τ | τ from | " + " | ".join(columns) + " |",
            "|---|---:|---|" + "---:|" * len(columns),
        ]
        for r in rows:
            cells = ["n/a" if r["row"].get(k) is None else f"{r['row'][k]:.1f}" for k in columns]
            lines.append(
                f"| {r['method']} | {r['threshold']:g} | {r['threshold_source']} | " + " | ".join(cells) + " |"
            )
        lines.append("")
    return "\n".join(lines)
