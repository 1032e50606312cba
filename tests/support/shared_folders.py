"""Folders that several test modules need alike (a small dataset, rendered voices): made once per
test session for every pytest-xdist worker, under a file lock, in a folder named by what makes them.

The session's workers share the parent of their base temporary folders (``pytest-N/popen-gwK``), so
the first worker to ask makes the folder while the others wait on its lock, then all read it; a
module that may change what it reads takes a copy."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


def session_root(tmp_path_factory) -> Path:
    """The folder all of this session's workers share (the base temp folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_folder(tmp_path_factory, key: str, make: Callable[[Path], object]) -> Path:
    """``session_root/shared/key``, filled by ``make(folder)`` once per session (a folder a killed
    maker left half made is made again); ``key`` names what ``make`` writes."""
    folder = session_root(tmp_path_factory) / "shared" / key
    folder.parent.mkdir(parents=True, exist_ok=True)
    done = folder.with_name(key + ".done")
    with FileLock(folder.with_name(key + ".lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            make(folder)
            done.touch()
    return folder
