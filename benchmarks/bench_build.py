"""Build benchmark: cold build, no-change rebuild, peak memory, overhead over the model calls.

    python benchmarks/bench_build.py [--dialogues 60 --dialogues-10turn 30] [--small 20,10] [--jobs 2] [--workdir /tmp/bench_build]
    git worktree add /tmp/before <rev> && python benchmarks/bench_build.py --before /tmp/before --rounds 2 --cold-only

Runs ``python -m speakersleuth.builder_scripts build`` in fresh processes: a cold build (empty cache), the same
build again (nothing changed), and a smaller cold build, to show that peak memory does not grow
with the number of dialogues. Prints wall time (and, with ``--jobs``, the slowest shard's and the
serial merge's), time inside TTS / voice conversion / the speaker encoder (from the build
reports), the overhead ratio wall / (TTS + VC + encoder), the CPU seconds of the build's
processes and peak RSS. With ``--before DIR`` (a checkout of earlier code) cold builds of that
tree and this one alternate (``--rounds`` of each, in ABBA order, so that a drift of the
machine's speed over the run weighs on both alike) and their means are compared; then this tree
builds once more over the last before build's voicing (its TTS cache and speaker bank copied: the
voicing samples noise, so two cold builds differ) and that folder is compared file by file with
the before build's: a refactoring keeps them byte-identical.
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

ROOT = Path(__file__).resolve().parents[1]


def run_build(
    workdir: Path, name: str, dialogues: int, dialogues_10turn: int, fresh: bool, jobs: int, tree: Path = ROOT
) -> dict:
    cache, out = workdir / f"cache-{name}", workdir / f"out-{name}"
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "speakersleuth.builder_scripts",
        "build",
        "--dataset-out",
        str(out),
        "--cache",
        str(cache),
        "--dialogues",
        str(dialogues),
        "--dialogues-10turn",
        str(dialogues_10turn),
        "--jobs",
        str(jobs),
        "--no-progress",
    ]
    usage, load = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0]
    before = usage.ru_maxrss
    start = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, cpu = after.ru_maxrss, after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    report = json.loads((cache / "build_report.json").read_text())
    seconds = report["seconds"]
    # with --jobs the work is spread over a bank process, shard processes and the merge: the
    # overhead ratio compares their summed wall time with their summed time inside model calls
    parts = [report] + [json.loads(p.read_text()) for p in cache.glob("build_report.*.json")]
    if fresh is False:
        parts = [report]
    process_wall = sum(p["seconds"]["wall"] for p in parts)
    inside = sum(p["seconds"].get(k, 0.0) for p in parts for k in ("tts", "vc", "encoder"))
    totals = {k: round(sum(p["seconds"].get(k, 0.0) for p in parts), 1) for k in ("tts", "vc", "encoder")}
    shards = [json.loads(p.read_text())["seconds"]["wall"] for p in cache.glob("build_report.shard*.json")]
    return {
        "build": name,
        "dialogues": f"{dialogues}/{dialogues_10turn}",
        "load_before": round(load, 2),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "slowest_shard_s": max(shards) if shards and fresh else None,
        "merge_s": seconds["wall"],
        "process_s": round(process_wall, 1),
        "tts_s": totals["tts"],
        "vc_s": totals["vc"],
        "encoder_s": totals["encoder"],
        "overhead_ratio": round(process_wall / inside, 2) if inside else None,
        "peak_rss_mb": round(max(peak, before) / 1024, 1)
        if peak > before
        else f"<= {before / 1024:.0f} (earlier run)",
        "peak_rss_build_mb": report["peak_memory_mb"],
    }


def differing_files(a: Path, b: Path) -> list[str]:
    """Files of the published folders ``a`` and ``b`` that differ or exist in one only (the
    fingerprint stamp, which hashes the code, aside)."""
    names = {p.relative_to(a) for p in a.rglob("*") if p.is_file()} | {
        p.relative_to(b) for p in b.rglob("*") if p.is_file()
    }
    names.discard(Path(".build_fingerprint.json"))
    return sorted(
        str(n)
        for n in names
        if not ((a / n).is_file() and (b / n).is_file() and filecmp.cmp(a / n, b / n, shallow=False))
    )


def same_voicing_build(workdir: Path, dialogues: int, dialogues_10turn: int, jobs: int) -> dict:
    """This tree's units and publishing over the ``before`` build's voicing (its TTS cache and
    speaker bank copied into an empty cache)."""
    cache = workdir / "cache-same-voicing"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(workdir / "out-same-voicing", ignore_errors=True)
    for part in ("tts", "speaker_bank"):
        shutil.copytree(workdir / "cache-before" / part, cache / part)
    row = run_build(workdir, "same-voicing", dialogues, dialogues_10turn, fresh=False, jobs=jobs)
    row["build"] = "full, units + publish over the before build's voicing"
    return row


def cold_comparison(args) -> list[dict]:
    """Cold full builds of the ``--before`` tree and of this one, ``--rounds`` of each, in ABBA
    order (before, this, this, before, ...) so that a drift of the machine's speed over the run
    weighs on both alike."""
    rows = []
    for r in range(args.rounds):
        for name in ("before", "full") if r % 2 == 0 else ("full", "before"):
            tree = args.before.resolve() if name == "before" else ROOT
            rows.append(
                run_build(
                    args.workdir, name, args.dialogues, args.dialogues_10turn, fresh=True, jobs=args.jobs, tree=tree
                )
            )
            rows[-1]["build"] = f"full, cold, {args.before if name == 'before' else 'this tree'} (round {r + 1})"
            rows[-1]["tree"] = name
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=60)
    parser.add_argument("--dialogues-10turn", type=int, default=30)
    parser.add_argument(
        "--small", default="20,10", help="dialogues,dialogues_10turn of the smaller cold build ('' to skip)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="conversion processes (default 2, one per core)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bench_build"))
    parser.add_argument(
        "--before", type=Path, help="a checkout of earlier code: its cold builds alternate with this tree's"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="with --before: cold builds of each tree, in ABBA order (default 1)"
    )
    parser.add_argument("--cold-only", action="store_true", help="only the cold full build(s)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.before:
        rows = cold_comparison(args)
    else:
        rows = [run_build(args.workdir, "full", args.dialogues, args.dialogues_10turn, fresh=True, jobs=args.jobs)]
        rows[-1]["build"] = "full, cold"
    cold = None if args.before else rows[0]
    if not args.cold_only:
        rows.append(
            run_build(args.workdir, "full", args.dialogues, args.dialogues_10turn, fresh=False, jobs=args.jobs)
        )
        rows[-1]["build"] = "full, rebuild (no change)"
    if args.small and not args.cold_only:
        small = [int(x) for x in args.small.split(",")]
        rows.append(run_build(args.workdir, "small", small[0], small[1], fresh=True, jobs=args.jobs))
        rows[-1]["build"] = "small, cold"
    if args.before:
        rows.append(same_voicing_build(args.workdir, args.dialogues, args.dialogues_10turn, args.jobs))
    keys = [k for k in rows[0] if k != "tree"]
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row.get(k)) for k in keys))
    if cold is not None and not args.cold_only:
        print(f"rebuild / cold wall: {100 * rows[1]['wall_s'] / cold['wall_s']:.1f} %")
    if args.before:
        for key in ("wall_s", "cpu_s"):
            mean = {t: sum(r[key] for r in rows if r.get("tree") == t) / args.rounds for t in ("before", "full")}
            print(
                f"cold {key}, this tree / before, mean of {args.rounds}: {mean['full']:.1f} / {mean['before']:.1f} = {100 * mean['full'] / mean['before']:.1f} %"
            )
        for name, what in (("full", "cold builds"), ("same-voicing", "same voicing")):
            differ = differing_files(args.workdir / "out-before", args.workdir / f"out-{name}")
            print(
                f"{what}: published folders "
                + ("byte-identical" if not differ else f"differ in {len(differ)} files: {', '.join(differ[:10])}")
            )


if __name__ == "__main__":
    main()
