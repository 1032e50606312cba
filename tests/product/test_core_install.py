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
from tests.support.hub_envs import UV, make_env
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


def _run(core: dict, *args: str, cwd: Path | None = None, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(args),
        cwd=cwd or core["user"],
        env=dict(core["env"], **extra_env),
        capture_output=True,
        text=True,
        timeout=600,
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


def test_the_wheel_writes_one_name_at_the_top(core):
    """Every file of the wheel is under ``speakersleuth/`` or its own ``.dist-info`` (read from the
    archive): no ``judges``, ``metrics`` or ``speech`` at the top of site-packages."""
    name, version = core["wheel"].name.split("-")[:2]
    with zipfile.ZipFile(core["wheel"]) as archive:
        tops = {member.split("/")[0] for member in archive.namelist()}
    assert tops == {"speakersleuth", f"{name}-{version}.dist-info"}
    installed = {p.name for p in next(core["env_dir"].glob("lib/python*/site-packages")).iterdir()}
    assert not installed & {"judges", "metrics", "speech", "space", "builder_scripts", "speakersleuth_dataset.py"}


def test_every_console_script_answers_help_or_names_its_extra(core):
    _every_script_answers_help(core)


def _every_script_answers_help(core: dict, cwd: Path | None = None) -> None:
    scripts = console_scripts(core["wheel"])
    assert "speakersleuth-score" in scripts and "speakersleuth-publish" not in scripts  # publishing runs in a clone
    for script in scripts:
        done = _run(core, script, "--help", cwd=cwd)
        if done.returncode == 0:
            assert done.stdout.startswith("usage:"), (script, done.stdout)
        else:
            assert done.returncode == 2 and "Traceback" not in done.stderr, (script, done.stderr)
            assert done.stderr.count("\n") == 1 and "pip install 'speakersleuth[" in done.stderr, (script, done.stderr)


def test_an_api_judge_and_the_scorer_run_on_the_core(core):
    _api_judge_and_scorer_run(core)


def _api_judge_and_scorer_run(core: dict, dataset: str = "speakersleuth", cwd: Path | None = None) -> None:
    """The double answers every detection query "inconsistent": S1 all wrong, S2 and S3 all right,
    so balanced accuracy is 1/2 (0 + 1/2 (100 + 100)) = 50 by the definition."""
    with serve() as server:
        judge = f"vllm:{server.url}/v1:double"
        options = ("--task", "detection", "--predictions-out", "preds.jsonl", "--no-progress")
        judged = _run(core, "speakersleuth-judges", "run", "--judge", judge, "--dataset", dataset, *options, cwd=cwd)
    assert judged.returncode == 0, judged.stderr[-2000:]
    scored = _run(core, "speakersleuth-score", "--predictions", "preds.jsonl", "--dataset", dataset, "--json", cwd=cwd)
    assert scored.returncode == 0, scored.stderr[-2000:]
    detection = json.loads(scored.stdout)["detection"]
    assert detection["accuracy"] == {"S1": 0.0, "S2": 100.0, "S3": 100.0} and detection["balanced_accuracy"] == 50.0
    embedding = _run(
        core, "speakersleuth-judges", "run", "--judge", "centroid-campplus", "--dataset", dataset, cwd=cwd
    )
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
        dataset,
        cwd=cwd,
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


#: A user's own top-level modules named as our folders: importing either of them stops the process.
USER_MODULE = 'raise SystemExit("the user\'s own {name} was imported")\n'


def test_beside_pypis_judges_and_a_users_own_modules_every_command_runs(core):
    """PyPI's ``judges`` (another project's top-level ``judges``) installed into the same environment,
    and a working folder holding the user's own ``metrics.py`` and ``speech/``: every console script
    still answers, the API judge and the scorer run, ``import judges`` is still theirs, and after
    uninstalling theirs ours still runs. (Runs last: it changes the module's environment.)"""
    python = str(core["env_dir"] / "bin" / "python")
    done = subprocess.run([str(UV), "pip", "install", "-q", "--python", python, "judges==0.1.1"], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    own = core["user"] / "own"
    (own / "speech").mkdir(parents=True)
    (own / "metrics.py").write_text(USER_MODULE.format(name="metrics.py"), encoding="utf-8")
    (own / "speech" / "__init__.py").write_text(USER_MODULE.format(name="speech/"), encoding="utf-8")
    probe = _run(core, "python", "-c", "import judges; print(judges.__file__, hasattr(judges, 'Jury'))")
    judges_file, theirs = probe.stdout.split()
    assert judges_file.endswith("site-packages/judges/__init__.py") and theirs == "True", probe.stdout + probe.stderr
    shadowed = _run(core, "python", "-c", "import metrics", cwd=own)
    assert "the user's own metrics.py was imported" in shadowed.stderr  # the folder does shadow a top-level name
    _every_script_answers_help(core, cwd=own)
    _api_judge_and_scorer_run(core, dataset="../speakersleuth", cwd=own)
    done = subprocess.run([str(UV), "pip", "uninstall", "-q", "--python", python, "judges"], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    for written in own.glob("preds.jsonl*"):  # the judge resumes a file only with the same server
        written.unlink()
    _api_judge_and_scorer_run(core, dataset="../speakersleuth", cwd=own)
