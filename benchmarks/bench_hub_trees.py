"""The Hub trees' environments and the leaderboard Space's start, as ``tests/publishing/test_hub_trees.py`` runs them.

Writes a synthetic blind release with ``python -m publishing --trees-out``, then prints:

- the time to make each tree's fresh environment (uv; the Space's requirements plus what a Gradio
  Space's image adds, the metrics' shared requirements) with an empty uv cache (cold: everything
  downloaded from PyPI) and again with that cache filled (warm), and each environment's size;
- the Space's start in its fresh environment, ``python app.py`` under Spaces' variables, to
  the first page served: the first start (no bytecode yet) and a second one.

    python benchmarks/bench_hub_trees.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from tests.support.fresh_machine import clean_env
from tests.support.hub_envs import make_env
from tests.support.hub_release import SPACES_IMAGE, make_release, space_variables, tree_requirements
from tests.support.space_support import free_port, wait_served


def size_mb(path: Path) -> float:
    return (
        int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])
        / 1e6
    )


def timed_envs(root: Path, wanted: dict[str, list[str]], cache: str) -> dict[str, tuple[float, Path]]:
    made = {}
    for name, requirements in tqdm(wanted.items(), desc=f"environments ({cache} cache)"):
        start = time.perf_counter()
        python = make_env(requirements, root / f"{name}-{cache}")
        made[name] = (time.perf_counter() - start, python)
    return made


def space_start(python: Path, release: dict[str, Path], work: Path) -> float:
    tree = work / "app"
    if not tree.exists():
        shutil.copytree(release["trees"] / "space", tree)
    port = free_port()
    log = work / "app.log"
    start = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(python), "app.py"],
            cwd=tree,
            env=clean_env(work / "home", **space_variables(release, port)),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_served(f"http://127.0.0.1:{port}/", process, log)
        return time.perf_counter() - start
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hub-trees-") as tmp:
        root = Path(tmp)
        release = make_release(root / "release")
        trees = release["trees"]
        wanted = {
            "space": [*tree_requirements(trees / "space"), *SPACES_IMAGE],
            "metrics": tree_requirements(trees / "metrics" / "speakersleuth_ndcg"),
        }
        os.environ["UV_CACHE_DIR"] = str(root / "uv-cache")  # empty: the cold case downloads everything
        cold = timed_envs(root, wanted, "cold")
        warm = timed_envs(root, wanted, "warm")
        print("| environment | cold (empty uv cache) | warm | size |\n|---|---|---|---|")
        for name in wanted:
            print(
                f"| {name} | {cold[name][0]:.1f} s | {warm[name][0]:.1f} s | {size_mb(cold[name][1].parents[1]):.0f} MB |"
            )
        first = space_start(cold["space"][1], release, root / "space-run")
        second = space_start(cold["space"][1], release, root / "space-run")
        print(
            f"\nSpace start to the first page (python app.py, fresh environment): first {first:.1f} s, second {second:.1f} s"
        )


if __name__ == "__main__":
    main()
