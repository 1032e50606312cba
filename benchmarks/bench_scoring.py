"""Time parse + validate + score of a full-size submission, in process (no audio, no dataset folder).

The gold (``tests/support/scoring_fixtures.py``) has the paper's size: 606 dialogues, i.e. 1,818 detection
and 1,818 localization instances (S1/S2/S3) and 606 discrimination instances over four source
datasets. Two submissions answer every instance, lines shuffled:

- score-less: random answers (seeded), no detection ``score``;
- scored, as ``python -m speakersleuth.judges run`` writes it: seeded random per-turn similarities (the altered
  turn of an inconsistent instance a little lower) turned into lines by the embedding judges' own
  writer (``judges.embedding.predictions``, pairwise at τ 0.4, serialised as ``write_jsonl`` does),
  so every detection line carries a float ``score`` and the file also gets AUROC, EER and their
  bootstrap intervals.

Prints the figures of both and the ratio scored / score-less; the targets are <= 1 s for parse +
validate + score with the default 1,000 resamples, and a scored file costs <= 3x a score-less one.

    PYTHONPATH=. python benchmarks/bench_scoring.py [--dialogues 606] [--repeats 5] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import numpy as np

from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import Gold, parse_submission
from tests.support.scoring_fixtures import N_TURNS, synthetic_gold


def make_submission(gold: Gold, rng: random.Random) -> bytes:
    """A score-less submission: random answers, no detection ``score``."""
    lines = []
    for rid in gold.tasks["detection"]:
        lines.append({"task": "detection", "id": rid, "prediction": rng.choice(["consistent", "inconsistent"])})
    for rid in gold.tasks["localization"]:
        lines.append(
            {
                "task": "localization",
                "id": rid,
                "prediction": sorted(rng.sample(range(1, N_TURNS + 1), rng.randint(0, 2))),
            }
        )
    for rid in gold.tasks["discrimination"]:
        ranking = rng.sample(["A", "B", "C"], 3)
        lines.append({"task": "discrimination", "id": rid, "prediction": ranking[0], "ranking": ranking})
    rng.shuffle(lines)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def make_judge_submission(gold: Gold, rng: random.Random, method: str = "pairwise") -> bytes:
    """A submission as ``python -m speakersleuth.judges run`` writes it (every detection line with a float
    ``score``): the embedding judges' writer on seeded per-turn similarities."""
    from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS, VariantScores, predictions

    nprng = np.random.default_rng(rng.randrange(2**32))
    turn: dict[str, list] = {}
    for task in ("detection", "localization"):
        items = []
        for rid in gold.tasks[task]:
            s = nprng.normal(0.6, 0.12, N_TURNS)
            for k in gold.tasks["localization"][rid]["inconsistent_turns"]:  # the same instance's altered turn
                s[k - 1] -= 0.2
            items.append((rid, s))
        turn[task] = items
    disc = [
        (rid, list(row["candidate_labels"]), nprng.normal(0.5, 0.1, len(row["candidate_labels"])))
        for rid, row in gold.tasks["discrimination"].items()
    ]
    lines = predictions(VariantScores(method, turn, disc), DEFAULT_THRESHOLDS[method])
    rng.shuffle(lines)
    return "".join(
        json.dumps(line, ensure_ascii=False) + "\n" for line in lines
    ).encode()  # judges.embedding.write_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=606)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()
    gold = synthetic_gold(args.dialogues, random.Random(0))
    print(f"gold: {args.dialogues} dialogues, " + ", ".join(f"{len(r):,} {t}" for t, r in gold.tasks.items()))
    submissions = {
        "score-less": make_submission(gold, random.Random(1)),
        "scored (judge file)": make_judge_submission(gold, random.Random(1)),
    }
    medians = {}
    for kind, data in submissions.items():
        lines = data.splitlines()
        scored = sum(b'"score"' in line for line in lines)
        print(
            f"\n## {kind}: {len(lines):,} lines ({scored:,} with a detection score), {len(data) / 1e6:.2f} MB; "
            f"bootstrap {args.bootstrap} resamples"
        )
        medians[kind] = _time(data, args)
    (wall, cpu), (wall0, cpu0) = medians["scored (judge file)"], medians["score-less"]
    print(
        f"\nscored / score-less (total, fresh Gold, median): wall {wall / wall0:.2f}x, cpu {cpu / cpu0:.2f}x; "
        f"target <= 3x (wall): {'met' if wall / wall0 <= 3 else 'NOT met'}"
    )


def _time(data: bytes, args) -> tuple[float, float]:
    """Print the timings of ``data``; returns the wall and cpu medians of the total with a fresh Gold."""
    timings: dict[str, list[tuple[float, float]]] = {"parse": [], "score": [], "total": [], "reused": []}
    for _ in range(args.repeats):
        gold = synthetic_gold(args.dialogues, random.Random(0))  # fresh Gold: derived arrays not cached yet
        t0 = _clock()
        sub = parse_submission(data, gold)
        t1 = _clock()
        score_submission(sub, gold, n_bootstrap=args.bootstrap)
        t2 = _clock()
        score_submission(parse_submission(data, gold), gold, n_bootstrap=args.bootstrap)
        t3 = _clock()
        for name, (start, end) in {
            "parse": (t0, t1),
            "score": (t1, t2),
            "total": (t0, t2),
            "reused": (t2, t3),
        }.items():
            timings[name].append((end[0] - start[0], end[1] - start[1]))
    labels = {
        "parse": "parse + validate",
        "score": "score (fresh Gold)",
        "total": "total, fresh Gold",
        "reused": "total, Gold reused (Space)",
    }
    print(f"{args.repeats} repeats; wall = elapsed, cpu = process CPU time (robust to a busy machine)")
    for name, label in labels.items():
        wall = [w for w, _ in timings[name]]
        cpu = [c for _, c in timings[name]]
        print(
            f"{label:<28} wall median {statistics.median(wall) * 1e3:6.1f} ms (min {min(wall) * 1e3:6.1f}, "
            f"max {max(wall) * 1e3:6.1f})   cpu median {statistics.median(cpu) * 1e3:6.1f} ms"
        )
    total = statistics.median(w for w, _ in timings["total"])
    print(f"target: total <= 1000 ms (wall median): {'met' if total <= 1.0 else 'NOT met'} ({total * 1e3:.0f} ms)")
    return total, statistics.median(c for _, c in timings["total"])


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


if __name__ == "__main__":
    main()
