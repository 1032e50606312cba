"""What the leaderboard shows (space/disclosure.py): one row per submitter, model name and setting
on any Space; on a blind copy, the round's budget, its closing, and the parts' split."""

from __future__ import annotations

import itertools
import json
import math
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import Gold, load_gold, parse_submission
from speakersleuth.space import about
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import RELEASED, BlindRound, frozen_selection, headline, split_parts
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


def _round(public: Path, gold_dir: Path, data_dir: Path, *, closed_at=None, clock=None) -> Submitter:
    """A Submitter of the blind copy over the store in ``data_dir``; ``closed_at``: the round closed then."""
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": str(gold_dir)}, dataset=str(public), data_dir=data_dir)
    config = replace(config, round_closed_at=closed_at)
    extra = {"clock": clock} if clock else {}
    return Submitter(config, SqliteStore(data_dir), public, variants=["main"], gold=gold_dir, n_bootstrap=0, **extra)


def _private_flipped(data: bytes, gold: Gold) -> bytes:
    """``data`` with every answer on the private part changed (detection and localization flipped,
    discrimination's ranking rotated); its public answers are the same."""
    private = BlindRound.parts(gold).private.tasks
    lines = []
    for line in map(json.loads, data.decode().splitlines()):
        if line["id"] in private.get(line["task"], {}):
            if line["task"] == "detection":
                line["prediction"] = "consistent" if line["prediction"] == "inconsistent" else "inconsistent"
            elif line["task"] == "localization":
                line["prediction"] = [] if line["prediction"] else [1]
            else:
                line["ranking"] = line["ranking"][1:] + line["ranking"][:1]
                line["prediction"] = line["ranking"][0]
        lines.append(json.dumps(line))
    return ("\n".join(lines) + "\n").encode()


def _everything_shown(submitter: Submitter, files: list[bytes], downloads: Path) -> str:
    """What the open round shows of ``files`` sent in turn by one identity: each reply, each
    breakdown, each page, the leaderboard's rows and the About text; ids and hashes blanked."""
    shown, page = [], SubmissionPage(submitter, downloads)
    for data in files:
        result = submitter.submit(data, "main", FORM)
        details, frame, _, note, _ = page.show(result.record.id)
        shown += [result.status, result.message, frame.to_dict("records"), details, note]
    views = LeaderboardViews(submitter.store, ["main"], downloads / "exports", submitter.policy)
    shown.append([row for _, row in views.view_of("main").entries])
    shown.append(about.disclosure_text(submitter.policy, submitter.rate))
    text = json.dumps(shown)
    for n, record in enumerate(submitter.store.results("main")):
        text = text.replace(record.id, f"<id {n}>").replace(record.sha256, f"<sha {n}>")
    return text


def test_nothing_private_is_shown_while_the_round_is_open(blind, tmp_path):
    """Rule 1. Two rounds, one identity sending three files in each; the second round's files are
    the first's with every private answer changed (so their private scores differ): every reply,
    breakdown, page, leaderboard row and the About text are the same in both."""
    public, gold_dir = blind
    gold = load_gold(gold_dir)
    files = [predictions(gold, pattern) for pattern in (3, 5, 0xFFFFF)]
    flipped = [_private_flipped(data, gold) for data in files]
    rounds = [_round(public, gold_dir, tmp_path / name, clock=itertools.count(1_000_000).__next__) for name in "ab"]
    seen = [_everything_shown(r, f, tmp_path / f"pages-{i}") for i, (r, f) in enumerate(zip(rounds, (files, flipped)))]
    private = [[r.scores["private"] for r in submitter.store.results("main")] for submitter in rounds]
    assert private[0] != private[1]  # the private part scored differently...
    public_scores = [[headline(r.scores["public"]) for r in submitter.store.results("main")] for submitter in rounds]
    assert public_scores[0] == public_scores[1]
    assert seen[0] == seen[1]  # ...and nothing shown tells them apart


def test_the_selection_freezes_at_the_close(blind, tmp_path):
    """Rule 2. Each identity's selected file is its newest stored before the close and not withdrawn
    before it; a file stored, or a withdrawal made, after the close changes nothing."""
    public, gold_dir = blind
    gold = load_gold(gold_dir)
    now = [0.0]
    open_round = _round(public, gold_dir, tmp_path, clock=lambda: now[0])

    def at(moment: float, action):
        now[0] = moment
        return action()

    a1, a2, a3 = (
        at(t, lambda p=p: open_round.submit(predictions(gold, p), "main", FORM).record)
        for t, p in ((100, 3), (200, 5), (300, 6))
    )
    b1 = at(
        400,
        lambda: (
            open_round.submit(predictions(gold, 7), "main", {**FORM, "organisation": "b"}, address="10.0.0.9").record
        ),
    )
    assert at(500, lambda: open_round.withdraw(a3.id).status) == "withdrawn"  # before the close
    late = at(600, lambda: open_round.submit(predictions(gold, 9), "main", FORM).record)  # after the close
    open_round.store.withdraw(b1.id, b1.submitter, now=700.0)  # after the close, behind the Space's back
    closed = _round(public, gold_dir, tmp_path, closed_at=550.0)
    records = closed.store.results("main", include_withdrawn=True)
    frozen = frozen_selection(records, 550.0)
    assert {key: r.id for key, r in frozen.items()} == {("main", a2.submitter): a2.id, ("main", b1.submitter): b1.id}
    assert sorted(r.id for r, _ in closed.policy.rows(records)) == sorted([a2.id, b1.id])
    assert [closed.policy.selected(r, records) for r in (a1, a2, a3, late, b1)] == [False, True, False, False, True]
    assert not BlindRound(n_bootstrap=0).selected(a2, records)  # an open round selects nothing


