"""The maintainer's round commands end to end (space/round.py): open a round from a secret-seed
build, take submissions, close it, publish its gold and standings; a re-score of the published
files from the published gold alone equals the closed Space's table."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission
from speakersleuth.space import round as round_commands
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import SqliteStore
from speakersleuth.space.submitter import Submitter
from tests.support.space_support import predictions
from tests.support.synthetic import build_synthetic_dataset

FORM = {"model_name": "Judge", "organisation": "lab", "model_type": "other", "access": "open"}


class FakeHub:
    """``huggingface_hub.HfApi`` for the test: a repo is a folder under ``root``."""

    root: Path

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo, *, repo_type, private, exist_ok):
        assert repo_type == "dataset" and private is False
        (self.root / repo).mkdir(parents=True, exist_ok=exist_ok)

    def upload_folder(self, *, folder_path, repo_id, repo_type, commit_message):
        shutil.copytree(folder_path, self.root / repo_id, dirs_exist_ok=True)


def test_open_submit_close_publish_and_a_rescore_from_the_published_gold_equals_the_closed_table(
    tmp_path, capsys, monkeypatch
):
    build = build_synthetic_dataset(tmp_path / "build", dialogues=16, variants=("main",))
    ssd.write_card(build, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=2**62 + 52)
    public, gold_dir, data, release = (tmp_path / name for name in ("public", "gold", "data", "round-1"))
    assert (
        round_commands.main(["open", "--build", str(build), "--public-out", str(public), "--gold-out", str(gold_dir)])
        == 0
    )
    opened = capsys.readouterr().out
    assert "main: public {" in opened and "SPEAKERSLEUTH_ROUND=open" in opened and ssd.is_blind(public)

    now = [1_000.0]
    config = SpaceConfig.from_env({}, dataset=str(public), gold=str(gold_dir), data_dir=data)
    space = Submitter(
        config, SqliteStore(data), public, variants=["main"], gold=gold_dir, n_bootstrap=0, clock=lambda: now[0]
    )
    gold = space.gold("main")
    sent = {}
    for who, patterns in {"10.0.0.1": (3, 5, 9), "10.0.0.2": (6,), "10.0.0.3": (7, 11)}.items():
        for pattern in patterns:
            now[0] += 10
            result = space.submit(predictions(gold, pattern), "main", {**FORM, "organisation": who}, address=who)
            assert result.status == "accepted", result.message
            sent.setdefault(who, []).append(result.record)
    assert space.withdraw(sent["10.0.0.3"][-1].id, address="10.0.0.3").status == "withdrawn"  # selects its older file
    now[0] += 10
    late = space.submit(predictions(gold, 13), "main", {**FORM, "organisation": "10.0.0.2"}, address="10.0.0.2").record

    at = "1970-01-01T00:17:45+00:00"  # 1065 s: after the withdrawal (1060), before the late file (1070)
    args = ["close", "--dataset", str(public), "--gold", str(gold_dir), "--data-dir", str(data), "--out", str(release)]
    assert round_commands.main([*args, "--at", at]) == 0
    settings = dict(re.findall(r"(SPEAKERSLEUTH_ROUND\w*)=(\S+)", capsys.readouterr().out))
    assert settings == {"SPEAKERSLEUTH_ROUND": "closed", "SPEAKERSLEUTH_ROUND_CLOSED_AT": at}
    closed = Submitter(
        replace(config, round_closed_at=SpaceConfig.from_env(settings).round_closed_at),
        SqliteStore(data),
        public,
        variants=["main"],
        gold=gold_dir,
        n_bootstrap=0,
    )
    table = {
        record.id: row for record, row in closed.policy.rows(closed.store.results("main", include_withdrawn=True))
    }
    expected = {sent["10.0.0.1"][-1].id, sent["10.0.0.2"][0].id, sent["10.0.0.3"][0].id}
    assert set(table) == expected and late.id not in table

    FakeHub.root = tmp_path / "hub"
    monkeypatch.setattr("huggingface_hub.HfApi", FakeHub)
    assert round_commands.main(["publish", "--round", str(release), "--repo", "org/round-1"]) == 0
    published = FakeHub.root / "org" / "round-1"
    standings = json.loads((published / "standings.json").read_text())
    assert standings["closed_at"] == at and {s["id"] for s in standings["standings"]} == expected
    assert all(s["identity"] == "(network address)" for s in standings["standings"])  # addresses stay unpublished

    parts = json.loads((published / "parts.json").read_text())["main"]
    full = load_gold(published / "gold", "main")
    private = Gold("main", "test", {t: {rid: full.tasks[t][rid] for rid in parts[t]["private"]} for t in full.tasks})
    assert not set(parts["detection"]["private"]) & set(parts["detection"]["public"])
    for rid, row in table.items():
        sub = parse_submission((published / "predictions" / f"{rid}.jsonl").read_bytes(), full)
        rescored = score_submission(sub, private, n_bootstrap=0)
        assert row["det_bal_acc"] == round(rescored["detection"]["balanced_accuracy"], 1)
        assert row["loc_bal_f1"] == round(rescored["localization"]["balanced_f1"], 1)
        assert row["disc_acc_avg"] == round(rescored["discrimination"]["accuracy"], 1)


def test_the_round_commands_refuse_a_guessable_seed_and_a_used_release_folder(tmp_path, capsys):
    build = build_synthetic_dataset(tmp_path / "build", dialogues=16, variants=("main",))
    ssd.write_card(build, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=7)
    args = ["open", "--build", str(build), "--public-out", str(tmp_path / "p"), "--gold-out", str(tmp_path / "g")]
    assert round_commands.main(args) == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "p").exists()
    (tmp_path / "used").mkdir()
    close = ["close", "--dataset", "p", "--gold", str(tmp_path), "--data-dir", str(tmp_path / "d")]
    assert round_commands.main([*close, "--out", str(tmp_path / "used")]) == 2
    assert "exists; close writes a new release folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        round_commands.main(["publish", "--round", str(tmp_path)])
    assert round_commands.main(["publish", "--round", str(tmp_path), "--repo", "o/r"]) == 2
    assert "not a closed round's release folder" in capsys.readouterr().err
