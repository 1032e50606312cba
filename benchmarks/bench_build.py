"""Build benchmark: cold build, no-change rebuild, peak memory, overhead over the model calls.

    python benchmarks/bench_build.py [--dialogues 60 --dialogues-10turn 30] [--small 20,10] [--workdir /tmp/bench_build]

Runs ``python -m builder_scripts build`` in fresh processes: a cold build (empty cache), the same
build again (nothing changed), and a smaller cold build, to show that peak memory does not grow
with the number of dialogues. Prints wall time, time inside TTS / voice conversion / the speaker
encoder (from the build report), the overhead ratio wall / (TTS + VC + encoder), and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_build(workdir: Path, name: str, dialogues: int, dialogues_10turn: int, fresh: bool) -> dict:
    cache, out = workdir / f"cache-{name}", workdir / f"out-{name}"
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable, "-m", "builder_scripts", "build", "--out", str(out), "--cache", str(cache),
        "--dialogues", str(dialogues), "--dialogues-10turn", str(dialogues_10turn), "--no-progress",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = json.loads((cache / "build_report.json").read_text())
    seconds = report["seconds"]
    inside = sum(seconds.get(k, 0.0) for k in ("tts", "vc", "encoder"))
    return {
        "build": name, "dialogues": f"{dialogues}/{dialogues_10turn}", "wall_s": round(wall, 1),
        "pipeline_s": seconds["wall"], "tts_s": seconds.get("tts", 0.0), "vc_s": seconds.get("vc", 0.0),
        "encoder_s": seconds.get("encoder", 0.0),
        "overhead_ratio": round(seconds["wall"] / inside, 2) if inside else None,
        "peak_rss_mb": round(max(peak, before) / 1024, 1) if peak > before else f"<= {before / 1024:.0f} (earlier run)",
        "peak_rss_build_mb": report["peak_memory_mb"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=60)
    parser.add_argument("--dialogues-10turn", type=int, default=30)
    parser.add_argument("--small", default="20,10", help="dialogues,dialogues_10turn of the smaller cold build")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench_build"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    small = [int(x) for x in args.small.split(",")]
    rows = [
        run_build(args.workdir, "full", args.dialogues, args.dialogues_10turn, fresh=True),
        run_build(args.workdir, "full", args.dialogues, args.dialogues_10turn, fresh=False),
        run_build(args.workdir, "small", small[0], small[1], fresh=True),
    ]
    rows[1]["build"] = "full, rebuild (no change)"
    rows[0]["build"] = "full, cold"
    rows[2]["build"] = "small, cold"
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))
    print(f"rebuild / cold wall: {100 * rows[1]['wall_s'] / rows[0]['wall_s']:.1f} %")


if __name__ == "__main__":
    main()
