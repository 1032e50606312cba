"""Benchmark of the leaderboard Space: submission round trip and leaderboard load time.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/bench_space.py [--dataset FOLDER] [--rounds 20]

- Round trip: a full-size predictions file (1,818 detection + 1,818 localization + 606
  discrimination lines for 606 dialogues) uploaded through the running app's HTTP API with
  gradio_client, validated, scored (1,000 bootstrap resamples), stored, and read back from the
  leaderboard endpoint until its row is there; p50/p95 over distinct files.
- Leaderboard load: the ``/leaderboard`` endpoint (all three variant tables and scatters), and,
  when Debian's chromium is installed, a fresh browser page until the main table shows its rows.
- In-process split of one submission: parse+validate, score, store.

Without ``--dataset`` a synthetic full-size folder (``tests/synthetic.py``, main variant only) is
built once under ``--work`` and reused. The app runs on 127.0.0.1 with the SQLite store.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from tqdm import tqdm


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def describe(name: str, seconds: list[float]) -> str:
    return (f"{name}: n={len(seconds)} p50={1000 * statistics.median(seconds):.0f} ms "
            f"p95={1000 * percentile(seconds, 95):.0f} ms max={1000 * max(seconds):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, help="a built dataset folder (default: synthetic full size)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "speakersleuth-bench-space")
    parser.add_argument("--dialogues", type=int, default=606, help="dialogues of the synthetic folder")
    parser.add_argument("--rounds", type=int, default=20, help="submissions to time")
    parser.add_argument("--page-loads", type=int, default=5, help="browser page loads to time (0: skip)")
    args = parser.parse_args()

    from gradio_client import Client, handle_file

    from metrics.score import score_submission
    from metrics.submission import load_gold, parse_submission
    from space.config import SpaceConfig
    from space.store import Metadata, SqliteStore
    from tests.space_support import free_port, predictions, running_app
    from tests.synthetic import build_synthetic_dataset

    dataset = args.dataset
    if dataset is None:
        dataset = args.work / f"dataset-{args.dialogues}"
        if not (dataset / "README.md").is_file():
            print(f"building a synthetic folder of {args.dialogues} dialogues (main) in {dataset} ...")
            shutil.rmtree(dataset, ignore_errors=True)
            build_synthetic_dataset(dataset, dialogues=args.dialogues, variants=("main",))
    gold = load_gold(dataset, "main")
    print("gold:", {task: len(rows) for task, rows in gold.tasks.items()})

    # in-process split of one submission
    data = predictions(gold, 12345)
    t0 = time.perf_counter()
    sub = parse_submission(data, gold)
    t1 = time.perf_counter()
    scores = score_submission(sub, gold, n_bootstrap=1000, seed=0)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        SqliteStore(tmp).add(variant="main", sha256=hashlib.sha256(data).hexdigest(), predictions=data, scores=scores,
                             metadata=Metadata("bench"), submitter="bench", num_lines=sub.num_lines)
    t3 = time.perf_counter()
    print(f"in-process: {len(data) / 1e6:.2f} MB, {sub.num_lines} lines; parse+validate {1000 * (t1 - t0):.0f} ms, "
          f"score (1000 bootstrap) {1000 * (t2 - t1):.0f} ms, store {1000 * (t3 - t2):.0f} ms")

    data_dir = args.work / f"data-{int(time.time())}"
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=data_dir), port=free_port(),
                     rate_limit=10 * args.rounds)
    started = time.perf_counter()
    with running_app(config) as (app, url):
        print(f"app built and serving in {time.perf_counter() - started:.1f} s at {url}")
        client = Client(url, verbose=False, httpx_kwargs={"timeout": 300}, download_files=False, analytics_enabled=False)
        groups = [[], [], []]
        round_trips = []
        for i in tqdm(range(args.rounds), desc="round trips", unit="submission"):
            path = data_dir / f"bench-{i}.jsonl"
            path.write_bytes(predictions(gold, 1000 + i))
            name = f"bench-model-{i:03d}"
            start = time.perf_counter()
            status = client.predict(handle_file(str(path)), "main", name, "bench", "other", "open", "", "",
                                    api_name="/submit")[0]
            if "Accepted" not in status:
                raise SystemExit(f"submission {i} was not accepted: {status}")
            while name not in {row[0] for row in client.predict(*groups, api_name="/leaderboard")[0]["value"]["data"]}:
                pass
            round_trips.append(time.perf_counter() - start)
        print(describe(f"submission round trip (upload -> scored -> visible), {len(data) / 1e6:.2f} MB file", round_trips))

        loads = []
        for _ in range(10):
            start = time.perf_counter()
            client.predict(*groups, api_name="/leaderboard")
            loads.append(time.perf_counter() - start)
        print(describe(f"/leaderboard endpoint with {len(app.store.results('main'))} rows (3 tables + 3 scatters)", loads))

        if args.page_loads and shutil.which("/usr/bin/chromium"):
            from playwright.sync_api import sync_playwright

            page_loads = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--no-first-run"])
                for _ in range(args.page_loads):
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    start = time.perf_counter()
                    page.goto(url)
                    page.wait_for_function(
                        "() => (document.querySelector('#ss-leaderboard-main')?.innerText || '').includes('bench-model-000')",
                        timeout=120_000)
                    page_loads.append(time.perf_counter() - start)
                    page.close()
                browser.close()
            print(describe("leaderboard tab in a fresh browser page (navigation -> rows shown)", page_loads))
    shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
