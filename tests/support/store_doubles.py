"""The Space's results stores offline: a HubStore whose 'Hub' is a local folder (its commit
scheduler a double), and the arguments of one ``add``."""

from __future__ import annotations

import hashlib
import shutil
import threading
from concurrent.futures import Future
from pathlib import Path

from speakersleuth.space.store import HubStore, Metadata


def store_entry(i: int, variant: str = "main", submitter: str = "local:test", **extra) -> dict:
    """The keyword arguments of ``store.add`` for a one-line file, distinct for each ``i``."""
    data = f'{{"task": "detection", "id": "x{i}", "prediction": "consistent"}}\n'.encode()
    return dict(
        variant=variant,
        sha256=hashlib.sha256(data).hexdigest(),
        predictions=data,
        scores={"detection": {"balanced_accuracy": 50.0 + i}},
        metadata=Metadata(f"model {i}", "org"),
        submitter=submitter,
        num_lines=1,
        **extra,
    )


class FakeScheduler:
    """Stands in for huggingface_hub.CommitScheduler (which needs the network): records the
    arguments and the pushes requested."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.lock = threading.Lock()
        self.pushes = 0
        self.stopped = False

    def trigger(self):
        self.pushes += 1
        done = Future()
        done.set_result(None)
        return done

    def stop(self):
        self.stopped = True


def hub_store(folder: Path, index: Path, remote: Path | None = None) -> HubStore:
    """A HubStore whose 'Hub' is the folder ``remote`` (copied in as snapshot_download would)."""

    def download(repo_id, *, repo_type, local_dir, token, allow_patterns):
        assert repo_type == "dataset" and repo_id == "org/results"
        if remote is not None and remote.exists():
            shutil.copytree(remote, local_dir, dirs_exist_ok=True)

    return HubStore(
        folder, "org/results", "token", index_dir=index, download=download, scheduler_factory=FakeScheduler
    )
