"""Running an LALM judge over a dataset folder: instances -> queries -> answers -> predictions JSONL.

Output (one variant per file, the submission format of ``metrics``)::

    preds.jsonl            {"task": "detection", "id": "...", "prediction": "inconsistent"}
                           {"task": "discrimination", "id": "...", "prediction": "B", "ranking": ["B", "C", "A"]}
    preds.jsonl.raw.jsonl  one record per finished or failed (task, id): judge, setting, prompt
                           version, status, and per query the raw text, how it parsed, latency,
                           attempts and API metadata

A backend that sees the model's logits (transformers) reports P("inconsistent") of each yes/no
query; it is logged per answer (``p_inconsistent``) and a detection line carries it as its
``score`` (per-turn queries: the largest over the turns), which the scorer turns into AUROC/EER.

Statuses: ``ok`` (a prediction line was written), ``unparseable`` (a required answer did not
parse: no line, so the scorer counts the instance wrong and lowers coverage; nothing is guessed),
``error`` (a request failed for good; the instance is retried on the next run). A discrimination
line needs the classification answer; its ranking is added when the ranking answer parses (a line
without ``ranking`` scores 0 on the ranking metrics). Per-turn instances need every turn's answer.

Resuming: both files are append-only. On start, a torn last line is cut off, (task, id) pairs
whose last record is ``ok`` or ``unparseable`` are skipped, and an ``ok`` record whose prediction
line is missing (a stop between the two writes) gets its line written. Answers already in the raw
log are reused for identical prompts, and identical prompts in flight are sent once: per-turn
queries serve detection and localization once, S1/S2/S3 of a dialogue share the per-turn queries
of their common turns, and a failed instance only re-sends its failed queries. A file written by
another judge, setting, prompt version, variant or split is refused, and so is a predictions file
without its raw log.

The summary reports per task the instances, what this run skipped, wrote, found unparseable or
failed, the requests it sent, and over all runs the lines in the file and the parse-failure rate
(unparseable / finished); ``ranking_unparseable`` counts discrimination lines without a ranking.

Rows are read a few at a time with ``speakersleuth_dataset.read_rows`` (only the columns the
prompts need, never gold labels); requests run on a thread pool of ``backend.max_concurrency``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.embedding import parse_tasks
from speakersleuth.judges.judge import Judge
from speakersleuth.judges.lalm.backends import make_backend
from speakersleuth.judges.lalm.backends.base import Backend, Completion, RequestError
from speakersleuth.judges.lalm.parsing import LABELS, Parsed, parse_answer
from speakersleuth.judges.lalm.prompts import (
    PROMPT_VERSION,
    DiscriminationInstance,
    Query,
    TurnInstance,
    check_setting,
    discrimination_queries,
    turn_queries,
)

RAW_SUFFIX = ".raw.jsonl"
FINISHED = ("ok", "unparseable")
TURN_COLUMNS = ["id", "target_audio", "reference_audio", "turns", "target_turn_positions"]
DISCRIMINATION_COLUMNS = [
    "id",
    "context_audio",
    "masked_position",
    "candidates",
    "candidate_labels",
    "reference_audio",
    "turns",
    "target_turn_positions",
]


# ------------------------------------------------------------------------------------- instances


def _waves(clips: list[dict], where: str) -> list:
    return [ssd.load_waveform(c, where=f"{where}[{i}]") for i, c in enumerate(clips)]


def turn_instance(row: dict) -> TurnInstance:
    rid = row["id"]
    return TurnInstance(
        id=rid,
        target_audio=_waves(row["target_audio"], f"{rid} target_audio"),
        reference=ssd.load_waveform(row["reference_audio"], where=f"{rid} reference_audio"),
        turns=row["turns"],
        target_positions=row["target_turn_positions"],
    )


def discrimination_instance(row: dict) -> DiscriminationInstance:
    rid = row["id"]
    return DiscriminationInstance(
        id=rid,
        context_audio=_waves(row["context_audio"], f"{rid} context_audio"),
        masked_position=row["masked_position"],
        candidates=_waves(row["candidates"], f"{rid} candidates"),
        labels=list(row["candidate_labels"]),
        reference=ssd.load_waveform(row["reference_audio"], where=f"{rid} reference_audio"),
        turns=row["turns"],
        target_positions=row["target_turn_positions"],
    )


@dataclass
class Job:
    """One instance of a task as the model is asked it: its queries, and what parsing their
    answers needs (the number of target turns, the candidate labels)."""

    task: str
    id: str
    queries: list[Query]
    num_turns: int
    labels: tuple[str, ...]

    def parse(self, query: Query, raw: str | None) -> Parsed:
        """The parsed answer of one of the job's queries (``parsing.parse_answer``)."""
        return parse_answer(query.kind, raw, num_turns=self.num_turns, labels=self.labels or LABELS)

    def prediction_line(self, parsed: list[Parsed], p_inconsistent: list[float | None] | None = None) -> dict | None:
        """The predictions-file line of the job from its parsed answers (``aggregate``), or None."""
        line = aggregate(self.task, self.queries, parsed, p_inconsistent)
        if line is None:
            return None
        return {"task": self.task, "id": self.id, **{k: v for k, v in line.items() if k != "task"}}


