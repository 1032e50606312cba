"""What a Hub tree must carry: the project files an entry file imports, and the pinned packages.

The closure is read from the source (``ast``), imports inside functions included, so a lazy import
the app makes only when a button is pressed is carried too. A project module is a ``.py`` file under
the repository root, imported as ``speakersleuth.<path>`` (the package maps the root to that name;
a package brings its ``__init__.py`` files); every other import that is not in
the standard library is a third-party module, mapped to the distribution that installs it and
pinned as the root ``requirements.txt`` pins it.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements.txt"
#: The import name of the repository root (pyproject.toml's ``package-dir``).
NAMESPACE = "speakersleuth"


@dataclass(frozen=True)
class Closure:
    """``files``: the project files (relative to the root) an entry file needs; ``modules``: the
    top-level names of the third-party modules they import."""

    files: tuple[Path, ...]
    modules: tuple[str, ...]


def _module_file(root: Path, dotted: str) -> Path | None:
    """The file of the project module ``dotted`` (``speakersleuth.a.b`` or, from a relative import,
    ``a.b``), or None."""
    parts = dotted.split(".")
    if parts[0] == NAMESPACE:
        parts = parts[1:]
    if not parts:
        return None
    path = root.joinpath(*parts)
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _package_of(root: Path, path: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts if parts[-1] == "__init__" and parts.pop() is not None else parts[:-1]


def _imported_names(root: Path, path: Path) -> set[str]:
    """Dotted names ``path`` imports, relative imports resolved against its package; ``from a import
    b`` names ``a`` and ``a.b`` (the latter counts only when it is a module)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            package = _package_of(root, path)
            base = (
                ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                if node.level
                else node.module
            )
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {name.strip(".") for name in names if name and name.strip(".")}


def closure(entry: Path, root: Path = ROOT, leave_out: tuple[str, ...] = ()) -> Closure:
    """The project files ``entry`` needs (itself, what it imports, their packages' ``__init__.py``,
    transitively) and the third-party modules they import; project modules named in ``leave_out`` by
    their path (``speech.encoders``, with or without ``speakersleuth.`` before it) or under a package
    in it are neither carried nor followed."""
    seen: set[Path] = set()
    third_party: set[str] = set()
    todo = [entry.resolve() if entry.is_absolute() else (root / entry).resolve()]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        package = _package_of(root, path)
        for i in range(1, len(package) + 1):  # every package above a module is imported first
            todo.append(root.joinpath(*package[:i], "__init__.py"))
        for name in _imported_names(root, path):
            bare = name.removeprefix(f"{NAMESPACE}.")
            if any(bare == out or bare.startswith(out + ".") for out in leave_out):
                continue
            found = _module_file(root, name)
            if found is not None:
                todo.append(found)
            elif (
                name.split(".")[0] != NAMESPACE
                and _module_file(root, name.split(".")[0]) is None
                and name.split(".")[0] not in sys.stdlib_module_names
            ):
                third_party.add(name.split(".")[0])
    return Closure(tuple(sorted(p.relative_to(root) for p in seen)), tuple(sorted(third_party)))


def pins(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """``requirements.txt``'s ``name[extras]==version`` lines by normalised distribution name."""
    found = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)", line)
        if match:
            found[normalise(match.group(1))] = line
    return found


def normalise(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def requirements(
    modules: tuple[str, ...], *, provided: tuple[str, ...] = (), requirements_file: Path = REQUIREMENTS
) -> list[str]:
    """The pinned requirement lines that install ``modules`` (top-level import names), the
    distributions in ``provided`` (installed by the Hub itself, e.g. Gradio on a Gradio Space) left
    out. A module whose distribution is not pinned in ``requirements.txt`` must come with a pinned
    or provided one (gradio brings httpx); otherwise, or when no installed distribution provides
    it, it is refused in one line naming it."""
    installed = packages_distributions()
    pinned = pins(requirements_file)
    wanted = {module: {normalise(d) for d in installed.get(module, [])} for module in modules}
    for module, distributions in wanted.items():
        if not distributions:
            raise ValueError(
                f"import {module}: no installed distribution provides it; install it and pin it in {requirements_file.name}"
            )
    chosen = {
        d for distributions in wanted.values() for d in distributions & (set(pinned) | set(map(normalise, provided)))
    }
    brought = dependencies(chosen)
    for module, distributions in wanted.items():
        if not distributions & (chosen | brought):
            raise ValueError(
                f"import {module}: its distribution {sorted(distributions)[0]} is not pinned in "
                f"{requirements_file.name} nor installed with one that is"
            )
    return sorted((pinned[d] for d in chosen - set(map(normalise, provided)) if d in pinned), key=str.lower)


def dependencies(distributions: set[str]) -> set[str]:
    """Every distribution the installed ``distributions`` require, transitively (markers that hold
    in this interpreter; extras not followed)."""
    from packaging.requirements import Requirement

    found, todo = set(), list(distributions)
    while todo:
        try:
            requires = metadata.distribution(todo.pop()).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement = Requirement(line)
            name = normalise(requirement.name)
            if name not in found and (requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
                found.add(name)
                todo.append(name)
    return found
