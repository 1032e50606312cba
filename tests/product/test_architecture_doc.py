"""Every backticked ``module.symbol`` of ARCHITECTURE.md names something that exists: a project
module (by its dotted path, or by its file's name where the text names the folder around it), a
top-level name in it, or an attribute of one of its classes (methods, fields), read from the source
with ``ast`` (nothing heavy is imported); a third-party name is imported and looked up."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "ARCHITECTURE.md"
PACKAGES = ("builder_scripts", "judges", "metrics", "publishing", "space", "speakersleuth_format", "speech")
#: Short names the text uses for a module, a library or an object of a known class.
ALIASES = {
    "ssd": "speakersleuth_dataset",
    "gr": "gradio",
    "opts": "speakersleuth.builder_scripts.pipeline.BuildOptions",
    "HfApi": "huggingface_hub.HfApi",
}
#: Names the text mentions as gone on purpose, with why.
NOT_THERE = {"gr.inputs": "what Gradio 4 removed (why publishing/metric_widget.py exists)"}
FILE_SUFFIXES = (".py", ".md", ".txt", ".toml", ".sh", ".json", ".js", ".csv", ".tsv", ".parquet", ".npz", ".yaml")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def documented_names() -> list[str]:
    spans = (s.removesuffix("()") for s in re.findall(r"`([^`\n]+)`", DOC.read_text(encoding="utf-8")))
    return sorted({s for s in spans if DOTTED.fullmatch(s) and not s.endswith(FILE_SUFFIXES)})


@cache
def project_modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the project."""
    files = [ROOT / "speakersleuth_dataset.py", *(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))]
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in files}


@cache
def top_level(module: str) -> dict[str, ast.AST]:
    """A module's top-level names: functions, classes, assignments and imported names."""
    names: dict[str, ast.AST] = {}
    for node in ast.parse(project_modules()[module].read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def class_attributes(node: ast.ClassDef) -> set[str]:
    attrs = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            attrs.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            attrs.add(item.target.id)
        elif isinstance(item, ast.Assign):
            attrs.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return attrs


def resolves_in(module: str, rest: list[str]) -> bool:
    """``rest`` (a name, then at most an attribute of it) is defined in project ``module``."""
    if not rest:
        return True
    if f"{module}.{rest[0]}" in project_modules():
        return resolves_in(f"{module}.{rest[0]}", rest[1:])
    node = top_level(module).get(rest[0])
    if node is None or len(rest) > 2:
        return False
    return len(rest) == 1 or (isinstance(node, ast.ClassDef) and rest[1] in class_attributes(node))


def resolves(name: str) -> bool:
    head, *rest = name.split(".")
    if head in ALIASES:
        head, *more = ALIASES[head].split(".")
        rest = [*more, *rest]
    modules = project_modules()
    if head in modules:
        return resolves_in(head, rest)
    by_file_name = [m for m in modules if m.rsplit(".", 1)[-1] == head]
    by_class = [m for m in modules if isinstance(top_level(m).get(head), ast.ClassDef)]
    if by_file_name or by_class:
        return any(resolves_in(m, rest) for m in by_file_name) or any(resolves_in(m, [head, *rest]) for m in by_class)
    try:
        found = importlib.import_module(head)
        for part in rest:
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return False
    return True


def test_the_text_names_dotted_symbols():
    assert {"speakersleuth.speakersleuth_dataset.VariantSpec", "speakersleuth.metrics.score.score_predictions", "trees.SPACE_UNREACHED"} <= set(
        documented_names()
    )


@pytest.mark.parametrize("name", documented_names())
def test_every_backticked_symbol_of_architecture_md_exists(name):
    assert resolves(name) != (name in NOT_THERE), f"ARCHITECTURE.md names `{name}`: {NOT_THERE.get(name, 'not found')}"


def test_a_name_that_is_not_there_does_not_resolve():
    assert not resolves("speakersleuth.metrics.core.MetricModule") and not resolves("RetryPolicy.no_such_field")
    assert resolves("speakersleuth.metrics.core.grouped_mean") and resolves("RetryPolicy.unreachable_after")
