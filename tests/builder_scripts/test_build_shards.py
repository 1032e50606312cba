"""Builds in shard processes on the tiny speech-like corpus (``--jobs`` and ``--num-shards``): the
same dataset as one process, resumption after a killed shard, interrupts, and the main guard."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts import pipeline
from tests.support.pipeline_fixtures import SpeechLikeCorpus
from tests.support.small_builds import build_options, build_speechlike, fingerprint

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore")


def test_killed_sharded_build_resumes_to_the_same_dataset(built, tmp_path, corpus, monkeypatch):
    """Same seed => same ids, labels and audio, whether built in one go or in shards, one of
    which was killed midway and rerun."""
    tmp, _ = built
    from speakersleuth.builder_scripts.vc.world import WorldConverter

    calls = {"n": 0}
    original = WorldConverter.convert

    def dies_midway(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt("killed")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(WorldConverter, "convert", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        build_speechlike(build_options(tmp_path, num_shards=2, shard_index=0), corpus)
    monkeypatch.setattr(WorldConverter, "convert", original)
    assert not list((tmp_path / "cache").rglob(".*.tmp")), "no half-written unit"
    units, made = tmp_path / "cache" / "units", []
    for shard in range(2):
        before = set(units.rglob("*.*")) if shard else set()  # shard 0's killed run made some of its own
        report = build_speechlike(build_options(tmp_path, num_shards=2, shard_index=shard), corpus)
        assert "dialogues" not in report  # a shard converts; it does not publish
        made.append({path.name.split(".")[0] for path in set(units.rglob("*.*")) - before})
    assert made[0] and made[1] and not made[0] & made[1], "each shard builds whole dialogues, and both get some"
    assert not (tmp_path / "speakersleuth").exists()
    merged = build_speechlike(build_options(tmp_path), corpus)  # the merge: every unit comes from the cache
    assert merged["seconds"].get("vc", 0) == 0
    assert fingerprint(tmp_path / "speakersleuth") == fingerprint(tmp / "speakersleuth")


def test_a_change_to_the_unit_code_makes_new_units(built, tmp_path, corpus, monkeypatch):
    """A warm cache made by other conversion code is not reused: a fix to the conversion reaches
    the next build instead of mixing with units made before it."""
    from speakersleuth.builder_scripts import units

    tmp, _ = built
    shutil.copytree(tmp / "cache", tmp_path / "cache")
    assert (
        build_speechlike(build_options(tmp_path), corpus)["seconds"].get("vc", 0) == 0
    )  # the same code: every unit from the cache
    monkeypatch.setattr(units, "UNIT_CODE", "changed")
    assert build_speechlike(build_options(tmp_path, out=tmp_path / "again"), corpus)["seconds"]["vc"] > 0
    assert list((tmp_path / "cache" / "units").glob("pool-*/code-changed-*/main/speechlike/*.npz"))


def test_a_library_caller_builds_in_shard_processes_to_the_same_dataset(built, tmp_path, corpus):
    """``build(jobs=2)``: two shard processes, then the merge, as the CLI's ``--jobs 2`` does;
    same seed, same dataset as one process: two cold builds (empty caches; one process on all
    cores, two on one thread each) write byte for byte the same shards, card and histogram, and
    the card's digests are the shards'."""
    tmp, _ = built
    report = pipeline.build(
        build_options(tmp_path), sources={"speechlike": SpeechLikeCorpus(corpus, dialogues=6)}, jobs=2
    )
    shards = sorted(p.name for p in (tmp_path / "cache").glob("build_report.shard*.json"))
    assert shards == ["build_report.shard0.json", "build_report.shard1.json"]
    assert report["seconds"].get("vc", 0) == 0, "the merge made no unit: the shards made them all"
    shard_walls = [json.loads((tmp_path / "cache" / name).read_text())["seconds"]["wall"] for name in shards]
    assert report["seconds"]["shards"] >= max(shard_walls), "the report counts the shards' time too"
    assert fingerprint(tmp_path / "speakersleuth") == fingerprint(tmp / "speakersleuth")
    assert published(tmp_path / "speakersleuth") == published(tmp / "speakersleuth")
    assert ssd.card_digests(tmp_path / "speakersleuth") == ssd.shard_digests(tmp_path / "speakersleuth")


def published(root: Path) -> dict[str, str]:
    """The SHA-256 of every file of a built folder but the hidden build stamp (which names the
    build's own cache folder)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


SHARDED_BUILD = """
import sys
from pathlib import Path

from speakersleuth.builder_scripts import pipeline
from tests.support.pipeline_fixtures import SPEAKERS, SpeechLikeCorpus

if __name__ == "__main__":
    tmp, corpus = Path(sys.argv[1]), Path(sys.argv[2])
    opts = pipeline.BuildOptions(out=tmp / "out", cache=tmp / "cache", sources=("speechlike",), dialogues=6, dialogues_10turn=3, validation_dialogues=0, progress=False)
    try:
        pipeline.build(opts, sources={"speechlike": SpeechLikeCorpus(corpus, dialogues=6)}, jobs=2)
    except KeyboardInterrupt:
        sys.exit(130)
    except pipeline.BuildShardsFailed as err:
        sys.exit(str(err))
"""


@pytest.fixture()
def sharded_build(tmp_path, corpus):
    """A ``build(jobs=2)`` in its own process group, returned once both shards are converting,
    with its shard processes; killed at the end whatever happened."""
    script = tmp_path / "build_script.py"
    script.write_text(SHARDED_BUILD)
    # as from a terminal: SIGINT at its default (a shell starts background jobs, e.g. a CI runner's, with it ignored)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), str(corpus)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 180
    while not (
        (tmp_path / "cache" / "logs" / "shard1.log").is_file()
        and list((tmp_path / "cache").glob("units/*/*/*/*/*.npz"))
    ):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    shards = [c for c in psutil.Process(proc.pid).children() if "multiprocessing" in " ".join(c.cmdline())]
    assert len(shards) >= 2, shards  # --jobs 2: the checks below would pass vacuously on no process
    try:
        yield proc, shards
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def test_an_interrupt_ends_every_shard_at_once(sharded_build):
    """Ctrl-C (SIGINT to the process group) mid-conversion: the build ends within seconds and no
    shard process is left behind."""
    proc, shards = sharded_build
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
    gone, alive = psutil.wait_procs(shards, timeout=10)
    assert not alive and len(gone) == len(shards) >= 2, alive


def test_a_killed_shard_is_named_and_the_others_finish(sharded_build, tmp_path):
    proc, shards = sharded_build
    victim = next(s for s in shards if any(f.path.endswith("shard1.log") for f in s.open_files()))
    victim.kill()
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    assert (
        "build shards [1] failed: shard 1: ended by signal SIGKILL (log " in err
        and "rerun the same command to resume" in err
    ), err
    assert (tmp_path / "cache" / "build_report.shard0.json").is_file(), "shard 0 finished its units"


def test_a_script_without_the_main_guard_is_told_what_to_do(tmp_path, corpus):
    """Spawned shard processes import the calling script; one that calls ``build(jobs=2)`` at
    module level would start shards from shards: each is refused, naming the guard."""
    script = tmp_path / "unguarded.py"
    script.write_text(SHARDED_BUILD.replace('if __name__ == "__main__":\n    tmp', "if True:\n    tmp"))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(corpus)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert (
        'call it under `if __name__ == "__main__":`' in done.stderr and "build shards [0, 1] failed" in done.stderr
    ), done.stderr[-2000:]
    assert not (tmp_path / "out").exists()
