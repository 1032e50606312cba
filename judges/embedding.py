"""Speaker-embedding judges (paper section 5.1 and appendix B.2): pairwise, centroid, reference,
and core, ours: pairwise made robust to the turns that slipped.

Per-turn scores over the N target turns e_1..e_N of an instance (r is the reference clip):

- pairwise:  s_i = mean_{j != i} cos(e_i, e_j); turn i is flagged when s_i < τ (paper τ = 0.4).
- centroid:  s_i = 1 - cos(e_i, c), c = mean of all N turn embeddings (turn i included); flagged
  when s_i > τ (paper τ = 0.3).
- reference: s_i = cos(e_i, r); flagged when s_i < τ (paper τ = 0.4).
- core:      s_i = mean_{j in C, j != i} cos(e_i, e_j), C the *core*: the floor(N/2) + 1 turns
  (a strict majority) with the highest pairwise score; flagged when s_i < τ. A turn that slipped
  is outside the core, so it does not drag the speaker's other turns down, as it does their
  pairwise means (with N = 2 the core is both turns: the same as pairwise). Not in the paper: its
  τ is pairwise's until calibrated.

Embeddings are L2-normalised before any use, so the centroid is the mean of unit vectors. It is
not renormalised: cosine is invariant to the length of its arguments, so renormalising would
change no score.

Discrimination, with the N-1 context turns as e_1..e_{N-1} and each candidate x:
pairwise scores mean_j cos(x, e_j), centroid scores 1 - cos(x, mean_j e_j) (lower is better),
reference scores cos(x, r), core scores mean_{j in C} cos(x, e_j) over the context's core.
Classification picks the best candidate; the ranking sorts all of them
best first (ties keep label order). Detection is "inconsistent" when any turn is flagged;
localization is the flagged turns as 1-based positions. A detection line also carries the
threshold-free ``score`` the scorer's AUROC and EER use: the quantity detection thresholds, the
largest inconsistency of any turn, 1 - min_i s_i (pairwise, reference; flagged above 1 - τ) or
max_i s_i (centroid; flagged above τ).

The judges read only audio columns (and candidate labels), never gold labels.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.judge import Judge
from speakersleuth.judges.names import METHODS, embedding_judge_name
from speakersleuth.speech.files import write_text_atomic

DEFAULT_THRESHOLDS = {"pairwise": 0.4, "centroid": 0.3, "reference": 0.4, "core": 0.4}
#: True where a high score means "sounds like the target" (flag s < τ, best candidate = highest);
#: False for the centroid distance (flag s > τ, best candidate = lowest).
HIGHER_IS_CONSISTENT = {"pairwise": True, "centroid": False, "reference": True, "core": True}

#: The only columns a judge reads; none of them is a gold label.
TURN_COLUMNS = ["id", "target_audio", "reference_audio"]
DISCRIMINATION_COLUMNS = ["id", "context_audio", "candidates", "candidate_labels", "reference_audio"]


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown embedding method {method!r}; known: {', '.join(METHODS)}")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norm == 0) or not np.all(np.isfinite(norm)):
        raise ValueError("an embedding has zero or non-finite norm")
    return x / norm


def _reference(method: str, reference: np.ndarray | None) -> np.ndarray:
    if reference is None:
        raise ValueError(f"the {method} method needs the reference embedding")
    return _unit(reference)


def _pairwise_means(sim: np.ndarray) -> np.ndarray:
    """Each turn's mean similarity to the other turns, from their ``(N, N)`` similarities."""
    return (sim.sum(axis=1) - np.diag(sim)) / (len(sim) - 1)


