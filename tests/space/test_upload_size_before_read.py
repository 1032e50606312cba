"""An upload given as a path (Gradio's temporary copy) is size-checked before a byte of it is read."""

from __future__ import annotations

import builtins
import io
import os

import pytest

from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import SqliteStore
from speakersleuth.space.submitter import Submitter

FORM = {
    "model_name": "judge A",
    "organisation": "lab",
    "model_type": "embedding",
    "access": "open",
    "link": "https://example.org/a",
    "model_date": "2025-06-01",
}
LIMIT = 1000


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """Every file path opened for reading through ``open``/``io.open`` (``Path.open``/``read_bytes`` too) from now on."""
    paths = []
    for module in (builtins, io):
        real = module.open

        def spy(file, mode="r", *args, _real=real, **kwargs):
            if isinstance(file, (str, os.PathLike)) and "r" in mode:
                paths.append(os.fspath(file))
            return _real(file, mode, *args, **kwargs)

        monkeypatch.setattr(module, "open", spy)
    return paths


def upload(tmp_path, size: int) -> str:
    path = tmp_path / "upload.jsonl"
    path.write_bytes(b"x" * size)
    return str(path)


def submitter(tmp_path) -> Submitter:
    config = SpaceConfig.from_env({}, dataset=str(tmp_path / "dataset"), data_dir=tmp_path, max_bytes=LIMIT)
    return Submitter(config, SqliteStore(tmp_path), tmp_path / "dataset", variants=["main"])


def test_too_large_path_upload_is_refused_unread(tmp_path, opened):
    path = upload(tmp_path, LIMIT + 1)
    result = submitter(tmp_path).submit(path, "main", FORM)
    assert (result.status, result.message) == ("invalid", "The file is too large.")
    assert result.errors == [f"file has {LIMIT + 1:,} bytes; the limit is {LIMIT:,}"]
    assert path not in opened


def test_path_upload_within_the_limit_is_read(tmp_path, opened):
    path = upload(tmp_path, LIMIT)
    submitter(tmp_path).submit(path, "main", FORM)
    assert path in opened  # the spy sees reads, so the test above can fail
