"""The upload guard (per-address budget, total cap on Gradio's upload folder) and the Submit tab's
upload widget, which leaves nothing in Gradio's temp folder after a submission; a refused upload's
reason shows in the browser."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest
from gradio_client import Client, handle_file
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from speakersleuth.metrics.submission import load_gold
from speakersleuth.space import uploads
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.uploads import UPLOAD_PATH, UploadGuard
from tests.support.space_support import TIMEOUT_MS, build_dataset, free_port, predictions, running_app


def guarded_app(
    folder: Path, now: list[float], *, per_address: int = 100, total: int = 1000, behind_proxy: bool = False
) -> Starlette:
    """An app whose upload route stores the body in ``folder`` (status 500 for a body starting with
    ``fail``), behind an ``UploadGuard`` whose clock reads ``now[0]``."""

    async def store(request: Request):
        body = await request.body()
        if body.startswith(b"fail"):
            return PlainTextResponse("failed", status_code=500)
        (folder / f"upload-{len(list(folder.iterdir()))}").write_bytes(body)
        return PlainTextResponse("stored")

    async def other(request: Request):
        return PlainTextResponse("other")

    guard = Middleware(
        UploadGuard,
        per_address_bytes=per_address,
        total_bytes=total,
        window_s=60,
        folder=folder,
        behind_proxy=behind_proxy,
        clock=lambda: now[0],
    )
    return Starlette(
        routes=[Route(UPLOAD_PATH, store, methods=["POST"]), Route("/other", other, methods=["POST"])],
        middleware=[guard],
    )


def files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_address_over_its_budget_is_refused_until_the_window_passes(tmp_path):
    now = [1000.0]
    app = guarded_app(tmp_path, now)
    client = TestClient(app, client=("10.0.0.1", 1))
    assert client.post(UPLOAD_PATH, content=b"x" * 60).status_code == 200
    refused = client.post(UPLOAD_PATH, content=b"y" * 60)
    assert refused.status_code == 429 and "would pass the limit of 100 bytes per 60 s" in refused.text
    assert refused.headers["retry-after"] == "60"
    assert len(files_in(tmp_path)) == 1  # nothing written for the refused upload
    # another address has its own budget; the first one's returns once its upload leaves the window
    assert TestClient(app, client=("10.0.0.2", 1)).post(UPLOAD_PATH, content=b"z" * 60).status_code == 200
    now[0] += 60
    assert client.post(UPLOAD_PATH, content=b"y" * 60).status_code == 200
    too_big = client.post(UPLOAD_PATH, content=b"y" * 101)  # no wait would let it through
    assert too_big.status_code == 413 and "Upload fewer or smaller files." in too_big.text


def test_behind_the_spaces_proxy_the_address_is_the_one_the_proxy_added(tmp_path):
    """On Spaces every request comes from the proxy; the client is the last X-Forwarded-For entry
    (what a client writes there itself comes before it, so it cannot pick its address)."""
    client = TestClient(guarded_app(tmp_path, [0.0], behind_proxy=True), client=("10.255.0.1", 1))

    def upload(forwarded: str) -> int:
        return client.post(UPLOAD_PATH, content=b"x" * 60, headers={"X-Forwarded-For": forwarded}).status_code

    assert upload("203.0.113.5") == 200
    assert upload("198.51.100.7, 203.0.113.5") == 429  # a made-up first entry does not give a new budget
    assert upload("203.0.113.6") == 200  # another client behind the same proxy has its own


def test_failed_upload_is_not_charged(tmp_path):
    client = TestClient(guarded_app(tmp_path, [0.0]))
    for _ in range(3):
        assert client.post(UPLOAD_PATH, content=b"fail" + b"x" * 56).status_code == 500
    assert client.post(UPLOAD_PATH, content=b"x" * 60).status_code == 200


def test_upload_past_the_total_cap_is_refused(tmp_path):
    (tmp_path / "held").write_bytes(b"h" * 950)
    client = TestClient(guarded_app(tmp_path, [0.0]))
    refused = client.post(UPLOAD_PATH, content=b"x" * 60)
    assert refused.status_code == 507 and "upload space is full" in refused.text
    assert files_in(tmp_path) == [tmp_path / "held"]
    assert client.post(UPLOAD_PATH, content=b"x" * 50).status_code == 200


def test_bytes_still_being_received_count_against_the_total_cap(tmp_path):
    """A 600-byte upload is in flight (nothing in the folder yet) when another 600 bytes arrive from
    another address: together they would pass the cap of 1000, so the second is refused; once the
    first has finished (and written nothing), the same upload passes."""

    async def scenario():
        entered, release = anyio.Event(), anyio.Event()

        async def slow_app(scope, receive, send):  # holds the first upload until released
            if scope["client"][0] == "10.0.0.1":
                entered.set()
                await release.wait()
            await PlainTextResponse("stored")(scope, receive, send)

        guard = UploadGuard(slow_app, per_address_bytes=10_000, total_bytes=1000, window_s=60, folder=tmp_path)

        async def post(address: str, size: int) -> int:
            scope = {
                "type": "http",
                "method": "POST",
                "path": UPLOAD_PATH,
                "client": (address, 1),
                "headers": [(b"content-length", str(size).encode())],
            }
            sent = []

            async def receive():
                return {"type": "http.request", "body": b"x" * size, "more_body": False}

            async def send(message):
                sent.append(message)

            await guard(scope, receive, send)
            return next(m["status"] for m in sent if m["type"] == "http.response.start")

        statuses = {}
        async with anyio.create_task_group() as tasks:

            async def first():
                statuses["first"] = await post("10.0.0.1", 600)

            tasks.start_soon(first)
            await entered.wait()
            assert guard.in_flight == 600
            statuses["second"] = await post("10.0.0.2", 600)
            release.set()
        statuses["third"] = await post("10.0.0.2", 600)
        return statuses, guard.in_flight

    statuses, in_flight = anyio.run(scenario)
    assert statuses == {"first": 200, "second": 507, "third": 200} and in_flight == 0


def test_upload_without_content_length_is_refused_and_other_routes_pass(tmp_path):
    client = TestClient(guarded_app(tmp_path, [0.0]))
    chunked = client.post(UPLOAD_PATH, content=iter([b"x" * 10]))  # a generator body is sent chunked
    assert chunked.status_code == 411 and "no Content-Length" in chunked.text
    assert files_in(tmp_path) == []
    assert client.post("/other", content=iter([b"x" * 500])).text == "other"


def test_folder_bytes_skips_files_deleted_while_it_walks(tmp_path, monkeypatch):
    (tmp_path / "there").write_bytes(b"x" * 7)
    monkeypatch.setattr(uploads.os, "walk", lambda folder: [(str(folder), [], ["gone", "there"])])
    assert uploads.folder_bytes(tmp_path) == 7


def test_budgets_come_from_the_environment():
    assert SpaceConfig.from_env({"SPEAKERSLEUTH_MAX_BYTES": "1000"}).upload_budget_bytes == 10_000
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_UPLOAD_BUDGET": "5", "SPEAKERSLEUTH_UPLOAD_CAP": "7"})
    assert (config.upload_budget_bytes, config.upload_cap_bytes) == (5, 7)
    assert SpaceConfig.from_env({}).upload_cap_bytes == 2_000_000_000


@pytest.fixture
def served(tmp_path, monkeypatch):
    """The app with Gradio's temp folder in ``tmp_path`` and room for about one upload per address."""
    temp = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(temp))
    dataset = build_dataset(tmp_path)
    gold = load_gold(dataset, "main")
    config = replace(
        SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"),
        port=free_port(),
        upload_budget_bytes=len(predictions(gold, 1)) + 1000,
    )
    with running_app(config, n_bootstrap=20) as (app, url):
        yield url, gold, temp, tmp_path


