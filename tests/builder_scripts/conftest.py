"""Fixtures of the builder's tests: the default speech-like build (``tests.support.small_builds``),
made once per session, each module with its own copy, and the corpus it was built from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.small_builds import shared_speechlike_build


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    """``(folder, report)`` of the module's copy of the default build: ``corpus/``, ``speakersleuth/``, ``cache/``."""
    return shared_speechlike_build(tmp_path_factory, "build")


@pytest.fixture(scope="module")
def corpus(built) -> Path:
    """The recorded speech-like corpus the build was made from."""
    return built[0] / "corpus"
