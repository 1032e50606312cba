"""Many identities against a blind round, over HTTP, for the whole life of the round.

The attacker opens ``IDENTITIES`` identities (``X-Forwarded-For`` from 127.0.0.1, uvicorn's trusted
proxy, stands in for separate accounts) and sends ``FILES`` random whole files from each, all of
one identity's files at once (racing). It reads everything the Space shows while the round is open
(every reply and its breakdown, the open leaderboard) and fits, by least squares, each shown
headline value against its files' answers (the files' designs): the fitted weight of an
instance's answer names its label (detection: consistent or inconsistent; discrimination: the
candidate whose column weighs most). The round then closes, and every identity tries to withdraw
its selected file over HTTP (the withdrawal chain that read older files' private values before).

Statistic, per part and kind of label: the labels named correctly against the 99.9th percentile
of Binomial(n, p), p the largest share of one label in that part (what naming the commonest label
achieves). Private labels: bounded (nothing private is shown while open). Power: the same fit on
the files' raw private values names them. Public labels: reported, not bounded (a submitter with
many accounts learns them on any public board; the private part alone decides the standings).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest
from gradio_client import Client
from scipy.stats import binom

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.blind as ssd_blind
import tests.support.synthetic as synthetic
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import RELEASED, BlindRound, headline
from speakersleuth.space.leaderboard_table import GROUPS
from tests.support.space_support import free_port, running_app

pytestmark = pytest.mark.filterwarnings("ignore")

IDENTITIES, FILES, DIALOGUES = 120, 2, 150
SECRET_SEED = 2**62 + 4141
METRIC_LABELS = {"det_bal_acc": "Det Bal Acc", "loc_bal_f1": "Loc Bal F1", "disc_acc_avg": "Disc Avg"}


@contextmanager
def short_tones(factor: float = 20.0):
    """Synthetic clips ``factor`` times shorter: the copies here are about labels, not audio."""
    original = synthetic.tone
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(synthetic, "tone", lambda f0, seconds, seed: original(f0, seconds / factor, seed))
        yield


@pytest.fixture(scope="module")
def round_copy(tmp_path_factory) -> tuple[Path, Path]:
    """An unpaired blind copy of ``DIALOGUES`` dialogues (one instance each, about half per part),
    whose ids' secret is fixed, so that its parts are the same on every run."""
    root = tmp_path_factory.mktemp("round")
    with short_tones():
        full = synthetic.build_synthetic_dataset(root / "full", dialogues=DIALOGUES, variants=("main",))
    ssd.write_card(full, "# x\n\nFor tests only.\n\n## Citation\n\ncite", build_seed=SECRET_SEED)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ssd_blind.secrets, "token_bytes", lambda n: b"\x29" * n)
        ssd.write_blind(full, root / "public", root / "gold", unpaired=True)
    return root / "public", root / "gold"


def random_file(gold, turns: dict[str, int], rng: random.Random) -> tuple[bytes, dict]:
    """A whole file of random answers, and its design: each detection instance's answer (+1
    inconsistent, -1 consistent) and each discrimination instance's predicted label."""
    lines, design = [], {"detection": {}, "discrimination": {}}
    for rid in sorted(gold.tasks["detection"]):
        flag = rng.random() < 0.5
        design["detection"][rid] = 1 if flag else -1
        lines.append({"task": "detection", "id": rid, "prediction": "inconsistent" if flag else "consistent"})
        lines.append({"task": "localization", "id": rid, "prediction": [rng.randint(1, turns[rid])] if flag else []})
    for rid, row in sorted(gold.tasks["discrimination"].items()):
        ranking = rng.sample(list(row["candidate_labels"]), len(row["candidate_labels"]))
        design["discrimination"][rid] = ranking[0]
        lines.append({"task": "discrimination", "id": rid, "prediction": ranking[0], "ranking": ranking})
    return "".join(json.dumps(line) + "\n" for line in lines).encode(), design


def send(base_url: str, address: str, name: str, data: bytes) -> list:
    """One file through Gradio's HTTP API as ``address``; returns the submit event's outputs."""
    with httpx.Client(base_url=base_url, headers={"X-Forwarded-For": address}, timeout=300) as http:
        (path,) = http.post("/gradio_api/upload", files={"files": (f"{name}.jsonl", data)}).json()
        body = {"data": [{"path": path, "meta": {"_type": "gradio.FileData"}}, "main", "probe", name, "other", "open"]}
        body["data"] += ["", "", ""]
        return call(http, "submit", body)


