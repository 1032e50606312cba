"""Threshold sweep (paper Figure 7) and validation calibration of the embedding judges.

The per-turn scores s_i do not depend on τ, so each (method, encoder) is embedded and scored once
and then thresholded at every τ of the grid. Each thresholded prediction set goes through the
metrics package (``parse_submission`` + ``score_submission``), so the sweep scores exactly as the
scorer does.

Calibration: on a dataset with a ``validation`` split, τ is the grid value that maximises detection
balanced accuracy on validation (ties: the value closest to the paper default, then the smaller);
it is then applied to the test split.

Outputs of ``run_sweep``: ``sweep.csv`` (one row per split, judge and τ), ``sweep.md`` (tables
of detection Bal acc and localization Bal F1 by τ, plus calibration) and ``sweep.png``.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.embedding import (
    DEFAULT_THRESHOLDS,
    VariantScores,
    embed_variant,
    predictions,
    score_variant,
)
from speakersleuth.judges.names import embedding_judge_name
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission

#: τ = 0.05, 0.10, ..., 0.95: the paper's Figure 7 grid (0.1 to 0.7) widened to every encoder's
#: useful range (Resemblyzer's and the d-vector's same-speaker cosines lie mostly above 0.7).
THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))
TURN_TASKS = ("detection", "localization")


def threshold_metrics(scores: VariantScores, gold: Gold, threshold: float) -> dict[str, float | None]:
    """Detection Bal acc and localization Bal F1 (percent) of ``scores`` thresholded at τ."""
    lines = predictions(scores, threshold, tasks=TURN_TASKS)
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = score_submission(parse_submission(data, gold), gold, n_bootstrap=0)
    return {
        "det_bal_acc": result["detection"]["balanced_accuracy"] if "detection" in result else None,
        "loc_bal_f1": result["localization"]["balanced_f1"] if "localization" in result else None,
    }


def sweep_thresholds(scores: VariantScores, gold: Gold, grid: Sequence[float] = THRESHOLDS) -> list[dict]:
    """``[{"threshold", "det_bal_acc", "loc_bal_f1"}]`` for every τ of ``grid``."""
    return [{"threshold": float(t), **threshold_metrics(scores, gold, t)} for t in grid]


def pick_threshold(rows: Sequence[dict], default: float) -> float:
    """τ of the row with the best detection Bal acc; ties go to the τ closest to ``default``,
    then to the smaller τ."""
    valid = [r for r in rows if r["det_bal_acc"] is not None]
    if not valid:
        raise ValueError("no detection balanced accuracy to calibrate on (validation has no detection instances?)")
    best = max(r["det_bal_acc"] for r in valid)
    tied = [r["threshold"] for r in valid if abs(r["det_bal_acc"] - best) < 1e-9]
    return min(tied, key=lambda t: (abs(t - default), t))


def calibrate(
    method: str,
    cache: EmbeddingCache,
    folder: str | os.PathLike,
    variant: str,
    grid: Sequence[float] = THRESHOLDS,
    *,
    progress: bool = True,
) -> dict:
    """Calibrate τ of ``method`` on the validation split; returns ``{"threshold", "validation"}``
    where ``validation`` is the per-τ sweep there. Raises when there is no validation split."""
    if "detection" not in ssd.tasks_present(folder, variant, "validation"):
        config = ssd.config_name("detection", variant)
        raise FileNotFoundError(
            f"{Path(folder) / ssd.get_config(config).data_dir}: no validation shards for {config!r}; "
            "calibration needs a validation split (run without --calibrate, or pass --threshold)"
        )
    embeddings = embed_variant(
        folder,
        variant,
        ["detection"],
        cache,
        split="validation",
        with_reference=method == "reference",
        progress=progress,
    )
    rows = sweep_thresholds(score_variant(method, embeddings), load_gold(folder, variant, "validation"), grid)
    return {"threshold": pick_threshold(rows, DEFAULT_THRESHOLDS[method]), "validation": rows}


def cache_for(spec: str, caches: dict | None, cache_dir=None, batch_size: int = 32) -> EmbeddingCache:
    """The embedding cache of encoder ``spec``: from ``caches`` (filled in, so later calls share
    it) or new.

    Arguments
    ---------
    spec : str
        The encoder's spec (``speech.encoders.get_encoder``).
    caches : dict or None
        Encoder spec -> ``EmbeddingCache`` to use (and fill) instead of new ones (None: a new one).
    cache_dir : str or os.PathLike, optional
        A folder that keeps the embeddings on disk (default None: memory only).
    batch_size : int
        The most clips per encoder call (default 32).

    Returns
    -------
    EmbeddingCache
        The cache, its encoder loaded when it is new.
    """
    if caches is not None and spec in caches:
        return caches[spec]
    from speakersleuth.speech.encoders import get_encoder

    cache = EmbeddingCache(get_encoder(spec), cache_dir, batch_size=batch_size)
    if caches is not None:
        caches[spec] = cache
    return cache


def run_sweep(
    folder: str | os.PathLike,
    variant: str,
    judges: Sequence[str],
    out_dir: str | os.PathLike,
    *,
    grid: Sequence[float] = THRESHOLDS,
    split: str = "test",
    cache_dir=None,
    batch_size: int = 32,
    caches: dict[str, EmbeddingCache] | None = None,
    progress: bool = True,
) -> dict:
    """Sweep τ for embedding judges (``<method>-<encoder>`` names) and write the table and plot.

    Judges that share an encoder share one embedding pass; ``caches`` (encoder spec -> cache)
    shares embeddings with other calls. Returns ``{"rows", "calibration", "files"}``.

    Arguments
    ---------
    folder : str or os.PathLike
        A built dataset folder (with its gold) that has detection instances in ``split``.
    variant : str
        ``main``, ``4vc`` or ``10turn``.
    judges : sequence of str
        Embedding judges' names, ``<method>-<encoder spec>`` (``pairwise-resemblyzer``).
    out_dir : str or os.PathLike
        The folder for ``sweep.csv``, ``sweep.md`` and ``sweep.png`` (made if needed).
    grid : sequence of float
        The τ values (default ``THRESHOLDS``: 0.05, 0.10, ..., 0.95).
    split : str
        The split swept (default ``"test"``); where the folder has a validation split, it is
        swept too and each judge's τ calibrated there.
    cache_dir, batch_size, caches
        Where each encoder's embeddings are kept (default: in memory, 32 clips per encoder call,
        new caches), as ``cache_for`` takes them.
    progress : bool
        Whether to show progress bars (default True).

    Returns
    -------
    dict
        ``rows`` (per split, judge and τ: detection Bal acc and localization Bal F1, in percent),
        ``calibration`` (per judge, with a validation split: the τ picked and its scores) and
        ``files`` (the paths written, by kind: ``csv``, ``markdown``, ``plot``).

    Example
    -------
    Skipped, as it needs a built dataset folder (``tests/support/synthetic.py`` writes a small one):

    >>> result = run_sweep("speakersleuth", "main", ["centroid-campplus"], "sweep")  # doctest: +SKIP
    >>> sorted(result["files"])  # doctest: +SKIP
    ['csv', 'markdown', 'plot']
    """
    by_encoder = _methods_by_encoder(judges)
    tasks = [t for t in ssd.tasks_present(folder, variant, split) if t in TURN_TASKS]
    if "detection" not in tasks:
        raise FileNotFoundError(f"{folder}: no {split} detection shards for variant {variant!r}; nothing to sweep")
    splits = [split] + (
        ["validation"]
        if split != "validation" and "detection" in ssd.tasks_present(folder, variant, "validation")
        else []
    )
    golds = {s: load_gold(folder, variant, s) for s in splits}
    rows: list[dict] = []
    calibration: dict[str, dict] = {}
    for spec, methods in by_encoder.items():
        cache = cache_for(spec, caches, cache_dir, batch_size)
        encoder = cache.encoder
        need_reference = "reference" in methods
        per_split = {
            s: embed_variant(
                folder,
                variant,
                tasks if s == split else ["detection"],
                cache,
                split=s,
                with_reference=need_reference,
                progress=progress,
            )
            for s in splits
        }
        for method in dict.fromkeys(methods):
            judge = f"{method}-{encoder.name}"
            swept = {s: sweep_thresholds(score_variant(method, per_split[s]), golds[s], grid) for s in splits}
            for s in splits:
                rows += [
                    {"split": s, "variant": variant, "judge": judge, "method": method, "encoder": encoder.name, **r}
                    for r in swept[s]
                ]
            if "validation" in swept:
                calibration[judge] = _calibration(swept, split, method)
    return {
        "rows": rows,
        "calibration": calibration,
        "files": _write_results(rows, calibration, out_dir, split, variant),
    }


def _methods_by_encoder(judges: Sequence[str]) -> dict[str, list[str]]:
    """The embedding judges' methods grouped by encoder spec (judges of one encoder share its embeddings)."""
    by_encoder: dict[str, list[str]] = {}
    for name in judges:
        method, spec = embedding_judge_name(name)
        by_encoder.setdefault(spec, []).append(method)
    return by_encoder


