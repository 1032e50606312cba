"""Regression tests of Space defects: the withdraw endpoint's early answers, canonical scores,
quota charged only for a stored submission, the Review tab's controls for non-reviewers, and
the app coming up on a saturated machine."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gradio_client import Client

from speakersleuth.space.config import SpaceConfig
from tests.support.space_support import free_port, predictions, running_app

FORM = {
    "model_name": "judge A",
    "organisation": "lab",
    "model_type": "embedding",
    "access": "open",
    "link": "https://example.org/a",
    "model_date": "2025-06-01",
}


# ------------------------------------------------------------------ 1. /withdraw's early answers


def test_withdraw_endpoint_explains_a_malformed_or_unknown_id_and_an_unticked_box(dataset, gold, tmp_path):
    """Each early answer fills every output of the event (status and the five of the page), so
    the client gets the message instead of a generic error."""
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port())
    with running_app(config, n_bootstrap=20) as (app, url):
        record = app.submitter.submit(predictions(gold, 3), "main", FORM, address="127.0.0.1").record
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)

        status, *page = client.predict("../x", "", True, api_name="/withdraw")
        assert "not an id" in status and len(page) == 5, status
        status, *page = client.predict("main-0123456789abcdef", "", True, api_name="/withdraw")
        assert "there is no submission with the id" in status and len(page) == 5, status
        status, *page = client.predict(record.id, "", False, api_name="/withdraw")
        assert "Tick the box to confirm" in status and len(page) == 5, status
        assert app.store.results() == [record] and app.store.get(record.id).withdrawal is None


# ------------------------------------------------------------------ 3. quota only for a stored submission


def _scoring_raises(monkeypatch):
    """Make scoring crash, wherever the submit path takes ``score_submission`` from."""
    import importlib

    def explode(*args, **kwargs):
        raise RuntimeError("scoring crashed")

    for name in ("speakersleuth.space.submitter", "speakersleuth.space.disclosure"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        monkeypatch.setattr(module, "score_submission", explode, raising=False)


def test_a_submission_whose_scoring_crashes_uses_no_quota(make, gold, monkeypatch):
    submitter = make(rate_limit=1, rate_window_s=3600)
    now = [1_000_000.0]
    submitter.clock = lambda: now[0]
    with monkeypatch.context() as patch:
        _scoring_raises(patch)
        for pattern in (1, 2):
            assert submitter.submit(predictions(gold, pattern), "main", FORM).status == "error"
    assert submitter.store.retry_at("ip:127.0.0.1", 1, 3600, now[0]) == now[0]  # quota untouched
    assert submitter.store.attempts("ip:127.0.0.1", 0) == 0 and submitter.store.results() == []
    now[0] += 1
    assert submitter.submit(predictions(gold, 1), "main", FORM).status == "accepted"
    now[0] += 1
    refused = submitter.submit(predictions(gold, 2), "main", FORM)
    assert refused.status == "rate_limited", refused  # the limit still holds
    assert "in 60 minutes" in refused.message, refused.message
    now[0] += 3600
    assert submitter.submit(predictions(gold, 2), "main", FORM).status == "accepted"


def test_two_concurrent_submissions_of_one_identity_do_not_both_pass_the_limit(make, gold, monkeypatch):
    """Both pass the check before scoring (neither is stored yet); the store refuses the second."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from speakersleuth.space import store as store_module

    submitter = make(rate_limit=1, rate_window_s=3600)
    both_checked = threading.Barrier(2, timeout=60)
    retry_at = submitter.store.retry_at
    calls = []

    def checked(*args, **kwargs):  # the pre-check of each (the first two calls), then wait for the other's
        result = retry_at(*args, **kwargs)
        calls.append(result)
        if len(calls) <= 2:
            both_checked.wait()
        return result

    monkeypatch.setattr(submitter.store, "retry_at", checked)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda p: submitter.submit(predictions(gold, p), "main", FORM), (1, 2)))
    monkeypatch.setattr(submitter.store, "retry_at", retry_at)
    assert sorted(r.status for r in results) == ["accepted", "rate_limited"], results
    assert len(submitter.store.results()) == 1 and submitter.store.attempts("ip:127.0.0.1", 0) == 1
    assert issubclass(store_module.RateLimited, Exception)


