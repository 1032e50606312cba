"""The demo's first look by stage: cold build, validation, the baselines in one process and in
``--jobs`` processes (time to the first file, to the last, CPU), and seeding one file.

    python benchmarks/bench_demo.py [--dialogues 60 --dialogues-10turn 30] [--jobs 2] [--rounds 1] [--workdir /tmp/bench_demo]

The build runs as ``benchmarks/bench_build.py`` runs it (its stage figures: the shards' slowest,
the last process, time inside TTS / VC / the encoders, peak RSS). The baselines then run on that
folder with an empty embedding cache each time, ``--jobs 1`` and ``--jobs N`` alternating (ABBA
over ``--rounds``), and their predictions files are compared byte for byte. "First look" is what
``./run.sh demo`` waits for before it serves the Space: build + validation + the first baseline
file + seeding it.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_build import ROOT, run_build


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the processes it started included) of ``cmd``."""
    usage, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - start, after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime


def baselines(dataset: Path, out: Path, jobs: int) -> dict:
    """``judges baselines --jobs`` on ``dataset`` with an empty embedding cache: wall, CPU, and
    when the first and the last predictions file appeared (progress.json, looked at every 0.2 s)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "speakersleuth.judges", "baselines", "--dataset", str(dataset)]
    cmd += ["--results-out", str(out / "results"), "--cache", str(out / "cache"), "--jobs", str(jobs), "--no-progress"]
    usage, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[str, float] = {}
    while proc.poll() is None:
        progress = out / "results" / "progress.json"
        if progress.is_file():
            for name in json.loads(progress.read_text())["written"]:
                seen.setdefault(name, time.perf_counter() - start)
        time.sleep(0.2)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"baselines --jobs {jobs} exited {proc.returncode}")
    return {
        "jobs": jobs,
        "load_before": round(os.getloadavg()[0], 2),
        "wall_s": round(wall, 1),
        "cpu_s": round(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime, 1),
        "first_file_s": round(min(seen.values()), 1),
        "files": len(seen),
    }


def same_files(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in a.glob("*.jsonl"))
    return names == sorted(p.name for p in b.glob("*.jsonl")) and all(
        filecmp.cmp(a / n, b / n, shallow=False) for n in names
    )


def seed_one(dataset: Path, results: Path, workdir: Path) -> float:
    """Wall seconds of ``space.seed`` with one predictions file, into an empty store."""
    one = workdir / "one-file"
    shutil.rmtree(one, ignore_errors=True)
    shutil.rmtree(workdir / "space-data", ignore_errors=True)
    one.mkdir()
    shutil.copy2(sorted(results.glob("*.jsonl"))[0], one)
    cmd = [sys.executable, "-m", "speakersleuth.space.seed", "--dataset", str(dataset), "--predictions", str(one)]
    return timed([*cmd, "--data-dir", str(workdir / "space-data"), "--no-progress"])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=60)
    parser.add_argument("--dialogues-10turn", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=2, help="build and baseline processes (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="baseline runs of each kind, ABBA (default 1)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench_demo"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    build = run_build(args.workdir, "demo", args.dialogues, args.dialogues_10turn, fresh=True, jobs=args.jobs)
    print(" | ".join(f"{k}={v}" for k, v in build.items()))
    dataset = args.workdir / "out-demo"
    validate, _ = timed(
        [sys.executable, "-m", "speakersleuth.speakersleuth_dataset", "validate", "--dataset", str(dataset)]
    )
    print(f"validate: {validate:.1f} s")
    rows = []
    for r in range(args.rounds):
        for jobs in (1, args.jobs) if r % 2 == 0 else (args.jobs, 1):
            rows.append(baselines(dataset, args.workdir / f"baselines-{jobs}", jobs))
            print(" | ".join(f"{k}={v}" for k, v in rows[-1].items()))
    a, b = (args.workdir / f"baselines-{j}" / "results" for j in (1, args.jobs))
    print(
        f"predictions files of --jobs 1 and --jobs {args.jobs}: {'byte-identical' if same_files(a, b) else 'DIFFER'}"
    )
    seeding = seed_one(dataset, b, args.workdir)
    first = min(r["first_file_s"] for r in rows if r["jobs"] == args.jobs)
    print(f"seeding one file: {seeding:.1f} s")
    print(
        f"first look (build + validate + first baseline file + seeding it): {build['wall_s'] + validate + first + seeding:.0f} s"
    )


if __name__ == "__main__":
    main()