def call(http: httpx.Client, api: str, body: dict) -> list:
    """One event of Gradio's HTTP API; its outputs."""
    event = http.post(f"/gradio_api/call/{api}", json=body).json()["event_id"]
    stream = http.get(f"/gradio_api/call/{api}/{event}").text
    _, _, data_line = stream.partition("event: complete\ndata: ")
    assert data_line, stream[-500:]
    return json.loads(data_line.splitlines()[0])


def read_table(url: str) -> dict:
    client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
    reply = client.predict(*[list(GROUPS)] * len(ssd.VARIANTS), api_name="/leaderboard")
    return reply[0]["value"] if isinstance(reply[0], dict) and "value" in reply[0] else reply[0]


def run_round(public: Path, gold_dir: Path, tmp_path: Path) -> dict:
    """Serve the copy, race ``FILES`` random files from each of ``IDENTITIES`` identities, read the
    open leaderboard, close the round, try every identity's withdrawal over HTTP; returns what
    the attacker saw and what the server stored."""
    config = replace(
        SpaceConfig.from_env({}, dataset=str(public), gold=str(gold_dir), data_dir=tmp_path / "data"),
        port=free_port(),
        concurrency=FILES,
    )
    gold = load_gold(gold_dir)
    rows = ssd.read_rows(public, "localization", "test", columns=["id", "target_turn_positions"]).to_pylist()
    turns = {row["id"]: len(row["target_turn_positions"]) for row in rows}  # public: the attacker's knowledge
    rng = random.Random(52)
    files = {(j, f): random_file(gold, turns, rng) for j in range(IDENTITIES) for f in range(FILES)}
    with running_app(config, n_bootstrap=0) as (app, url):
        page = httpx.get(url, timeout=60).text + httpx.get(f"{url.rstrip('/')}/config", timeout=60).text
        with ThreadPoolExecutor(max_workers=2 * FILES) as pool:
            futures = {
                key: pool.submit(send, url.rstrip("/"), f"10.9.{key[0]}.1", f"lab {key[0]}", files[key][0])
                for key in files
            }
            replies = {key: future.result() for key, future in futures.items()}
        open_table = read_table(url)
        stored = app.store.results("main")
        parts = BlindRound.parts(app.submitter.gold("main"))
    closed = replace(config, round_closed_at=stored[-1].created_at + 1, port=free_port())
    with running_app(closed, n_bootstrap=0) as (app, url):
        closed_table = read_table(url)
        selected = {row[closed_table["headers"].index("Submission id")] for row in closed_table["data"]}
        chain = []
        for record in stored:
            if record.id in selected:
                with httpx.Client(base_url=url.rstrip("/"), headers={"X-Forwarded-For": record.submitter[3:]}) as http:
                    chain.append(call(http, "withdraw", {"data": [record.id, "pick an older file", True]})[0])
        after_table = read_table(url)
        after = app.store.results("main", include_withdrawn=True)
    return {
        "files": files,
        "replies": replies,
        "stored": stored,
        "after": after,
        "parts": parts,
        "open_table": open_table,
        "closed_table": closed_table,
        "after_table": after_table,
        "chain": chain,
        "page": page,
    }


def reply_id(reply: list) -> str:
    return re.search(r"submission id <code>([^<]+)</code>", reply[0]).group(1)


def shown_readings(seen: dict) -> dict[str, list[tuple[tuple, float]]]:
    """Per released metric: (file, value) for every value the open round showed of a file."""
    readings: dict[str, list[tuple[tuple, float]]] = {key: [] for key in RELEASED}
    for key, reply in seen["replies"].items():
        values = {row[1]: row[2] for row in reply[1].get("data", [])}
        for metric, label in METRIC_LABELS.items():
            value = _number(values.get(f"{label} (public part)"))
            if value is not None:
                readings[metric].append((key, value))
    return readings


def raw_readings(seen: dict, part: str) -> dict[str, list[tuple[tuple, float]]]:
    """Per released metric: (file, its raw value on ``part``) for every file (the power check)."""
    by_id = {record.id: record for record in seen["stored"]}
    readings: dict[str, list[tuple[tuple, float]]] = {key: [] for key in RELEASED}
    for key, reply in seen["replies"].items():
        for metric, value in headline(by_id[reply_id(reply)].scores[part]).items():
            readings[metric].append((key, value))
    return readings


