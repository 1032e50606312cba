"""Every docstring example of the package runs, each module imported by its one import name
(``speakersleuth.<path>``), as a user's ``import`` meets it: an exception a doctest shows is named
as users see it (``speakersleuth.space.submission_form.FormError``)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What the wheel ships (pyproject.toml's packages), the folders and the one top-level module.
SHIPPED = ("builder_scripts", "judges", "metrics", "space", "speakersleuth_format", "speech")


def documented_modules() -> list[str]:
    """The import names of the shipped modules whose source holds a ``>>>`` example."""
    files = [ROOT / "speakersleuth_dataset.py", *(p for part in SHIPPED for p in sorted((ROOT / part).rglob("*.py")))]
    return [
        ".".join(("speakersleuth", *p.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
        for p in files
        if ">>> " in p.read_text(encoding="utf-8")
    ]


@pytest.mark.parametrize("name", documented_modules())
def test_the_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (output above)"


def test_the_scan_finds_the_examples_and_a_wrong_one_fails():
    names = documented_modules()
    assert {"speakersleuth.metrics.score", "speakersleuth.space.submission_form"} <= set(names)
    wrong = type(doctest)("wrong")
    wrong.__doc__ = ">>> 1 + 1\n3\n"
    assert doctest.testmod(wrong, report=False).failed == 1