def instance_job(task: str, setting: str, row: dict, *, ranking: bool = True) -> Job:
    """The job of one dataset row of ``task`` (a row of ``TURN_COLUMNS`` or ``DISCRIMINATION_COLUMNS``,
    clips as ``speakersleuth_dataset.load_waveform`` reads them) asked with the prompts of ``setting``;
    every harness that runs our prompts (``judges run``, the Inspect and lmms-eval tasks) asks these."""
    if task == "discrimination":
        inst = discrimination_instance(row)
        queries = discrimination_queries(setting, inst, ranking=ranking)
        return Job(task, inst.id, queries, len(inst.context_audio) + 1, tuple(inst.labels))
    inst = turn_instance(row)
    return Job(task, inst.id, turn_queries(task, setting, inst), len(inst.target_audio), ())


def aggregate(
    task: str, queries: list[Query], parsed: list[Parsed], p_inconsistent: list[float | None] | None = None
) -> dict | None:
    """The prediction line of one instance from its parsed answers, or None when unparseable.

    A detection line gets a ``score`` when the backend gave ``p_inconsistent`` for every query:
    that probability, or with per-turn queries the largest one (the turn most likely different)."""
    by_kind = {q.kind: p for q, p in zip(queries, parsed) if q.turn is None}
    scores = p_inconsistent or [None] * len(queries)
    score = {"score": max(scores)} if task == "detection" and None not in scores else {}
    if queries and queries[0].kind == "same_speaker":
        if not all(p.ok for p in parsed):
            return None
        different = [q.turn for q, p in zip(queries, parsed) if p.value is False]
        if task == "detection":
            return {"task": task, "prediction": "inconsistent" if different else "consistent", **score}
        return {"task": task, "prediction": different}
    if task == "discrimination":
        choice = by_kind["choice"]
        if not choice.ok:
            return None
        line = {"task": task, "prediction": choice.value}
        ranking = by_kind.get("ranking")
        if ranking is not None and ranking.ok:
            line["ranking"] = ranking.value
        return line
    answer = by_kind[task]
    return {"task": task, "prediction": answer.value, **score} if answer.ok else None


# -------------------------------------------------------------------------------------- files


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line left without its newline by a stop mid-write."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        data = f.read()
        if not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file; an unreadable line is an error naming it."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            try:
                yield n, json.loads(line)
            except ValueError as err:
                raise ValueError(f"{path} line {n} is not JSON ({err}); fix or remove the file") from None


