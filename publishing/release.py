"""A release: which Hub repositories it makes, their trees written to a folder, and the push.

``plan_release`` decides the repositories (names, visibility, the Space's variables) and checks
the dataset before anything is written; ``write_trees`` writes every tree as it is pushed (what
``--trees-out`` leaves to read); ``push`` creates each repo and uploads its tree with
``huggingface_hub`` (``upload_folder``: batched commits for a folder of any size, resumed by
running it again; files no longer in the tree are deleted from the repo).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from publishing.trees import (
    METRIC_PREFIX,
    METRICS,
    Repo,
    check_dataset,
    copy_files,
    dataset_files,
    metric_repo_name,
    write_metric_tree,
    write_space_tree,
)

#: The Space's secret ``HF_TOKEN`` (read access to the private gold or dataset) comes from here.
SPACE_TOKEN_ENV = "SPEAKERSLEUTH_SPACE_TOKEN"


@dataclass(frozen=True)
class Release:
    """What to publish under ``org``: a dataset folder (and the gold of a blind copy), the metric
    Spaces, the leaderboard Space."""

    org: str
    name: str = "speakersleuth"
    dataset: Path | None = None
    gold: Path | None = None
    private: bool = False
    metrics: bool = False
    space: bool = False
    results_repo: str | None = None
    demo: bool = False  # a blind copy of a build whose seed is known may be published (a demo)

    def repo_id(self, suffix: str = "") -> str:
        return f"{self.org}/{self.name}{suffix}"


def _check_names(release: Release) -> None:
    for value, what in ((release.org, "--org"), (release.name, "--name")):
        if not value or "/" in value or value.strip() != value:
            raise ValueError(f"{what} {value!r}: a Hub user or organisation name and a repo name, without '/'")
    if not (release.dataset or release.metrics or release.space):
        raise ValueError("nothing to publish: give --dataset, --metrics or --space")
    if release.space and release.dataset is None:
        raise ValueError("--space needs --dataset: the Space is published with the dataset (and gold) it reads")
    if release.gold is not None and release.dataset is None:
        raise ValueError("--gold needs --dataset: the gold goes with the blind copy it was written with")


def plan_release(release: Release, out: Path) -> list[Repo]:
    """The repos of ``release``, their trees to be written under ``out``; the dataset is validated
    and checked (``check_dataset``) first, so a refused release writes nothing."""
    _check_names(release)
    repos = []
    if release.dataset is not None:
        dataset = Path(release.dataset)
        check_dataset(dataset, private=release.private, gold=release.gold)
        if ssd.is_blind(dataset) and seed_known(dataset) and not release.demo:
            raise ValueError(
                f"{dataset}: a blind copy of a build whose seed is known (its card's {ssd.SEED_KNOWN_KEY} is not "
                "false), so its hidden gold follows from the seed and the public text; blind a build made with "
                "a secret seed, or pass --demo to publish it as a demo"
            )
        if release.space and release.gold is None and ssd.is_blind(dataset):
            raise ValueError(
                f"{dataset}: a blind copy: the Space needs its gold to score (--gold <gold_dir>, pushed to a private repo)"
            )
        repos.append(Repo(release.repo_id(), "dataset", release.private, out / "dataset", dataset_files(dataset)))
        if release.gold is not None:
            repos.append(
                Repo(release.repo_id("-gold"), "dataset", True, out / "gold", dataset_files(Path(release.gold)))
            )
    if release.metrics:
        repos += [
            Repo(f"{release.org}/{metric_repo_name(m)}", "space", False, out / "metrics" / metric_repo_name(m), ())
            for m in METRICS
        ]
    if release.space:
        repos.append(_space_repo(release, out / "space"))
    return repos


def seed_known(folder: Path) -> bool:
    """Whether a blind copy's card says its build's seed is known (a card that does not say counts as known)."""
    from huggingface_hub import DatasetCard

    return DatasetCard.load(folder / "README.md").data.to_dict().get(ssd.SEED_KNOWN_KEY) is not False


def _space_repo(release: Release, folder: Path) -> Repo:
    variables = {"SPEAKERSLEUTH_DATASET": release.repo_id()}
    if release.gold is not None:
        variables["SPEAKERSLEUTH_GOLD"] = release.repo_id("-gold")
    if release.results_repo:
        variables["SPEAKERSLEUTH_RESULTS_REPO"] = release.results_repo
    # a private repo to read (gold, labelled dataset) or results to write: the Space needs a token
    secrets = ("HF_TOKEN",) if release.gold is not None or release.private or release.results_repo else ()
    return Repo(release.repo_id("-leaderboard"), "space", False, folder, (), variables, secrets)


def write_trees(release: Release, out: Path, *, copy_data: bool = True, progress: bool = False) -> list[Repo]:
    """Write every tree of ``release`` under ``out`` (a new or empty folder) and ``plan.json``
    (each repo: id, type, visibility, folder, file count, the Space's variables and secret names);
    returns the repos with their files (``progress``: a bar over the copied shards). Without
    ``copy_data`` the dataset and gold repos are their own folders (pushed from there, only their
    tree's files) instead of copies under ``out``."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: exists and is not an empty folder; the trees are written to a new one")
    repos = plan_release(release, out)
    try:
        return _write(release, out, repos, copy_data, progress)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # a refused or failed release leaves no half-written trees
        raise


def _write(release: Release, out: Path, repos: list[Repo], copy_data: bool, progress: bool) -> list[Repo]:
    sources = {out / "dataset": release.dataset, out / "gold": release.gold}
    written = []
    for repo in repos:
        if repo.folder in sources:
            if not copy_data:
                written.append(replace(repo, folder=Path(sources[repo.folder])))
                continue
            repo.folder.mkdir(parents=True)
            copy_files(Path(sources[repo.folder]), repo.files, repo.folder, progress=progress)
        elif repo.folder.parent == out / "metrics":
            write_metric_tree(repo.folder.name.removeprefix(METRIC_PREFIX), repo.folder.parent)
        else:
            write_space_tree(repo.folder)
        files = tuple(sorted(str(p.relative_to(repo.folder)) for p in repo.folder.rglob("*") if p.is_file()))
        written.append(replace(repo, files=files))
    (out / "plan.json").write_text(json.dumps([r.plan() for r in written], indent=2) + "\n", encoding="utf-8")
    return written


def push(repos: list[Repo], *, token: str | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Create each repo (``exist_ok``; a Space with its variables and secrets) and upload its tree;
    returns the repo URLs. The token is ``HF_TOKEN`` or the saved login (``hf auth login``); a
    Space secret's value comes from ``SPEAKERSLEUTH_SPACE_TOKEN`` and is refused before any push
    when it is not set."""
    from huggingface_hub import HfApi

    env = dict(os.environ if env is None else env)
    for repo in repos:
        if repo.secrets and not env.get(SPACE_TOKEN_ENV):
            raise ValueError(
                f"{repo.repo_id}: the Space reads private repos or writes results; set {SPACE_TOKEN_ENV} "
                "to a token with that access (it becomes the Space's secret HF_TOKEN)"
            )
    api = HfApi(token=token)
    urls = []
    for repo in repos:
        url = api.create_repo(
            repo.repo_id,
            repo_type=repo.repo_type,
            private=repo.private,
            exist_ok=True,
            space_sdk="gradio" if repo.repo_type == "space" else None,
        )
        for key, value in repo.variables.items():  # set on every push: a Space made earlier gets them too
            api.add_space_variable(repo.repo_id, key, value)
        for key in repo.secrets:
            api.add_space_secret(repo.repo_id, key, env[SPACE_TOKEN_ENV])
        api.upload_folder(
            repo_id=repo.repo_id,
            repo_type=repo.repo_type,
            folder_path=repo.folder,
            allow_patterns=list(repo.files),
            delete_patterns="*",
            commit_message="Publish with python -m publishing",
        )
        urls.append(str(url))
    return urls
