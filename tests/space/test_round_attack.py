"""Many identities against a blind round, over HTTP, for the whole life of the round.

The attacker opens ``IDENTITIES`` identities (``X-Forwarded-For`` from 127.0.0.1, uvicorn's trusted
proxy, stands in for separate accounts) and sends ``FILES`` whole files from each, all of one
identity's files at once (racing). Every file is the constant file (every instance "consistent",
no turn, candidate A), whose detection and localization scores are exactly 50 on any part, with
one test instance changed: "inconsistent" with one guessed turn. One answer decides whether that
file's score is above or below 50, so a shown value that falls on one side of 50 (the first
release of an identity; after the round closes, the identity's selected file) names the
instance's label: the issue's grid-edge and planting attacks. It reads every reply, the open
and the closed leaderboard, and pages of files that are not selected.

Statistic: the hidden labels the attacker names correctly, on the public part and on the private
part, each against the 99.9th percentile of Binomial(n, 1/3) (guessing). Power: the same
attacker fed the raw values of the same files (what the old rule's grid edge gave away)
passes the bound. Copies: an unpaired demo-size copy and a paired copy with >= 300 instances
per part (served with ``allow_paired``, whose banner the page shows).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from gradio_client import Client
from scipy.stats import binom

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.blind as ssd_blind
import tests.support.synthetic as synthetic
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import BlindRound
from speakersleuth.space.leaderboard_table import GROUPS
from tests.support.space_support import free_port, running_app

pytestmark = pytest.mark.filterwarnings("ignore")

IDENTITIES, FILES = 60, 5
SECRET_SEED = 2**62 + 4141


@contextmanager
def short_tones(factor: float = 20.0):
    """Synthetic clips ``factor`` times shorter: the copies here are about labels, not audio."""
    original = synthetic.tone
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(synthetic, "tone", lambda f0, seconds, seed: original(f0, seconds / factor, seed))
        yield


def blind_copy(root: Path, dialogues: int, *, unpaired: bool) -> tuple[Path, Path]:
    """A blind copy whose ids' secret is fixed, so that its gold, and so the keyed split and grid
    offsets, are the same on every run: the test's figures move only with the race's order."""
    with short_tones():
        full = synthetic.build_synthetic_dataset(root / "full", dialogues=dialogues, variants=("main",))
    ssd.write_card(full, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=SECRET_SEED)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssd_blind.secrets, "token_bytes", lambda n: b"\x29" * n)
        ssd.write_blind(full, root / "public", root / "gold", unpaired=unpaired)
    return root / "public", root / "gold"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Unpaired, demo-size: 64 instances (one per dialogue), about 32 per part."""
    return blind_copy(tmp_path_factory.mktemp("demo"), 64, unpaired=True)


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    """Paired: 150 dialogues x (S1, S2, S3, discrimination) = 600 instances, 300 per part."""
    return blind_copy(tmp_path_factory.mktemp("paired"), 150, unpaired=False)


def constant_lines(gold) -> dict[tuple[str, str], dict]:
    lines = {("detection", rid): {"prediction": "consistent"} for rid in gold.tasks["detection"]}
    lines |= {("localization", rid): {"prediction": []} for rid in gold.tasks["localization"]}
    lines |= {
        ("discrimination", rid): {"prediction": "A", "ranking": ["A", "B", "C"]}
        for rid in gold.tasks["discrimination"]
    }
    return lines


def probe_file(base: dict, target: str, turn: int, identity: int) -> bytes:
    """The constant file with ``target`` answered "inconsistent", altered turn ``turn``; one
    discrimination rankings (not their answers, so not the released accuracy) spell the identity in binary.
    """
    discs = sorted(rid for task, rid in base if task == "discrimination")
    lines = dict(base) | {
        ("detection", target): {"prediction": "inconsistent"},
        ("localization", target): {"prediction": [turn]},
    }
    lines |= {
        ("discrimination", rid): {"prediction": "A", "ranking": ["A", "C", "B"]}
        for bit, rid in enumerate(discs)
        if identity >> bit & 1
    }
    return "".join(
        json.dumps({"task": task, "id": rid, **answer}) + "\n" for (task, rid), answer in lines.items()
    ).encode()