def named_labels(seen: dict, readings: dict[str, list[tuple[tuple, float]]]) -> dict[tuple[str, str], object]:
    """The least-squares attack: each (task, instance)'s label named from the weights that fit the
    readings against the files' designs (detection from detection balanced accuracy: the sign of
    the instance's weight; discrimination from accuracy: the candidate of largest weight)."""
    named = {}
    det_ids = sorted(seen["files"][0, 0][1]["detection"])
    det = readings["det_bal_acc"]
    if det:
        x = np.array([[1.0] + [seen["files"][key][1]["detection"][rid] for rid in det_ids] for key, _ in det])
        weights = np.linalg.lstsq(x, np.array([value for _, value in det]), rcond=None)[0][1:]
        named |= {("detection", rid): w > 0 for rid, w in zip(det_ids, weights)}
    disc = readings["disc_acc_avg"]
    columns = [(rid, label) for rid in sorted(seen["files"][0, 0][1]["discrimination"]) for label in "ABC"]
    if disc:
        chosen = [seen["files"][key][1]["discrimination"] for key, _ in disc]
        x = np.array([[1.0] + [float(c[rid] == label) for rid, label in columns] for c in chosen])
        weights = np.linalg.lstsq(x, np.array([value for _, value in disc]), rcond=None)[0][1:]
        for i in range(0, len(columns), 3):
            best = max(range(3), key=lambda k: weights[i + k])
            named[("discrimination", columns[i][0])] = columns[i + best][1]
    return named


def score_named(seen: dict, named: dict) -> list[dict]:
    """Per part and kind of label: labels, named correctly, and the guessing bound."""
    rows = []
    for part in ("public", "private"):
        gold = getattr(seen["parts"], part)
        truth = {("detection", rid): row["label"] == "inconsistent" for rid, row in gold.tasks["detection"].items()}
        truth |= {("discrimination", rid): row["answer"] for rid, row in gold.tasks["discrimination"].items()}
        for task in ("detection", "discrimination"):
            labels = {k: v for k, v in truth.items() if k[0] == task}
            prior = max(Counter(labels.values()).values()) / len(labels)
            correct = int(sum(named.get(k) == v for k, v in labels.items()))
            bound = int(binom.ppf(0.999, len(labels), prior))
            rows.append({"part": part, "task": task, "labels": len(labels), "named": correct, "bound": bound})
    return rows


def test_many_identities_fitting_everything_the_open_round_shows_name_no_private_label_and_cannot_withdraw(
    round_copy, tmp_path
):
    seen = run_round(*round_copy, tmp_path)
    assert "What the public part cannot protect" in seen["page"]  # the About tab says it
    statuses = [reply[0] for reply in seen["replies"].values()]
    assert all("Accepted" in s for s in statuses), [s for s in statuses if "Accepted" not in s][:2]
    assert len(seen["stored"]) == IDENTITIES * FILES
    first = Counter(r.submitter for r in seen["stored"] if r.scores["released"])
    assert len(first) == IDENTITIES  # every identity's first file released (one at a time: the race is serialised)

    # the open leaderboard shows nothing the replies did not
    headers = seen["open_table"]["headers"]
    replied = {value for _, readings in shown_readings(seen).items() for _, value in readings}
    for row in seen["open_table"]["data"]:
        for label in METRIC_LABELS.values():
            assert _number(row[headers.index(label)]) in replied | {None}

    # the closed table: each identity's newest file, its private figures; the withdrawal chain is refused
    newest = {r.submitter: r for r in seen["stored"]}
    closed = seen["closed_table"]
    assert sorted(row[closed["headers"].index("Submission id")] for row in closed["data"]) == sorted(
        r.id for r in newest.values()
    )
    assert len(seen["chain"]) == IDENTITIES and all("froze at the close" in reply for reply in seen["chain"])
    assert seen["after_table"] == closed and all(r.withdrawal is None for r in seen["after"])

    shown = score_named(seen, named_labels(seen, shown_readings(seen)))
    power = score_named(seen, named_labels(seen, raw_readings(seen, "private")))
    for row, check in zip(shown, power):
        if row["part"] == "private":
            assert row["named"] <= row["bound"], row
            assert check["named"] > check["bound"], check
    files = {"shown": sum(len(v) for v in shown_readings(seen).values()), "all": len(seen["stored"])}
    print("least squares over the open round,", IDENTITIES, "identities,", files)
    for row, check in zip(shown, power):
        print({**row, "power (raw private fit)": check["named"] if row["part"] == "private" else "-"})


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None
