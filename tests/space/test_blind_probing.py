"""The submitter who probes: an adaptive prober against a blind Space over real HTTP.

The prober knows the public folder (ids, candidate labels, target turn counts) and sends a fixed
number of files through ``/submit``; it reads every reply, every submission page (``/submission``)
and the leaderboard (``/leaderboard``), downloads what is offered, and then names a label for every
hidden instance: a turn instance's gold set of altered turns (``[]`` for S1), a discrimination
instance's answer. Its strategies are the ones an outside audit used on the old Space: one-line
files whose per-scenario breakdown shows the instance's scenario (Det S2/S3) and whose N@1/N@2
give the whole candidate order, single-turn guesses read from Loc R, downloads of other people's
predictions, and, against the Ladder, the boosting attack (random files, majority vote over those
that released a better score).

A blind round takes whole files only (``space.disclosure``), so against it the one-line and
partial files are refused; the many-identity attack with whole files is
``tests/space/test_round_attack.py``.

Statistic: the number of hidden labels the prober names correctly. Bound: the 99.9th percentile
of Binomial(n, 1/3), where 1/3 is the largest prior of any label (the copy is balanced over S1, S2,
S3 and discrimination; the candidate order is a seeded shuffle), i.e. what guessing achieves
with that confidence. The same prober against the same copy with the policy disabled (everything
shown, as on a labelled Space) must exceed the bound: the test has the power to see a leak.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import pytest
from gradio_client import Client, handle_file
from scipy.stats import binom

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import BlindRound, Disclosure
from speakersleuth.space.leaderboard_table import GROUPS
from speakersleuth.space.store import Metadata, StoredResult
from tests.support.space_support import free_port, running_app
from tests.support.synthetic import build_synthetic_dataset

pytestmark = pytest.mark.filterwarnings("ignore")

DIALOGUES = 24  # unpaired: 6 each of S1, S2, S3 and discrimination
SUBMISSIONS = 40
SECRET_SEED = 2**62 + 4242
DURATION_RANGE = re.compile(r"\d+\.\d+\s*[-\u2013]\s*\d+\.\d+\s*s\b")


@pytest.fixture(scope="module")
def blind(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("probing")
    full = build_synthetic_dataset(root / "full", dialogues=DIALOGUES, variants=("main",))
    ssd.write_card(
        full, "# SpeakerSleuth (synthetic)\n\nFor tests only.\n\n## Citation\n\ncite this", build_seed=SECRET_SEED
    )
    ssd.write_blind(full, root / "public", root / "gold", unpaired=True)
    return root / "public", root / "gold"


def hidden_labels(gold_dir: Path) -> dict[tuple[str, str], object]:
    gold = load_gold(gold_dir)
    labels = {
        ("turn", rid): tuple(sorted(row["inconsistent_turns"])) for rid, row in gold.tasks["localization"].items()
    }
    labels.update({("disc", rid): row["answer"] for rid, row in gold.tasks["discrimination"].items()})
    return labels


@dataclass
class Prober:
    """An adaptive submitter with only public knowledge; ``guesses`` are its labels."""

    url: str
    public: Path
    work: Path

    def __post_init__(self) -> None:
        self.client = Client(self.url, verbose=False, download_files=False, analytics_enabled=False)
        turns = ssd.read_rows(self.public, "localization", "test", columns=["id", "target_turn_positions"]).to_pylist()
        self.turns = {row["id"]: len(row["target_turn_positions"]) for row in turns}
        disc = ssd.read_rows(self.public, "discrimination", "test", columns=["id", "candidate_labels"]).to_pylist()
        self.labels = {row["id"]: list(row["candidate_labels"]) for row in disc}
        self.guesses: dict[tuple[str, str], object] = {}
        self.derived: Counter = Counter()
        self.texts: list[str] = []
        self.sent = 0

    # ------------------------------------------------------------------------------- the Space

    def submit(self, lines: list[dict]) -> dict[str, str]:
        """Send one file; returns its breakdown as ``{metric: value}`` (the reply's text is kept)."""
        self.sent += 1
        path = self.work / f"probe-{self.sent}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        status, breakdown, _ = self.client.predict(
            handle_file(str(path)), "main", "probe", "", "other", "open", "", "", "", api_name="/submit"
        )
        self.texts += [status, json.dumps(breakdown)]
        return {row[1]: row[2] for row in breakdown["data"]} if breakdown and breakdown.get("data") else {}

    def page(self, rid: str) -> tuple[dict[str, str], object]:
        details, breakdown, download, analyses, _ = self.client.predict(rid, api_name="/submission")
        self.texts += [details, analyses or "", json.dumps(breakdown)]
        values = {row[1]: row[2] for row in breakdown["data"]} if breakdown and breakdown.get("data") else {}
        return values, download

    def others(self) -> list[str]:
        """Submission ids on the leaderboard (every column group shown)."""
        reply = self.client.predict(list(GROUPS), [], [], api_name="/leaderboard")
        table = reply[0]["value"] if isinstance(reply[0], dict) and "value" in reply[0] else reply[0]
        self.texts.append(json.dumps(table))
        if not table or "Submission id" not in table["headers"]:
            return []
        column = table["headers"].index("Submission id")
        return [row[column] for row in table["data"]]

    # ------------------------------------------------------------------------------ the attack

    def run(self, budget: int) -> None:
        self.read_others()
        self.one_line_files(budget)
        self.boost(budget)

    def read_others(self) -> None:
        """Open every other submission's page; adopt the answers of any predictions offered."""
        for rid in self.others():
            _, download = self.page(rid)
            value = download.get("value") if isinstance(download, dict) else None
            url = (value or {}).get("url")
            if not url:
                continue
            for line in httpx.get(url, timeout=30).text.splitlines():
                entry = json.loads(line)
                if entry["task"] == "localization" and entry["prediction"] is not None:
                    self._derive(("turn", entry["id"]), tuple(sorted(entry["prediction"])), "download")
                elif entry["task"] == "discrimination" and entry["prediction"] is not None:
                    self._derive(("disc", entry["id"]), entry["prediction"], "download")

    def one_line_files(self, budget: int) -> None:
        """Per file: one detection line ("inconsistent"), the same instance's localization with every
        turn, one ranking; then single-turn guesses of the instances found inconsistent."""
        disc_ids = [d for d in self.labels if ("disc", d) not in self.guesses]
        pending = []
        for i, rid in enumerate(t for t in self.turns if ("turn", t) not in self.guesses):
            if self.sent >= budget:
                return
            lines = [
                {"task": "detection", "id": rid, "prediction": "inconsistent"},
                {"task": "localization", "id": rid, "prediction": list(range(1, self.turns[rid] + 1))},
            ]
            disc = disc_ids[i] if i < len(disc_ids) else None
            if disc:
                order = self.labels[disc]
                lines.append({"task": "discrimination", "id": disc, "prediction": order[0], "ranking": order})
            values = self.submit(lines)
            scenario = self._scenario(values)
            if scenario is None:  # no per-scenario values: attack the released score instead
                return self.greedy(budget)
            if scenario == "S1":
                self._derive(("turn", rid), (), "breakdown")
            elif scenario:
                pending.append((rid, scenario))
            if disc:
                self._order(disc, values)
        for rid, scenario in pending:
            for k in range(1, self.turns[rid]):
                if self.sent >= budget:
                    return
                values = self.submit([{"task": "localization", "id": rid, "prediction": [k]}])
                if _number(values.get(f"Loc {scenario} R")):
                    self._derive(("turn", rid), (k,), "breakdown")
                    break
            else:
                self._derive(("turn", rid), (self.turns[rid],), "breakdown")

    def greedy(self, budget: int) -> None:
        """Against a released score: from "consistent" everywhere, flip one instance at a time and
        keep the flips that release a better detection score; a kept flip shows an inconsistent instance."""
        answers = dict.fromkeys(self.turns, "consistent")

        def detection(values: dict[str, str]) -> float | None:
            return next((_number(v) for m, v in values.items() if m.startswith("Det Bal Acc")), None)

        best = detection(
            self.submit([{"task": "detection", "id": rid, "prediction": a} for rid, a in answers.items()])
        )
        for rid in self.turns:
            if self.sent >= budget // 2:
                return
            trial = {**answers, rid: "inconsistent"}
            value = detection(self.submit([{"task": "detection", "id": r, "prediction": a} for r, a in trial.items()]))
            if value is not None and (best is None or value > best):
                answers, best = trial, value
                self._derive(("turn", rid), (1,), "ladder")  # inconsistent; the turn is a guess

    def boost(self, budget: int) -> None:
        """Blum & Hardt's boosting attack: random full files; vote with those that released a better score."""
        rng = random.Random(0)
        votes: dict[tuple[str, str], Counter] = defaultdict(Counter)
        best = -1.0
        while self.sent < budget:
            answers = {
                rid: () if rng.random() < 1 / 3 else (rng.randrange(1, self.turns[rid] + 1),) for rid in self.turns
            }
            lines = [
                {"task": "detection", "id": rid, "prediction": "inconsistent" if a else "consistent"}
                for rid, a in answers.items()
            ]
            lines += [{"task": "localization", "id": rid, "prediction": list(a)} for rid, a in answers.items()]
            values = self.submit(lines)
            released = [_number(v) for m, v in values.items() if m.startswith(("Det Bal Acc", "Loc Bal F1"))]
            released = [v for v in released if v is not None]
            if released and max(released) > best:
                best = max(released)
                for rid, a in answers.items():
                    votes[("turn", rid)][a] += 1
        for label, counter in votes.items():
            if label not in self.guesses:
                self.guesses[label] = counter.most_common(1)[0][0]
                self.derived["boosting"] += 1

    def _scenario(self, values: dict[str, str]) -> str | None:
        s1, s2, s3 = (_number(values.get(f"Det {s}")) for s in ("S1", "S2", "S3"))
        if None in (s1, s2, s3):
            return None
        return "S2" if s2 else "S3" if s3 else "S1"

    def _order(self, disc: str, values: dict[str, str]) -> None:
        """N@1 and N@2 of one ranked instance (the others unranked score 0) give its gold order."""
        n1, n2 = _number(values.get("N@1")), _number(values.get("N@2"))
        if n1 is None or n2 is None:
            return
        n = len(self.labels)
        gains = {0: 0.0, 1: 1.0, 3: 3.0}
        first = min(gains, key=lambda g: abs(g / 3 / n * 100 - n1))
        ideal = 3 + 1 / 1.5849625
        second = min(
            (g for g in gains if g != first), key=lambda g: abs((first + g / 1.5849625) / ideal / n * 100 - n2)
        )
        order = self.labels[disc]
        answer = order[0] if first == 3 else order[1] if second == 3 else order[2]
        self._derive(("disc", disc), answer, "breakdown")

    def _derive(self, label: tuple[str, str], value, how: str) -> None:
        if label not in self.guesses:
            self.guesses[label] = value
            self.derived[how] += 1

    def final(self) -> dict[tuple[str, str], object]:
        """A label for every hidden instance: what was derived, else the best guess without information."""
        out = {("turn", rid): () for rid in self.turns} | {("disc", d): self.labels[d][0] for d in self.labels}
        return out | self.guesses


