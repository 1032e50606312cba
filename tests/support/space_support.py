"""Helpers shared by the Space tests: a small dataset, distinct valid submissions, and the app
served on 127.0.0.1 (a free port) in a background thread."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from speakersleuth.metrics.submission import Gold  # noqa: E402
from speakersleuth.space.config import SpaceConfig  # noqa: E402
from tests.support.synthetic import build_synthetic_dataset  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
TIMEOUT_MS = 30_000


def build_dataset(root: Path, dialogues: int = 3, variants=("main",)) -> Path:
    return build_synthetic_dataset(root / "dataset", dialogues=dialogues, variants=variants)


def predictions(gold: Gold, pattern: int = 0) -> bytes:
    """A valid, complete submission whose detection answers follow the bits of ``pattern``
    (so different patterns give different files and different scores)."""
    lines = []
    for task, rows in gold.tasks.items():
        for i, (rid, row) in enumerate(sorted(rows.items())):
            bit = (pattern >> (i % 20)) & 1
            if task == "detection":
                line = {"task": task, "id": rid, "prediction": "inconsistent" if bit else "consistent"}
            elif task == "localization":
                line = {"task": task, "id": rid, "prediction": [1] if bit else []}
            else:
                labels = list(row["candidate_labels"])
                order = labels[bit:] + labels[:bit]
                line = {"task": task, "id": rid, "prediction": order[0], "ranking": order}
            lines.append(json.dumps(line))
    return ("\n".join(lines) + "\n").encode()


def add_result(
    store,
    gold: Gold,
    name: str,
    pattern: int = 0,
    *,
    submitter: str = "test",
    model_type: str = "other",
    without: tuple[str, ...] = (),
    link: str = "",
):
    """Store ``predictions(gold, pattern)`` scored (50 resamples) under ``name`` straight into
    ``store``, leaving out the scores of the tasks in ``without``; the hash is made unique per
    name, so the same predictions can stand under several names. Returns the record."""
    import hashlib

    from speakersleuth.metrics.score import score_submission
    from speakersleuth.metrics.submission import parse_submission
    from speakersleuth.space.store import Metadata

    data = predictions(gold, pattern)
    submission = parse_submission(data, gold)
    scores = {
        task: s
        for task, s in score_submission(submission, gold, n_bootstrap=50, seed=0).items()
        if task not in without
    }
    record, _ = store.add(
        variant="main",
        sha256=hashlib.sha256(name.encode("utf-8", "surrogatepass") + data).hexdigest(),
        predictions=data,
        scores=scores,
        metadata=Metadata(name, "org", model_type, "open", link),
        submitter=submitter,
        num_lines=submission.num_lines,
    )
    return record


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_served(url: str, process: subprocess.Popen, log: Path, timeout: float = 300) -> None:
    """Wait until the server ``process`` (its output in ``log``) answers ``GET url`` with 200;
    raises ``RuntimeError`` with the log's tail if it exits first or ``timeout`` seconds pass."""
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(
                f"the server exited with {process.returncode} before serving {url}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise RuntimeError(
        f"the server did not serve {url} within {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def served_config(dataset: Path, data_dir: Path, **overrides) -> SpaceConfig:
    """The Space's default configuration for ``dataset``, its data in ``data_dir``, on a free port."""
    return replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=data_dir), port=free_port(), **overrides)


def new_page(browser, width: int = 1400, **options):
    """A browser page ``width`` px wide with the tests' timeout; it dismisses dialogs and keeps
    their messages in ``page.dialogs``."""
    page = browser.new_page(viewport={"width": width, "height": 1000}, **options)
    page.set_default_timeout(TIMEOUT_MS)
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    return page


@contextmanager
def running_app(config, **build_kwargs):
    """Build and serve the app for ``config`` (host 127.0.0.1, a free port); yields
    ``(app, url)`` and closes the server afterwards."""
    from speakersleuth.space.app import build_app

    app = build_app(config, **build_kwargs)
    _, url, _ = app.launch(prevent_thread_lock=True, quiet=True)
    try:
        yield app, url
    finally:
        app.blocks.close()
