"""Benchmark of the leaderboard Space: submit -> visible latency, leaderboard load, padded duplicates.

What padded duplicate uploads cost is measured in the store and in Gradio's upload cache.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_space.py [--dataset FOLDER [--gold FOLDER]]
        [--parts latency,load,duplicates] [--files judge|plain] [--judge pairwise-resemblyzer]

Each part serves the real app over a fresh SQLite store, with the rate limit raised out of the way;
other settings come from the ``SPEAKERSLEUTH_*`` environment as in the Space. Offline: nothing
leaves the machine.

- ``latency``: the Space runs in its own process (``python -m speakersleuth.space.app --dataset ... --data-dir ...
  --port P`` on 127.0.0.1, ``SPEAKERSLEUTH_RATE_LIMIT``/``_BLIND_RATE_LIMIT`` 100000 and the upload
  budget raised; its log goes to ``--work``/space-latency.log), so the clients do not share its
  GIL. A distinct valid predictions file is submitted (``/submit``), then ``/leaderboard`` is
  polled until the model's name is in it; p50/p95/max over ``--alone``
  sequential submissions (one gradio_client in this process), and over ``--concurrent`` submitters
  at once, each with its own model name and ``X-Forwarded-For`` address (so each is its own
  submitter and leaderboard row, as separate machines would be), all connected first and then
  released together by one event. ``--clients http`` (the default): the submitters speak Gradio's
  documented HTTP API (``/gradio_api/upload``, ``/gradio_api/call/submit`` and its event stream, then
  ``/gradio_api/call/leaderboard``), all in one client process, a few ms of CPU each, so the figure
  is the server's; ``--clients gradio``: one spawned process with a gradio_client ``Client`` each,
  ~150 ms of CPU per submitter, which on a 2-core machine outweighs the server and makes the figure
  mostly the clients'. The clients share the machine's cores with the server, so they are niced by
  ``--client-nice`` (10) to let it be scheduled first (``--client-nice idle``: SCHED_IDLE, so they
  run only on CPU the server leaves);
  the CPU the server process and the clients used over that phase, and the ``/leaderboard`` calls
  made, are printed. ``--profile-server FILE``: py-spy (``--py-spy``, e.g. ``pip install --target
  /tmp/pyspy py-spy``) records the server process (the GIL-holding thread, collapsed stacks) over
  the concurrent phase into FILE, and its time is printed by kind and function.

  The files are as ``python -m speakersleuth.judges run`` writes them (``--files judge``, the
  default): lines made by the embedding judges' writer (``judges.embedding.predictions``, pairwise
  at τ 0.4, serialised as ``write_jsonl``), every detection line with a float ``score``, so each
  submission is also scored for AUROC, EER and their bootstrap intervals. The per-turn
  similarities behind them are seeded draws (the altered turn a little lower), or, with
  ``--judge <method>-<encoder>`` (e.g. ``pairwise-resemblyzer``; about 1.5 min on 60 dialogues),
  the real judge's on the dataset; each file adds its own seeded jitter, so none is a duplicate.
  ``--files plain``: the score-less files of ``tests.support.space_support.predictions``.
- ``load``: the app is served in this process (``space.app.build_app``, launched at a free port);
  ``--rows`` distinct scored submissions are stored in-process (the path ``space.seed`` uses),
  then (a) the ``/leaderboard`` round trip (the first one draws the scatter) and (b) Debian's
  chromium (Playwright): navigation until the main table shows rows, in fresh browser contexts
  (first load) and on reloads of the same page.
- ``duplicates``: one valid file, then ``--duplicates`` files with the same predictions re-encoded
  (CRLF, BOM, blank lines, shuffled lines, compact or spaced JSON, reordered keys, indentation) and
  padded with whitespace up to ``--pad-mb``, sent by one client to the app served in this process;
  reports rows stored, the SQLite file and WAL on disk, uploads left in Gradio's upload folder, and
  the bytes uploaded.

Without ``--dataset`` a synthetic folder (``tests/support/synthetic.py``, main variant, ``--dialogues``
dialogues: 3 detection, 3 localization and 1 discrimination instance each) is built once under
``--work`` and reused. Gradio's temporary folder is set to ``--work``/gradio, so the upload cache
counted is this run's alone; the stores, files and that folder are removed at the end. The machine's
load average is printed before and after each part: other work on it inflates every figure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

PARTS = ("latency", "load", "duplicates")
STATUS_CLASSES = {"ss-ok": "accepted", "ss-info": "duplicate", "ss-bad": "refused"}
#: The submit form as every benchmark submitter fills it, but for the file and the model name.
SUBMIT_FORM = {"variant_value": "main", "org": "bench", "mtype": "other", "url": "", "date": ""}
REPO = Path(__file__).resolve().parents[1]
SERVER_ENV = {"RATE_LIMIT": "100000", "BLIND_RATE_LIMIT": "100000", "UPLOAD_BUDGET": str(10**12)}


# ------------------------------------------------------------------------------------- figures


def summary(label: str, seconds: list[float], failures: int = 0) -> str:
    """One line: count, p50, p95, max (milliseconds) and failures."""
    if not seconds:
        return f"{label}: n=0 failures={failures}"
    p95 = statistics.quantiles(seconds, n=100, method="inclusive")[94] if len(seconds) > 1 else seconds[0]
    return (
        f"{label}: n={len(seconds)} p50={1000 * statistics.median(seconds):.0f} ms p95={1000 * p95:.0f} ms "
        f"max={1000 * max(seconds):.0f} ms failures={failures}"
    )


def at_least(minimum: int):
    """An argparse type: an integer of at least ``minimum``."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def megabytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def print_load(when: str) -> None:
    print(
        "load average {}: {:.2f} {:.2f} {:.2f} (1, 5, 15 min) on {} CPUs".format(
            when, *os.getloadavg(), os.cpu_count()
        ),
        flush=True,
    )