class RunLog:
    """The predictions file and its raw log, opened for appending (see the module doc)."""

    def __init__(self, out_path: str | os.PathLike, identity: dict[str, str]) -> None:
        self.out = Path(out_path)
        self.raw = Path(str(out_path) + RAW_SUFFIX)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.identity = identity
        for path in (self.out, self.raw):
            _cut_torn_tail(path)
        if self.out.is_file() and self.out.stat().st_size and not self.raw.is_file():
            raise ValueError(
                f"{self.out} exists without its raw log {self.raw.name}, so it was not written by "
                "this harness; write to another output file"
            )
        self.last: dict[tuple[str, str], dict] = {}
        self.answers: dict[str, str] = {}
        self.p_inconsistent: dict[str, float] = {}  # prompt key -> the backend's P("inconsistent")
        for n, record in _records(self.raw):
            self._load(record, n)
        self.predicted = {(item["task"], item["id"]) for _, item in _records(self.out)}
        self._raw_file = open(self.raw, "a", encoding="utf-8")
        self._out_file = open(self.out, "a", encoding="utf-8")
        self._lock = threading.Lock()
        for key, record in self.last.items():
            if record["status"] == "ok" and key not in self.predicted:
                self._write_line(record["prediction"])

    def _load(self, record: dict, n: int) -> None:
        mismatch = {k: (record.get(k), v) for k, v in self.identity.items() if record.get(k) != v}
        if mismatch:
            detail = ", ".join(f"{k} {old!r} (now {new!r})" for k, (old, new) in mismatch.items())
            raise ValueError(f"{self.raw} line {n} was written with {detail}; write to another output file")
        self.last[(record["task"], record["id"])] = record
        for answer in record.get("answers", []):
            if answer.get("raw") is not None:
                self.answers[answer["key"]] = answer["raw"]
            if answer.get("p_inconsistent") is not None:
                self.p_inconsistent[answer["key"]] = answer["p_inconsistent"]

    def finished(self, task: str, rid: str) -> bool:
        record = self.last.get((task, rid))
        return record is not None and record["status"] in FINISHED

    def _write_line(self, line: dict) -> None:
        self._out_file.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._out_file.flush()
        self.predicted.add((line["task"], line["id"]))

    def append(self, record: dict) -> None:
        """Write the raw record, then its prediction line (a stop in between is repaired on load)."""
        with self._lock:
            self._raw_file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._raw_file.flush()
            self.last[(record["task"], record["id"])] = record
            if record["status"] == "ok" and (record["task"], record["id"]) not in self.predicted:
                self._write_line(record["prediction"])

    def close(self) -> None:
        self._raw_file.close()
        self._out_file.close()


# -------------------------------------------------------------------------------------- judge


