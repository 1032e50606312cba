"""The fenced blocks of README.md, for the tests that run them (``tests/product/test_readme.py``,
``tests/product/test_outside_in.py``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.support.fresh_machine import ROOT

README = ROOT / "README.md"


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  # README line of the opening fence
    output: str | None  # a ```text block right after a python block ("prints"): what it prints


def blocks(lang: str) -> list[Block]:
    """Every fenced block of ``lang``, in README order."""
    source = README.read_text(encoding="utf-8")
    found = list(re.finditer(r"^```(\w*)\n(.*?)^```", source, re.S | re.M))
    result = []
    for i, match in enumerate(found):
        if match.group(1) != lang:
            continue
        after = found[i + 1] if i + 1 < len(found) else None
        between = source[match.end() : after.start()] if after else ""
        output = after.group(2) if after and after.group(1) == "text" and len(between.strip().split()) <= 2 else None
        result.append(Block(lang, match.group(2), source.count("\n", 0, match.start()) + 1, output))
    return result


def commands(block: Block) -> list[str]:
    """A bash block's commands: continuation lines joined, comment lines and trailing comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block.text)
    lines = (re.sub(r"\s+#\s.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]
