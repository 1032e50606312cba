"""The LALM harness's own cost: reading rows, building prompts, WAV+base64 encoding, parsing, logging.

Runs the OpenAI-compatible backend against the local HTTP double of ``tests/support/lalm_http_double.py``
(127.0.0.1, instant canned answers, so no model time is in the figures) over a synthetic dataset,
for the ``main`` and ``per_turn`` settings, then re-runs each to time a resume that has nothing
left to do. Prints, per setting: instances and requests per second, request size, and for
``per_turn`` how many comparisons were sent against the naive count (N per instance and task).

    PYTHONPATH=. python benchmarks/lalm_harness.py --dialogues 20 --concurrency 8
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    import speakersleuth.speakersleuth_dataset as ssd
    from speakersleuth.judges.lalm import make_lalm_judge
    from tests.support.lalm_http_double import serve
    from tests.support.synthetic import build_synthetic_dataset

    with tempfile.TemporaryDirectory() as tmp, serve() as server:
        data = build_synthetic_dataset(Path(tmp) / "data", dialogues=args.dialogues, variants=("main",))
        n = ssd.VARIANT_SPECS["main"].target_turns
        print(
            f"synthetic main variant: {3 * args.dialogues} turn instances, {args.dialogues} discrimination; "
            f"concurrency {args.concurrency}; answers from a local HTTP double (no model time)"
        )
        print(
            f"{'setting':<9} {'tasks':<38} {'instances':>9} {'requests':>8} {'naive':>6} {'inst/s':>8} "
            f"{'req/s':>7} {'KiB/req':>8} {'resume s':>9}"
        )
        for setting, tasks in (
            ("main", "detection,localization,discrimination"),
            ("per_turn", "detection,localization"),
        ):
            server.reset()
            judge = make_lalm_judge(
                f"vllm:{server.url}/v1:bench", setting=setting, concurrency=args.concurrency, progress=False
            )
            out = Path(tmp) / f"{setting}.jsonl"
            start = time.perf_counter()
            summary = judge.run(data, "main", tasks, out)
            seconds = time.perf_counter() - start
            instances = sum(t["instances"] for t in summary["tasks"].values())
            requests = len(server.requests)
            naive = sum(
                t["instances"] * (n if setting == "per_turn" else 2 if name == "discrimination" else 1)
                for name, t in summary["tasks"].items()
            )
            size = sum(r["size"] for r in server.requests) / max(requests, 1) / 1024
            start = time.perf_counter()
            judge.run(data, "main", tasks, out)
            resume = time.perf_counter() - start
            print(
                f"{setting:<9} {tasks:<38} {instances:>9} {requests:>8} {naive:>6} {instances / seconds:>8.1f} "
                f"{requests / seconds:>7.1f} {size:>8.1f} {resume:>9.2f}"
            )


if __name__ == "__main__":
    main()
