"""The repository trees of a release, written to a folder exactly as they are pushed.

- the dataset: a built folder (validated first) as its card and parquet shards; a labelled test
  split only to a private repo, or as a blind copy (``python -m speakersleuth.speakersleuth_dataset blind``)
  whose gold goes to a private repo of its own;
- a metric Space per ``metrics/<name>/`` folder, named ``speakersleuth_<name>`` (evaluate's
  canonical ``ndcg`` and ``exact_match`` keep their names): the metric module under the repo's
  name, the modules it imports copied in (a module two folders share exists once in this
  checkout), the card with the Spaces front matter, ``app.py`` (the widget) and
  ``requirements.txt`` with only what the metric imports;
- the leaderboard Space: the modules ``space/app.py`` imports and its assets under ``speakersleuth/``
  (their import name), a root ``app.py`` that starts it, the card of
  ``space/README.md`` as the root ``README.md``, and ``requirements.txt`` with only what the app
  imports; it starts with no arguments, from the Space's variables. Its Check your audio tab
  needs the speaker encoders (torch), which the tree leaves out (``SPACE_LEFT_OUT``): there the
  tab says in one line which extra checking audio needs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
from tqdm import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from publishing.closure import NAMESPACE, ROOT, closure, pins, requirements

METRICS = ("balanced_accuracy", "balanced_f1", "ndcg", "exact_match")
METRIC_PREFIX = "speakersleuth_"
SPACE_APP = Path("space/app.py")
#: Files the leaderboard reads beside its modules (not imports).
SPACE_ASSETS = (Path("space/leaderboard_table.js"), Path("space/data/paper"))
#: Imports inside functions of shared modules that the leaderboard never calls, with where they are:
#: left out of its requirements (the Space's test runs the app without them).
SPACE_UNREACHED = {
    "parselmouth": "speech.audio.seeded_praat, the builder's Praat conversion",
    "torch": "speakersleuth_format.readers.collate, batches for a torch DataLoader",
}
#: Project packages the app imports only inside the Check your audio tab's handler, once it has
#: found torch (``space.check_tab.unavailable``): the Hub tree, torch-free, neither carries them
#: nor installs what they import (torch, torchcodec, the encoders' wheels); its tab says in one
#: line which extra checking audio needs.
SPACE_LEFT_OUT = {
    "judges": "judges.check, the check itself (speaker encoders on torch)",
    "speech.encoders": "the speaker encoders (torch and their wheels)",
}
#: The Python every Space of the release runs on (its card's ``python_version``; Spaces default to
#: 3.10, older than the pinned numpy allows). ``tests/publishing/test_hub_trees.py`` installs each tree under it.
SPACE_PYTHON = "3.11"
#: What a Gradio Space installs itself at the card's ``sdk_version``.
SDK_PROVIDED = ("gradio",)
#: Front matter a Space card must carry; ``sdk``, ``sdk_version`` and ``app_file`` are written here.
SPACE_CARD_KEYS = ("title", "emoji", "colorFrom", "colorTo", "pinned", "license")
METRIC_CARD_KEYS = (*SPACE_CARD_KEYS, "tags", "description")
WIDGET = Path(__file__).with_name("metric_widget.py")
METRIC_APP = '''"""The widget of this metric Space (what Spaces runs: ``python app.py``)."""

from pathlib import Path

import evaluate

from widget import widget

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    widget(evaluate.load(str(HERE / "{module}.py")), HERE / "README.md").launch()
'''


@dataclass(frozen=True)
class Repo:
    """One Hub repository of a release: its tree (``folder``) and how it is created.
    ``files``: the tree's files relative to ``folder`` (the dataset is pushed from its build folder,
    only these); ``secrets``: names of Space secrets, their values read from the environment at push."""

    repo_id: str
    repo_type: str
    private: bool
    folder: Path
    files: tuple[str, ...]
    variables: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()

    def plan(self) -> dict:
        return {
            "repo_id": self.repo_id,
            "repo_type": self.repo_type,
            "private": self.private,
            "folder": str(self.folder),
            "files": len(self.files),
            "space_variables": self.variables,
            "space_secrets": list(self.secrets),
        }


def gradio_version() -> str:
    """The pinned Gradio (``requirements.txt``), which a Space's ``sdk_version`` must match."""
    line = pins().get("gradio")
    if line is None:
        raise ValueError("requirements.txt pins no gradio; a Gradio Space's sdk_version must match the pinned one")
    return line.split("==")[1]


def metric_repo_name(metric: str) -> str:
    return METRIC_PREFIX + metric


# ------------------------------------------------------------------------------------------ dataset


def dataset_files(folder: Path) -> tuple[str, ...]:
    """The card and every shard of every config and split, relative to ``folder``."""
    shards = {
        p for spec in ssd.CONFIGS.values() for split in ssd.SPLITS for p in ssd.shard_paths(folder, spec.name, split)
    }
    return ("README.md", *sorted(str(p.relative_to(folder)) for p in shards))


def check_dataset(folder: Path, *, private: bool, gold: Path | None) -> None:
    """Validate ``folder`` with the project's validator and refuse what must not go public: a
    labelled test split to a public repo, a gold folder that is not the blind copy's."""
    if not (folder / "README.md").is_file():
        raise ValueError(f"{folder}: not a built dataset folder (no README.md); build one first")
    ssd.validate_folder(folder)
    blind = ssd.is_blind(folder)
    if gold is not None and not blind:
        raise ValueError(
            f"--gold {gold}: {folder} is not a blind copy; a gold folder goes with the blind copy it was written with"
        )
    if not blind and not private and any(ssd.shard_paths(folder, c, "test") for c in ssd.CONFIGS):
        raise ValueError(
            f"{folder}: its test split is labelled and the repo would be public; publish its blind copy "
            f"(python -m speakersleuth.speakersleuth_dataset blind --dataset {folder} --public-out <dir> --gold-out <gold_dir>) with --gold <gold_dir>, or pass --private"
        )
    if gold is not None:
        check_gold(folder, gold)