def test_a_closed_round_takes_no_file_and_no_withdrawal_and_shows_the_selections_private_figures(blind, tmp_path):
    """Rule 2. After the close a new file and a withdrawal are refused and change nothing; the table
    shows one row per identity, its selected file's private headline metrics (to 0.1), which are the
    scorer's values on the private part; other files show nothing private."""
    public, gold_dir = blind
    gold = load_gold(gold_dir)
    open_round = _round(public, gold_dir, tmp_path)
    assert open_round.policy.blind and open_round.rate == (5, 86_400)
    older = open_round.submit(predictions(gold, 3), "main", FORM)
    assert older.status == "accepted" and "public part" in older.message
    assert open_round.breakdown(older.record)["metric"].str.endswith("(public part)").all()
    newer = open_round.submit(predictions(gold, 5), "main", FORM).record
    other = open_round.submit(predictions(gold, 6), "main", {**FORM, "organisation": "o"}, address="10.0.0.9").record

    closed = _round(public, gold_dir, tmp_path, closed_at=math.inf)
    before = closed.policy.rows(closed.store.results("main", include_withdrawn=True))
    assert closed.submit(predictions(gold, 4), "main", FORM).status == "closed"
    refused = closed.withdraw(newer.id)
    assert refused.status == "closed" and "froze at the close" in refused.message
    records = closed.store.results("main", include_withdrawn=True)
    assert len(records) == 3 and all(r.withdrawal is None for r in records)
    after = closed.policy.rows(records)
    assert [(r.id, row) for r, row in after] == [(r.id, row) for r, row in before]
    assert sorted(r.id for r, _ in after) == sorted([newer.id, other.id])
    private = BlindRound.parts(gold).private
    for record, row in after:
        sub = parse_submission(closed.store.predictions(record.id), gold)
        expected = score_submission(sub, private, n_bootstrap=0)
        assert row["det_bal_acc"] == round(expected["detection"]["balanced_accuracy"], 1)
        assert row["loc_bal_f1"] == round(expected["localization"]["balanced_f1"], 1)
        assert row["disc_acc_avg"] == round(expected["discrimination"]["accuracy"], 1)
        assert not [key for key, value in row.items() if value is not None and key not in RELEASED]
    shown = closed.breakdown(newer)
    assert shown["metric"].str.endswith("(private part)").all() and len(shown) == len(RELEASED)
    assert set(closed.breakdown(older.record)["value"]) == {"not selected"}  # an older file shows nothing private


