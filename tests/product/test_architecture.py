"""The layout ARCHITECTURE.md describes, checked on the source: which part may import which, and
no function too long to read at once. Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The import name of the repository root (pyproject.toml's package-dir): every project module is
#: ``speakersleuth.<its path>``.
NAMESPACE = "speakersleuth"
#: Each part of the project and the project parts it may import (itself always).
ALLOWED = {
    "speech": set(),
    "speakersleuth_format": {"speech"},
    "speakersleuth_dataset": {"speech", "speakersleuth_format"},
    "metrics": {"speakersleuth_dataset", "speech"},
    "builder_scripts": {"speech", "speakersleuth_dataset"},
    "judges": {"speech", "speakersleuth_dataset", "metrics"},
    "space": {"speech", "speakersleuth_dataset", "metrics", "judges"},
    "publishing": {"speakersleuth_dataset"},
}
MAX_FUNCTION_LINES = 60
#: The parts of the dataset format behind ``speakersleuth_dataset``, in the one order they may
#: import each other: a part imports only parts before it.
FORMAT_PARTS = ("schema", "audio", "writer", "card", "readers", "blind", "validate")
MAX_FORMAT_MODULE_LINES = 600
#: What the light core (``pip install speakersleuth``, no extra) does not have: the dataset format
#: imports it only inside the functions that need it.
HEAVY = {"torch", "torchcodec", "scipy", "sklearn"}


def modules() -> list[Path]:
    return sorted(p for part in ALLOWED for p in [ROOT / f"{part}.py", *(ROOT / part).rglob("*.py")] if p.is_file())


def module_name(path: Path) -> str:
    """The import name of a project file: ``speakersleuth.`` and its path (pyproject's package-dir)."""
    parts = (path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)).with_suffix("").parts
    return ".".join((NAMESPACE, *(parts[:-1] if parts[-1] == "__init__" else parts)))


def imported_names(path: Path) -> set[str]:
    """Every dotted name ``path`` imports, relative imports resolved against its package; ``from a
    import b`` names ``a`` and ``a.b``. Imports inside functions and ``__main__`` blocks count too."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = (
                ".".join([*package[: len(package) - node.level + 1], *[node.module or ""]])
                if node.level
                else node.module
            )
            base = base.strip(".")
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return found


def project_imports(path: Path) -> set[str]:
    """The project parts ``path`` imports (``speakersleuth.<part>...``)."""
    return {name.split(".")[1] for name in imported_names(path) if name.startswith(f"{NAMESPACE}.")} & set(ALLOWED)


def part_of(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_one_way(path):
    part = part_of(path)
    wrong = project_imports(path) - ALLOWED[part] - {part}
    assert not wrong, (
        f"{path.relative_to(ROOT)} ({part}) imports {sorted(wrong)}; {part} may import only {sorted(ALLOWED[part])}"
    )


def test_a_metric_folder_imports_nothing_of_the_project():
    for path in (ROOT / "metrics").glob("*/*.py"):
        own = module_name(path.parent / "__init__.py")
        outside = {n for n in imported_names(path) if n.startswith(f"{NAMESPACE}.") and not n.startswith(f"{own}.")}
        assert not outside, f"{path.relative_to(ROOT)} must stand alone (evaluate loads the folder by itself)"


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's length without its docstring: from its ``def`` to its end, less the lines of
    the docstring (the Arguments/Returns/Example that the public API documents are not code)."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if ast.get_docstring(node) is not None:
        length -= first.end_lineno - first.lineno + 1
    return length


def test_no_function_over_60_lines():
    long = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and code_lines(node) > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({code_lines(node)} lines)")
    assert not long, "functions over 60 lines (docstrings left out): " + ", ".join(long)


def test_a_functions_length_leaves_out_its_docstring_only():
    """Counted by hand: a def line, a three-line docstring, two statements -> 3 lines of code."""
    (documented,) = ast.parse('def f(x):\n    """One.\n\n    Two."""\n    y = x\n    return y\n').body
    (bare,) = ast.parse("def g(x):\n    y = x\n    return y\n").body
    assert (code_lines(documented), code_lines(bare)) == (3, 3)


def test_the_checks_see_what_they_guard(tmp_path):
    """The import scan finds imports inside functions and from-imports, not relative ones."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import speakersleuth.speech.audio\nfrom . import x\nimport judges\n"
        "def f():\n    from speakersleuth.judges.encoders import get_encoder\n"
    )
    assert project_imports(probe) == {"speech", "judges"}  # a top-level `judges` is another distribution's