def _entry(i: int) -> dict:
    import hashlib

    from speakersleuth.space.store import Metadata

    data = f'{{"task": "detection", "id": "x{i}", "prediction": "consistent"}}\n'.encode()
    return dict(
        variant="main",
        sha256=hashlib.sha256(data).hexdigest(),
        predictions=data,
        scores={"detection": {"balanced_accuracy": 50.0 + i}},
        metadata=Metadata(f"model {i}", "org"),
        submitter="hf:alice",
        num_lines=1,
    )


@pytest.mark.parametrize("kind", ["sqlite", "hub"])
def test_add_logs_the_attempt_with_the_submission_and_refuses_past_the_limit(tmp_path, kind):
    import json

    from speakersleuth.space.store import RateLimited, SqliteStore, result_id
    from tests.space.test_store import hub_store

    def open_it(name: str, remote=None):
        return (
            SqliteStore(tmp_path / name)
            if kind == "sqlite"
            else hub_store(tmp_path / name, tmp_path / f"index-{name}", remote)
        )

    store = open_it("a")
    limit = (2, 100)
    assert store.add(**_entry(1), now=10.0, rate_limit=limit)[1]
    assert not store.add(**_entry(1), now=11.0, rate_limit=limit)[1]  # a duplicate: no attempt logged
    assert store.add(**_entry(2), now=12.0, rate_limit=limit)[1]
    with pytest.raises(RateLimited):
        store.add(**_entry(3), now=13.0, rate_limit=limit)
    assert [r.metadata.model_name for r in store.results()] == ["model 1", "model 2"]  # nothing of the third
    assert store.retry_at("hf:alice", *limit, now=13.0) == 110.0
    assert store.add(**_entry(3), now=111.0, rate_limit=limit)[1]  # the first left the window
    assert store.add(**_entry(4), now=111.2)[1]  # no rate limit (seeding): no attempt either
    assert store.retry_at("hf:alice", *limit, now=111.5) == 112.0  # the attempts at 12 and 111
    if kind == "hub":
        log = [json.loads(line) for line in (tmp_path / "a" / "attempts.jsonl").read_text().splitlines()]
        assert log == [{"submitter": "hf:alice", "at": at} for at in (10.0, 12.0, 111.0)]
        store.close()
        again = open_it("b", remote=tmp_path / "a")  # a restart: the log comes back
        assert again.retry_at("hf:alice", *limit, now=111.5) == 112.0
        with pytest.raises(RateLimited):
            again.add(**_entry(5), now=111.5, rate_limit=limit)
        assert not (
            tmp_path / "b" / "predictions" / "main" / f"{result_id('main', _entry(5)['sha256'])}.jsonl"
        ).exists()
        assert len((tmp_path / "b" / "attempts.jsonl").read_text().splitlines()) == 3
        assert len(again.results()) == 4


# ------------------------------------------------------------------ 4. the Review tab's controls for non-reviewers


class _Request:
    def __init__(self, host: str) -> None:
        self.client = type("Client", (), {"host": host})()


def _review_desk(dataset, data_dir):
    from speakersleuth.space.review import ReviewDesk
    from speakersleuth.space.store import SqliteStore
    from speakersleuth.space.submitter import Submitter

    config = SpaceConfig.from_env(
        {"SPEAKERSLEUTH_REVIEWERS": "alice, ip:10.0.0.1"}, dataset=str(dataset), data_dir=data_dir
    )
    store = SqliteStore(data_dir)
    return ReviewDesk(config, store, dataset, Submitter(config, store, dataset, variants=["main"]).identity)


def test_opening_the_review_tab_enables_the_decision_controls_for_a_reviewer_only(dataset, tmp_path):
    import gradio as gr

    desk = _review_desk(dataset, tmp_path)
    profile = gr.OAuthProfile({"name": "Alice", "preferred_username": "alice", "profile": "", "picture": ""})
    for request, who, ok in [
        (_Request("10.0.0.9"), None, False),
        (_Request("10.0.0.1"), None, True),
        (_Request("10.0.0.9"), profile, True),
    ]:
        status, download, *controls = desk.on_open(request, who)
        assert len(controls) == 3 and all(c.get("interactive") is ok for c in controls), (
            request.client.host,
            controls,
        )
        assert ("You review as" in status) is ok and download["visible"] is ok


