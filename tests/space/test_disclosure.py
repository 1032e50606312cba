"""What the leaderboard shows (space/disclosure.py): one row per submitter, model name and setting
on any Space; on a blind copy, the round's budget, its closing, and the parts' split."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from scipy.stats import kstest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import RELEASED, BlindRound, grid_level, grid_offset, split_parts
from speakersleuth.space.leaderboard import LeaderboardViews
from speakersleuth.space.store import Metadata, SqliteStore, StoredResult
from speakersleuth.space.submission_page import SubmissionPage
from speakersleuth.space.submitter import Submitter
from tests.support.space_support import predictions
from tests.support.synthetic import build_synthetic_dataset

FORM = {
    "model_name": "Judge A",
    "organisation": "lab",
    "model_type": "other",
    "access": "open",
    "link": "",
    "model_date": "",
}


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


def test_a_blind_round_has_a_daily_budget_and_a_closed_round_takes_nothing_and_ranks_on_the_private_part(
    blind, tmp_path
):
    public, gold_dir = blind
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": str(gold_dir)}, dataset=str(public), data_dir=tmp_path)
    submitter = Submitter(config, SqliteStore(tmp_path), public, variants=["main"], gold=gold_dir, n_bootstrap=0)
    assert submitter.policy.blind and submitter.rate == (5, 86_400)
    gold = submitter.gold("main")
    data = predictions(gold, 3)
    stored = submitter.submit(data, "main", FORM)
    assert stored.status == "accepted" and "public part" in stored.message
    assert submitter.breakdown(stored.record)["metric"].str.endswith("(public part)").all()

    newer = submitter.submit(predictions(gold, 5), "main", FORM)
    other = submitter.submit(predictions(gold, 6), "main", {**FORM, "organisation": "other lab"}, address="10.0.0.9")
    assert newer.status == other.status == "accepted"

    closed = Submitter(
        replace(config, round_closed=True), submitter.store, public, variants=["main"], gold=gold_dir, n_bootstrap=0
    )
    assert closed.submit(predictions(gold, 4), "main", FORM).status == "closed"
    rows = closed.policy.rows(closed.store.results("main"))  # one per identity: its newest file
    assert sorted(record.id for record, _ in rows) == sorted([newer.record.id, other.record.id])
    for record, row in rows:
        raw, step = (
            record.scores["private"]["detection"]["balanced_accuracy"],
            record.scores["private_margin"]["det_bal_acc"],
        )
        assert max(0.0, raw - step) <= row["det_bal_acc"] <= raw  # a line of its grid
        assert not [key for key, value in row.items() if value is not None and key not in RELEASED]
    shown = closed.breakdown(newer.record)
    assert shown["metric"].str.endswith("(private part)").all() and len(shown) == len(RELEASED)
    assert set(closed.breakdown(stored.record)["value"]) == {"not selected"}  # an older file shows nothing private
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "closed"}).round_closed
    with pytest.raises(ValueError, match="ROUND must be open or closed"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "shut"})


def test_the_parts_split_dialogues_evenly_per_scenario_and_the_split_is_a_function_of_the_gold(blind):
    _, gold_dir = blind
    gold = load_gold(gold_dir)
    parts = split_parts(gold)
    for task in gold.tasks:
        for scenario in {row.get("scenario") for row in gold.tasks[task].values()}:
            sizes = [
                sum(row.get("scenario") == scenario for row in part.tasks[task].values())
                for part in (parts.public, parts.private)
            ]
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
    rows = {
        f"d{i:02d}": {
            "id": f"d{i:02d}",
            "dialogue_id": f"dialogue-{i:02d}",
            "answer": "A",
            "source_dataset": "ami",
            "candidate_labels": ["A", "B", "C"],
            "gold_ranking": ["A", "B", "C"],
        }
        for i in range(dialogues)
    }
    return Gold("main", "test", {"discrimination": rows})


def _answering(gold: Gold, right: set[str]) -> bytes:
    """A full file: "A" (right) on the ids in ``right``, "B" (wrong) on every other."""
    return "".join(
        json.dumps({"task": "discrimination", "id": rid, "prediction": "A" if rid in right else "B"}) + "\n"
        for rid in sorted(gold.tasks["discrimination"])
    ).encode()


def _ladder(policy: BlindRound, gold: Gold, right: set[str], history: list[StoredResult]) -> StoredResult:
    """Score the file right on ``right`` against ``history``; the record it would be stored as."""
    scores = policy.score(parse_submission(_answering(gold, right), gold), gold, history)
    return StoredResult(
        f"main-{len(history)}", "main", str(len(history)), Metadata("m"), "ip:x", float(len(history)), 1, scores
    )


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
    """Sixty public instances (a step of 10 x 100/60 = 16.7 points): 10 % released, then 90 %
    released, then 10 % again; a 50 % file does not beat the best so far (90) by a step, whatever
    order the history comes in (it would beat the latest, 10 %, by more than one)."""
    gold = _discrimination_gold(120)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    assert len(public) == 60 and policy.parts(gold).margin["disc_acc_avg"] < 40 - 10
    history: list[StoredResult] = []
    for right, releases in ((6, True), (54, True), (6, False)):
        record = _ladder(policy, gold, set(public[:right]), history)
        assert bool(record.scores["released"]) is releases, (right, record.scores["released"])
        history.append(record)
    for order in (history, history[::-1]):
        middle = _ladder(policy, gold, set(public[:30]), list(order))
        assert middle.scores["public"]["discrimination"]["accuracy"] == pytest.approx(50.0)
        assert middle.scores["released"] == {}, middle.scores["released"]


def test_a_blind_round_refuses_a_file_that_leaves_an_instance_unanswered_in_one_line(blind, tmp_path):
    public, gold_dir = blind
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": str(gold_dir)}, dataset=str(public), data_dir=tmp_path)
    submitter = Submitter(config, SqliteStore(tmp_path), public, variants=["main"], gold=gold_dir, n_bootstrap=0)
    gold = submitter.gold("main")
    lines = [json.loads(line) for line in predictions(gold, 3).decode().splitlines()]
    dropped = next(line["id"] for line in lines if line["task"] == "localization")
    short = [line for line in lines if not (line["task"] == "localization" and line["id"] == dropped)]
    short += [{"task": "localization", "id": dropped, "prediction": None}]  # a null answer is no answer
    result = submitter.submit("".join(json.dumps(line) + "\n" for line in short).encode(), "main", FORM)
    assert result.status == "invalid" and len(result.errors) == 1, result.errors
    n = len(gold.tasks["localization"])
    assert f"without an answer: localization 1 of {n} (e.g. {dropped})" in result.errors[0]
    no_task = [line for line in lines if line["task"] != "discrimination"]
    result = submitter.submit("".join(json.dumps(line) + "\n" for line in no_task).encode(), "main", FORM)
    assert result.status == "invalid" and "discrimination" in result.errors[0] and not submitter.store.results()


def test_one_answer_moves_a_files_level_with_the_probability_its_share_of_a_step(blind):
    """The keyed offset is uniform: over many files, the level of a raw value and of that value
    plus one answer's change differ in the share ``change / step`` of them (the definition of a
    uniform grid offset), and a level lies within a step below its value."""
    key, step, delta, n = b"k" * 32, 10.0, 1.0, 4000
    differ = 0
    for i in range(n):
        offset = grid_offset(key, "public", f"ip:{i}", "main", f"{i:064x}", "det_bal_acc")
        low, high = grid_level(50.0, step, offset), grid_level(50.0 + delta, step, offset)
        assert 50.0 - step < low <= 50.0 and low <= high
        differ += low != high
    share = delta / step
    assert abs(differ / n - share) < 4 * (share * (1 - share) / n) ** 0.5, (differ / n, share)


def test_the_paired_flag_reads_as_a_switch():
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_ALLOW_PAIRED": "1"}).allow_paired
    assert not SpaceConfig.from_env({}).allow_paired
    with pytest.raises(ValueError, match="ALLOW_PAIRED must be 1 or 0"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ALLOW_PAIRED": "maybe"})


def test_each_file_has_its_own_grid_so_one_level_shows_nothing_of_the_next_files(blind):
    """One identity's files with the same raw public detection value, 50 (they differ in
    localization answers only), are shown on grids drawn per file: their first-release levels
    spread uniformly over the step below 50 (Kolmogorov-Smirnov), so learning one file's grid does
    not place the next file's lines; and with a best one step below 50, none of them is released."""
    _, gold_dir = blind
    gold = load_gold(gold_dir)
    policy = BlindRound(n_bootstrap=0)
    step = policy.parts(gold).margin["det_bal_acc"]
    det = [{"task": "detection", "id": rid, "prediction": "consistent"} for rid in gold.tasks["detection"]]
    loc_ids = sorted(gold.tasks["localization"])
    history = [
        StoredResult(
            "main-0",
            "main",
            "0",
            Metadata("m"),
            "ip:x",
            0.0,
            1,
            {"ladder_best": {"det_bal_acc": 50.0 - step}, "released": {}},
        )
    ]
    levels, released = [], 0
    for i in range(300):
        loc = [
            {"task": "localization", "id": rid, "prediction": [1 + (i >> bit & 1)]} for bit, rid in enumerate(loc_ids)
        ]
        loc[0]["prediction"] = [1 + i % 5]
        sub = parse_submission("".join(json.dumps(x) + "\n" for x in det + loc).encode(), gold)
        scores = policy.score(sub, gold, history, "ip:x")
        assert scores["public"]["detection"]["balanced_accuracy"] == 50.0
        first = policy.score(sub, gold, [], "ip:x")["released"]["det_bal_acc"]  # no history: always released
        levels.append(first)
        released += "det_bal_acc" in scores["released"]
    assert released == 0  # 50 never beats (50 - step) + step
    # a level is 50 less a uniform draw of [0, step), shown as 0 when below it
    span = min(step, 50.0)
    zeros, n = sum(level == 0.0 for level in levels), len(levels)
    expected = 1 - span / step
    assert abs(zeros / n - expected) <= 4 * (expected * (1 - expected) / n) ** 0.5 + 1 / n, (zeros, step)
    assert kstest([(50.0 - level) / span for level in levels if level > 0.0], "uniform").pvalue > 0.001
