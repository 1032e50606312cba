"""The check's entry point on the benchmark's own rows equals the baseline judge: the adapter
(``judges.check.benchmark``) feeds a small build's test rows through ``check_dialogues`` and its
predictions, scored by the scorer, equal ``judges.run.run_judge``'s with the same encoder, method
and τ, for every task and variant of the build."""

from __future__ import annotations

import json

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check import load_calibration
from speakersleuth.judges.check.benchmark import benchmark_predictions
from speakersleuth.judges.run import run_judge
from speakersleuth.metrics.score import leaderboard_row, score_predictions
from speakersleuth.speech.encoders import get_encoder
from tests.support.synthetic import build_synthetic_dataset

VARIANTS = ("main", "4vc", "10turn")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Every variant, 2 dialogues each (all three tasks)."""
    return build_synthetic_dataset(tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=2, variants=VARIANTS)


@pytest.fixture(scope="module")
def default(one_torch_thread):
    """The shipped default judge, its encoder loaded once."""
    settings = load_calibration().default
    return settings, get_encoder(settings["encoder"])


def _judged(folder, tmp_path, encoder_spec: str, method: str, tau: float, variant: str) -> list[dict]:
    out = tmp_path / f"{method}-{encoder_spec}.{variant}.{tau}.jsonl"
    run_judge(f"{method}-{encoder_spec}", folder, variant, ssd.TASKS, out, threshold=tau, progress=False)
    return [json.loads(line) for line in out.read_text().splitlines()]


def _row(lines, folder) -> dict:
    return leaderboard_row(score_predictions(lines, folder, n_bootstrap=0))


def _compare(folder, tmp_path, encoder, spec: str, method: str, tau: float, variant: str) -> list[dict]:
    checked = benchmark_predictions(
        folder, variant, encoder=spec, method=method, threshold=tau, cache=EmbeddingCache(encoder)
    )
    judged = _judged(folder, tmp_path, spec, method, tau, variant)
    assert {line["task"] for line in checked} == set(ssd.TASKS)
    assert _row(checked, folder) == _row(judged, folder), (variant, method, tau)
    key = lambda line: (line["task"], line["id"])  # noqa: E731
    assert sorted(checked, key=key) == sorted(judged, key=key)
    return checked


@pytest.mark.parametrize("variant", VARIANTS)
def test_default_judge_through_the_check_equals_run_judge(folder, tmp_path, default, variant, monkeypatch):
    settings, encoder = default
    monkeypatch.setattr("speakersleuth.speech.encoders.get_encoder", lambda spec, device="cpu": encoder)
    spec, method = settings["encoder"], settings["method"]
    checked = _compare(folder, tmp_path, encoder, spec, method, settings["threshold"], variant)
    # at a τ in the middle of this build's scores both answers occur, so the equality is not vacuous
    scores = sorted(line["score"] for line in checked if line["task"] == "detection")
    tau = round(1 - float(np.median(scores)), 4)
    checked = _compare(folder, tmp_path, encoder, spec, method, tau, variant)
    answers = {line["prediction"] for line in checked if line["task"] == "detection"}
    assert answers == {"consistent", "inconsistent"}


def test_reference_method_through_the_check_equals_run_judge(folder, tmp_path, campplus, monkeypatch):
    """The reference method reads each row's reference clip: the same through both paths."""
    monkeypatch.setattr("speakersleuth.speech.encoders.get_encoder", lambda spec, device="cpu": campplus)
    checked = _compare(folder, tmp_path, campplus, "campplus", "reference", 0.6, "main")
    det = [line for line in checked if line["task"] == "detection"]
    assert len(det) == 6 and all("score" in line for line in det)
