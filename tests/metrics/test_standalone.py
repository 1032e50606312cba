"""Outside-in: each ``metrics/<name>/`` folder, copied alone to a temp dir (what a Hub metric repo
holds), loads with ``evaluate.load`` in a fresh process that has no repository on its path, no warm
cache and no network, and computes what the in-repo scorer (``metrics.score``) computes."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from publishing.closure import pins
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import parse_submission
from tests.support.hub_envs import hub_env
from tests.support.metric_modules import module_inputs, random_answers, scorer_values
from tests.support.scoring_fixtures import sklearn_ndcg, synthetic_gold

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("balanced_accuracy", "balanced_f1", "ndcg", "exact_match")

#: Loads every copied folder and prints its results; ``metrics`` must not be importable there.
SCRIPT = """
import importlib.util, json, sys
assert importlib.util.find_spec("metrics") is None, "the repository is on the path"
import evaluate
calls = json.load(open(sys.argv[1]))
print(json.dumps({name: evaluate.load(path).compute(**kwargs) for name, (path, kwargs) in calls.items()}))
"""


def test_metric_folders_copied_alone_load_from_another_directory_and_agree_with_the_scorer(tmp_path, tmp_path_factory):
    gold = synthetic_gold(10, random.Random(11))
    lines = random_answers(gold, random.Random(12))
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    expected = scorer_values(score_submission(parse_submission(data, gold), gold, n_bootstrap=0))

    calls = {}
    for name in MODULES:
        copy = shutil.copytree(
            ROOT / "metrics" / name, tmp_path / f"hub-{name}" / name, ignore=shutil.ignore_patterns("__pycache__")
        )
        calls[name] = (str(copy), module_inputs(gold, lines)[name])
    (tmp_path / "calls.json").write_text(json.dumps(calls))
    for folder in ("cwd", "home", "hf_home"):
        (tmp_path / folder).mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "HF_DATASETS_CACHE", "HF_EVALUATE_CACHE", "HF_MODULES_CACHE")
    }
    env.update(
        HOME=str(tmp_path / "home"), HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1"
    )
    python = hub_env(
        [pins()[d] for d in ("datasets", "evaluate", "numpy")], tmp_path_factory.getbasetemp()
    )  # what a metric imports
    done = subprocess.run(
        [str(python), "-c", SCRIPT, str(tmp_path / "calls.json")],
        cwd=tmp_path / "cwd",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    for name in MODULES:
        # the scorer reports percent rounded to 4 decimals
        assert {k: round(100 * v, 4) for k, v in got[name].items()} == pytest.approx(expected[name], abs=1e-9), name
    # and the ranking metrics agree with references outside the project: sklearn's NDCG, a plain count
    rankings = module_inputs(gold, lines)["exact_match"]
    for k in (1, 2):
        assert got["ndcg"][f"ndcg@{k}"] == pytest.approx(
            sklearn_ndcg(rankings["predictions"], rankings["references"], k), abs=1e-12
        )
    matches = [list(p) == list(g) for p, g in zip(rankings["predictions"], rankings["references"], strict=True)]
    assert got["exact_match"]["exact_match"] == pytest.approx(sum(matches) / len(matches))
