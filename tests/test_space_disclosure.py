"""What the leaderboard shows (space/disclosure.py): one row per submitter, model name and setting
on any Space; on a blind copy, the round's budget, its closing, and the parts' split."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import speakersleuth_dataset as ssd
from metrics.submission import Gold, load_gold, parse_submission
from space.config import SpaceConfig
from space.disclosure import BlindRound, split_parts
from space.leaderboard import LeaderboardViews
from space.store import SqliteStore
from space.submission_page import SubmissionPage
from space.submit import Submitter
from space.store import Metadata, StoredResult
from tests.space_support import predictions
from tests.synthetic import build_synthetic_dataset

FORM = {"model_name": "Judge A", "organisation": "lab", "model_type": "other", "access": "open", "link": "", "model_date": ""}


@pytest.fixture(scope="module")
def blind(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("blind-round")
    full = build_synthetic_dataset(root / "full", dialogues=8, variants=("main",))
    ssd.write_card(full, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=2**62 + 7)
    ssd.write_blind(full, root / "public", root / "gold", unpaired=True)
    return root / "public", root / "gold"


def test_a_flood_of_one_model_is_one_row_the_newest_with_its_history_on_the_page(make, gold, tmp_path):
    submitter = make(rate_limit=100)
    spellings = ["Judge A", "judge a", "JUDGE-A", "Judge  A", "judge_a"]  # one name as a reader sees it
    ids = []
    for i, name in enumerate(spellings):
        result = submitter.submit(predictions(gold, i + 1), "main", {**FORM, "model_name": name})
        assert result.status == "accepted", result.message
        ids.append(result.record.id)
    tagged = submitter.submit(predictions(gold, 9), "main", {**FORM, "setting": "context"})
    other = submitter.submit(predictions(gold, 10), "main", {**FORM, "model_name": "Judge B"})
    views = LeaderboardViews(submitter.store, ["main"], tmp_path / "exports", submitter.policy)
    shown = [record.id for record, _ in views.view_of("main").entries]
    assert sorted(shown) == sorted([ids[-1], tagged.record.id, other.record.id])
    page = SubmissionPage(submitter, tmp_path / "downloads")
    details = page.show(ids[-1])[0]
    assert all(rid in details for rid in ids) and tagged.record.id not in details and "(this page)" in details


def test_a_blind_round_has_a_daily_budget_and_a_closed_round_takes_nothing_and_ranks_on_the_private_part(blind, tmp_path):
    public, gold_dir = blind
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": str(gold_dir)}, dataset=str(public), data_dir=tmp_path)
    submitter = Submitter(config, SqliteStore(tmp_path), public, variants=["main"], gold=gold_dir, n_bootstrap=0)
    assert submitter.policy.blind and submitter.rate == (5, 86_400)
    gold = submitter.gold("main")
    data = predictions(gold, 3)
    stored = submitter.submit(data, "main", FORM)
    assert stored.status == "accepted" and "public part" in stored.message
    assert submitter.breakdown(stored.record)["metric"].str.endswith("(public part)").all()

    closed = Submitter(replace(config, round_closed=True), submitter.store, public, variants=["main"], gold=gold_dir, n_bootstrap=0)
    assert closed.submit(predictions(gold, 4), "main", FORM).status == "closed"
    ((record, row),) = closed.policy.rows(closed.store.results("main"))
    assert row["det_bal_acc"] == round(record.scores["private"]["detection"]["balanced_accuracy"], 1)
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "closed"}).round_closed
    with pytest.raises(ValueError, match="ROUND must be open or closed"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "shut"})


def test_the_parts_split_dialogues_evenly_per_scenario_and_the_split_is_a_function_of_the_gold(blind):
    _, gold_dir = blind
    gold = load_gold(gold_dir)
    parts = split_parts(gold)
    for task in gold.tasks:
        for scenario in {row.get("scenario") for row in gold.tasks[task].values()}:
            sizes = [sum(row.get("scenario") == scenario for row in part.tasks[task].values()) for part in (parts.public, parts.private)]
            assert abs(sizes[0] - sizes[1]) <= 1 and min(sizes) >= 1, (task, scenario, sizes)
    public_dialogues = {row["dialogue_id"] for rows in parts.public.tasks.values() for row in rows.values()}
    private_dialogues = {row["dialogue_id"] for rows in parts.private.tasks.values() for row in rows.values()}
    assert not public_dialogues & private_dialogues
    assert split_parts(load_gold(gold_dir)).public.tasks == parts.public.tasks  # the same after a restart
    assert BlindRound().parts(gold).margin == parts.margin


def test_a_blind_copy_too_small_for_two_parts_is_refused_with_the_reason(tmp_path):
    full = build_synthetic_dataset(tmp_path / "full", dialogues=4, variants=("main",))
    ssd.write_card(full, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=2**62 + 9)
    ssd.write_blind(full, tmp_path / "public", tmp_path / "gold", unpaired=True)
    with pytest.raises(ValueError, match="too small for a round"):
        split_parts(load_gold(tmp_path / "gold"))


def _discrimination_gold(dialogues: int) -> Gold:
    """A gold of ``dialogues`` discrimination instances, one per dialogue, each answered by "A"."""
    rows = {f"d{i:02d}": {"id": f"d{i:02d}", "dialogue_id": f"dialogue-{i:02d}", "answer": "A", "source_dataset": "ami",
                          "candidate_labels": ["A", "B", "C"], "gold_ranking": ["A", "B", "C"]} for i in range(dialogues)}
    return Gold("main", "test", {"discrimination": rows})


def _answering(gold: Gold, right: set[str]) -> bytes:
    """A full file: "A" (right) on the ids in ``right``, "B" (wrong) on every other."""
    return "".join(json.dumps({"task": "discrimination", "id": rid, "prediction": "A" if rid in right else "B"}) + "\n"
                   for rid in sorted(gold.tasks["discrimination"])).encode()


def _ladder(policy: BlindRound, gold: Gold, right: set[str], history: list[StoredResult]) -> StoredResult:
    """Score the file right on ``right`` against ``history``; the record it would be stored as."""
    scores = policy.score(parse_submission(_answering(gold, right), gold), gold, history)
    return StoredResult(f"main-{len(history)}", "main", str(len(history)), Metadata("m"), "ip:x", float(len(history)), 1, scores)


def test_the_ladder_margin_is_strictly_more_than_one_answer_moves_the_metric():
    """Three public instances: one answer moves accuracy by 100/3 = 33.33... points, a value the
    0.1 grid cannot hold; a margin equal to its truncation (33.3) would let a one-answer step
    release. From every best (0, 1 or 2 of 3 right), the file one more answer right releases nothing."""
    gold = _discrimination_gold(6)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    assert len(public) == 3
    assert policy.parts(gold).margin["disc_acc_avg"] > 100 / 3
    for k in range(3):
        first = _ladder(policy, gold, set(public[:k]), [])
        assert "disc_acc_avg" in first.scores["released"]  # a first file releases
        step = _ladder(policy, gold, set(public[: k + 1]), [first])
        assert step.scores["public"]["discrimination"]["accuracy"] == pytest.approx(100 * (k + 1) / 3, abs=1e-3)
        assert step.scores["released"] == {}, (k, step.scores["released"])


def test_the_ladder_best_so_far_is_the_best_released_value_not_the_latest():
    """Ten public instances (margin about 10 points): 10 % released, then 90 % released, then 10 %
    again; a 50 % file does not beat the best so far (90), whatever order the history comes in."""
    gold = _discrimination_gold(20)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    assert len(public) == 10 and policy.parts(gold).margin["disc_acc_avg"] < 40
    history: list[StoredResult] = []
    for right, releases in ((1, True), (9, True), (1, False)):
        record = _ladder(policy, gold, set(public[:right]), history)
        assert bool(record.scores["released"]) is releases, (right, record.scores["released"])
        history.append(record)
    for order in (history, history[::-1]):
        middle = _ladder(policy, gold, set(public[:5]), list(order))
        assert middle.scores["public"]["discrimination"]["accuracy"] == pytest.approx(50.0)
        assert middle.scores["released"] == {}, middle.scores["released"]