class LALMJudge(Judge):
    """An LALM behind a backend, asked with the prompts of one setting; ``run`` judges a dataset
    folder and writes its predictions file and raw log, resuming where an earlier run stopped (see
    the module docstring).

    Arguments
    ---------
    backend : judges.lalm.backends.base.Backend
        The model behind its API (``judges.lalm.backends.make_backend``); the judge's ``name`` is
        the backend's spec.
    setting : str
        The prompt setting (``judges.lalm.prompts.SETTINGS``): ``main`` (default), ``context``,
        ``no_reference`` or ``per_turn`` (detection and localization only). Another raises
        ``ValueError``.
    ranking : bool
        Whether discrimination also asks for the ranking of the candidates (default True), which
        the ranking metrics score.
    progress : bool
        Whether to show progress bars (default True).
    read_chunk : int, optional
        Rows read from the dataset at a time (default None: twice the backend's concurrency,
        at least 4).

    Example
    -------
    >>> from speakersleuth.judges.lalm.backends import make_backend
    >>> backend = make_backend("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B")
    >>> judge = LALMJudge(backend, "per_turn", progress=False)
    >>> judge.name, judge.setting, judge.read_chunk
    ('vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B', 'per_turn', 16)
    """

    def __init__(
        self,
        backend: Backend,
        setting: str = "main",
        *,
        ranking: bool = True,
        progress: bool = True,
        read_chunk: int | None = None,
    ) -> None:
        check_setting(setting)
        self.backend = backend
        self.setting = setting
        self.ranking = ranking
        self.progress = progress
        self.read_chunk = read_chunk or max(4, 2 * backend.max_concurrency)
        self._inflight: dict[str, threading.Event] = {}
        self._inflight_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.backend.spec

    def jobs(self, task: str, rows: list[dict]) -> Iterator[Job]:
        for row in rows:
            yield instance_job(task, self.setting, row, ranking=self.ranking)

    def _ask(self, query: Query, key: str, log: RunLog) -> Completion | None:
        """Send a query, or return None when its answer is logged or was just given to an
        identical query in flight (which is waited for rather than sent twice)."""
        while True:
            with self._inflight_lock:
                if key in log.answers:
                    return None
                waiting = self._inflight.get(key)
                if waiting is None:
                    self._inflight[key] = threading.Event()
                    break
            waiting.wait()
        try:
            completion = self.backend.generate(query.prompt)
            if completion.meta.get("p_inconsistent") is not None:
                log.p_inconsistent[key] = completion.meta["p_inconsistent"]
            log.answers[key] = completion.text
            return completion
        finally:
            with self._inflight_lock:
                self._inflight.pop(key).set()

    def answer(self, job: Job, log: RunLog) -> dict:
        """Ask every query of a job (reusing logged answers), parse, aggregate: the raw record."""
        answers, parsed = [], []
        record = {"task": job.task, "id": job.id, **log.identity}
        for query in job.queries:
            key = query.prompt.key()
            entry: dict[str, Any] = {"kind": query.kind, "turn": query.turn, "key": key}
            try:
                completion = self._ask(query, key, log)
            except RequestError as err:
                return record | {"status": "error", "error": str(err), "answers": answers}
            if completion is None:
                entry |= {"raw": log.answers[key], "reused": True}
            else:
                entry |= {
                    "raw": completion.text,
                    "latency_s": round(completion.latency_s, 3),
                    "attempts": completion.attempts,
                    "meta": completion.meta,
                }
            result = job.parse(query, entry["raw"])
            entry |= {"parsed": result.value, "how": result.how, "p_inconsistent": log.p_inconsistent.get(key)}
            answers.append(entry)
            parsed.append(result)
        line = job.prediction_line(parsed, [a["p_inconsistent"] for a in answers])
        return record | {"status": "ok" if line is not None else "unparseable", "prediction": line, "answers": answers}

    def run(
        self, dataset_folder, variant: str, tasks, out_path, *, split: str = "test", limit: int | None = None
    ) -> dict:
        """Judge ``tasks`` of one variant, appending to ``out_path`` and its raw log; a rerun resumes.

        Instances already finished in the file are skipped, failed requests are retried, and
        answers in the raw log are reused for identical prompts (the module docstring says how).

        Arguments
        ---------
        dataset_folder, variant, tasks, out_path, split, limit
            As ``judges.judge.Judge.run`` takes them; ``out_path`` is appended to, and its raw log
            is ``<out_path>.raw.jsonl``. A file written by another judge, setting, prompt version,
            variant or split is refused (``ValueError``).

        Returns
        -------
        dict
            The summary: the run's identity (``judge``, ``setting``, ``prompt_version``,
            ``variant``, ``split``), ``backend``, ``out``, ``raw``, per task in ``tasks`` what this
            run skipped, wrote, found unparseable or failed, ``counts`` (lines per task),
            ``parse_failure_rate``, ``retries``, ``latency_s_mean`` and ``seconds``.

        Example
        -------
        Skipped, as it needs a model server and a built dataset folder:

        >>> judge = make_lalm_judge("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B")  # doctest: +SKIP
        >>> judge.run("speakersleuth", "main", "detection", "preds.jsonl")["counts"]  # doctest: +SKIP
        {'detection': 180}
        """
        tasks = parse_tasks(tasks)
        for task in tasks:
            check_setting(self.setting, task)
        identity = {
            "judge": self.name,
            "setting": self.setting,
            "prompt_version": PROMPT_VERSION,
            "variant": variant,
            "split": split,
        }
        start = time.perf_counter()
        retries0 = self.backend.retries
        log = RunLog(out_path, identity)
        this_run: dict[str, Counter] = {t: Counter() for t in tasks}
        selected: dict[str, list[str]] = {}
        latencies: list[float] = []
        try:
            for task in tasks:
                config = ssd.config_name(task, variant)
                ids = ssd.read_rows(dataset_folder, config, split, columns=["id"]).column("id").to_pylist()
                ids = ids[:limit] if limit is not None else ids
                selected[task] = ids
                pending = [i for i in ids if not log.finished(task, i)]
                this_run[task]["skipped"] = len(ids) - len(pending)
                bar = tqdm(
                    total=len(pending), desc=f"{task} · {self.name} · {self.setting}", disable=not self.progress
                )
                for record in self._execute(dataset_folder, config, split, task, pending, log):
                    log.append(record)
                    this_run[task][record["status"]] += 1
                    this_run[task]["queries"] += sum(1 for a in record["answers"] if not a.get("reused"))
                    latencies += [a["latency_s"] for a in record["answers"] if "latency_s" in a]
                    bar.update()
                bar.close()
        finally:
            log.close()
        return self._summary(
            log, tasks, selected, this_run, latencies, time.perf_counter() - start, self.backend.retries - retries0
        )

    def _execute(self, folder, config: str, split: str, task: str, pending: list[str], log: RunLog) -> Iterator[dict]:
        """Records of ``pending`` ids as they finish; rows are read ``read_chunk`` at a time."""
        columns = DISCRIMINATION_COLUMNS if task == "discrimination" else TURN_COLUMNS
        workers = self.backend.max_concurrency
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lalm") as pool:
            running: set[Future] = set()
            try:
                for lo in range(0, len(pending), self.read_chunk):
                    chunk = pending[lo : lo + self.read_chunk]
                    rows = {
                        r["id"]: r
                        for r in ssd.read_rows(folder, config, split, columns=columns, ids=chunk).to_pylist()
                    }
                    for job in self.jobs(task, [rows[i] for i in chunk]):
                        running.add(pool.submit(self.answer, job, log))
                        while len(running) >= 2 * workers:
                            done, running = wait(running, return_when=FIRST_COMPLETED)
                            yield from (f.result() for f in done)
                while running:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    yield from (f.result() for f in done)
            except BaseException:
                for future in running:
                    future.cancel()
                raise

    def _summary(self, log: RunLog, tasks, selected, this_run, latencies, seconds, retries) -> dict:
        per_task = {}
        failed_total = finished_total = 0
        for task in tasks:
            records = [log.last[(task, i)] for i in selected[task] if (task, i) in log.last]
            final = Counter(r["status"] for r in records)
            finished = final["ok"] + final["unparseable"]
            failed_total += final["unparseable"]
            finished_total += finished
            run = this_run[task]
            per_task[task] = {
                "instances": len(selected[task]),
                "skipped": run["skipped"],
                "written": run["ok"],
                "unparseable": run["unparseable"],
                "errors": run["error"],
                "queries": run["queries"],
                "predictions": final["ok"],
                "parse_failure_rate": round(final["unparseable"] / finished, 4) if finished else None,
            }
            if task == "discrimination" and self.ranking:  # lines written without a ranking (all runs)
                per_task[task]["ranking_unparseable"] = sum(
                    1 for r in records if r["status"] == "ok" and "ranking" not in r["prediction"]
                )
        return {
            **log.identity,
            "backend": self.backend.describe(),
            "out": str(log.out),
            "raw": str(log.raw),
            "tasks": per_task,
            "counts": {t: per_task[t]["predictions"] for t in tasks},
            "parse_failure_rate": round(failed_total / finished_total, 4) if finished_total else None,
            "retries": retries,
            "latency_s_mean": round(sum(latencies) / len(latencies), 3) if latencies else None,
            "seconds": round(seconds, 3),
        }


