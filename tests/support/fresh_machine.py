"""The environment of a user on a fresh machine, for tests that run the product in subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Variables that point a process at caches, models or code it would otherwise look for itself.
_CACHE_VARIABLES = ("PYTHONPATH", "KOKORO_JA_CACHE", "TORCH_HOME", "MPLCONFIGDIR", "NUMBA_CACHE_DIR")
_CACHE_PREFIXES = ("XDG_", "HF_", "TRANSFORMERS_")


def fresh_env(home: Path) -> dict[str, str]:
    """This process's environment with ``home`` as an empty ``HOME``, no cache or model folder set
    elsewhere, no ``PYTHONPATH``; offline (the machine reaches no hub)."""
    env = {k: v for k, v in os.environ.items() if k not in _CACHE_VARIABLES and not k.startswith(_CACHE_PREFIXES)}
    home.mkdir(parents=True, exist_ok=True)
    return dict(env, HOME=str(home), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")


def build_wheel(out: Path) -> Path:
    """A wheel of this checkout's files (tracked, and untracked ones git does not ignore), built from
    a copy of them in ``out`` so that no leftover ``build/`` folder of the checkout slips into it."""
    import shutil
    import subprocess
    import sys

    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    source = out / "source"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out / "wheels"), str(source)],
        check=True,
        timeout=300,
        cwd=out,
        capture_output=True,
    )
    return next((out / "wheels").glob("speakersleuth-*.whl"))


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A process environment with no repository on the path and empty caches, offline."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE")}
    return {
        **keep,
        "HOME": str(home),
        "HF_HOME": str(home / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONNOUSERSITE": "1",
        **extra,
    }
