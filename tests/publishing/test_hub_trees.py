"""The Hub trees ``python -m publishing --trees-out`` writes, each run the way the Hub runs it: in a
fresh virtual environment made here with only that tree's ``requirements.txt`` (uv, from PyPI;
trees with the same requirements share one), from a copy of the tree as the working folder, with
no repository on the path and empty caches.

- the leaderboard Space: ``python app.py`` with Spaces' variables (``SYSTEM=spaces``,
  ``SPACE_ID``, the OAuth client, the dataset and gold given as variables), a file written by
  ``python -m speakersleuth.judges run`` submitted through ``gradio_client`` by a signed-in user, then ranked;
  torch is not importable there;
- each metric Space: ``evaluate.load(<tree>)`` computes the scorer's values with only the tree's
  requirements, and its ``app.py`` builds its widget on the card's Gradio, which computes the same;
- the dataset: ``load_dataset(<tree>, config)`` decodes the audio of every config.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import RepoCard

import speakersleuth.speakersleuth_dataset as ssd
from publishing.__main__ import main as publish_main
from publishing.closure import closure, pins
from publishing.trees import METRICS, SPACE_APP, SPACE_UNREACHED, gradio_version
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.space.leaderboard_table import GROUPS
from tests.support.fresh_machine import clean_env
from tests.support.hub_envs import UV, hub_env
from tests.support.hub_release import (
    OAUTH,
    SECRET_SEED,
    SPACES_IMAGE,
    make_release,
    space_variables,
    tree_requirements,
)
from tests.support.metric_modules import module_inputs, random_answers, scorer_values
from tests.support.scoring_fixtures import synthetic_gold
from tests.support.space_support import free_port, wait_served
from tests.support.synthetic import build_synthetic_dataset

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Path]:
    return make_release(tmp_path_factory.mktemp("release"))


def card_python(tree: Path) -> str:
    """The Python a Space tree's card names (``python_version``), which the Hub builds it on."""
    version = RepoCard.load(tree / "README.md").data.get("python_version")
    assert isinstance(version, str) and re.fullmatch(r"3\.\d+", version), f"{tree}: python_version {version!r}"
    return version


def assert_runs_on(python: Path, version: str) -> None:
    done = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    )
    assert done.stdout.strip() == version, (python, done.stdout, done.stderr)


