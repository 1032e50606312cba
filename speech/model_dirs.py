"""Local model folders by name: one resolution and one check for every model that loads weights.

The command lines take ``--model-dir NAME=DIR`` (repeatable); ``use_model_dirs`` records those
folders for the process, and ``model_dir(name, fallback)`` returns the folder of ``name``: the one
given on the command line, else ``fallback`` (the model's default, e.g. a folder under an
environment variable). ``check_model_folders`` raises ``ModelFolderError`` naming each folder, the
files it lacks and how to stage them, before anything is loaded; nothing is ever downloaded.

>>> use_model_dirs(parse_model_dirs(["ecapa=/models/ecapa"], known=["ecapa", "wavlm"]))
>>> model_dir("ecapa"), model_dir("wavlm", Path("/default"))
(PosixPath('/models/ecapa'), PosixPath('/default'))
>>> parse_model_dirs(["ecapa"], known=["ecapa"])
Traceback (most recent call last):
...
ValueError: --model-dir 'ecapa': expected NAME=DIR with NAME one of ecapa
>>> use_model_dirs({})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_given: dict[str, Path] = {}


class ModelFolderError(FileNotFoundError):
    """A model folder is missing or lacks files its model loads."""


@dataclass(frozen=True)
class ModelFolder:
    """A folder a model loads from: its ``--model-dir`` name, its path and the files (relative
    paths) it must hold."""

    name: str
    path: Path
    files: tuple[str, ...]

    def missing(self) -> list[str]:
        return [f for f in self.files if not (self.path / f).exists()]


def parse_model_dirs(values: Iterable[str], known: Iterable[str]) -> dict[str, Path]:
    """``NAME=DIR`` values of ``--model-dir`` as ``{name: folder}``; a malformed value or an unknown
    name is a ValueError."""
    known = list(known)
    dirs = {}
    for value in values:
        name, sep, folder = value.partition("=")
        if not sep or name not in known or not folder:
            raise ValueError(f"--model-dir {value!r}: expected NAME=DIR with NAME one of {', '.join(known)}")
        dirs[name] = Path(folder).expanduser()
    return dirs


def refuse_unused(dirs: Mapping[str, Path], used: Iterable[str], users: Mapping[str, str]) -> Mapping[str, Path]:
    """``dirs`` when the command loads every model they name (``used``); else a ValueError naming
    the first folder no model loads and the option that would load it (``users``: name -> option).

    >>> refuse_unused({"ecapa": Path("/m")}, ["wavlm"], {"ecapa": "--encoder ecapa"})
    Traceback (most recent call last):
    ...
    ValueError: --model-dir ecapa=/m: unused by this command; only --encoder ecapa reads it
    """
    used = set(used)
    for name, folder in dirs.items():
        if name not in used:
            raise ValueError(f"--model-dir {name}={folder}: unused by this command; only {users[name]} reads it")
    return dirs


def use_model_dirs(dirs: Mapping[str, Path]) -> None:
    """Make ``dirs`` (``{name: folder}``) the folders ``model_dir`` returns in this process."""
    _given.clear()
    _given.update(dirs)


def model_dir(name: str, fallback: Path | None = None) -> Path | None:
    """The folder given for ``name`` with ``--model-dir``, else ``fallback``."""
    return _given.get(name, fallback)


def check_model_folders(folders: Sequence[ModelFolder], staging: str) -> None:
    """Raise ``ModelFolderError`` if a folder is missing or lacks files: one message naming every
    folder with what it lacks, then ``staging`` (what to put there, from where)."""
    lacking: dict[tuple[str, Path], list[str]] = {}
    for folder in folders:
        lacking.setdefault((folder.name, folder.path), []).extend(folder.missing())
    problems = [
        f"model folder {path} (--model-dir {name}=DIR) "
        + (f"lacks {', '.join(missing)}" if path.is_dir() else f"does not exist; it needs {', '.join(missing)}")
        for (name, path), missing in lacking.items()
        if missing
    ]
    if problems:
        raise ModelFolderError(
            f"{folders[0].name}: {'; '.join(problems)}. {staging} Nothing is downloaded at run time."
        )