def test_the_round_state_reads_from_the_environment():
    assert SpaceConfig.from_env({}).round_closed_at is None
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "closed"}).round_closed_at == math.inf
    at = SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "closed", "SPEAKERSLEUTH_ROUND_CLOSED_AT": "1970-01-02T00:00"})
    assert at.round_closed and at.round_closed_at == 86_400.0
    with pytest.raises(ValueError, match="ROUND must be open or closed"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "shut"})
    with pytest.raises(ValueError, match="ROUND_CLOSED_AT must be an ISO 8601 time, got 'soon'"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND": "closed", "SPEAKERSLEUTH_ROUND_CLOSED_AT": "soon"})
    with pytest.raises(ValueError, match="ROUND_CLOSED_AT is set"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ROUND_CLOSED_AT": "1970-01-02T00:00"})


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
    assert BlindRound().parts(gold).step == parts.step


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


def test_the_ladder_step_is_strictly_more_than_one_answer_moves_the_metric():
    """Three public instances: one answer moves accuracy by 100/3 = 33.33... points, a value the
    0.1 grid cannot hold; a step equal to its truncation (33.3) would let a one-answer step
    release. From every best (0, 1 or 2 of 3 right), the file one more answer right releases nothing."""
    gold = _discrimination_gold(6)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    assert len(public) == 3
    assert policy.parts(gold).step["disc_acc_avg"] == 33.4
    for k in range(3):
        first = _ladder(policy, gold, set(public[:k]), [])
        assert "disc_acc_avg" in first.scores["released"]  # a first file releases
        step = _ladder(policy, gold, set(public[: k + 1]), [first])
        assert step.scores["public"]["discrimination"]["accuracy"] == pytest.approx(100 * (k + 1) / 3, abs=1e-3)
        assert step.scores["released"] == {}, (k, step.scores["released"])


def test_the_ladder_best_so_far_is_the_best_released_value_not_the_latest():
    """Sixty public instances (a step of 100/60 = 1.7 points): 10 % released, then 90 %
    released, then 10 % again; a 50 % file does not beat the best so far (90) by a step, whatever
    order the history comes in (it would beat the latest, 10 %, by more than one)."""
    gold = _discrimination_gold(120)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    assert len(public) == 60 and policy.parts(gold).step["disc_acc_avg"] == 1.7
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


def test_the_ladder_releases_two_answers_over_the_best_and_never_one_on_a_grid_of_one_answers_step():
    """Sixty public instances, η = 100/60 rounded up = 1.7 points. Best 50 % (30 right): 31 right
    (51.67, one answer more) is held back; 32 right (53.33) is released as 31 x 1.7 = 52.7, the
    grid line at or below it; a file 30 answers right of another identity is released at 49.3."""
    gold = _discrimination_gold(120)
    policy = BlindRound(n_bootstrap=0)
    public = sorted(policy.parts(gold).public.tasks["discrimination"])
    best = _ladder(policy, gold, set(public[:30]), [])
    assert best.scores["released"] == {"disc_acc_avg": 49.3}  # 29 x 1.7; its first file, so released
    assert _ladder(policy, gold, set(public[:31]), [best]).scores["released"] == {}
    two = _ladder(policy, gold, set(public[:32]), [best])
    assert two.scores["released"] == {"disc_acc_avg": 52.7}
    assert two.scores["ladder_best"] == {"disc_acc_avg": pytest.approx(100 * 32 / 60)}
    even = _discrimination_gold(80)  # 40 public: one answer is 2.5 points, exactly η
    public = sorted(policy.parts(even).public.tasks["discrimination"])
    assert policy.parts(even).step["disc_acc_avg"] == 2.5
    best = _ladder(policy, even, set(public[:20]), [])
    assert _ladder(policy, even, set(public[:21]), [best]).scores["released"] == {}  # 52.5 is not more than 50 + 2.5
    assert _ladder(policy, even, set(public[:22]), [best]).scores["released"] == {"disc_acc_avg": 55.0}


def test_the_ladder_step_is_one_answers_largest_reach_on_the_public_part(blind):
    """η of each metric, from the public part's counts: detection and localization weigh S1 by 1/2
    and S2, S3 by 1/4 each (balanced over scenarios), so one answer reaches 100 x weight / count of
    its scenario; discrimination 100 / count; rounded up to 0.1, at least 0.5."""
    _, gold_dir = blind
    gold = load_gold(gold_dir)
    parts = BlindRound.parts(gold)
    weights = {"S1": 0.5, "S2": 0.25, "S3": 0.25}
    for key, task in (("det_bal_acc", "detection"), ("loc_bal_f1", "localization")):
        counts = Counter(row["scenario"] for row in parts.public.tasks[task].values())
        reach = max(100 * weights[s] / n for s, n in counts.items())
        assert parts.step[key] == max(0.5, math.ceil(round(reach * 10, 6)) / 10), (key, counts)
    n = len(parts.public.tasks["discrimination"])
    assert parts.step["disc_acc_avg"] == max(0.5, math.ceil(round(1000 / n, 6)) / 10)


def test_files_one_identity_sends_at_once_are_scored_one_after_another(blind, tmp_path, monkeypatch):
    """Per-identity serialisation (the Ladder's one release at a time). Two files with the same
    public answers sent at once by one identity, scoring slowed so that both would read an empty
    history without the lock: the second is compared with the first's best and not released;
    another identity's file is."""
    public, gold_dir = blind
    gold = load_gold(gold_dir)
    submitter = _round(public, gold_dir, tmp_path)
    slow = submitter.policy.score

    def slowly(*args, **kwargs):
        time.sleep(0.3)
        return slow(*args, **kwargs)

    monkeypatch.setattr(submitter.policy, "score", slowly)
    data = predictions(gold, 3)
    mine, theirs = (FORM, "127.0.0.1"), ({**FORM, "organisation": "other"}, "10.0.0.2")
    sends = [(data, *mine), (_private_flipped(data, gold), *mine), (predictions(gold, 5), *theirs)]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda s: submitter.submit(s[0], "main", s[1], address=s[2]), sends))
    assert [r.status for r in results] == ["accepted"] * 3
    ordered = sorted(results[:2], key=lambda r: r.record.created_at)
    assert [bool(r.record.scores["released"]) for r in ordered] == [True, False]
    assert results[2].record.scores["released"]


def test_the_paired_flag_reads_as_a_switch():
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_ALLOW_PAIRED": "1"}).allow_paired
    assert not SpaceConfig.from_env({}).allow_paired
    with pytest.raises(ValueError, match="ALLOW_PAIRED must be 1 or 0"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_ALLOW_PAIRED": "maybe"})