def test_the_review_controls_are_disabled_until_the_tab_says_who_may_review(dataset, tmp_path):
    """In the page as served, before any event: a visitor sees no enabled Record decision button."""
    from speakersleuth.space.app import build_app
    from tests.support.space_support import served_config

    app = build_app(served_config(dataset, tmp_path / "data", reviewers=("ip:127.0.0.1",)), n_bootstrap=20)
    config = app.blocks.get_config_file()
    by_id = {c["props"].get("elem_id"): c for c in config["components"] if c.get("props", {}).get("elem_id")}
    for elem_id in ("ss-review-decision", "ss-review-reason", "ss-review-record"):
        assert by_id[elem_id]["props"].get("interactive") is False, (
            elem_id,
            by_id[elem_id]["props"].get("interactive"),
        )


def test_in_a_browser_a_visitor_cannot_record_and_a_reviewer_can(dataset, tmp_path, browser):
    """The same served app for a reviewer (this machine) and a visitor (X-Forwarded-For from the
    local proxy: uvicorn trusts 127.0.0.1)."""
    from tests.space.test_browser import open_tab
    from tests.support.space_support import new_page, served_config

    config = served_config(dataset, tmp_path / "data", reviewers=("ip:127.0.0.1",))
    with running_app(config, n_bootstrap=20) as (app, url):
        visitor = new_page(browser, extra_http_headers={"X-Forwarded-For": "10.7.7.7"})
        visitor.goto(url)
        open_tab(visitor, "Review")
        visitor.locator("#ss-review-who").get_by_text("Only the reviewers named in").wait_for()
        assert visitor.locator("#ss-review-record").is_disabled()
        assert visitor.locator("#ss-review-reason textarea, #ss-review-reason input").first.is_disabled()
        visitor.close()

        reviewer = new_page(browser)
        reviewer.goto(url)
        open_tab(reviewer, "Review")
        reviewer.locator("#ss-review-who").get_by_text("You review as ip:127.0.0.1.").wait_for()
        reviewer.wait_for_function("() => !document.querySelector('#ss-review-record').disabled")
        reviewer.locator("#ss-review-record").click()
        reviewer.locator("#ss-review-status .ss-status").get_by_text("Recorded: ip:127.0.0.1 accepts").wait_for()
        reviewer.close()


# ------------------------------------------------------------------ 5. the app comes up on a saturated machine


def test_the_app_comes_up_and_serves_its_page_on_a_saturated_machine(dataset, tmp_path):
    """``python -m speakersleuth.space.app`` while busy loops hold every core, and the app's threads lowered to
    nice 10 from the moment its server listens (about 1/40 of the CPU for Blocks.launch's check
    that ``HEAD /`` is served, whose first render then takes well over Gradio's 3 s): it still
    comes up and serves the page. Without ``space.app.served`` it exits with Gradio's "When
    localhost is not accessible, a shareable link must be created"."""
    import os
    import subprocess
    import sys
    import threading
    import time
    from pathlib import Path

    import httpx

    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "HF_HUB_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONUNBUFFERED": "1",
    }
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(8)]
    app = None
    try:
        app = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "speakersleuth.space.app",
                "--dataset",
                str(dataset),
                "--data-dir",
                str(tmp_path / "data"),
                "--port",
                str(port),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(app.stdout), daemon=True)
        reader.start()

        def wait_for(text: str, seconds: float) -> bool:
            end = time.monotonic() + seconds
            while time.monotonic() < end and app.poll() is None:
                if any(text in line for line in lines):
                    return True
                time.sleep(0.2)
            return any(text in line for line in lines)

        assert wait_for("Running on local URL", 300), "".join(lines)[-3000:]
        for task in os.listdir(f"/proc/{app.pid}/task"):  # nice is per thread on Linux; new threads inherit it
            os.setpriority(os.PRIO_PROCESS, int(task), 10)
        assert wait_for("To create a public link", 300), "".join(lines)[-3000:]  # printed once the check passed
        assert app.poll() is None, "".join(lines)[-3000:]
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=120)
        assert page.status_code == 200 and "SpeakerSleuth" in page.text
    finally:
        for child in busy:
            child.kill()
        if app is not None:
            app.kill()
            app.wait(30)
        for child in busy:
            child.wait(30)