def _calibration(swept: dict[str, list[dict]], split: str, method: str) -> dict:
    """A judge's τ picked on the validation split, beside the paper's, with its scores there and on ``split``."""
    tau = pick_threshold(swept["validation"], DEFAULT_THRESHOLDS[method])
    at = next(r for r in swept[split] if r["threshold"] == tau)
    return {
        "threshold": tau,
        "default": DEFAULT_THRESHOLDS[method],
        "validation_det_bal_acc": next(r["det_bal_acc"] for r in swept["validation"] if r["threshold"] == tau),
        f"{split}_det_bal_acc": at["det_bal_acc"],
        f"{split}_loc_bal_f1": at["loc_bal_f1"],
    }


def _write_results(
    rows: list[dict], calibration: dict[str, dict], out_dir: str | os.PathLike, split: str, variant: str
) -> dict[str, str]:
    """``sweep.csv``, ``sweep.md`` and ``sweep.png`` written in ``out_dir``; returns their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"csv": _write_csv(rows, out / "sweep.csv"), "markdown": out / "sweep.md", "plot": out / "sweep.png"}
    files["markdown"].write_text(format_markdown(rows, calibration, split, variant), encoding="utf-8")
    plot_sweep(
        [r for r in rows if r["split"] == split],
        files["plot"],
        title=f"SpeakerSleuth {variant}/{split}: threshold sweep",
    )
    return {k: str(v) for k, v in files.items()}


def _write_csv(rows: list[dict], path: Path) -> Path:
    fields = ["split", "variant", "judge", "method", "encoder", "threshold", "det_bal_acc", "loc_bal_f1"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def format_markdown(rows: list[dict], calibration: dict[str, dict], split: str, variant: str) -> str:
    """Markdown tables (percent, one decimal): one per split and metric, judges by τ."""
    parts = [
        f"# Threshold sweep, variant {variant}",
        "",
        "Paper defaults: pairwise τ = 0.4, centroid τ = 0.3, reference τ = 0.4. "
        "Pairwise/reference flag s_i < τ; centroid flags s_i > τ.",
        "",
    ]
    for s in dict.fromkeys(r["split"] for r in rows):
        for key, title in (("det_bal_acc", "Detection Bal acc (%)"), ("loc_bal_f1", "Localization Bal F1 (%)")):
            subset = [r for r in rows if r["split"] == s]
            taus = sorted(dict.fromkeys(r["threshold"] for r in subset))
            if all(r[key] is None for r in subset):
                continue
            parts += [
                f"## {title}, {s} split",
                "",
                "| judge | " + " | ".join(f"τ={t:g}" for t in taus) + " |",
                "|---|" + "---:|" * len(taus),
            ]
            for judge in dict.fromkeys(r["judge"] for r in subset):
                values = {r["threshold"]: r[key] for r in subset if r["judge"] == judge}
                parts.append(f"| {judge} | " + " | ".join(_fmt(values.get(t)) for t in taus) + " |")
            parts.append("")
    if calibration:
        parts += [
            "## Calibration on the validation split (max detection Bal acc)",
            "",
            f"| judge | default τ | calibrated τ | validation Det Bal | {split} Det Bal | {split} Loc Bal F1 |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for judge, c in calibration.items():
            parts.append(
                f"| {judge} | {c['default']:g} | {c['threshold']:g} | {_fmt(c['validation_det_bal_acc'])} | "
                f"{_fmt(c[f'{split}_det_bal_acc'])} | {_fmt(c[f'{split}_loc_bal_f1'])} |"
            )
        parts.append("")
    return "\n".join(parts)


def plot_sweep(rows: list[dict], path: str | os.PathLike, *, title: str = "Threshold sweep") -> Path:
    """Two panels (detection Bal acc, localization Bal F1) against τ, one line per judge; the
    paper default τ of each judge is marked with a larger dot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for ax, (key, label) in zip(
        axes, (("det_bal_acc", "Detection Bal acc (%)"), ("loc_bal_f1", "Localization Bal F1 (%)"))
    ):
        for judge in dict.fromkeys(r["judge"] for r in rows):
            points = [(r["threshold"], r[key]) for r in rows if r["judge"] == judge and r[key] is not None]
            if not points:
                continue
            x, y = np.array(points).T
            (line,) = ax.plot(x, y, marker="o", markersize=3, label=judge)
            default = DEFAULT_THRESHOLDS[next(r["method"] for r in rows if r["judge"] == judge)]
            ax.plot(
                [t for t in x if abs(t - default) < 1e-9],
                [v for t, v in points if abs(t - default) < 1e-9],
                marker="o",
                markersize=8,
                color=line.get_color(),
                linestyle="none",
            )
        ax.axhline(50, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlabel("threshold τ")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