def send(base_url: str, address: str, name: str, data: bytes) -> list:
    """One file through Gradio's HTTP API as ``address``; returns the submit event's outputs."""
    with httpx.Client(base_url=base_url, headers={"X-Forwarded-For": address}, timeout=300) as http:
        (path,) = http.post("/gradio_api/upload", files={"files": (f"{name}.jsonl", data)}).json()
        body = {
            "data": [
                {"path": path, "meta": {"_type": "gradio.FileData"}},
                "main",
                "probe",
                name,
                "other",
                "open",
                "",
                "",
                "",
            ]
        }
        event = http.post("/gradio_api/call/submit", json=body).json()["event_id"]
        stream = http.get(f"/gradio_api/call/submit/{event}").text
    _, _, data_line = stream.partition("event: complete\ndata: ")
    assert data_line, stream[-500:]
    return json.loads(data_line.splitlines()[0])


def shown_values(breakdown: dict) -> dict[str, str]:
    return {row[1]: row[2] for row in breakdown.get("data", [])} if breakdown else {}


def label_from(det: float | None, loc: float | None, step: tuple[float, float], turn: int, turns: int) -> tuple | None:
    """What a shown detection and localization value (``None``: none shown) says of the target:
    ``(its gold set of altered turns, whether that is certain)``, or None. The constant file scores
    50; changing the target moves the score below 50 (an S1 instance) or above it (an
    inconsistent one; for localization, with the right turn)."""
    below = lambda value, s: value is not None and value <= 50 - s - 0.05  # noqa: E731 - raw below 50 for sure
    above = lambda value: value is not None and value > 50.05  # noqa: E731
    if below(det, step[0]) or below(loc, step[1]):
        return (), True
    if above(loc):
        return (turn,), True
    if above(det):
        return (turn % turns + 1,), False  # inconsistent, not at the guessed turn: a guess among the others
    return None


