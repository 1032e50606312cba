"""The README as a user meets it, after installing the package: a wheel built from this checkout is
installed into a new virtual environment (the package from the wheel only; its dependencies come
from the project's ``.venv`` through a path file, since a fresh install of them is gigabytes of
torch; ``tests/publishing/test_hub_trees.py`` installs the Hub trees' requirements fresh), and every fenced
``bash`` and ``python`` block of README.md is run from a temporary folder with no ``PYTHONPATH``.

Python blocks run as typed, as a script, on a small synthetic dataset folder named as in the
README (``speakersleuth``, ``leaderboard-build``); a ``text`` block right after one is what it must
print. Commands run as typed too, except those ``RULES`` mark: ``parse`` runs the command only up to
its own argument parser (``tests/support/parse_only.py``), for what needs hours, corpora, models, a server
or the Hub; ``skip`` runs nothing, saying why. A README command that no rule names fails the test,
so a new example cannot go untested by accident. The build example of the README's Python API is
run with ``build``/``build_shard`` recording their options (it builds for minutes to hours); the
Python dataset example runs on a real tiny build in ``tests/product/test_outside_in.py``.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from tests.support.check_inputs import build_rows, export_row
from tests.support.fresh_machine import ROOT, build_wheel
from tests.support.readme_blocks import blocks, commands
from tests.support.synthetic import build_synthetic_dataset

PARSE_ONLY = ROOT / "tests" / "support" / "parse_only.py"
SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

#: (pattern, mode, why) for README commands not run as typed; the first match decides.
RULES = [
    (r"^\./run\.sh (demo|test)$", "skip", "the whole demo (~20 min) or the whole suite, which is what CI runs"),
    (r"^pip install ", "skip", "this test's own install: a wheel of the checkout, into a new environment"),
    (
        r"^python -m speakersleuth.builder_scripts build ",
        "parse",
        "a build: ~9 min embedded, hours with corpora and models (tests/product/test_outside_in.py runs a tiny one)",
    ),
    (
        r"^python -m speakersleuth.judges run --judge vllm:",
        "parse",
        "needs a vllm server (without one: tests/judges/test_cli.py)",
    ),
    (
        r"^python -m speakersleuth.judges baselines ",
        "narrow --encoder campplus",
        "every method x four encoders: minutes on 2 cores; one encoder here",
    ),
    (
        r"^python -m speakersleuth.judges sweep ",
        "narrow --judge centroid-campplus",
        "twelve judges: minutes on 2 cores; one here",
    ),
    (r"^python -m speakersleuth.space\.app ", "parse", "serves until stopped (the Space's own tests start it)"),
    (
        r"^python -m speakersleuth.space\.round ",
        "parse",
        "a round's commands read a secret-seed build, the Space's store, the Hub "
        "(tests/space/test_round_commands.py runs open, close and publish)",
    ),
    (
        r"^python -m speakersleuth.judges check .*(--candidates|--rttm|--calibrate) ",
        "parse",
        "regenerations, a recording or labels of your own (tests/judges/test_check_cli.py runs each form as typed)",
    ),
    (
        r"^python -m publishing .*--trees-out ",
        "parse in the checkout",
        "a maintainer's tool run in a clone (not in the wheel); tests/publishing/test_hub_trees.py runs it",
    ),
    (r"^python -m publishing ", "parse in the checkout", "pushes to the Hub, from a clone"),
    (
        r"^inspect eval ",
        "skip",
        "needs a model server (tests/judges/test_harnesses.py runs each task against doubles)",
    ),
    (r"^lmms-eval ", "skip", "lmms-eval in its own environment and a model server (benchmarks/bench_lmms_eval.py)"),
    (
        r"^python -m speakersleuth.judges convert ",
        "parse",
        "needs a harness run's files (tests/judges/test_harnesses.py converts real ones)",
    ),
]


def _mode(command: str) -> tuple[str, str]:
    for pattern, mode, why in RULES:
        if re.search(pattern, command):
            return mode, why
    return "run", ""


def _is_assignment(command: str) -> bool:
    return re.fullmatch(r"(export\s+)?[A-Z_][A-Z0-9_]*=\S*", command) is not None


def _unclassified_commands() -> list[str]:
    """Commands run as typed only because no rule names them: those of a known kind (``python -m``
    of the project's modules, shell assignments) are fine; anything else must get a rule."""
    known = (
        r"^python -m (speakersleuth\.(speakersleuth_dataset|builder_scripts|judges|metrics\.score|space\.app|space\.seed)"
        r"|publishing) "
    )
    return [
        c
        for b in blocks("bash")
        for c in commands(b)
        if _mode(c) == ("run", "") and not re.search(known, c) and not _is_assignment(c)
    ]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The environment of a user who installed the wheel: PATH to the new environment first, a
    fresh HOME, offline, no PYTHONPATH."""
    tmp = tmp_path_factory.mktemp("readme")
    wheel, env_dir = build_wheel(tmp), tmp / "env"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "speakersleuth-deps.pth").write_text(f"{SITE_PACKAGES}\n")  # a plain path: .venv's own .pth files stay off
    subprocess.run(
        [Path(sys.executable).with_name("uv"), "pip", "install", "-q", "--no-deps", "--python", python, wheel],
        check=True,
        timeout=300,
    )
    env = {
        "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp / "home"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
    }
    where = subprocess.run(
        [
            "python",
            "-c",
            "import speakersleuth.speakersleuth_dataset as d, speakersleuth.builder_scripts.card as c; "
            "print(d.__file__); print(c.TEMPLATE.is_file())",
        ],
        env=env,
        cwd=tmp,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(site) and where[1] == "True", (
        where
    )  # the wheel's copy, with its card template
    return env


@pytest.fixture(scope="module")
def datasets_here(tmp_path_factory) -> Path:
    """The folders the README's examples name: ``speakersleuth`` (a small build),
    ``leaderboard-build`` (one with a secret seed), synthetic and quick to make, and ``podcast``
    (two speakers' turns of the small build as wav/flac/mp3 files with a manifest)."""
    root = tmp_path_factory.mktemp("readme-data")
    build_synthetic_dataset(root / "speakersleuth", dialogues=2)
    rows = build_rows(root / "speakersleuth", "detection")
    export_row(rows[0], root / "podcast", other=next(r for r in rows if r["dialogue_id"] != rows[0]["dialogue_id"]))
    board = build_synthetic_dataset(root / "leaderboard-build", dialogues=6)
    ssd.write_card(
        board, "# SpeakerSleuth (synthetic leaderboard build)\n\nFor tests only.", build_seed=secrets.randbits(63)
    )
    return root


def _folder(datasets_here: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(datasets_here, work)
    return work


def _bash(command: str, prelude: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    script = "\n".join(["set -euo pipefail", *prelude, command])
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_every_readme_command_has_a_known_kind():
    assert not _unclassified_commands()


@pytest.mark.parametrize("block", blocks("bash"), ids=lambda b: f"line{b.line}")
def test_readme_command_block_runs(block, installed, datasets_here, tmp_path):
    """Each command of the block in order, in one folder (what one writes the next reads)."""
    work = _folder(datasets_here, tmp_path)
    prelude: list[str] = []
    for command in commands(block):
        mode, why = _mode(command)
        if _is_assignment(command):
            prelude.append(command)
        if mode == "skip":
            print(f"not run ({why}): {command}")
            continue
        if mode.startswith("narrow "):  # as typed, with a later option overriding its default list (the last one wins)
            typed = f"{command} {mode.removeprefix('narrow ')}"
            print(f"run narrowed ({why}): {typed}")
        else:
            typed = command if mode == "run" else re.sub(r"^python -m ", f"python {PARSE_ONLY} ", command)
        env = dict(installed, PYTHONPATH=str(ROOT)) if mode == "parse in the checkout" else installed
        done = _bash(typed, prelude, work, env)
        assert done.returncode == 0, (
            f"README line {block.line}: {command}\nexited {done.returncode}:\n{done.stderr[-3000:]}"
        )
        if mode.startswith("parse"):
            assert done.stdout.startswith("parsed: Namespace("), done.stdout
            print(f"parsed, not run ({why}): {command}")


@pytest.mark.parametrize("block", blocks("python"), ids=lambda b: f"line{b.line}")
def test_readme_python_block_runs(block, installed, datasets_here, tmp_path):
    work = _folder(datasets_here, tmp_path)
    script = block.text
    building = "from speakersleuth.builder_scripts.pipeline import" in script
    if building:  # it builds for minutes to hours: build/build_shard record their options instead
        script = (
            "import speakersleuth.builder_scripts.pipeline as pipeline\n"
            "pipeline.build = lambda opts, jobs=1: print('build', opts.out, opts.dialogues, jobs)\n"
            "pipeline.build_shard = lambda opts: print('build_shard', opts.out, opts.num_shards, opts.shard_index)\n"
            + script
        )
    (work / "example.py").write_text(script)
    done = subprocess.run(
        ["python", "example.py"], cwd=work, env=installed, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"README line {block.line}:\n{done.stderr[-3000:]}"
    if building:
        assert done.stdout.splitlines() == ["build speakersleuth 60 2", "build_shard speakersleuth 16 3"], done.stdout
    if block.output is not None:
        assert done.stdout == block.output, (
            f"README line {block.line} prints\n{done.stdout}\nnot what the README shows:\n{block.output}"
        )


def test_publishing_is_not_in_the_installed_wheel(installed, tmp_path):
    """The trees are copied from a clone's files, so the wheel ships neither the module nor a script."""
    done = subprocess.run(
        ["python", "-m", "publishing", "--org", "acme", "--metrics", "--trees-out", str(tmp_path / "trees")],
        cwd=tmp_path,
        env=installed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "No module named publishing" in done.stderr, done.stderr
    assert shutil.which("speakersleuth-publish", path=installed["PATH"]) is None