def make_lalm_judge(
    name: str, setting: str = "main", *, ranking: bool = True, progress: bool = True, **backend_opts
) -> LALMJudge:
    """Build an LALM judge from its name: its backend (``make_backend``) asked with the prompts of
    ``setting``.

    Making the judge sends no request (a local ``transformers`` model is loaded, though); an API
    key missing from the environment raises ``FatalBackendError`` here.

    Arguments
    ---------
    name : str
        The judge's name (``judges.names``): ``openai:<model>`` (the OpenAI API, key
        ``OPENAI_API_KEY``), ``vllm:<base URL>:<model>`` (any OpenAI-compatible server),
        ``gemini:<model>`` (key ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``) or
        ``transformers:<folder>`` (a local checkpoint). An embedding judge's name raises
        ``ValueError``.
    setting : str
        The prompt setting: ``main`` (default), ``context``, ``no_reference`` or ``per_turn``.
    ranking : bool
        Whether discrimination also asks for the ranking of the candidates (default True).
    progress : bool
        Whether to show progress bars (default True).
    **backend_opts
        Options of the backend (``make_backend`` lists them), e.g. ``concurrency=4``,
        ``max_tokens=512``.

    Returns
    -------
    LALMJudge
        The judge; ``run`` judges a dataset folder.

    Example
    -------
    >>> judge = make_lalm_judge("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B", progress=False)
    >>> judge.name, judge.setting, judge.backend.max_concurrency
    ('vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B', 'main', 8)
    """
    check_setting(setting)
    return LALMJudge(make_backend(name, **backend_opts), setting, ranking=ranking, progress=progress)
