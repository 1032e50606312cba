"""What the TTS engines run on: CPU onnxruntime sessions (one per engine, threads set to the cores
we may use) and ``file_lock``, which lets one process at a time prepare a first-use asset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock


@contextmanager
def file_lock(asset: Path) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``<asset>.lock`` (created next to the asset).

    Processes that would prepare ``asset`` on first use (the build's shard processes start
    together) take it around the check-and-prepare, so one prepares it and the others find it
    done. ``filelock`` locks with the OS's own file locks (POSIX and Windows), which the OS drops
    when their holder exits, so a killed run never leaves it held.
    """
    asset.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(asset.with_name(asset.name + ".lock")):
        yield


def available_cores() -> int:
    """CPU cores this process may run on (respects affinity masks and container limits)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def onnx_session(model: Path | str | bytes, threads: int | None = None):
    """A CPU ``InferenceSession`` of a model file (or a serialised model) with ``threads``
    intra-op threads (default: all usable cores)."""
    import onnxruntime as ort

    if not isinstance(model, bytes) and not Path(model).is_file():
        raise FileNotFoundError(f"ONNX model not found: {model}")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or available_cores()
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-waiting on shared CPUs
    return ort.InferenceSession(
        model if isinstance(model, bytes) else str(model), sess_options=opts, providers=["CPUExecutionProvider"]
    )
