"""The core install as a researcher meets it: a wheel of this checkout installed into a new virtual
environment with its dependencies from PyPI (uv), no extra. It holds no torch and stays under 500 MB;
an API judge (against a local HTTP double) writes predictions that the scorer scores, and a blind
copy is made, from a fresh HOME, offline; every console script answers ``--help`` or says in one
line which extra it needs."""

from __future__ import annotations

import configparser
import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.support.fresh_machine import build_wheel, fresh_env
from tests.support.hub_envs import make_env
from tests.support.lalm_http_double import serve
from tests.support.synthetic import build_synthetic_dataset

pytestmark = pytest.mark.outside_in  # installs from PyPI and runs every command in subprocesses: minutes

#: The core's budget on disk, in MB: uv installs no pip and writes no .pyc; pip's install of the same
#: adds ~110 MB, so 400 here keeps `pip install speakersleuth` in a fresh venv under 500 MB.
CORE_BUDGET_MB = 400


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> dict:
    """The wheel, the environment it went into, and a user's folder holding a small built dataset."""
    tmp = tmp_path_factory.mktemp("core")
    wheel = build_wheel(tmp)
    python = make_env([str(wheel)], tmp / "env")
    user = tmp / "user"
    build_synthetic_dataset(user / "speakersleuth", dialogues=2)
    env = dict(fresh_env(tmp / "home"), PATH=f"{python.parent}:/usr/bin:/bin")
    return {"wheel": wheel, "python": python, "env_dir": tmp / "env", "user": user, "env": env}


def _run(core: dict, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(args), cwd=core["user"], env=dict(core["env"], **extra_env), capture_output=True, text=True, timeout=600
    )


def console_scripts(wheel: Path) -> list[str]:
    """The console scripts the wheel declares (its ``entry_points.txt``)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        parser = configparser.ConfigParser()
        parser.read_string(archive.read(name).decode())
    return sorted(parser["console_scripts"])


def test_the_core_has_no_torch_and_fits_its_budget(core):
    done = _run(
        core,
        "python",
        "-c",
        "import importlib.util as u; print([m for m in ('torch', 'torchcodec', 'scipy', "
        "'sklearn', 'gradio') if u.find_spec(m)])",
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    size_mb = sum(p.stat().st_size for p in core["env_dir"].rglob("*") if p.is_file() and not p.is_symlink()) / 2**20
    assert size_mb < CORE_BUDGET_MB, f"the core install takes {size_mb:.0f} MB"


def test_every_console_script_answers_help_or_names_its_extra(core):
    scripts = console_scripts(core["wheel"])
    assert "speakersleuth-score" in scripts and "speakersleuth-publish" not in scripts  # publishing runs in a clone
    for script in scripts:
        done = _run(core, script, "--help")
        if done.returncode == 0:
            assert done.stdout.startswith("usage:"), (script, done.stdout)
        else:
            assert done.returncode == 2 and "Traceback" not in done.stderr, (script, done.stderr)
            assert done.stderr.count("\n") == 1 and "pip install 'speakersleuth[" in done.stderr, (script, done.stderr)


def test_an_api_judge_and_the_scorer_run_on_the_core(core):
    """The double answers every detection query "inconsistent": S1 all wrong, S2 and S3 all right,
    so balanced accuracy is 1/2 (0 + 1/2 (100 + 100)) = 50 by the definition."""
    with serve() as server:
        judged = _run(
            core,
            "speakersleuth-judges",
            "run",
            "--judge",
            f"vllm:{server.url}/v1:double",
            "--dataset",
            "speakersleuth",
            "--task",
            "detection",
            "--predictions-out",
            "preds.jsonl",
            "--no-progress",
        )
    assert judged.returncode == 0, judged.stderr[-2000:]
    scored = _run(core, "speakersleuth-score", "--predictions", "preds.jsonl", "--dataset", "speakersleuth", "--json")
    assert scored.returncode == 0, scored.stderr[-2000:]
    detection = json.loads(scored.stdout)["detection"]
    assert detection["accuracy"] == {"S1": 0.0, "S2": 100.0, "S3": 100.0} and detection["balanced_accuracy"] == 50.0
    embedding = _run(core, "speakersleuth-judges", "run", "--judge", "centroid-campplus", "--dataset", "speakersleuth")
    assert (
        embedding.returncode == 2
        and embedding.stderr.count("\n") == 1
        and "speakersleuth[builder]" in embedding.stderr
    )
    gemini = _run(
        core,
        "speakersleuth-judges",
        "run",
        "--judge",
        "gemini:gemini-2.5-flash",
        "--dataset",
        "speakersleuth",
        GEMINI_API_KEY="unused",
    )
    assert gemini.returncode == 2 and gemini.stderr.count("\n") == 1 and "speakersleuth[gemini]" in gemini.stderr


def test_blind_copy_and_validation_without_decoding_run_on_the_core(core):
    blind = _run(
        core,
        "speakersleuth-dataset",
        "blind",
        "--dataset",
        "speakersleuth",
        "--public-out",
        "public",
        "--gold-out",
        "gold",
        "--allow-known-seed",
    )
    assert blind.returncode == 0, blind.stderr[-2000:]
    assert _run(core, "speakersleuth-dataset", "validate", "--dataset", "public", "--skip-audio").returncode == 0
    decoding = _run(core, "speakersleuth-dataset", "validate", "--dataset", "public")
    assert decoding.returncode == 1 and "pip install 'speakersleuth[audio]'" in decoding.stderr, decoding.stderr
