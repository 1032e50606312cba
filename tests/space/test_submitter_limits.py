"""What one submitter can do to the store that others share: the same predictions however
encoded are one row, the store keeps a size budget, only a submission's own identity may
withdraw it, and each network address has its own quota."""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from pathlib import Path

import gradio as gr
import httpx
from gradio_client import Client, handle_file

from speakersleuth.metrics.submission import parse_submission
from speakersleuth.space.config import SpaceConfig
from tests.support.space_support import free_port, predictions, running_app

FORM = {
    "model_name": "judge A",
    "organisation": "lab",
    "model_type": "embedding",
    "access": "open",
    "link": "",
    "model_date": "",
}


def reencodings(data: bytes) -> dict[str, bytes]:
    """The same predictions written in every way a file can differ without changing an answer."""
    lines = data.decode().splitlines()
    objects = [json.loads(line) for line in lines]
    shuffled = lines[:]
    random.Random(0).shuffle(shuffled)
    return {
        "CRLF": "\r\n".join(lines).encode(),
        "BOM": b"\xef\xbb\xbf" + data,
        "trailing spaces": "\n".join(f"{line}   \t" for line in lines).encode(),
        "shuffled lines": "\n".join(shuffled).encode(),
        "compact JSON": "\n".join(json.dumps(o, separators=(",", ":")) for o in objects).encode(),
        "keys reordered": "\n".join(json.dumps(dict(reversed(o.items()))) for o in objects).encode(),
        "escaped strings": "\n".join(
            json.dumps(o, ensure_ascii=True).replace('"id"', '"\\u0069d"') for o in objects
        ).encode(),
        "blank-line padding": data + b"\n" * 100_000,
        "space padding": data.replace(b"\n", b" " * 50_000 + b"\n", 1),
    }


def test_the_same_predictions_however_encoded_are_one_submission(make, gold):
    submitter = make()
    data = predictions(gold, 0b101)
    first = submitter.submit(data, "main", FORM)
    assert first.status == "accepted"
    stored = submitter.store.predictions(first.record.id)
    assert stored == parse_submission(data, gold).canonical() and len(stored) < len(data)
    for how, variant in reencodings(data).items():
        again = submitter.submit(variant, "main", {**FORM, "model_name": f"renamed ({how})"})
        assert again.status == "duplicate", how
        assert again.record.id == first.record.id and "judge A" in again.message
    assert len(submitter.store.results()) == 1 and submitter.store.stored_bytes() == len(stored)
    changed = predictions(gold, 0b100)  # one answer differs
    assert submitter.submit(changed, "main", FORM).status == "accepted"


def test_duplicates_cost_no_quota_and_store_nothing(make, gold):
    submitter = make(rate_limit=1)
    data = predictions(gold, 3)
    assert submitter.submit(data, "main", FORM).status == "accepted"
    for variant in reencodings(data).values():
        assert submitter.submit(variant, "main", FORM).status == "duplicate"
    assert submitter.submit(predictions(gold, 4), "main", FORM).status == "rate_limited"  # only the first counted