def majority_core(sim: np.ndarray) -> np.ndarray:
    """The core of ``N`` turns from their ``(N, N)`` cosine similarities: the positions (0-based,
    in turn order) of the floor(N/2) + 1 turns with the highest pairwise means (ties: the earlier
    turn). One turn alone is its own core.

    >>> sim = np.array([[1, 0.8, 0.7, 0.0], [0.8, 1, 0.9, 0.1], [0.7, 0.9, 1, 0.0], [0.0, 0.1, 0.0, 1]])
    >>> majority_core(sim).tolist()
    [0, 1, 2]
    """
    if len(sim) == 1:
        return np.array([0])
    order = np.argsort(-_pairwise_means(sim), kind="stable")
    return np.sort(order[: len(sim) // 2 + 1])


def _core_scores(e: np.ndarray) -> np.ndarray:
    sim = e @ e.T
    core = majority_core(sim)
    return np.array([sim[i, core[core != i]].mean() for i in range(len(e))])


def turn_scores(method: str, turns: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """Per-turn scores s_i ``(N,)`` of one instance from its turn embeddings ``(N, D)``."""
    _check_method(method)
    e = _unit(turns)
    if method in ("pairwise", "core"):
        if len(e) < 2:
            raise ValueError(f"{method} scores need at least 2 turns, got {len(e)}")
        return _pairwise_means(e @ e.T) if method == "pairwise" else _core_scores(e)
    if method == "centroid":
        centroid = e.mean(axis=0)
        return 1.0 - e @ centroid / np.linalg.norm(centroid)
    return e @ _reference(method, reference)


def candidate_scores(
    method: str, context: np.ndarray, candidates: np.ndarray, reference: np.ndarray | None = None
) -> np.ndarray:
    """Scores ``(C,)`` of the candidates ``(C, D)`` for a masked turn given the context ``(N-1, D)``."""
    _check_method(method)
    x = _unit(candidates)
    if method == "pairwise":
        return (x @ _unit(context).T).mean(axis=1)
    if method == "core":
        c = _unit(context)
        return (x @ c[majority_core(c @ c.T)].T).mean(axis=1)
    if method == "centroid":
        centroid = _unit(context).mean(axis=0)
        return 1.0 - x @ centroid / np.linalg.norm(centroid)
    return x @ _reference(method, reference)


def flagged_turns(method: str, scores: np.ndarray, threshold: float) -> list[int]:
    """1-based positions of the turns whose score crosses the threshold."""
    _check_method(method)
    flags = scores < threshold if HIGHER_IS_CONSISTENT[method] else scores > threshold
    return [int(i) + 1 for i in np.flatnonzero(flags)]


def detection_score(method: str, scores: np.ndarray) -> float:
    """The instance's inconsistency (higher = more likely inconsistent) from its per-turn scores:
    1 - the lowest similarity, or the largest centroid distance. Detection says "inconsistent"
    when it passes 1 - τ (pairwise, reference) or τ (centroid)."""
    _check_method(method)
    return float(1.0 - np.min(scores)) if HIGHER_IS_CONSISTENT[method] else float(np.max(scores))


def ranking(method: str, labels: Sequence[str], scores: np.ndarray) -> list[str]:
    """Candidate labels sorted best first (stable: equal scores keep label order)."""
    _check_method(method)
    keys = -np.asarray(scores) if HIGHER_IS_CONSISTENT[method] else np.asarray(scores)
    return [labels[i] for i in np.argsort(keys, kind="stable")]


# ----------------------------------------------------------------------------- embeddings


@dataclass
class TurnInstance:
    """Embeddings of a detection/localization instance: its N target turns and the reference."""

    id: str
    turns: np.ndarray
    reference: np.ndarray | None


@dataclass
class DiscriminationInstance:
    id: str
    context: np.ndarray
    candidates: np.ndarray
    labels: list[str]
    reference: np.ndarray | None


@dataclass
class VariantEmbeddings:
    """Every instance of the requested tasks of one variant and split, as embeddings."""

    variant: str
    split: str
    encoder: str
    instances: dict[str, list] = field(default_factory=dict)  # task -> instances

    @property
    def has_reference(self) -> bool:
        return all(i.reference is not None for items in self.instances.values() for i in items)


def parse_tasks(tasks: str | Sequence[str]) -> list[str]:
    """``"detection,localization"`` or a sequence -> checked, de-duplicated task list."""
    names = [t.strip() for t in tasks.split(",")] if isinstance(tasks, str) else list(tasks)
    names = [t for t in dict.fromkeys(names) if t]
    unknown = [t for t in names if t not in ssd.TASKS]
    if unknown or not names:
        raise ValueError(f"unknown or no tasks {unknown or names}; known: {', '.join(ssd.TASKS)}")
    return names


def iter_rows(folder, config: str, split: str, columns: list[str], chunk_rows: int) -> Iterator[list[dict]]:
    """Rows of a config in chunks, streamed shard by shard and row group by row group."""
    for path in ssd.shard_paths(folder, config, split):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows, columns=columns):
            yield batch.to_pylist()


def embed_variant(
    folder: str | os.PathLike,
    variant: str,
    tasks: str | Sequence[str],
    cache: EmbeddingCache,
    *,
    split: str = "test",
    with_reference: bool = True,
    limit: int | None = None,
    chunk_rows: int = 16,
    progress: bool = True,
) -> VariantEmbeddings:
    """Embed every clip of ``tasks`` on ``variant``/``split`` through ``cache`` (once per unique clip).

    ``limit`` keeps the first rows of each task; ``with_reference=False`` skips the reference clips
    (the pairwise and centroid methods do not use them).
    """
    if variant not in ssd.VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(ssd.VARIANTS)}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    out = VariantEmbeddings(variant, split, cache.encoder.name)
    for task in parse_tasks(tasks):
        config = ssd.config_name(task, variant)
        paths = ssd.shard_paths(folder, config, split)
        if not paths:
            raise FileNotFoundError(
                f"{Path(folder) / ssd.get_config(config).data_dir}: no {split} shards for {config!r}"
            )
        total = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        total = min(total, limit) if limit is not None else total
        is_disc = task == "discrimination"
        columns = DISCRIMINATION_COLUMNS if is_disc else TURN_COLUMNS
        if not with_reference:
            columns = [c for c in columns if c != "reference_audio"]
        items: list = []
        bar = tqdm(
            total=total, desc=f"embed {config}/{split} [{cache.encoder.name}]", unit="inst", disable=not progress
        )
        for rows in iter_rows(folder, config, split, columns, chunk_rows):
            if len(items) >= total:
                break
            rows = rows[: total - len(items)]
            items += _embed_rows(rows, config, is_disc, with_reference, cache)
            bar.update(len(rows))
        bar.close()
        out.instances[task] = items
    return out


def _embed_rows(rows: list[dict], config: str, is_disc: bool, with_reference: bool, cache: EmbeddingCache) -> list:
    """Embed a chunk of rows with one cache call; returns their instances."""
    clips: list[bytes] = []
    names: list[str] = []
    layout: list[dict[str, slice]] = []
    groups = ("context_audio", "candidates") if is_disc else ("target_audio",)
    if with_reference:
        groups += ("reference_audio",)
    for row in rows:
        spans = {}
        for column in groups:
            values = row[column] if isinstance(row[column], list) else [row[column]]
            if not values:
                raise ValueError(f"{config} id {row['id']!r}: column {column} is empty")
            start = len(clips)
            for i, value in enumerate(values):
                if not value or not value.get("bytes"):
                    raise ValueError(f"{config} id {row['id']!r}: {column}[{i}] has no embedded audio bytes")
                clips.append(value["bytes"])
                names.append(f"{config} id {row['id']!r} {column}[{i}]")
            spans[column] = slice(start, len(clips))
        layout.append(spans)
    vectors = cache.embed(clips, names)
    items = []
    for row, spans in zip(rows, layout):
        reference = vectors[spans["reference_audio"]][0] if with_reference else None
        if is_disc:
            labels = list(row["candidate_labels"])
            candidates = vectors[spans["candidates"]]
            if len(labels) != len(candidates) or len(set(labels)) != len(labels):
                raise ValueError(f"{config} id {row['id']!r}: {len(candidates)} candidates for labels {labels}")
            items.append(
                DiscriminationInstance(row["id"], vectors[spans["context_audio"]], candidates, labels, reference)
            )
        else:
            items.append(TurnInstance(row["id"], vectors[spans["target_audio"]], reference))
    return items


# ------------------------------------------------------------------------------ predictions


@dataclass
class VariantScores:
    """Scores of one method on one variant: per-turn scores and per-candidate scores, which do not
    depend on τ, so a threshold sweep thresholds them many times (``predictions`` turns them into
    the lines of a predictions file at one τ).

    Arguments
    ---------
    method : str
        ``pairwise``, ``centroid`` or ``reference``.
    turn : dict
        Turn task (``detection``, ``localization``) -> ``[(id, s)]``, ``s`` the ``(N,)`` per-turn
        scores of the instance (``turn_scores``).
    discrimination : list
        ``[(id, labels, scores)]``: the candidate labels and their ``(C,)`` scores
        (``candidate_scores``) of each discrimination instance.

    Example
    -------
    >>> import numpy as np
    >>> scores = VariantScores("pairwise", {"detection": [("d-S2", np.array([0.9, 0.2, 0.8]))]}, [])
    >>> predictions(scores, threshold=0.4)
    [{'task': 'detection', 'id': 'd-S2', 'prediction': 'inconsistent', 'score': 0.8}]
    """

    method: str
    turn: dict[str, list[tuple[str, np.ndarray]]]  # task -> [(id, s (N,))]
    discrimination: list[tuple[str, list[str], np.ndarray]]  # [(id, labels, scores (C,))]


def score_variant(method: str, embeddings: VariantEmbeddings) -> VariantScores:
    _check_method(method)
    if method == "reference" and not embeddings.has_reference:
        raise ValueError("the reference method needs embeddings made with with_reference=True")
    turn, disc = {}, []
    for task, items in embeddings.instances.items():
        if task == "discrimination":
            disc = [(i.id, i.labels, candidate_scores(method, i.context, i.candidates, i.reference)) for i in items]
        else:
            turn[task] = [(i.id, turn_scores(method, i.turns, i.reference)) for i in items]
    return VariantScores(method, turn, disc)


def predictions(scores: VariantScores, threshold: float, tasks: Sequence[str] | None = None) -> list[dict]:
    """Submission lines (the format of ``metrics.submission``) for the scored tasks, at threshold ``threshold``."""
    method, lines = scores.method, []
    wanted = set(tasks) if tasks is not None else None
    for task, items in scores.turn.items():
        if wanted is not None and task not in wanted:
            continue
        for rid, s in items:
            flagged = flagged_turns(method, s, threshold)
            if task == "localization":
                lines.append({"task": task, "id": rid, "prediction": flagged})
            else:
                lines.append(
                    {
                        "task": task,
                        "id": rid,
                        "prediction": "inconsistent" if flagged else "consistent",
                        "score": detection_score(method, s),
                    }
                )
    if wanted is None or "discrimination" in wanted:
        for rid, labels, s in scores.discrimination:
            order = ranking(method, labels, s)
            lines.append({"task": "discrimination", "id": rid, "prediction": order[0], "ranking": order})
    return lines


def write_jsonl(lines: Sequence[dict], out_path: str | os.PathLike) -> Path:
    """Write submission lines atomically (a temporary file moved into place)."""
    return write_text_atomic(out_path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


# ------------------------------------------------------------------------------------ judge


class EmbeddingJudge(Judge):
    """One scoring method on one speaker encoder, judging a dataset folder from its audio alone.

    ``score`` embeds the clips of the asked tasks (through ``cache``: each distinct clip once) and
    scores them with the method (the module docstring gives the formulas); ``run`` thresholds
    those scores at ``threshold`` and writes the predictions file (``metrics.submission``'s
    format), detection lines with their threshold-free ``score``.

    Arguments
    ---------
    method : str
        ``pairwise``, ``centroid`` or ``reference`` (``ValueError`` otherwise).
    encoder : SpeakerEncoder, optional
        The encoder (``speech.encoders.get_encoder``); a new ``EmbeddingCache`` is made for it.
        Give exactly one of ``encoder`` and ``cache`` (``ValueError`` otherwise).
    threshold : float, optional
        τ, where a turn is flagged (below it for pairwise and reference, above it for centroid).
        None (default): the paper's, 0.4 (pairwise, reference) or 0.3 (centroid).
    cache : EmbeddingCache, optional
        A cache to share embeddings with other judges of the same encoder (its ``encoder`` is used).
    cache_dir : str or os.PathLike, optional
        With ``encoder``: a folder where the new cache also keeps its embeddings on disk, for
        later runs (default None: memory only). Unused with ``cache``.
    batch_size : int
        With ``encoder``: the most clips per encoder call (default 32). Unused with ``cache``.
    progress : bool
        Whether to show progress bars (default True).

    Example
    -------
    >>> from speakersleuth.speech.encoders import get_encoder
    >>> judge = EmbeddingJudge("centroid", get_encoder("resemblyzer"), progress=False)
    >>> judge.name, judge.threshold
    ('centroid-resemblyzer', 0.3)
    >>> other = EmbeddingJudge("pairwise", cache=judge.cache, threshold=0.5)  # the same embeddings
    >>> other.name, other.cache is judge.cache
    ('pairwise-resemblyzer', True)
    """

    def __init__(
        self,
        method: str,
        encoder=None,
        *,
        threshold: float | None = None,
        cache: EmbeddingCache | None = None,
        cache_dir: str | os.PathLike | None = None,
        batch_size: int = 32,
        progress: bool = True,
    ) -> None:
        _check_method(method)
        if (encoder is None) == (cache is None):
            raise ValueError("EmbeddingJudge needs exactly one of encoder and cache")
        self.method = method
        self.threshold = DEFAULT_THRESHOLDS[method] if threshold is None else float(threshold)
        self.cache = cache if cache is not None else EmbeddingCache(encoder, cache_dir, batch_size=batch_size)
        self.progress = progress

    @property
    def name(self) -> str:
        return f"{self.method}-{self.cache.encoder.name}"

    def score(
        self, dataset_folder, variant: str, tasks, *, split: str = "test", limit: int | None = None
    ) -> VariantScores:
        """Embed (through the cache) and score ``tasks`` of one variant; τ is not applied yet.

        Reads only the audio columns (and the candidate labels), never the gold.

        Arguments
        ---------
        dataset_folder, variant, tasks, split, limit
            The instances to score, as ``run`` takes them (``judges.judge.Judge.run``).

        Returns
        -------
        VariantScores
            The per-turn scores of each turn task and the candidate scores of discrimination.

        Example
        -------
        Skipped, as it needs a built dataset folder (``tests/support/synthetic.py`` writes a small one):

        >>> judge = make_embedding_judge("pairwise-resemblyzer", progress=False)  # doctest: +SKIP
        >>> scores = judge.score("speakersleuth", "main", "detection,discrimination")  # doctest: +SKIP
        >>> scores.method, list(scores.turn), scores.discrimination[0][1]  # doctest: +SKIP
        ('pairwise', ['detection'], ['A', 'B', 'C'])
        """
        embeddings = embed_variant(
            dataset_folder,
            variant,
            tasks,
            self.cache,
            split=split,
            limit=limit,
            with_reference=self.method == "reference",
            progress=self.progress,
        )
        return score_variant(self.method, embeddings)

    def run(
        self, dataset_folder, variant: str, tasks, out_path, *, split: str = "test", limit: int | None = None
    ) -> dict:
        """Judge ``tasks`` of one variant at τ = ``threshold`` and write the predictions file.

        Arguments
        ---------
        dataset_folder, variant, tasks, out_path, split, limit
            As ``judges.judge.Judge.run`` takes them; ``out_path`` is replaced, atomically.

        Returns
        -------
        dict
            The run's summary: ``judge``, ``variant``, ``split``, ``threshold``, ``counts`` (lines
            per task), ``encoder_calls`` (clips this run encoded) and ``unique_clips`` (clips in the
            cache), ``seconds``, ``instances_per_second`` and ``out``.

        Example
        -------
        Skipped, as it needs a built dataset folder (``tests/support/synthetic.py`` writes a small one):

        >>> judge = make_embedding_judge("centroid-resemblyzer", progress=False)  # doctest: +SKIP
        >>> judge.run("speakersleuth", "main", "detection", "preds.jsonl")["counts"]  # doctest: +SKIP
        {'detection': 180}
        """
        tasks = parse_tasks(tasks)
        start, encoded0 = time.perf_counter(), self.cache.encoded
        lines = predictions(self.score(dataset_folder, variant, tasks, split=split, limit=limit), self.threshold)
        write_jsonl(lines, out_path)
        seconds = time.perf_counter() - start
        counts = {t: sum(1 for line in lines if line["task"] == t) for t in tasks}
        return {
            "judge": self.name,
            "variant": variant,
            "split": split,
            "threshold": self.threshold,
            "counts": counts,
            "encoder_calls": self.cache.encoded - encoded0,
            "unique_clips": self.cache.unique_clips,
            "seconds": round(seconds, 3),
            "instances_per_second": round(sum(counts.values()) / seconds, 2) if seconds > 0 else None,
            "out": str(out_path),
        }


def make_embedding_judge(
    name: str, *, threshold: float | None = None, cache_dir=None, batch_size: int = 32, progress: bool = True
) -> EmbeddingJudge:
    """Build an embedding judge from its name, ``<method>-<encoder spec>``.

    Arguments
    ---------
    name : str
        The judge's name (``judges.names``): a method (``pairwise``, ``centroid``, ``reference``),
        a dash, then an encoder spec as ``speech.encoders.get_encoder`` takes it, e.g.
        ``pairwise-resemblyzer``, ``centroid-campplus``, ``reference-ecapa:/models/ecapa``. An LALM
        judge's name or an unknown method raises ``ValueError``.
    threshold : float, optional
        τ (default None: the paper's, 0.4 for pairwise and reference, 0.3 for centroid).
    cache_dir : str or os.PathLike, optional
        A folder where the judge's embedding cache keeps embeddings on disk for later runs
        (default None: memory only).
    batch_size : int
        The most clips per encoder call (default 32).
    progress : bool
        Whether to show progress bars (default True).

    Returns
    -------
    EmbeddingJudge
        The judge, its encoder loaded (on CPU).

    Example
    -------
    >>> judge = make_embedding_judge("pairwise-resemblyzer", progress=False)
    >>> judge.name, judge.method, judge.threshold
    ('pairwise-resemblyzer', 'pairwise', 0.4)
    >>> make_embedding_judge("gemini:gemini-2.5-pro")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'gemini:gemini-2.5-pro' is an LALM judge; use an embedding judge, <method>-<encoder> ...
    """
    method, encoder_spec = embedding_judge_name(name)
    from speakersleuth.speech.encoders import get_encoder

    return EmbeddingJudge(
        method,
        get_encoder(encoder_spec),
        threshold=threshold,
        cache_dir=cache_dir,
        batch_size=batch_size,
        progress=progress,
    )