def forwarded_for(k: int) -> str:
    """The k-th client's own address (sent as X-Forwarded-For, which uvicorn trusts from 127.0.0.1)."""
    return f"10.77.{k // 250}.{k % 250 + 1}"


# ------------------------------------------------------------------------------------- the app


class Bench:
    """The dataset, its gold, and how to serve the app and talk to it."""

    def __init__(self, dataset: Path, work: Path, timeout_s: float, gold: Path | None = None):
        from speakersleuth.metrics.submission import load_gold

        self.dataset = dataset
        self.work = work
        self.timeout_s = timeout_s
        self.gold_dir = gold  # a blind dataset's private gold: the app serves its round
        self.gold = load_gold(gold or dataset, "main")
        self.files = work / "files"
        self.files.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def serve(self, part: str):
        """The app over a fresh SQLite store in ``work/<part>``, its rate limit and upload budget
        (one client sends everything here) out of the way; yields ``(app, url)``."""
        from speakersleuth.space.config import ENV_PREFIX, SpaceConfig
        from tests.support.space_support import free_port, running_app

        data_dir = self.work / part
        shutil.rmtree(data_dir, ignore_errors=True)
        settings = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)}
        blind = {"gold": str(self.gold_dir)} if self.gold_dir else {}
        config = replace(
            SpaceConfig.from_env(settings, dataset=str(self.dataset), data_dir=data_dir, **blind),
            host="127.0.0.1",
            port=free_port(),
            rate_limit=1_000_000,
            space_id=None,
            upload_budget_bytes=10**12,
        )
        started = time.perf_counter()
        try:
            with running_app(config) as (app, url):
                print(f"[{part}] app built and serving in {time.perf_counter() - started:.1f} s at {url}")
                yield app, url
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)

    @contextmanager
    def serve_process(self, part: str):
        """``python -m speakersleuth.space.app`` in its own process over a fresh store in ``work/<part>`` (rate
        limits and upload budget raised, see SERVER_ENV), its output in ``work/space-<part>.log``;
        yields ``(process, url)`` once the page is served, and stops the process afterwards."""
        from speakersleuth.space.config import ENV_PREFIX
        from tests.support.space_support import free_port, wait_served

        data_dir = self.work / part
        shutil.rmtree(data_dir, ignore_errors=True)
        port = free_port()
        env = dict(os.environ, **{ENV_PREFIX + k: v for k, v in SERVER_ENV.items()})
        env.pop("SPACE_ID", None)  # identity = client address, as off Spaces
        if self.gold_dir:
            env[ENV_PREFIX + "GOLD"] = str(self.gold_dir)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
        command = [
            sys.executable,
            "-m",
            "speakersleuth.space.app",
            "--dataset",
            str(self.dataset),
            "--data-dir",
            str(data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        log_path = self.work / f"space-{part}.log"
        url = f"http://127.0.0.1:{port}/"
        started = time.perf_counter()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_served(url, process, log_path, max(self.timeout_s, 300))
            print(
                f"[{part}] server process {process.pid} built and serving in {time.perf_counter() - started:.1f} s "
                f"at {url} (log {log_path})",
                flush=True,
            )
            yield process, url
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # uvicorn/gradio shut down on ^C
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            shutil.rmtree(data_dir, ignore_errors=True)

    def client(self, url: str, address: str | None = None):
        return make_client(url, self.timeout_s, address)

    def write(self, name: str, data: bytes) -> Path:
        path = self.files / f"{name}.jsonl"
        path.write_bytes(data)
        return path

    @staticmethod
    def submit(client, path: Path, name: str) -> str:
        return submit(client, path, name)

    def round_trip(self, client, path: Path, name: str) -> tuple[float, float, int] | None:
        return round_trip(client, path, name, self.timeout_s)


def make_client(url: str, timeout_s: float, address: str | None = None):
    """A gradio_client ``Client`` of ``url``; ``address``: sent as X-Forwarded-For (the Space's
    identity off Spaces is the client address uvicorn reports)."""
    from gradio_client import Client

    return Client(
        url,
        verbose=False,
        httpx_kwargs={"timeout": timeout_s},
        download_files=False,
        analytics_enabled=False,
        headers={"X-Forwarded-For": address} if address else None,
    )


def submit(client, path: Path, name: str) -> str:
    """Submit ``path`` as model ``name`` on the main variant; the outcome's class (see STATUS_CLASSES)."""
    from gradio_client import handle_file

    status = client.predict(file_path=handle_file(str(path)), name=name, acc="open", **SUBMIT_FORM, api_name="/submit")
    return status_class(status[0])


def status_class(status: str) -> str:
    """The outcome's class (``STATUS_CLASSES``) of a submission's status message."""
    return next((kind for css, kind in STATUS_CLASSES.items() if css in status), f"other: {status[:200]}")


def visible(client, name: str) -> bool:
    """Whether ``/leaderboard`` (every table, default columns) shows ``name``."""
    return name in json.dumps(client.predict(api_name="/leaderboard"))


def round_trip(client, path: Path, name: str, timeout_s: float) -> tuple[float, float, int] | None:
    """Seconds from submitting until the submission is acknowledged, and until the
    leaderboard shows ``name``, and the ``/leaderboard`` calls made; ``None`` if it is not
    accepted or never shows."""
    start = time.perf_counter()
    outcome = submit(client, path, name)
    if outcome != "accepted":
        tqdm.write(f"{name}: {outcome}")
        return None
    acknowledged = time.perf_counter() - start
    polls = 1
    while not visible(client, name):
        polls += 1
        if time.perf_counter() - start > timeout_s:
            tqdm.write(f"{name}: accepted but not on the leaderboard after {timeout_s:g} s")
            return None
        time.sleep(0.05)
    return acknowledged, time.perf_counter() - start, polls


def crowd_member(
    url: str, name: str, path: str, address: str, timeout_s: float, niceness: int | str, ready, go, results
) -> None:
    """One concurrent submitter, in its own process: connect, say so on ``ready``, wait for ``go``,
    then time ``round_trip`` and put ``(name, timing or None, error or None, CPU seconds of this
    process during it)`` on ``results``. ``niceness``: added to this process's (so that on one
    machine the server is scheduled before the clients, as if they were elsewhere), or ``"idle"``:
    Linux's SCHED_IDLE, so the process runs only on CPU time nothing else wants."""
    if niceness == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    elif niceness:
        os.nice(niceness)
    try:
        client = make_client(url, timeout_s, address)
    except Exception as err:  # noqa: BLE001 - reported by the parent
        ready.put((name, f"could not connect: {err!r}"))
        return
    ready.put((name, None))
    if not go.wait(timeout_s * 5):
        results.put((name, None, "never released", 0.0))
        return
    cpu = time.process_time()
    try:
        results.put((name, round_trip(client, Path(path), name, timeout_s), None, time.process_time() - cpu))
    except Exception as err:  # noqa: BLE001
        results.put((name, None, repr(err), time.process_time() - cpu))


class HttpApi:
    """Gradio's documented HTTP API, as ``curl`` users call it (upload, ``/gradio_api/call/<api>``,
    then the event's SSE stream), over one ``httpx.AsyncClient`` per submitter; no gradio_client, so
    a client costs the machine a few milliseconds instead of gradio_client's ~150 ms."""

    def __init__(self, url: str, info: dict):
        self.url = url
        self.defaults = {
            api: [p.get("parameter_default") for p in endpoint["parameters"]]
            for api, endpoint in info["named_endpoints"].items()
        }
        self.names = {
            api: [p["parameter_name"] for p in endpoint["parameters"]]
            for api, endpoint in info["named_endpoints"].items()
        }

    def data(self, api: str, **values) -> list:
        """The inputs of ``api`` in order: the endpoint's defaults, with ``values`` by parameter name."""
        unknown = set(values) - set(self.names[api])
        if unknown:
            raise ValueError(f"{api} has no parameter(s) {sorted(unknown)}; it takes {self.names[api]}")
        return [values.get(n, d) for n, d in zip(self.names[api], self.defaults[api])]

    async def call(self, client, api: str, data: list) -> list:
        """``api``'s outputs for ``data``: POST to start the event, then read its stream to ``complete``."""
        started = await client.post(f"{self.url}gradio_api/call{api}", json={"data": data})
        started.raise_for_status()
        event = None
        async with client.stream("GET", f"{self.url}gradio_api/call{api}/{started.json()['event_id']}") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    event = line.partition(":")[2].strip()
                elif line.startswith("data:") and event in ("complete", "error"):
                    if event == "error":
                        raise RuntimeError(f"{api}: {line[5:].strip()[:200]}")
                    return json.loads(line[5:])
        raise RuntimeError(f"{api}: the stream ended without a result")

    async def submit(self, client, path: Path, name: str) -> str:
        uploaded = await client.post(
            f"{self.url}gradio_api/upload", files={"files": (path.name, path.read_bytes(), "application/octet-stream")}
        )
        uploaded.raise_for_status()
        file = {"path": uploaded.json()[0], "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}
        outputs = await self.call(client, "/submit", self.data("/submit", file_path=file, name=name, **SUBMIT_FORM))
        return status_class(outputs[0])

    async def round_trip(self, client, path: Path, name: str, timeout_s: float) -> tuple[float, float, int] | None:
        """As ``round_trip``, over HTTP; a refusal or a timeout is raised, naming which."""
        import asyncio

        start = time.perf_counter()
        outcome = await self.submit(client, path, name)
        if outcome != "accepted":
            raise RuntimeError(f"not accepted: {outcome}")
        acknowledged = time.perf_counter() - start
        polls = 1
        while name not in json.dumps(await self.call(client, "/leaderboard", self.data("/leaderboard"))):
            polls += 1
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError(f"accepted but not on the leaderboard after {timeout_s:g} s")
            await asyncio.sleep(0.05)
        return acknowledged, time.perf_counter() - start, polls


def http_crowd(
    url: str, jobs: list[tuple[str, str, str]], timeout_s: float, niceness: int | str, ready, go, results
) -> None:
    """All ``jobs`` (name, file, address) as concurrent submitters in this one process (asyncio, one
    HTTP client and X-Forwarded-For address each): connect, say so on ``ready``, wait for ``go``,
    then put ``(name, timing or None, error or None, None)`` for each, and this process's CPU seconds
    over the round trips as ``(None, None, None, cpu)``, on ``results``."""
    import asyncio

    import httpx

    if niceness == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    elif niceness:
        os.nice(niceness)

    async def run() -> None:
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        clients = [
            httpx.AsyncClient(timeout=timeout_s, limits=limits, headers={"X-Forwarded-For": address})
            for _, _, address in jobs
        ]
        try:
            try:
                api = HttpApi(url, (await clients[0].get(f"{url}gradio_api/info")).raise_for_status().json())
                await asyncio.gather(*(c.get(f"{url}gradio_api/info") for c in clients))  # connections open
            except Exception as err:  # noqa: BLE001 - reported by the parent
                ready.put((None, f"could not connect: {err!r}"))
                return
            ready.put((None, None))
            if not await asyncio.to_thread(go.wait, timeout_s * 5):
                results.put((None, None, "never released", 0.0))
                return
            cpu = time.process_time()

            async def one(client, name: str, path: str) -> None:
                try:
                    results.put((name, await api.round_trip(client, Path(path), name, timeout_s), None, None))
                except Exception as err:  # noqa: BLE001 - reported by the parent
                    results.put((name, None, repr(err), None))

            await asyncio.gather(*(one(c, name, path) for c, (name, path, _) in zip(clients, jobs)))
            results.put((None, None, None, time.process_time() - cpu))
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    try:
        asyncio.run(run())
    except Exception as err:  # noqa: BLE001 - after the release: the parent reads ``results``
        results.put((None, None, f"http clients: {err!r}", 0.0))


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def print_round_trips(label: str, timings: list[tuple[float, float, int] | None], suffix: str = "") -> None:
    done = [t for t in timings if t is not None]
    print(
        summary(f"submit -> visible, {label}", [visible for _, visible, _ in done], len(timings) - len(done)) + suffix
    )
    print(summary(f"  of which submit -> acknowledged, {label}", [ack for ack, _, _ in done]))
    if done:
        polls = [n for _, _, n in done]
        print(
            f"  /leaderboard calls until visible, {label}: median {statistics.median(polls):g}, max {max(polls)}, "
            f"{sum(polls)} in all"
        )


# ------------------------------------------------------------------------------------- parts


def judge_scores(gold, judge: str | None, dataset: Path):
    """Per-turn and per-candidate scores of the gold's instances (``judges.embedding.VariantScores``):
    the real ``judge``'s on ``dataset``, or seeded similarities (the altered turn 0.2 lower)."""
    from speakersleuth.judges.embedding import VariantScores, make_embedding_judge

    if judge:
        import torch

        torch.set_num_threads(1)  # faster for the small encoders on a busy machine
        started = time.perf_counter()
        scores = make_embedding_judge(judge, progress=False).score(dataset, "main", list(gold.tasks))
        print(f"[latency] {judge} judged {dataset} in {time.perf_counter() - started:.1f} s")
        return scores
    rng = np.random.default_rng(0)
    turn = {}
    for task in ("detection", "localization"):
        items = []
        for rid, row in gold.tasks[task].items():
            s = rng.normal(0.6, 0.12, row["num_target_turns"])
            s[[k - 1 for k in gold.tasks["localization"][rid]["inconsistent_turns"]]] -= 0.2
            items.append((rid, s))
        turn[task] = items
    disc = [
        (rid, list(row["candidate_labels"]), rng.normal(0.5, 0.1, len(row["candidate_labels"])))
        for rid, row in gold.tasks["discrimination"].items()
    ]
    return VariantScores("pairwise", turn, disc)


def judge_file(scores, seed: int) -> bytes:
    """A predictions file exactly as ``python -m speakersleuth.judges run`` writes it (``predictions`` at the
    method's default τ, then ``write_jsonl``'s serialisation), from ``scores`` with seeded jitter."""
    from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS, VariantScores, predictions

    rng = np.random.default_rng(seed)
    jitter = {
        task: [(rid, s + rng.normal(0, 0.02, s.shape)) for rid, s in items] for task, items in scores.turn.items()
    }
    disc = [(rid, labels, s + rng.normal(0, 0.02, s.shape)) for rid, labels, s in scores.discrimination]
    lines = predictions(VariantScores(scores.method, jitter, disc), DEFAULT_THRESHOLDS[scores.method])
    return "".join(
        json.dumps(line, ensure_ascii=False) + "\n" for line in lines
    ).encode()  # judges.embedding.write_jsonl


def measure_latency(
    bench: Bench,
    alone: int,
    concurrent: int,
    files: str = "judge",
    judge: str | None = None,
    profile_server: Path | None = None,
    py_spy: str | None = None,
    client_nice: int = 10,
    clients: str = "http",
) -> None:
    from tests.support.space_support import predictions

    alone_names = [f"alone-{i:04d}" for i in range(alone)]
    names = [f"crowd-{i:04d}" for i in range(concurrent)]
    if files == "judge":
        scores = judge_scores(bench.gold, judge, bench.dataset)
        make = partial(judge_file, scores)
    else:
        make = partial(predictions, bench.gold)
    paths = {
        name: bench.write(name, make(k))  # distinct files: none is a duplicate
        for k, name in enumerate(alone_names + names, start=1)
    }
    sample = paths[(alone_names + names)[0]].read_bytes().splitlines() if paths else []
    scored = sum(b'"score"' in line for line in sample)
    print(f"[latency] {files} files: {len(sample)} lines each, {scored} with a detection score")
    with bench.serve_process("latency") as (server, url):
        client = bench.client(url, "10.76.0.1")
        timings = []
        for k, name in enumerate(tqdm(alone_names, desc="alone", unit="submission")):
            if bench.gold_dir:  # a blind round releases an identity's later files only when they beat its best
                client = bench.client(url, f"10.77.{k // 250}.{k % 250 + 1}")
            timings.append(bench.round_trip(client, paths[name], name))
        print_round_trips("one submitter at a time", timings)
        if not names:
            return
        profile = (server.pid, profile_server, py_spy) if profile_server else None
        timings, wall = crowd(bench, url, names, paths, server.pid, client_nice, profile, clients)
        how = "raw HTTP, one client process" if clients == "http" else "gradio_client, one process each"
        print_round_trips(f"{len(names)} concurrent submitters ({how})", timings, f" (all done in {wall:.1f} s)")
        if profile_server:
            print_profile(profile_server)


def crowd(
    bench: Bench,
    url: str,
    names: list[str],
    paths: dict[str, Path],
    server_pid: int,
    client_nice: int = 0,
    profile: tuple[int, Path, str] | None = None,
    clients: str = "http",
) -> tuple[list, float]:
    """``names`` submitters (each its own address and model name), connected first and then
    released together; their round trips (``None`` where one failed) and the wall time from the
    release until the last one is done. ``clients``: ``gradio``, one spawned process with a
    gradio_client ``Client`` each; ``http``, one spawned process holding them all (``http_crowd``).
    ``profile``: ``(server pid, output file, py-spy executable)``, py-spy recording the server from
    the release until the last result."""
    context = multiprocessing.get_context("spawn")
    ready, results, go = context.Queue(), context.Queue(), context.Event()
    if clients == "http":
        jobs = [(name, str(paths[name]), forwarded_for(k)) for k, name in enumerate(names)]
        processes = [
            context.Process(
                target=http_crowd, daemon=True, args=(url, jobs, bench.timeout_s, client_nice, ready, go, results)
            )
        ]
    else:
        processes = [
            context.Process(
                target=crowd_member,
                daemon=True,
                args=(url, name, str(paths[name]), forwarded_for(k), bench.timeout_s, client_nice, ready, go, results),
            )
            for k, name in enumerate(names)
        ]
    connected, profiler = 0, None
    try:
        for process in tqdm(processes, desc="client processes", unit="process"):
            process.start()
        for _ in tqdm(range(len(processes)), desc="client processes connected", unit="process"):
            name, problem = ready.get(timeout=max(bench.timeout_s, 300))
            if problem:
                tqdm.write(f"{name or 'http clients'}: {problem}")
            else:
                connected += 1 if clients == "gradio" else len(names)
        if profile:
            profiler = start_profile(*profile)
        server_cpu = cpu_seconds(server_pid)
        wall = time.perf_counter()
        go.set()
        timings, client_cpu, done_at = {}, [], None
        expected = connected + (clients == "http" and connected > 0)  # the http process's CPU comes last
        with tqdm(total=connected, desc=f"{len(names)} at once", unit="submission") as progress:
            for _ in range(expected):
                try:
                    name, timing, error, cpu = results.get(timeout=bench.timeout_s * 2)
                except queue.Empty:
                    tqdm.write(f"no result for {bench.timeout_s * 2:g} s; {connected - len(timings)} outstanding")
                    break
                if error:
                    tqdm.write(f"{name or 'http clients'}: {error}")
                    if name is None:  # the http client process gave up: nothing more will come
                        break
                if cpu is not None:
                    client_cpu.append(cpu)
                if name is not None:
                    timings[name] = timing
                    progress.update()
                if len(timings) == connected and done_at is None:
                    done_at = time.perf_counter()
        wall = (done_at or time.perf_counter()) - wall
        end_cpu = cpu_seconds(server_pid)
        if server_cpu is not None and end_cpu is not None and client_cpu:
            print(
                f"CPU from the release until the last result ({wall:.1f} s wall, {os.cpu_count()} CPUs): server process "
                f"{end_cpu - server_cpu:.1f} s ({(end_cpu - server_cpu) / wall:.2f} cores); the {len(client_cpu)} client "
                f"process(es) {sum(client_cpu):.1f} s in all ({1000 * sum(client_cpu) / max(connected, 1):.0f} ms per submitter)"
            )
    finally:
        if profiler is not None:
            stop_profile(profiler)
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
                process.join()
    return [timings.get(name) for name in names], wall


PROFILE_KINDS = (  # a sample's kind: the first whose marker is in its stack
    ("leaderboard refresh (space.leaderboard)", ("LeaderboardViews.refresh",)),
    ("submit (space.submit)", ("Submitter.submit",)),
    ("other event handlers (worker threads)", ("WorkerThread.run",)),
    ("HTTP requests (uvicorn/starlette/gradio routes)", ("RequestResponseCycle", "h11_impl", "httptools_impl")),
    ("event loop: gradio queue, SSE, polling", ("Server.run",)),
)


def start_profile(pid: int, out: Path, py_spy: str):
    """py-spy recording process ``pid`` into ``out`` (collapsed stacks, per thread): only the thread
    holding the GIL is sampled, so the shares are of the Python time the server spends."""
    command = [
        py_spy,
        "record",
        "--pid",
        str(pid),
        "--output",
        str(out),
        "--format",
        "raw",
        "--rate",
        "200",
        "--threads",
        "--gil",
        "--nonblocking",
        "--full-filenames",
    ]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # attached before the release
    if recorder.poll() is not None:
        raise SystemExit(f"py-spy did not start: {recorder.stderr.read().decode(errors='replace')[-2000:]}")
    return recorder


def stop_profile(recorder) -> None:
    recorder.send_signal(signal.SIGINT)  # py-spy writes its file on ^C
    try:
        recorder.wait(60)
    except subprocess.TimeoutExpired:
        recorder.kill()


def print_profile(path: Path, top: int = 25) -> None:
    """From py-spy's collapsed stacks: samples per thread, and the functions holding the most
    samples (inclusive, over all threads), so where the server's time goes."""
    if not Path(path).is_file():
        print(f"[profile] {path} was not written")
        return
    threads, inclusive, own, kinds, total = Counter(), Counter(), Counter(), Counter(), 0
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        threads[frames[0] if frames else "?"] += n
        for frame in set(frames[1:]):
            inclusive[frame] += n
        if len(frames) > 1:
            own[frames[-1]] += n
        kinds[
            next((kind for kind, markers in PROFILE_KINDS if any(m in f for f in frames for m in markers)), "other")
        ] += n
    print(
        f"[profile] {total} samples of the server process in {path}; by thread: "
        + ", ".join(f"{name} {n}" for name, n in threads.most_common(8))
    )
    print(
        "[profile] by kind: " + ", ".join(f"{kind} {100 * n / max(total, 1):.1f} %" for kind, n in kinds.most_common())
    )
    print(f"[profile] functions by inclusive share of samples (top {top}):")
    for frame, n in inclusive.most_common(top):
        print(f"  {100 * n / max(total, 1):5.1f} %  {frame[:160]}")
    print(f"[profile] functions by own share of samples (top {top}):")
    for frame, n in own.most_common(top):
        print(f"  {100 * n / max(total, 1):5.1f} %  {frame[:160]}")


def measure_load(bench: Bench, rows: int, api_calls: int, first_loads: int, reloads: int) -> None:
    from speakersleuth.space.submission_form import ACCESS, MODEL_TYPES
    from tests.support.space_support import predictions

    prefix = "lb"
    with bench.serve("load") as (app, url):
        kinds = Counter()
        rng = random.Random(0)
        for i in tqdm(range(rows), desc="filling the store", unit="row"):
            form = {
                "model_name": f"{prefix}-{i:04d}",
                "organisation": f"org {i % 37}",
                "model_type": rng.choice(MODEL_TYPES),
                "access": rng.choice(ACCESS),
                "link": f"https://example.org/model/{i}",
                "model_date": f"20{20 + i % 6}-0{1 + i % 9}",
            }
            result = app.submitter.submit(
                predictions(bench.gold, 100_000 + i), "main", form, as_user=f"bench:{i % 50}", rate_limited=False
            )
            kinds[result.status] += 1
        stored = len(app.store.results("main"))
        print(f"[load] stored {stored} rows on main ({dict(kinds)})")
        client = bench.client(url)
        seconds = []
        for _ in tqdm(range(api_calls), desc="/leaderboard", unit="call"):
            start = time.perf_counter()
            client.predict(api_name="/leaderboard")
            seconds.append(time.perf_counter() - start)
        print(summary(f"/leaderboard round trip with {stored} rows, first call (draws the scatter)", seconds[:1]))
        print(summary(f"/leaderboard round trip with {stored} rows, later calls", seconds[1:]))
        if not (first_loads or reloads):
            return
        from tests.support.space_support import CHROMIUM

        if not shutil.which(CHROMIUM):
            print(f"[load] browser figures skipped: {CHROMIUM} is not installed")
            return
        firsts, again = browser_loads(url, prefix, first_loads, reloads, bench.timeout_s)
        print(
            summary(
                f"browser, navigation -> main table shows rows ({stored} rows), first load (fresh context)", firsts
            )
        )
        print(summary(f"browser, reload -> main table shows rows ({stored} rows), after the first load", again))


def browser_loads(
    url: str, prefix: str, first_loads: int, reloads: int, timeout_s: float
) -> tuple[list[float], list[float]]:
    """Seconds until ``#ss-leaderboard-main`` shows a row whose text starts with ``prefix``: each of
    ``first_loads`` fresh browser contexts (empty cache), then ``reloads`` reloads of the last page."""
    from playwright.sync_api import sync_playwright

    from tests.support.space_support import ARGS as CHROMIUM_ARGS
    from tests.support.space_support import CHROMIUM

    shown = "p => (document.querySelector('#ss-leaderboard-main')?.innerText || '').includes(p)"
    firsts, again = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = None
        for _ in tqdm(range(max(1, first_loads)), desc="browser first loads", unit="load"):
            if page is not None:
                page.context.close()
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            start = time.perf_counter()
            page.goto(url)
            page.wait_for_function(shown, arg=f"{prefix}-", timeout=timeout_s * 1000)
            firsts.append(time.perf_counter() - start)
        for _ in tqdm(range(reloads), desc="browser reloads", unit="load"):
            start = time.perf_counter()
            page.reload()
            page.wait_for_function(shown, arg=f"{prefix}-", timeout=timeout_s * 1000)
            again.append(time.perf_counter() - start)
        browser.close()
    return firsts[:first_loads], again


def padded_variants(data: bytes, count: int, pad_bytes: int) -> list[bytes]:
    """``count`` re-encodings of the JSONL ``data`` (same predictions), each padded with whitespace
    to its own size between the original's and ``pad_bytes``."""
    objects = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    variants = []
    for k in range(count):
        rng = random.Random(k)
        rows = list(objects)
        if rng.random() < 0.5:
            rng.shuffle(rows)
        separators = rng.choice([(", ", ": "), (",", ":"), ("  ,  ", " :\t")])
        keys_reversed = rng.random() < 0.3
        indent = rng.choice(["", "", "  ", "\t"])
        lines = [
            indent + json.dumps(dict(reversed(r.items())) if keys_reversed else r, separators=separators) for r in rows
        ]
        newline = "\r\n" if rng.random() < 0.4 else "\n"
        separator = newline * rng.choice([1, 1, 2, 3])  # blank lines between records
        bom = b"\xef\xbb\xbf" if rng.random() < 0.3 else b""
        unpadded = len(bom) + len((separator.join(lines) + newline).encode())
        target = len(data) + (pad_bytes - len(data)) * (k + 1) // count
        padding = " " * (max(0, target - unpadded) // len(lines))  # trailing spaces on every line
        variants.append(bom + (separator.join(line + padding for line in lines) + newline).encode())
    return variants


def measure_duplicates(bench: Bench, count: int, pad_mb: float) -> None:
    from gradio.utils import get_upload_folder

    from speakersleuth.metrics.submission import parse_submission
    from tests.support.space_support import predictions

    base = predictions(bench.gold, 777)
    variants = padded_variants(base, count, int(pad_mb * 1e6))
    expected = parse_submission(base, bench.gold).predictions
    for i, data in enumerate(variants):  # each must be a true duplicate, or the figures mean nothing
        if parse_submission(data, bench.gold).predictions != expected:
            raise SystemExit(f"padded variant {i} does not hold the same predictions")
    paths = [bench.write("dup-base", base)] + [bench.write(f"dup-{i:04d}", d) for i, d in enumerate(variants)]
    with bench.serve("duplicates") as (app, url):
        client = bench.client(url)
        kinds, seconds = Counter(), []
        for path in tqdm(paths, desc="padded duplicates", unit="file"):
            start = time.perf_counter()
            kinds[bench.submit(client, path, path.stem)] += 1
            seconds.append(time.perf_counter() - start)
        rows = len(app.store.results("main"))
        store_sizes = {
            suffix: Path(f"{app.store.path}{suffix}").stat().st_size
            if Path(f"{app.store.path}{suffix}").exists()
            else 0
            for suffix in ("", "-wal")
        }
        leftovers = [p for p in Path(get_upload_folder()).rglob("dup-*.jsonl") if p.is_file()]
    uploaded = sum(p.stat().st_size for p in paths)
    print(
        f"[duplicates] 1 valid file + {count} padded re-encodings of it ({megabytes(min(map(len, variants)))} to "
        f"{megabytes(max(map(len, variants)))} each); outcomes {dict(kinds)}"
    )
    print(summary("submit round trip of a padded duplicate", seconds[1:]))
    print(f"rows stored: {rows}")
    print(
        f"store on disk: {megabytes(sum(store_sizes.values()))} (SQLite file {megabytes(store_sizes[''])}, "
        f"WAL {megabytes(store_sizes['-wal'])})"
    )
    print(
        f"upload cache leftovers: {len(leftovers)} files, {megabytes(sum(p.stat().st_size for p in leftovers))} "
        f"in {get_upload_folder()}"
    )
    print(f"bytes uploaded in total: {megabytes(uploaded)} ({len(paths)} files)")


# ------------------------------------------------------------------------------------- main


def add_choice(parser: argparse.ArgumentParser, flag: str, choices: tuple[str, ...], text: str) -> None:
    """Adds an option that takes one of ``choices``, the first the default."""
    parser.add_argument(flag, choices=choices, default=choices[0], help=text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, help="a built dataset folder (default: a synthetic one)")
    parser.add_argument(
        "--gold",
        type=Path,
        help="the private test gold of a blind --dataset (python -m speakersleuth.speakersleuth_dataset "
        "blind): the app serves its blind round, and each timed submission alone comes from its own "
        "address (an identity's later files are shown only when they beat its best)",
    )
    parser.add_argument("--dialogues", type=at_least(1), default=60, help="dialogues of the synthetic folder")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "speakersleuth-bench-space",
        help="folder for the synthetic dataset (kept) and the stores, files and Gradio cache of a run (removed)",
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--alone", type=at_least(0), default=20, help="sequential submissions timed")
    parser.add_argument("--concurrent", type=at_least(0), default=50, help="submitters at once (0: skip)")
    add_choice(
        parser,
        "--files",
        ("judge", "plain"),
        "latency files: as `python -m speakersleuth.judges run` writes them (detection scores) or score-less",
    )
    parser.add_argument(
        "--judge", help="latency files from this embedding judge's real scores (e.g. pairwise-resemblyzer)"
    )
    parser.add_argument("--rows", type=at_least(1), default=1000, help="leaderboard rows for the load figures")
    parser.add_argument("--api-calls", type=at_least(1), default=10, help="/leaderboard round trips timed")
    parser.add_argument(
        "--first-loads",
        type=at_least(0),
        default=3,
        help="browser loads in fresh contexts (0 with --reloads 0: no browser)",
    )
    parser.add_argument("--reloads", type=at_least(0), default=5, help="browser reloads after the first load")
    parser.add_argument("--duplicates", type=at_least(1), default=100, help="padded duplicates submitted")
    parser.add_argument("--pad-mb", type=float, default=4.0, help="size of the largest padded duplicate (MB)")
    parser.add_argument(
        "--client-nice",
        type=lambda v: v if v == "idle" else at_least(0)(v),
        default=10,
        help="latency: niceness added to the concurrent client processes, so the server is scheduled first on a shared machine (0: equal; idle: SCHED_IDLE)",
    )
    add_choice(
        parser,
        "--clients",
        ("http", "gradio"),
        "latency, concurrent phase: raw HTTP submitters in one process, or one gradio_client process each",
    )
    parser.add_argument(
        "--profile-server",
        type=Path,
        help="latency: record the server process with py-spy during the concurrent phase into this file (collapsed stacks) and print where its time goes",
    )
    parser.add_argument(
        "--py-spy", default=shutil.which("py-spy") or "py-spy", help="the py-spy executable for --profile-server"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one submission or page load may take")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    if not 0 < args.pad_mb < 20:
        parser.error(f"--pad-mb must be above 0 and under the Space's 20 MB upload limit, got {args.pad_mb:g}")

    args.work.mkdir(parents=True, exist_ok=True)
    os.environ["GRADIO_TEMP_DIR"] = str(args.work / "gradio")  # before gradio is imported: this run's cache only
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    shutil.rmtree(args.work / "gradio", ignore_errors=True)
    shutil.rmtree(args.work / "files", ignore_errors=True)

    from tests.support.synthetic import build_synthetic_dataset

    dataset = args.dataset
    if dataset is None:
        dataset = args.work / f"dataset-{args.dialogues}"
        if not (dataset / "README.md").is_file():
            print(f"building a synthetic folder of {args.dialogues} dialogues (main) in {dataset} ...")
            shutil.rmtree(dataset, ignore_errors=True)
            build_synthetic_dataset(dataset, dialogues=args.dialogues, variants=("main",))
    bench = Bench(dataset, args.work, args.timeout, args.gold)
    print(f"dataset {dataset}: main gold { ({task: len(rows) for task, rows in bench.gold.tasks.items()}) }")

    started = time.perf_counter()
    print_load("at start")
    runs = {
        "latency": lambda: measure_latency(
            bench,
            args.alone,
            args.concurrent,
            args.files,
            args.judge,
            args.profile_server,
            args.py_spy,
            args.client_nice,
            args.clients,
        ),
        "load": lambda: measure_load(bench, args.rows, args.api_calls, args.first_loads, args.reloads),
        "duplicates": lambda: measure_duplicates(bench, args.duplicates, args.pad_mb),
    }
    for part in PARTS:
        if part in parts:
            print_load(f"before {part}")
            runs[part]()
            print_load(f"after {part}")
    print(f"total {time.perf_counter() - started:.0f} s")
    for folder in (bench.files, args.work / "gradio"):
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