def perfect_file(gold) -> bytes:
    """Every gold answer (another submitter's excellent judge)."""
    lines = [
        {"task": "detection", "id": rid, "prediction": row["label"]} for rid, row in gold.tasks["detection"].items()
    ]
    lines += [
        {"task": "localization", "id": rid, "prediction": list(row["inconsistent_turns"])}
        for rid, row in gold.tasks["localization"].items()
    ]
    lines += [
        {"task": "discrimination", "id": rid, "prediction": row["answer"], "ranking": list(row["gold_ranking"])}
        for rid, row in gold.tasks["discrimination"].items()
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def attack(public: Path, gold_dir: Path, tmp_path: Path, policy, *, victim: bool = True) -> tuple[int, int, Prober]:
    """Serve the blind copy with ``policy``, store a perfect submission of another identity (with
    ``victim``), run the prober for ``SUBMISSIONS`` files; returns (labels named correctly, the
    guessing bound, prober)."""
    config = replace(
        SpaceConfig.from_env({}, dataset=str(public), gold=str(gold_dir), data_dir=tmp_path / "data"),
        port=free_port(),
        rate_limit=1000,
        blind_rate_limit=1000,
    )
    truth = hidden_labels(gold_dir)
    with running_app(config, n_bootstrap=20, policy=policy) as (app, url):
        if victim:
            stored = app.submitter.submit(
                perfect_file(app.submitter.gold("main")),
                "main",
                {"model_name": "a good judge", "organisation": "lab"},
                as_user="hf:victim",
            )
            assert stored.status == "accepted", stored.message
        prober = Prober(url, public, tmp_path)
        prober.run(SUBMISSIONS)
    guesses = prober.final()
    correct = sum(guesses[label] == value for label, value in truth.items())
    bound = int(binom.ppf(0.999, len(truth), 1 / 3))
    return correct, bound, prober


def test_a_prober_recovers_no_more_hidden_labels_than_guessing(blind, tmp_path):
    public, gold_dir = blind
    correct, bound, prober = attack(public, gold_dir, tmp_path, None)
    assert prober.sent == SUBMISSIONS
    assert correct <= bound, (correct, bound, prober.derived)
    assert prober.derived["download"] == prober.derived["breakdown"] == prober.derived["ladder"] == 0, prober.derived
    assert not [t for t in prober.texts if DURATION_RANGE.search(t)]  # no quartile boundary to match clip durations


@pytest.mark.parametrize("victim", [True, False], ids=["downloads", "breakdowns"])
def test_the_same_prober_recovers_the_labels_when_the_policy_is_off(blind, tmp_path, victim):
    """The test's power: with everything shown (a labelled Space's policy) on the same blind copy,
    the prober's count passes the bound, through another's downloadable predictions, or without
    any other submission through the breakdowns alone."""
    public, gold_dir = blind
    correct, bound, prober = attack(public, gold_dir, tmp_path, Disclosure(n_bootstrap=20), victim=victim)
    assert correct > bound, (correct, bound, prober.derived)
    assert prober.derived["download" if victim else "breakdown"] > bound, prober.derived
    assert not victim or [t for t in prober.texts if DURATION_RANGE.search(t)]


def test_one_line_differencing_never_releases_a_value(blind, tmp_path):
    """Against the Ladder alone (no budget): after a first file, files that each change one answer
    release nothing, whichever answer they change."""
    public, gold_dir = blind
    policy = BlindRound(n_bootstrap=0)
    gold = load_gold(gold_dir)
    parts = policy.parts(gold)
    base = [{"task": "detection", "id": rid, "prediction": "consistent"} for rid in gold.tasks["detection"]]
    history = []
    first = policy.score(parse_submission("".join(json.dumps(x) + "\n" for x in base).encode(), gold), gold, history)
    history.append(StoredResult("main-0", "main", "0", Metadata("m"), "ip:x", 0.0, len(base), first))
    for i, line in enumerate(base):
        changed = [dict(x) for x in base]
        changed[i]["prediction"] = "inconsistent"
        scores = policy.score(
            parse_submission("".join(json.dumps(x) + "\n" for x in changed).encode(), gold), gold, history
        )
        assert scores["released"] == {}, (i, scores["released"], parts.step)


def _number(text: str | None) -> float | None:
    """A breakdown value as a number (None: "n/a", "not released" or absent)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