def test_submission_leaves_nothing_in_the_temp_folder_and_uploads_are_guarded(served):
    url, gold, temp, root = served
    upload = root / "p.jsonl"
    upload.write_bytes(predictions(gold, 1))
    before = files_in(temp)
    client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
    status = client.predict(handle_file(str(upload)), "main", "m", "org", "other", "open", "", "", api_name="/submit")[
        0
    ]
    assert "Accepted" in status
    assert files_in(temp) == before  # neither the upload nor an empty tmp* file stays

    refused = httpx.post(url + UPLOAD_PATH.lstrip("/"), files={"files": ("p.jsonl", upload.read_bytes())})
    assert refused.status_code == 429 and "Upload refused" in refused.text
    assert files_in(temp) == before


def test_browser_shows_why_an_upload_is_refused(served, browser):
    url, gold, temp, root = served
    upload = root / "p.jsonl"
    upload.write_bytes(predictions(gold, 1))
    assert (
        httpx.post(url + UPLOAD_PATH.lstrip("/"), files={"files": ("p.jsonl", upload.read_bytes())}).status_code == 200
    )
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.get_by_role("tab", name="Submit", exact=True).click()
    page.locator("#ss-upload input[type=file]").set_input_files(str(upload))
    page.get_by_text("Upload refused: your address has uploaded").wait_for()
    page.close()
