"""Fresh virtual environments with exactly the given requirements (uv, from PyPI), built once per
set and session: where the tests run a Hub tree, or a metric folder copied alone, as users do."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

UV = Path(sys.executable).with_name("uv")

_ENVS: dict[str, Path] = {}


def make_env(requirements: list[str], env: Path, python: str | None = None) -> Path:
    """A new virtual environment at ``env`` with exactly ``requirements`` (uv's cache is
    ``UV_CACHE_DIR`` or its default), on the Python ``python`` names (a version such as "3.11", as
    a Space card's ``python_version``; default this interpreter's); returns its python."""
    if not UV.is_file():
        pytest.fail(f"{UV}: uv is not installed (requirements.txt pins it; ./setup.sh installs it)")
    subprocess.run(
        [str(UV), "venv", "-q", "--python", python or sys._base_executable, str(env)], check=True, timeout=300
    )
    done = subprocess.run(
        [str(UV), "pip", "install", "-q", "--python", str(env / "bin" / "python"), *requirements],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return env / "bin" / "python"


def hub_env(requirements: list[str], base: Path, python: str | None = None) -> Path:
    """``make_env`` under ``base``, built once per Python and set of requirements and session."""
    key = hashlib.sha256("\n".join([str(python), *sorted(requirements)]).encode()).hexdigest()[:12]
    if key not in _ENVS:
        _ENVS[key] = make_env(requirements, base / f"env-{key}", python)
    return _ENVS[key]