def _test_ids(folder: Path, config: str) -> set[str]:
    paths = ssd.shard_paths(folder, config, "test")
    return {i for p in paths for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


def check_gold(public: Path, gold: Path) -> None:
    """``gold`` holds the gold of exactly the blind copy ``public``'s test ids, config by config."""
    for config in ssd.CONFIGS:
        have, want = _test_ids(gold, config), _test_ids(public, config)
        if have != want:
            raise ValueError(
                f"--gold {gold}: its {config} test ids are not those of {public} "
                f"({len(want - have)} without gold, {len(have - want)} not in the copy); give the gold that blind wrote with it"
            )


def copy_files(folder: Path, files: tuple[str, ...], out: Path, *, progress: bool = False) -> None:
    for name in tqdm(files, desc=f"copying {folder.name}", unit="file", disable=not progress):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / name, out / name)


# ------------------------------------------------------------------------------------------ cards


def write_space_card(source: Path, out: Path, *, app_file: str, required: tuple[str, ...], **extra) -> None:
    """``source``'s card with the Spaces keys a Gradio Space needs (``sdk``, the pinned Gradio as
    ``sdk_version``, ``python_version``, ``app_file``); a card missing one of ``required`` is
    refused, naming them."""
    from huggingface_hub import RepoCard

    card = RepoCard.load(source)
    missing = [key for key in required if card.data.get(key) in (None, "", [])]
    if missing:
        raise ValueError(f"{source}: the front matter has no {', '.join(missing)} (a Space card needs them)")
    for key, value in {
        "sdk": "gradio",
        "sdk_version": gradio_version(),
        "python_version": SPACE_PYTHON,
        "app_file": app_file,
        **extra,
    }.items():
        setattr(card.data, key, value)
    card.save(out / "README.md")


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


# ------------------------------------------------------------------------------------------ metrics


def write_metric_tree(metric: str, out: Path) -> Path:
    """The Space of ``metrics/<metric>/`` in ``out/<repo name>``: the module as ``<repo name>.py``,
    the folder's modules it imports, the card, ``app.py``, ``widget.py``, ``requirements.txt`` and
    the project's ``LICENSE``."""
    folder = ROOT / "metrics" / metric
    module = metric_repo_name(metric)
    tree = out / module
    tree.mkdir(parents=True)
    found = closure(folder / f"{metric}.py")
    for path in found.files:
        if path.parent == folder.relative_to(ROOT) and path.name != "__init__.py":
            shutil.copyfile(ROOT / path, tree / (f"{module}.py" if path.stem == metric else path.name))
    shutil.copyfile(WIDGET, tree / "widget.py")
    shutil.copyfile(ROOT / "LICENSE", tree / "LICENSE")
    (tree / "app.py").write_text(METRIC_APP.format(module=module), encoding="utf-8")
    write_lines(tree / "requirements.txt", requirements(found.modules, provided=SDK_PROVIDED))
    write_space_card(folder / "README.md", tree, app_file="app.py", required=METRIC_CARD_KEYS)
    return tree


# ------------------------------------------------------------------------------------------ Space

#: The leaderboard Space's entry file: Spaces runs ``python app.py`` at the root, where the project's
#: modules are the namespace package ``speakersleuth/``.
SPACE_ENTRY = '''"""The SpeakerSleuth leaderboard (what Spaces runs: ``python app.py``); the modules are in speakersleuth/."""

import sys

from speakersleuth.space.app import main

if __name__ == "__main__":
    sys.exit(main())
'''


def space_closure():
    """``space/app.py``'s import closure, the packages of ``SPACE_LEFT_OUT`` not followed."""
    return closure(SPACE_APP, leave_out=tuple(SPACE_LEFT_OUT))


def space_files() -> tuple[str, ...]:
    """The project files the leaderboard needs: ``space/app.py``'s import closure and its assets."""
    assets = {
        p
        for asset in SPACE_ASSETS
        for p in ([ROOT / asset] if (ROOT / asset).is_file() else (ROOT / asset).rglob("*"))
        if p.is_file()
    }
    return tuple(sorted({str(p) for p in space_closure().files} | {str(p.relative_to(ROOT)) for p in assets}))


def write_space_tree(out: Path) -> Path:
    """The leaderboard Space in ``out``: the modules and assets it needs under ``speakersleuth/``, the
    entry ``app.py``, ``space/README.md`` as the root card (``app_file: app.py``), the pinned
    requirements of what it imports and the project's ``LICENSE``."""
    out.mkdir(parents=True)
    copy_files(ROOT, space_files(), out / NAMESPACE)
    (out / "app.py").write_text(SPACE_ENTRY, encoding="utf-8")
    shutil.copyfile(ROOT / "LICENSE", out / "LICENSE")
    modules = tuple(m for m in space_closure().modules if m not in SPACE_UNREACHED)
    write_lines(out / "requirements.txt", requirements(modules))
    write_space_card(ROOT / "space" / "README.md", out, app_file="app.py", required=SPACE_CARD_KEYS)
    return out
