"""50 submissions in parallel through the running app's HTTP API (gradio_client on 127.0.0.1):
every one is stored once and the leaderboard shows exactly them."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from gradio.utils import get_upload_folder
from gradio_client import Client, handle_file

from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.space.config import SpaceConfig
from tests.support.space_support import build_dataset, free_port, predictions, running_app

N = 50


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("space-concurrency")
    dataset = build_dataset(root)
    config = replace(
        SpaceConfig.from_env({}, dataset=str(dataset), data_dir=root / "data"),
        port=free_port(),
        rate_limit=10 * N,
        concurrency=4,
    )
    with running_app(config, n_bootstrap=100) as (app, url):
        yield app, url, load_gold(dataset, "main"), root


def test_parallel_submissions_lose_nothing(served):
    app, url, gold, root = served
    files = []
    run = uuid.uuid4().hex  # this run's upload names: leftovers of an earlier (crashed) run do not count
    for i in range(N):
        path = root / f"upload-{run}-{i:02d}.jsonl"
        path.write_bytes(predictions(gold, i + 1))  # distinct files, so none is a duplicate
        files.append(path)
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 120}, download_files=False, analytics_enabled=False)
    jobs = [
        client.submit(
            handle_file(str(path)), "main", f"parallel-{i:02d}", "org", "other", "open", "", "", api_name="/submit"
        )
        for i, path in enumerate(files)
    ]
    statuses = [job.result(timeout=120)[0] for job in jobs]
    assert all("Accepted" in s for s in statuses), [s for s in statuses if "Accepted" not in s][:3]

    stored = app.store.results("main")
    assert sorted(r.metadata.model_name for r in stored) == [f"parallel-{i:02d}" for i in range(N)]
    assert len({r.sha256 for r in stored}) == N
    for r, path in zip(sorted(stored, key=lambda r: r.metadata.model_name), files):
        assert app.store.predictions(r.id) == parse_submission(path.read_bytes(), gold).canonical()

    table = client.predict([], [], [], api_name="/leaderboard")[0]
    model, balanced = table["headers"].index("Model"), table["headers"].index("Det Bal Acc")
    assert sorted(row[model] for row in table["data"]) == [f"parallel-{i:02d}" for i in range(N)]
    by_name = {row[model]: row[balanced] for row in table["data"]}
    for r in stored:
        assert by_name[r.metadata.model_name] == round(r.scores["detection"]["balanced_accuracy"], 1)
    again = client.predict(
        handle_file(str(files[0])), "main", "again", "org", "other", "open", "", "", api_name="/submit"
    )
    assert "already submitted" in again[0] and len(app.store.results("main")) == N
    # every upload of this run (accepted or duplicate) was deleted from Gradio's upload folder after scoring
    assert not list(Path(get_upload_folder()).rglob(f"upload-{run}-*.jsonl"))


def test_view_instance_api_shows_an_instance_of_any_config(served):
    """The viewer's API took ids of the first config only (Gradio checked them against its choices)."""
    import speakersleuth.speakersleuth_dataset as ssd

    app, url, gold, root = served
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 120}, download_files=False, analytics_enabled=False)
    instance_id = ssd.read_rows(root / "dataset", "discrimination", columns=["id"]).column("id")[0].as_py()
    shown = client.predict("discrimination", instance_id, api_name="/view_instance")
    assert f"discrimination / {instance_id}" in shown[0], shown[0]
    unknown = client.predict("discrimination", "no-such-id", api_name="/view_instance")
    assert "No instance" in unknown[0] and "no-such-id" in unknown[0] and "in config discrimination" in unknown[0], (
        unknown[0]
    )
    # a lone surrogate (the raw JSON escape; gradio_client cannot even encode it) once crashed in pyarrow
    base = url.rstrip("/")
    body = json.dumps({"data": ["discrimination", "x\ud800"]})
    event = httpx.post(
        f"{base}/gradio_api/call/view_instance", content=body, headers={"Content-Type": "application/json"}
    )
    stream = httpx.get(f"{base}/gradio_api/call/view_instance/{event.json()['event_id']}", timeout=60).text
    assert "event: complete" in stream and "No instance" in stream, stream
