"""Examples pytest's ``--doctest-modules`` does not collect (it skips ``__main__.py``) run here, and
each module must have some: a ``testmod`` without examples attempts nothing and fails nothing."""

from __future__ import annotations

import doctest

import pytest

import speakersleuth.judges.__main__ as judges_main


@pytest.mark.parametrize("module", [judges_main], ids=lambda m: m.__name__)
def test_examples_of_modules_pytest_does_not_collect(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0, module.__name__
