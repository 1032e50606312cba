"""Atomic file writes: a file appears under its name complete, or not at all.

Every writer works on a temporary file beside the target (same folder, so the final rename stays
on one file system) and the temporary file takes the target's name only when the writer
finished; a failure leaves the old file, if any, and removes the temporary one. A reader that has
the old file open keeps reading it whole.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> with atomic_path(folder / "clip.npy") as tmp:
...     _ = tmp.write_bytes(b"data")
...     tmp.parent == folder, tmp.name.startswith(".clip.npy."), tmp.suffix
(True, True, '.tmp')
>>> (folder / "clip.npy").read_bytes(), write_text_atomic(folder / "notes" / "a.txt", "hello").read_text()
(b'data', 'hello')
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | os.PathLike, *, keep_existing: bool = False, durable: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; when the block ends without an error it
    replaces ``path`` (``os.replace``), otherwise it is removed and ``path`` is left as it was.

    The temporary name, ``.<name>.<random>.tmp``, matches no pattern the finished files match (a
    crash leaves nothing a reader of ``*.json`` or ``*.npy`` picks up), so give writers that
    choose a format by extension the format, and write ``np.save`` through an open file. It is
    unique: processes and threads writing one target at once never share it. The folder is
    created if needed. ``keep_existing``: the first writer wins, a ``path`` already there is
    kept (a hard link, where the file system has them). ``durable``: the data reaches the disk
    (fsync) before the rename.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        yield tmp
        if durable:
            with open(tmp, "rb") as written:
                os.fsync(written.fileno())
        if keep_existing:
            _link_unless_present(tmp, path)
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _link_unless_present(tmp: Path, path: Path) -> None:
    """Give ``tmp``'s file the name ``path`` unless a file has it already."""
    try:
        os.link(tmp, path)  # atomic, and fails rather than replace a file already there
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: atomic, the last writer wins
        os.replace(tmp, path)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, durable: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (see ``atomic_path``); returns the path."""
    with atomic_path(path, durable=durable) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str, *, encoding: str = "utf-8", durable: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically (see ``atomic_path``); returns the path."""
    with atomic_path(path, durable=durable) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)
