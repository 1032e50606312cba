"""The builder's command line in tests: its arguments for a source and for where a build writes, and
the command run in its own process, or its ``main`` in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m speakersleuth.builder_scripts <args>`` from the repository root, as the README types it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "speakersleuth.builder_scripts", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def outputs(tmp: Path) -> list[str]:
    """The arguments that write a build under ``tmp``: the dataset to ``out``, the cache to ``cache``."""
    return ["--dataset-out", str(tmp / "out"), "--cache", str(tmp / "cache")]


def one_source(name: str, folder: Path) -> list[str]:
    """The arguments that build the corpus ``name`` read from ``folder``."""
    return ["--source", name, "--source-dir", f"{name}={folder}"]


def run_main(argv: list[str], capsys) -> tuple[int, str]:
    """The builder's ``main`` in-process (fast): its exit code and stderr; any exception other
    than the exit escapes and fails the test."""
    from speakersleuth.builder_scripts.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    return exit_.value.code, capsys.readouterr().err