def run_in(
    python: Path, code: str, cwd: Path, env: dict[str, str], *args: str, timeout: int = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# ----------------------------------------------------------------------------------------- layout


def test_dry_run_writes_every_tree_and_the_plan(release):
    trees = release["trees"]
    plan = {r["repo_id"]: r for r in json.loads((trees / "plan.json").read_text())}
    metric_repos = {f"acme/speakersleuth_{m}" for m in METRICS}
    assert set(plan) == {
        "acme/speakersleuth",
        "acme/speakersleuth-gold",
        "acme/speakersleuth-leaderboard",
        *metric_repos,
    }
    assert plan["acme/speakersleuth-gold"]["private"] and not plan["acme/speakersleuth"]["private"]
    space = plan["acme/speakersleuth-leaderboard"]
    assert space["space_variables"] == {
        "SPEAKERSLEUTH_DATASET": "acme/speakersleuth",
        "SPEAKERSLEUTH_GOLD": "acme/speakersleuth-gold",
    }
    assert space["space_secrets"] == ["HF_TOKEN"]
    # the public dataset tree is the blind copy: card and shards, no test gold in any test shard
    public = release["public"]
    shards = sorted(str(p.relative_to(public)) for p in public.rglob("*.parquet"))
    assert sorted(str(p.relative_to(trees / "dataset")) for p in (trees / "dataset").rglob("*") if p.is_file()) == [
        "README.md",
        *shards,
    ]
    for path in (trees / "dataset").rglob("test-*.parquet"):
        assert not {"label", "inconsistent_turns", "answer", "gold_ranking"} & set(pq.read_schema(path).names), path
    # each metric tree: its module under the repo's name and the modules it imports, read through the checkout's links
    expected = {
        "balanced_accuracy": {"detection.py", "scenarios.py"},
        "balanced_f1": {"localization.py", "scenarios.py"},
        "ndcg": {"discounted_gain.py", "rankings.py"},
        "exact_match": {"matching.py", "rankings.py"},
    }
    for metric, helpers in expected.items():
        tree = trees / "metrics" / f"speakersleuth_{metric}"
        assert {p.name for p in tree.iterdir()} == {
            "README.md",
            "LICENSE",
            "app.py",
            "widget.py",
            "requirements.txt",
            f"speakersleuth_{metric}.py",
            *helpers,
        }
        assert (tree / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
        assert not any(p.is_symlink() for p in tree.iterdir())
        for helper in helpers:
            assert (tree / helper).read_bytes() == (ROOT / "metrics" / metric / helper).read_bytes()
        card = RepoCard.load(tree / "README.md").data
        assert (card.sdk, card.sdk_version, card.app_file, card.pinned, card.license) == (
            "gradio",
            gradio_version(),
            "app.py",
            False,
            "apache-2.0",
        )
        assert (
            set(card.tags) >= {"evaluate", "metric"}
            and card.title
            and card.emoji
            and card.colorFrom
            and card.colorTo
            and card.description
        )
        assert tree_requirements(tree) == [pins()[d] for d in ("datasets", "evaluate", "numpy")]
    # the Space: the root card with the Spaces YAML, only the modules the app needs
    card = RepoCard.load(trees / "space" / "README.md").data
    assert (card.sdk, card.sdk_version, card.app_file, card.license) == (
        "gradio",
        gradio_version(),
        "app.py",
        "apache-2.0",
    )
    files = {str(p.relative_to(trees / "space")) for p in (trees / "space").rglob("*") if p.is_file()}
    assert (trees / "space" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert {"app.py", "LICENSE", "README.md", "requirements.txt"} == {f for f in files if "/" not in f}
    modules = {f.removeprefix("speakersleuth/") for f in files if f.startswith("speakersleuth/")}
    assert len(modules) == len(files) - 4  # everything else is under the import name
    assert {"space/app.py", "space/leaderboard_table.js", "speakersleuth_dataset.py", "metrics/score.py"} <= modules
    assert {f"speakersleuth_format/{m}.py" for m in ("__init__", "schema", "readers", "blind", "validate")} <= modules
    assert not {
        f
        for f in modules
        if f.startswith(
            ("judges/", "speech/encoders/", "builder_scripts/", "tests/", "space/seed.py", "metrics/report.py")
        )
    }
    imported = closure(
        SPACE_APP
    ).modules  # each module left out is imported somewhere in the closure (the list is not stale)
    assert set(SPACE_UNREACHED) <= set(imported) and "torch" in SPACE_UNREACHED
    assert not [
        line
        for line in tree_requirements(trees / "space")
        if line.split("=")[0].split("[")[0] in ("torch", "torchcodec", "torchaudio", "transformers")
    ]


def test_the_space_extra_resolves_to_the_space_trees_releases(release):
    """``pip install speakersleuth[space]`` and the Space tree agree: every package the tree pins that
    the extra also resolves (uv, from PyPI, under the card's Python) comes in the same major release,
    e.g. altair 5 (Gradio bundles Vega-Lite 5; altair 6 writes Vega-Lite 6)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    tree = release["trees"] / "space"
    done = subprocess.run(
        [
            str(UV),
            "pip",
            "compile",
            "-q",
            "--python-version",
            card_python(tree),
            "--extra",
            "space",
            str(ROOT / "pyproject.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = {r.name.lower(): r for r in map(Requirement, re.findall(r"^[A-Za-z0-9_.-]+==\S+", done.stdout, re.M))}
    pinned = {r.name.lower(): r for r in map(Requirement, tree_requirements(tree))}
    shared = sorted(set(resolved) & set(pinned))
    assert {"altair", "gradio", "numpy", "pandas"} <= set(shared), shared
    for name in shared:
        pin, got = (Version(next(iter(r.specifier)).version) for r in (pinned[name], resolved[name]))
        assert pin.major == got.major, f"{name}: the Space tree pins {pin}, speakersleuth[space] resolves {got}"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dataset", "{full}"], "its test split is labelled and the repo would be public"),
        (["--dataset", "{full}", "--gold", "{gold}"], "is not a blind copy"),
        (["--dataset", "{public}", "--gold", "{full}"], "test ids are not those of"),
        (["--dataset", "{public}", "--space"], "blind copy: the Space needs its gold"),
        (["--metrics", "--org", "a/b"], "--org 'a/b'"),
    ],
)
def test_what_must_not_be_published_is_refused_in_one_line(release, tmp_path, capsys, args, message):
    args = [a.format(**{k: str(v) for k, v in release.items()}) for a in args]
    out = tmp_path / "trees"
    assert publish_main(["--org", "acme", *args, "--trees-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_known_seed_blind_copy_is_published_only_as_a_demo(release, tmp_path, capsys):
    """A blind copy of a build whose seed anyone can try (its cards say so) is refused in one line,
    and published when told it is a demo."""
    ssd.write_card(release["full"], "# x\n\nFor tests only.", build_seed=7)
    ssd.write_blind(release["full"], tmp_path / "public", tmp_path / "gold", allow_known_seed=True)
    ssd.write_card(
        release["full"], "# SpeakerSleuth (synthetic)\n\nFor tests only.\n\n## Citation\n\nc", build_seed=SECRET_SEED
    )
    args = ["--org", "acme", "--dataset", str(tmp_path / "public"), "--gold", str(tmp_path / "gold")]
    assert publish_main([*args, "--trees-out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "whose seed is known" in err and "--demo" in err and err.count("\n") == 1, err
    assert not (tmp_path / "refused").exists()
    assert publish_main([*args, "--demo", "--trees-out", str(tmp_path / "demo")]) == 0


def test_a_blind_copy_whose_card_does_not_say_its_seed_is_unknown_counts_as_known(release, tmp_path, capsys):
    """The release's blind copy (a secret seed: its card says ``seed_known: false``) with that line
    taken out of its card: the card no longer says the seed is secret, so it is refused as a known
    seed's copy, and published only as a demo."""
    public = tmp_path / "public"
    shutil.copytree(release["public"], public)
    card = (public / "README.md").read_text(encoding="utf-8")
    assert f"\n{ssd.SEED_KNOWN_KEY}: false\n" in card
    (public / "README.md").write_text(card.replace(f"\n{ssd.SEED_KNOWN_KEY}: false\n", "\n"), encoding="utf-8")
    args = ["--org", "acme", "--dataset", str(public), "--gold", str(release["gold"])]
    assert publish_main([*args, "--trees-out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "whose seed is known" in err and err.count("\n") == 1, err
    assert publish_main([*args, "--demo", "--trees-out", str(tmp_path / "demo")]) == 0


def test_a_labelled_test_split_goes_to_a_private_repo(release, tmp_path):
    assert (
        publish_main(
            [
                "--org",
                "acme",
                "--dataset",
                str(release["full"]),
                "--private",
                "--space",
                "--trees-out",
                str(tmp_path / "t"),
            ]
        )
        == 0
    )
    plan = {r["repo_id"]: r for r in json.loads((tmp_path / "t" / "plan.json").read_text())}
    assert plan["acme/speakersleuth"]["private"] and plan["acme/speakersleuth-leaderboard"]["space_secrets"] == [
        "HF_TOKEN"
    ]


# ------------------------------------------------------------------------------------ the Space


def session_cookie(username: str) -> str:
    """The cookie Spaces' OAuth login leaves: the signed session (starlette's SessionMiddleware under
    the key Gradio derives from the OAuth client secret) holding the user's ``oauth_info``."""
    from itsdangerous import TimestampSigner

    info = {
        "userinfo": {"sub": "1", "name": username, "preferred_username": username, "profile": "", "picture": ""},
        "access_token": "hf_test",
        "scope": "openid profile",
        "expires_at": int(time.time()) + 3600,
    }
    key = hashlib.sha256((OAUTH["OAUTH_CLIENT_SECRET"] + "-v4").encode()).hexdigest()
    data = base64.b64encode(json.dumps({"oauth_info": info}).encode())
    return TimestampSigner(key).sign(data).decode()


def judged(public: Path, out: Path) -> Path:
    """Predictions of the centroid Resemblyzer judge on the public copy, written by ``python -m speakersleuth.judges run``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "speakersleuth.judges",
            "run",
            "--dataset",
            str(public),
            "--judge",
            "centroid-resemblyzer",
            "--predictions-out",
            str(out),
            "--no-progress",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_space_tree_runs_as_spaces_runs_it_and_ranks_a_judged_file(release, tmp_path_factory):
    from gradio_client import Client, handle_file

    work = tmp_path_factory.mktemp("space-run")
    tree = shutil.copytree(release["trees"] / "space", work / "app")
    requirements = tree_requirements(tree)
    assert not [r for r in requirements if r.lower().startswith("torch")], (
        requirements
    )  # before gigabytes of CUDA wheels
    python = hub_env([*requirements, *SPACES_IMAGE], tmp_path_factory.getbasetemp(), card_python(tree))
    assert_runs_on(python, card_python(tree))
    env = clean_env(work / "home")
    no_torch = run_in(python, "import torch", tree, env)
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr
    predictions = judged(release["public"], work / "centroid.jsonl")
    assert all("score" in json.loads(line) for line in predictions.read_text().splitlines() if '"detection"' in line)

    port = free_port()
    # the release's synthetic blind copy is paired (six dialogues): served as a demo that says what it leaks
    env = clean_env(work / "home", **space_variables(release, port), SPEAKERSLEUTH_ALLOW_PAIRED="1")
    log = work / "app.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(python), "app.py"], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_served(f"http://127.0.0.1:{port}/", process, log)
        client = Client(
            f"http://127.0.0.1:{port}/",
            verbose=False,
            download_files=False,
            analytics_enabled=False,
            headers={"Cookie": f"session={session_cookie('tester')}"},
        )
        status, breakdown, _ = client.predict(
            handle_file(str(predictions)),
            "main",
            "centroid-judge",
            "",
            "other",
            "open",
            "",
            "",
            "",
            api_name="/submit",
        )
        assert "accepted" in status.lower() or "on the leaderboard" in status.lower(), status
        reply = client.predict(list(GROUPS), [], [], api_name="/leaderboard")
        table = reply[0]["value"] if isinstance(reply[0], dict) and "value" in reply[0] else reply[0]
        rows = [dict(zip(table["headers"], row)) for row in table["data"]]
        ours = [row for row in rows if "centroid-judge" in str(row.get("Model"))]
        assert len(ours) == 1 and str(ours[0]["Rank"]) == "1", rows
        # the Check your audio tab, without the encoders (judges and torch left out), says so in one line
        page = httpx.get(f"http://127.0.0.1:{port}/config", timeout=60).text
        assert "This Space cannot check audio." in page and "speakersleuth[check]" in page
    finally:
        process.terminate()
        process.wait(timeout=60)
    # an event loop that Gradio's Spaces reloader leaves to the garbage collector after its selector
    # closed prints this at random (interpreter noise, not an error of the app), cut short when the
    # process ends while printing it (as in one CI run); any other traceback fails
    text = re.sub(
        r"Exception ignored in: <function BaseEventLoop.__del__ at 0x[0-9a-f]+>\nTraceback \(most recent call last\):\n"
        r"(?:  .*\n)*(?:ValueError: Invalid file descriptor: -1\n|  .*\Z|\Z)",
        "",
        log.read_text(),
    )
    assert "Traceback" not in text, text[-3000:]
    assert (tree / "data" / "space" / "results.sqlite3").is_file()  # the store in the Space's working folder


# ------------------------------------------------------------------------------------ the metrics


#: Loads each metric tree by its path and prints its results; only the tree's requirements are installed.
COMPUTE = """
import importlib.util, json, sys
for name in ("metrics", "gradio", "torch"):
    assert importlib.util.find_spec(name) is None, name + " is importable"
import evaluate
calls = json.load(open(sys.argv[1]))
print(json.dumps({name: evaluate.load(path).compute(**kwargs) for name, (path, kwargs) in calls.items()}))
"""

#: Runs a metric tree's app.py as Spaces does, launch replaced by computing through the widget's table.
WIDGET = """
import json, runpy, sys
import gradio as gr
import pandas as pd
kwargs = json.load(open(sys.argv[1]))
def launch(self, *args, **options):
    headers = self.input_components[0].headers
    cell = lambda v: json.dumps(v) if isinstance(v, list) else v
    table = pd.DataFrame({h: [cell(v) for v in kwargs[h]] for h in headers})
    compute = [f for f in self.fns.values() if f.api_name == "compute"]
    print(json.dumps({"headers": headers, "scores": compute[0].fn(table), "endpoints": len(compute)}))
gr.Interface.launch = launch
runpy.run_path("app.py", run_name="__main__")
"""


@pytest.fixture(scope="module")
def metric_case():
    """One submission on a synthetic gold: each metric's ``compute`` inputs and the scorer's values."""
    gold = synthetic_gold(10, random.Random(21))
    lines = random_answers(gold, random.Random(22))
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return module_inputs(gold, lines), scorer_values(
        score_submission(parse_submission(data, gold), gold, n_bootstrap=0)
    )


def test_metric_trees_load_alone_with_evaluate_and_compute_the_scorers_values(
    release, metric_case, tmp_path, tmp_path_factory
):
    inputs, expected = metric_case
    trees = {
        m: shutil.copytree(
            release["trees"] / "metrics" / f"speakersleuth_{m}", tmp_path / "hub" / f"speakersleuth_{m}"
        )
        for m in METRICS
    }
    requirements = {tuple(tree_requirements(tree)) for tree in trees.values()}
    pythons = {card_python(tree) for tree in trees.values()}
    assert len(requirements) == len(pythons) == 1  # the four share one environment, made with exactly these
    python = hub_env(list(requirements.pop()), tmp_path_factory.getbasetemp(), pythons.pop())
    (tmp_path / "calls.json").write_text(json.dumps({m: (str(trees[m]), inputs[m]) for m in METRICS}))
    (tmp_path / "cwd").mkdir()
    done = run_in(python, COMPUTE, tmp_path / "cwd", clean_env(tmp_path / "home"), str(tmp_path / "calls.json"))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    for metric in METRICS:
        assert {k: round(100 * v, 4) for k, v in got[metric].items()} == pytest.approx(expected[metric], abs=1e-9), (
            metric
        )


@pytest.mark.parametrize("metric", METRICS)
def test_metric_tree_app_builds_its_widget_on_the_cards_gradio(
    release, metric_case, metric, tmp_path, tmp_path_factory
):
    inputs, expected = metric_case
    tree = shutil.copytree(
        release["trees"] / "metrics" / f"speakersleuth_{metric}", tmp_path / f"speakersleuth_{metric}"
    )
    sdk = RepoCard.load(tree / "README.md").data.sdk_version
    python = hub_env(
        [*tree_requirements(tree), f"gradio=={sdk}"], tmp_path_factory.getbasetemp(), card_python(tree)
    )  # what Spaces installs
    assert_runs_on(python, card_python(tree))
    (tmp_path / "inputs.json").write_text(json.dumps(inputs[metric]))
    done = run_in(python, WIDGET, tree, clean_env(tmp_path / "home"), str(tmp_path / "inputs.json"))
    assert done.returncode == 0, done.stderr[-3000:]
    built = json.loads(done.stdout.splitlines()[-1])
    assert built["endpoints"] == 1 and set(built["headers"]) <= set(inputs[metric])
    default_k = (
        {"ndcg@2": expected["ndcg"]["ndcg@2"]} if metric == "ndcg" else expected[metric]
    )  # the widget takes no k
    assert {k: round(100 * v, 4) for k, v in built["scores"].items()} == pytest.approx(default_k, abs=1e-9)


# ------------------------------------------------------------------------------------ the dataset

#: Loads every config of a dataset tree by its path, decoding the first clip of each.
LOAD = """
import json, sys
import yaml
from datasets import load_dataset
card = open(sys.argv[1] + "/README.md").read().split("---")[1]
out = {}
for config in yaml.safe_load(card)["configs"]:
    name = config["config_name"]
    for split in [f["split"] for f in config["data_files"]]:
        ds = load_dataset(sys.argv[1], name, split=split)
        audio = [c for c in ds.column_names if c.endswith("audio")][0]
        clip = ds[0][audio]
        clip = clip[0] if isinstance(clip, list) else clip
        out[f"{name}/{split}"] = [len(ds), int(clip.get_all_samples().sample_rate), sorted(ds.column_names)]
print(json.dumps(out))
"""


def test_dataset_tree_loads_with_load_dataset_and_decodes(release, tmp_path):
    """In the project's interpreter (a fresh environment would need torch for torchcodec: gigabytes of
    CUDA wheels from PyPI), from a copy of the tree, another working folder and empty caches."""
    tree = shutil.copytree(release["trees"] / "dataset", tmp_path / "speakersleuth")
    (tmp_path / "cwd").mkdir()
    done = run_in(Path(sys.executable), LOAD, tmp_path / "cwd", clean_env(tmp_path / "home"), str(tree))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    gold = load_gold(release["gold"])
    assert got["detection/test"][:2] == [len(gold.tasks["detection"]), ssd.SAMPLING_RATE]
    assert got["discrimination/test"][0] == len(gold.tasks["discrimination"])
    assert "label" not in got["detection/test"][2] and "label" in got["detection-validation/validation"][2]


# ---------------------------------------------------------------------------------------- the push


class RecordingApi:
    """``HfApi``'s calls that ``push`` makes, recorded (no network); each upload lists the files it would send."""

    calls: list = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/{repo_id}"

    def add_space_variable(self, repo_id, key, value):
        self.calls.append(("variable", repo_id, key, value))

    def add_space_secret(self, repo_id, key, value):
        self.calls.append(("secret", repo_id, key, value))

    def upload_folder(self, *, repo_id, repo_type, folder_path, allow_patterns, delete_patterns, commit_message):
        files = [str(p.relative_to(folder_path)) for p in Path(folder_path).rglob("*") if p.is_file()]
        sent = sorted(f for f in files if any(fnmatch.fnmatch(f, pattern) for pattern in allow_patterns))
        self.calls.append(("upload", repo_id, repo_type, Path(folder_path), sent, delete_patterns))


def test_push_creates_each_repo_and_uploads_exactly_its_dry_run_tree(release, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    RecordingApi.calls = []
    args = [
        "--org",
        "acme",
        "--dataset",
        str(release["public"]),
        "--gold",
        str(release["gold"]),
        "--metrics",
        "--space",
    ]
    monkeypatch.delenv("SPEAKERSLEUTH_SPACE_TOKEN", raising=False)
    assert (
        publish_main(args) == 2
        and "set SPEAKERSLEUTH_SPACE_TOKEN" in capsys.readouterr().err
        and not RecordingApi.calls
    )
    monkeypatch.setenv("SPEAKERSLEUTH_SPACE_TOKEN", "hf_read")
    assert publish_main(args) == 0
    created = {c[1]: c[2] for c in RecordingApi.calls if c[0] == "create_repo"}
    assert created["acme/speakersleuth-gold"]["private"] and not created["acme/speakersleuth"]["private"]
    assert created["acme/speakersleuth-leaderboard"]["space_sdk"] == "gradio"
    assert (
        "variable",
        "acme/speakersleuth-leaderboard",
        "SPEAKERSLEUTH_GOLD",
        "acme/speakersleuth-gold",
    ) in RecordingApi.calls
    assert ("secret", "acme/speakersleuth-leaderboard", "HF_TOKEN", "hf_read") in RecordingApi.calls
    uploads = {c[1]: c for c in RecordingApi.calls if c[0] == "upload"}
    assert uploads["acme/speakersleuth"][3] == release["public"]  # the build itself, not a copy
    trees = release["trees"]
    for repo, folder in {
        "acme/speakersleuth": "dataset",
        "acme/speakersleuth-gold": "gold",
        "acme/speakersleuth-leaderboard": "space",
        "acme/speakersleuth_ndcg": "metrics/speakersleuth_ndcg",
    }.items():
        dry = sorted(str(p.relative_to(trees / folder)) for p in (trees / folder).rglob("*") if p.is_file())
        assert uploads[repo][4] == dry and uploads[repo][5] == "*", repo


def test_a_space_card_without_a_license_is_refused(tmp_path):
    from publishing.trees import SPACE_CARD_KEYS, write_space_card

    card = (ROOT / "space" / "README.md").read_text()
    source = tmp_path / "README.md"
    source.write_text(card.replace("license: apache-2.0\n", "", 1))
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError, match="the front matter has no license"):
        write_space_card(source, tmp_path / "out", app_file="space/app.py", required=SPACE_CARD_KEYS)
    assert not (tmp_path / "out" / "README.md").exists()


# ------------------------------------------------------------------------------- publishing's checks


def test_a_labelled_test_split_is_refused_public_with_no_validation_split_beside_it(tmp_path, capsys):
    """The refusal looks at the test split itself: a build with a labelled test split and nothing else."""
    full = build_synthetic_dataset(tmp_path / "full", dialogues=2, variants=("main",))
    assert not list(full.rglob("validation-*.parquet")) and list(full.rglob("test-*.parquet"))
    assert publish_main(["--org", "acme", "--dataset", str(full), "--trees-out", str(tmp_path / "trees")]) == 2
    assert "its test split is labelled and the repo would be public" in capsys.readouterr().err
    assert not (tmp_path / "trees").exists()


def test_a_gold_folder_with_rows_the_copy_does_not_have_is_refused(release, tmp_path):
    """Gold that holds every test id of the blind copy and one more is not that copy's gold either."""
    from publishing.trees import check_gold

    gold = shutil.copytree(release["gold"], tmp_path / "gold")
    shard = next((gold / "main" / "detection").glob("test-*.parquet"))
    table = pq.read_table(shard)
    extra = table.slice(0, 1).set_column(table.schema.get_field_index("id"), "id", [["an-id-no-copy-has"]])
    pq.write_table(pa.concat_tables([table, extra]), shard)
    with pytest.raises(
        ValueError, match=r"detection test ids are not those of .* \(0 without gold, 1 not in the copy\)"
    ):
        check_gold(release["public"], gold)
    check_gold(release["public"], release["gold"])  # the gold blind wrote with it passes


def test_the_closure_carries_the_init_of_every_package_above_a_module(tmp_path):
    """Python imports ``a``, then ``a.b``, then ``a.b.c`` for ``import a.b.c``: a tree that carries
    ``a/b/c.py`` must carry ``a/__init__.py`` and ``a/b/__init__.py`` (and run them)."""
    for folder in ("a", "a/b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "a" / "b" / "c.py").write_text("X = 1\n")
    (tmp_path / "entry.py").write_text("from a.b import c\n")
    assert set(closure(Path("entry.py"), tmp_path).files) == {
        Path("entry.py"),
        Path("a/__init__.py"),
        Path("a/b/__init__.py"),
        Path("a/b/c.py"),
    }
    assert set(closure(Path("a/b/c.py"), tmp_path).files) == {
        Path("a/__init__.py"),
        Path("a/b/__init__.py"),
        Path("a/b/c.py"),
    }


def test_a_spaces_requirements_leave_out_what_its_sdk_installs(release):
    """Gradio (and what it brings) is the Spaces image's own at the card's ``sdk_version``: pinning it
    again in ``requirements.txt`` would install a second copy over it. Given the import, it is left out."""
    from publishing.closure import requirements
    from publishing.trees import SDK_PROVIDED

    assert requirements(("gradio", "numpy"), provided=SDK_PROVIDED) == [pins()["numpy"]]
    assert requirements(("gradio", "numpy")) == sorted(
        [pins()["gradio"], pins()["numpy"]], key=str.lower
    )  # a Space without the SDK pins it
    for tree in (release["trees"] / "metrics").iterdir():
        assert not [line for line in tree_requirements(tree) if line.lower().startswith("gradio")], tree


def test_the_trees_are_written_only_to_a_new_or_empty_folder(release, tmp_path):
    """A folder holding anything is refused before anything is written (its files stay as they were)."""
    from publishing.release import Release, write_trees

    release_ = Release("acme", dataset=release["public"], gold=release["gold"])
    out = tmp_path / "trees"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="exists and is not an empty folder"):
        write_trees(release_, out, copy_data=False)
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    write_trees(release_, out, copy_data=False)
    assert (out / "plan.json").is_file()
