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

from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import parse_submission
from publishing.closure import pins
from tests.support.hub_envs import hub_env
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


def _submission(gold, rng: random.Random) -> list[dict]:
    """An answer for every instance (the modules have no notion of a missing answer), some wrong."""
    lines = [
        {"task": "detection", "id": rid, "prediction": rng.choice(["consistent", "inconsistent"])}
        for rid in gold.tasks["detection"]
    ]
    lines += [
        {"task": "localization", "id": rid, "prediction": sorted(rng.sample(range(1, 6), rng.randint(0, 2)))}
        for rid in gold.tasks["localization"]
    ]
    lines += [
        {"task": "discrimination", "id": rid, "prediction": rng.choice("ABC"), "ranking": rng.sample("ABC", 3)}
        for rid in gold.tasks["discrimination"]
    ]
    return lines


def _module_inputs(gold, lines: list[dict]) -> dict[str, dict]:
    """The same submission as ``compute`` keyword arguments of each module."""
    answer = {(line["task"], line["id"]): line for line in lines}
    det, loc, disc = gold.tasks["detection"], gold.tasks["localization"], gold.tasks["discrimination"]
    rankings = {
        "predictions": [answer["discrimination", rid]["ranking"] for rid in disc],
        "references": [row["gold_ranking"] for row in disc.values()],
    }
    return {
        "balanced_accuracy": {
            "predictions": [answer["detection", rid]["prediction"] for rid in det],
            "references": [row["label"] for row in det.values()],
            "scenarios": [row["scenario"] for row in det.values()],
        },
        "balanced_f1": {
            "predictions": [answer["localization", rid]["prediction"] for rid in loc],
            "references": [row["inconsistent_turns"] for row in loc.values()],
            "scenarios": [row["scenario"] for row in loc.values()],
        },
        "ndcg": {**rankings, "k": 2, "every_k": True},
        "exact_match": rankings,
    }


def _scorer_values(scores: dict) -> dict[str, dict[str, float]]:
    """The scorer's numbers (percent) under the modules' result keys."""
    det, loc, disc = scores["detection"], scores["localization"], scores["discrimination"]
    return {
        "balanced_accuracy": {
            **{f"accuracy_{s}": v for s, v in det["accuracy"].items()},
            "balanced_accuracy": det["balanced_accuracy"],
        },
        "balanced_f1": {
            **{f"{metric}_{s}": v for metric in ("precision", "recall", "f1") for s, v in loc[metric].items()},
            "balanced_f1": loc["balanced_f1"],
        },
        "ndcg": {"ndcg@1": disc["ndcg@1"], "ndcg@2": disc["ndcg@2"]},
        "exact_match": {"exact_match": disc["exact_match"]},
    }


def test_metric_folders_copied_alone_load_from_another_directory_and_agree_with_the_scorer(tmp_path, tmp_path_factory):
    gold = synthetic_gold(10, random.Random(11))
    lines = _submission(gold, random.Random(12))
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    expected = _scorer_values(score_submission(parse_submission(data, gold), gold, n_bootstrap=0))

    calls = {}
    for name in MODULES:
        copy = shutil.copytree(
            ROOT / "metrics" / name, tmp_path / f"hub-{name}" / name, ignore=shutil.ignore_patterns("__pycache__")
        )
        calls[name] = (str(copy), _module_inputs(gold, lines)[name])
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
    rankings = _module_inputs(gold, lines)["exact_match"]
    for k in (1, 2):
        assert got["ndcg"][f"ndcg@{k}"] == pytest.approx(
            sklearn_ndcg(rankings["predictions"], rankings["references"], k), abs=1e-12
        )
    matches = [list(p) == list(g) for p, g in zip(rankings["predictions"], rankings["references"], strict=True)]
    assert got["exact_match"]["exact_match"] == pytest.approx(sum(matches) / len(matches))