def module_imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports (``from a import b`` is ``a.b`` when that is a module,
    else ``a``), relative imports resolved."""
    return imported_names(path) & known - {module_name(path)}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycle():
    paths = modules()
    known = {module_name(p) for p in paths}
    graph = {module_name(p): module_imports(p, known) for p in paths}
    # the scan sees what it guards: absolute and relative imports
    assert graph["speakersleuth.metrics.report"] >= {"speakersleuth.metrics.score"}
    assert graph["speakersleuth.speech.encoders.campplus"] >= {"speakersleuth.speech.encoders.base"}
    assert not import_cycles(graph), f"import cycles: {import_cycles(graph)}"
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def format_modules() -> list[Path]:
    return [ROOT / "speakersleuth_dataset.py", *sorted((ROOT / "speakersleuth_format").glob("*.py"))]


def test_the_format_parts_import_one_way():
    """``speakersleuth_format``'s modules are exactly ``FORMAT_PARTS`` (and its ``__init__``), each
    imports only the parts before it, and the package imports nothing of ``speakersleuth_dataset``."""
    paths = {p.stem: p for p in (ROOT / "speakersleuth_format").glob("*.py")}
    assert set(paths) == {"__init__", *FORMAT_PARTS}
    known = {f"{NAMESPACE}.speakersleuth_format.{part}" for part in FORMAT_PARTS}
    for i, part in enumerate(FORMAT_PARTS):
        imported = {m.rsplit(".", 1)[-1] for m in module_imports(paths[part], known)}
        later = imported - set(FORMAT_PARTS[:i])
        assert not later, f"speakersleuth_format/{part}.py imports {sorted(later)}, which come after it"
    assert not project_imports(paths["__init__"])


@pytest.mark.parametrize("path", format_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_dataset_format_stays_light_and_short(path):
    """No module of the dataset format imports torch, scipy or sklearn at module level (the core
    install has none), and none is over ``MAX_FORMAT_MODULE_LINES`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = {a.name for n in top if isinstance(n, ast.Import) for a in n.names} | {
        n.module for n in top if isinstance(n, ast.ImportFrom) and n.module
    }
    assert not {name.split(".")[0] for name in names} & HEAVY, f"{path.name} imports {sorted(names)} at module level"
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_FORMAT_MODULE_LINES


def test_the_wheel_lists_every_package_of_the_shipped_folders():
    """pyproject.toml names the packages one by one (the root maps to ``speakersleuth``): each folder
    with an ``__init__.py`` under a shipped part is listed, and nothing else is but folders of data
    files with their ``package-data``."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    shipped = [part for part in ALLOWED if (ROOT / part).is_dir() and part != "publishing"]
    on_disk = {module_name(init) for part in shipped for init in (ROOT / part).rglob("__init__.py")}
    assert config["package-dir"] == {NAMESPACE: "."}
    assert on_disk | {NAMESPACE} <= set(config["packages"])
    for name in set(config["packages"]) - on_disk - {NAMESPACE}:  # else only folders of data files, which
        folder = ROOT / name.removeprefix(f"{NAMESPACE}.").replace(".", "/")  # setuptools wants listed
        assert name in config["package-data"] and folder.is_dir() and not list(folder.glob("*.py")), name