def run_round(public: Path, gold_dir: Path, tmp_path: Path, *, allow_paired: bool) -> dict:
    """Serve the copy, race ``FILES`` probes from each of ``IDENTITIES`` identities, close the round,
    read it again; returns what the attacker saw and what the server stored."""
    config = replace(
        SpaceConfig.from_env({}, dataset=str(public), gold=str(gold_dir), data_dir=tmp_path / "data"),
        port=free_port(),
        concurrency=FILES,
        allow_paired=allow_paired,
    )
    gold = load_gold(gold_dir)
    base = constant_lines(gold)
    rows = ssd.read_rows(public, "localization", "test", columns=["id", "target_turn_positions"]).to_pylist()
    turns = {row["id"]: len(row["target_turn_positions"]) for row in rows}  # public: the attacker's knowledge
    turn_ids = sorted(turns)
    plan = {}  # (identity, file) -> (target, turn)
    for j in range(IDENTITIES):
        for f in range(FILES):
            n = j * FILES + f
            target = turn_ids[n % len(turn_ids)]
            plan[j, f] = target, (n // len(turn_ids)) % turns[target] + 1
    files = {key: probe_file(base, *plan[key], key[0]) for key in plan}
    with running_app(config, n_bootstrap=0) as (app, url):
        page = httpx.get(url, timeout=60).text + httpx.get(f"{url.rstrip('/')}/config", timeout=60).text
        with ThreadPoolExecutor(max_workers=2 * FILES) as pool:
            futures = {
                key: pool.submit(send, url.rstrip("/"), f"10.9.{key[0]}.1", f"lab {key[0]}", files[key])
                for key in plan
            }
            replies = {key: future.result() for key, future in futures.items()}
        stored = app.store.results("main")
        parts = BlindRound.parts(app.submitter.gold("main"))
    closed = replace(config, round_closed=True, port=free_port())
    with running_app(closed, n_bootstrap=0) as (app, url):
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
        reply = client.predict(*[list(GROUPS)] * len(ssd.VARIANTS), api_name="/leaderboard")
        table = reply[0]["value"] if isinstance(reply[0], dict) and "value" in reply[0] else reply[0]
        selected = [r for r in stored if r.submitter == stored[0].submitter][-1]  # its newest: shown; the first: not
        pages = [client.predict(rec.id, api_name="/submission") for rec in (stored[0], selected)]
    return {
        "plan": plan,
        "files": files,
        "replies": replies,
        "stored": stored,
        "parts": parts,
        "table": table,
        "pages": pages,
        "page": page,
        "turns": turns,
    }


def attacker_labels(seen: dict, *, raw: bool = False) -> dict[str, tuple]:
    """The attacker's label for every turn instance it targeted and read a value of: from what the
    Space showed (the open round's replies, the closed round's leaderboard), or with ``raw`` from
    the files' raw scores on each part (the power check)."""
    derived: dict[str, tuple] = {}
    certain: set[str] = set()
    by_id = {rec.id: rec for rec in seen["stored"]}
    headers = seen["table"]["headers"]
    closed_rows = {row[headers.index("Submission id")]: row for row in seen["table"]["data"]}
    for key, (target, turn) in seen["plan"].items():
        record = by_id[re.search(r"submission id <code>([^<]+)</code>", seen["replies"][key][0]).group(1)]
        readings = []
        if raw:
            for part in ("public", "private"):
                scores = record.scores[part]
                readings.append(
                    (scores["detection"]["balanced_accuracy"], scores["localization"]["balanced_f1"], (0.0, 0.0))
                )
        else:
            values = shown_values(seen["replies"][key][1])
            step = record.scores["margin"]
            det, loc = (_number(values.get(f"{label} (public part)")) for label in ("Det Bal Acc", "Loc Bal F1"))
            readings.append((det, loc, (step["det_bal_acc"], step["loc_bal_f1"])))
            row = closed_rows.get(record.id)
            if row is not None:
                step = record.scores["private_margin"]
                readings.append(
                    (
                        _number(row[headers.index("Det Bal Acc")]),
                        _number(row[headers.index("Loc Bal F1")]),
                        (step["det_bal_acc"], step["loc_bal_f1"]),
                    )
                )
        for det, loc, step in readings:
            found = label_from(det, loc, step, turn, seen["turns"][target])
            if found is not None and (target not in certain or found[1]):
                derived[target] = found[0]
                if found[1]:
                    certain.add(target)
    return derived


def recovered(seen: dict, derived: dict[str, tuple]) -> dict[str, tuple[int, int]]:
    """Per part: (labels named correctly, the 99.9th percentile of guessing)."""
    out = {}
    for name in ("public", "private"):
        part = getattr(seen["parts"], name)
        truth = {rid: tuple(sorted(row["inconsistent_turns"])) for rid, row in part.tasks["localization"].items()}
        answers = {rid: row["answer"] for rid, row in part.tasks["discrimination"].items()}
        correct = sum(derived.get(rid, ()) == label for rid, label in truth.items()) + sum(
            a == "A" for a in answers.values()
        )
        out[name] = correct, int(binom.ppf(0.999, len(truth) + len(answers), 1 / 3))
    return out


def check_round(seen: dict) -> dict[str, tuple[int, int]]:
    assert "Threat model" in seen["page"] and "at least 10 accounts per label" in seen["page"]  # the About tab's bound
    statuses = [reply[0] for reply in seen["replies"].values()]
    assert all("Accepted" in s for s in statuses), [s for s in statuses if "Accepted" not in s][:2]
    releases = Counter(rec.submitter for rec in seen["stored"] if rec.scores["released"])
    assert len(releases) == IDENTITIES and set(releases.values()) == {1}, releases.most_common(3)  # the race: one each
    rows = seen["table"]["data"]
    ids = [row[seen["table"]["headers"].index("Submission id")] for row in rows]
    newest = {rec.submitter: rec.id for rec in seen["stored"]}
    assert sorted(ids) == sorted(newest.values())  # closed: one row per identity, its newest file
    for (details, breakdown, *_), selected in zip(seen["pages"], (False, True)):
        values = shown_values(breakdown)
        assert ("not selected" in values.values()) != selected, values
        assert set(values) <= {"Det Bal Acc (private part)", "Loc Bal F1 (private part)", "Disc Avg (private part)"}, (
            values
        )
    texts = json.dumps([list(seen["replies"].values()), seen["table"], seen["pages"]])
    assert not any(f"Det {s}" in texts for s in ("S1", "S2", "S3")), "a per-scenario value was shown"
    shown = recovered(seen, attacker_labels(seen))
    for name, (correct, bound) in shown.items():
        assert correct <= bound, (name, correct, bound)
    power = recovered(seen, attacker_labels(seen, raw=True))
    assert any(correct > bound for correct, bound in power.values()), power
    return {"shown": shown, "raw values (power)": power}


def test_many_identities_racing_and_planting_learn_no_more_than_guessing_on_the_demo_copy(demo, tmp_path):
    seen = run_round(*demo, tmp_path, allow_paired=False)
    print("demo (unpaired):", check_round(seen))


def test_many_identities_learn_no_more_than_guessing_on_a_paired_copy_served_with_its_banner(paired, tmp_path):
    public, gold_dir = paired
    assert (
        min(
            len(p.tasks["localization"]) + len(p.tasks["discrimination"])
            for p in (BlindRound.parts(load_gold(gold_dir)).public, BlindRound.parts(load_gold(gold_dir)).private)
        )
        >= 300
    )
    seen = run_round(public, gold_dir, tmp_path, allow_paired=True)
    assert "This blind copy is paired" in seen["page"]
    print("paired:", check_round(seen))


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