def test_the_store_budget_refuses_without_storing_or_using_quota(make, gold):
    one = len(parse_submission(predictions(gold, 1), gold).canonical())
    submitter = make(store_budget_bytes=one + one // 2, rate_limit=2)
    assert submitter.submit(predictions(gold, 1), "main", FORM).status == "accepted"
    full = submitter.submit(predictions(gold, 2), "main", FORM)
    assert full.status == "full" and "nothing was stored" in full.message
    assert len(submitter.store.results()) == 1 and submitter.store.stored_bytes() == one
    assert submitter.submit(predictions(gold, 1), "main", FORM).status == "duplicate"  # still recognised
    roomy = replace(submitter.config, store_budget_bytes=10 * one)
    submitter.config = roomy
    assert submitter.submit(predictions(gold, 2), "main", FORM).status == "accepted"  # the refusal used no quota


def test_only_the_submitting_identity_withdraws_and_the_record_stays(make, gold):
    submitter = make()
    alice = gr.OAuthProfile(
        {"preferred_username": "alice", "name": "Alice", "picture": "", "profile": "https://huggingface.co/alice"}
    )
    data = predictions(gold, 7)
    record = submitter.submit(data, "main", FORM, alice).record
    other = submitter.withdraw(record.id, "not mine", address="10.0.0.9")
    assert other.status == "invalid" and "only its submitter" in other.errors[0]
    unknown = submitter.withdraw("main-0000", "", alice)
    assert unknown.status == "invalid" and "no submission with the id" in unknown.errors[0]
    assert submitter.store.results("main") == [record]

    done = submitter.withdraw(record.id, "wrong variant", alice)
    assert done.status == "withdrawn" and record.metadata.model_name in done.message
    assert submitter.store.results("main") == []
    kept = submitter.store.get(record.id)
    assert (kept.withdrawal.submitter, kept.withdrawal.reason) == ("hf:alice", "wrong variant")
    assert submitter.store.results("main", include_withdrawn=True) == [kept]
    assert submitter.store.predictions(record.id) == parse_submission(data, gold).canonical()
    assert submitter.withdraw(record.id, "", alice).errors == [f"{record.id} is already withdrawn"]
    back = submitter.submit(data.replace(b"\n", b"\r\n"), "main", FORM, alice)
    assert back.status == "duplicate" and "withdrawn" in back.message and back.record is None


def test_each_network_address_has_its_own_quota(make, gold):
    submitter = make(rate_limit=1)
    assert submitter.submit(predictions(gold, 1), "main", FORM, address="10.0.0.1").status == "accepted"
    assert submitter.submit(predictions(gold, 2), "main", FORM, address="10.0.0.1").status == "rate_limited"
    other = {**FORM, "model_name": "judge B"}  # another identity may not take judge A's name (space.names)
    assert submitter.submit(predictions(gold, 2), "main", other, address="10.0.0.2").status == "accepted"
    assert {r.submitter for r in submitter.store.results()} == {"ip:10.0.0.1", "ip:10.0.0.2"}
    nobody = submitter.submit(predictions(gold, 3), "main", FORM, address=None)
    assert nobody.status == "signin" and "client address" in nobody.message
    on_spaces = make(space_id="owner/space")
    assert on_spaces.submit(predictions(gold, 3), "main", FORM, address="10.0.0.3").status == "signin"


def test_over_http_each_client_address_has_its_own_quota(dataset, gold, tmp_path):
    """Through the served app: the address uvicorn reports (the peer, or X-Forwarded-For sent by a
    proxy on 127.0.0.1, uvicorn's default trusted proxy) is the identity the quota counts."""
    config = replace(
        SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port(), rate_limit=1
    )
    with running_app(config, n_bootstrap=20) as (app, url):

        def send(i: int, forwarded_for: str | None) -> str:
            path = tmp_path / f"upload-{i}.jsonl"
            path.write_bytes(predictions(gold, i))
            headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
            client = Client(url, verbose=False, download_files=False, analytics_enabled=False, headers=headers)
            return client.predict(
                handle_file(str(path)), "main", f"model {i}", "org", "other", "open", "", "", api_name="/submit"
            )[0]

        assert "Accepted" in send(1, "10.1.0.1")
        assert "Rate limit reached" in send(2, "10.1.0.1")
        assert "Accepted" in send(3, "10.1.0.2")
        assert "Accepted" in send(4, None)
        assert {r.submitter for r in app.store.results()} == {"ip:10.1.0.1", "ip:10.1.0.2", "ip:127.0.0.1"}


def test_an_upload_never_submitted_is_deleted_after_the_ttl(dataset, tmp_path):
    """Gradio keeps what reaches /gradio_api/upload; one never submitted (nothing deletes it after
    scoring) goes once older than SPEAKERSLEUTH_UPLOAD_TTL, while the app's own files stay."""
    config = replace(
        SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port(), upload_ttl_s=1
    )
    with running_app(config, n_bootstrap=20) as (app, url):
        reply = httpx.post(
            f"{url.rstrip('/')}/gradio_api/upload", files={"files": ("abandoned.jsonl", b"x" * 100_000)}, timeout=30
        )
        (path,) = reply.json()
        assert Path(path).is_file()
        deadline = time.monotonic() + 20
        while Path(path).exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not Path(path).exists()
        components = httpx.get(f"{url.rstrip('/')}/config", timeout=30).json()["components"]
        (button,) = [
            c["props"]["value"]
            for c in components
            if c["type"] == "downloadbutton"
            and (c["props"].get("value") or {}).get("orig_name", "").startswith("example-predictions")
        ]
        example = httpx.get(button["url"], timeout=30)  # the About tab's example file, cached at start
        assert example.status_code == 200 and b'"task"' in example.content
