"""``./run.sh demo``'s order of steps, with the build, the judges and the app replaced by stand-ins
(the real seeder follows the stand-in baselines): the Space starts once the first baseline file is
on the board, while the others are still being judged, they reach the board as they are written,
and the steps still running behind the app are ended when it stops."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import psutil

from tests.support.fresh_machine import ROOT
from tests.support.synthetic import build_synthetic_dataset

#: ``python`` of the copied checkout: the build and validation do nothing, ``judges`` and
#: ``space.app`` run the stand-ins beside it, anything else the real interpreter.
PYTHON = """#!/usr/bin/env bash
echo "$*" >> steps.log
case "$2" in
  speakersleuth.builder_scripts|speakersleuth.speakersleuth_dataset) exit 0 ;;
  speakersleuth.judges) exec {real} "$(dirname "$0")/judges_stand_in.py" "$@" ;;
  speakersleuth.space.app) exec {real} "$(dirname "$0")/app_stand_in.py" ;;
  *) exec {real} "$@" ;;
esac
"""

#: ``judges baselines``: three predictions files, listed in progress.json as the real command lists
#: them, the second and third once the app has started; ``judges sweep``: sleeps, so that it is
#: still running when the app stops.
JUDGES = """
import json, os, sys, time
from pathlib import Path

if sys.argv[3] == "sweep":  # argv: the script, -m, speakersleuth.judges, the command
    Path("sweep.pid").write_text(str(os.getpid()))
    time.sleep(300)
    sys.exit(0)
from speakersleuth.metrics.submission import load_gold
from tests.support.space_support import predictions

out, gold, written = Path("results/baselines"), load_gold("speakersleuth", "main"), []
for pattern, name in enumerate(["pairwise-a.main.jsonl", "centroid-a.main.jsonl", "reference-a.main.jsonl"], 1):
    end = time.monotonic() + 120
    while pattern > 1 and not Path("app.json").exists() and time.monotonic() < end:
        time.sleep(0.1)
    (out / name).write_bytes(predictions(gold, pattern))
    written.append(name)
    (out / "progress.json").write_text(json.dumps({"planned": 3, "written": written, "finished": pattern == 3}))
"""

#: ``space.app``: records the board's status and the files written when it started, then waits for
#: the seeder to have seeded the last file and the sweep to have started (two minutes at most) and
#: records the status again.
APP = """
import json, time
from pathlib import Path
status = Path("data/baselines-status.json")
progress = json.loads(Path("results/baselines/progress.json").read_text())
Path("app.json").write_text(json.dumps({"status": json.loads(status.read_text()), "written": len(progress["written"])}))
end = time.monotonic() + 120
while not (json.loads(status.read_text())["finished"] and Path("sweep.pid").exists()) and time.monotonic() < end:
    time.sleep(0.1)
Path("app-end.json").write_text(status.read_text())
"""


def test_the_space_starts_at_the_first_baseline_and_the_rest_follow_behind(tmp_path):
    repo = tmp_path / "clone"
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(ROOT / "run.sh", repo / "run.sh")
    (repo / "setup.sh").write_text("#!/usr/bin/env bash\n")
    (bin_dir / "python").write_text(PYTHON.format(real=sys.executable))
    (bin_dir / "judges_stand_in.py").write_text(JUDGES)
    (bin_dir / "app_stand_in.py").write_text(APP)
    for script in (repo / "setup.sh", bin_dir / "python"):
        script.chmod(0o755)
    build_synthetic_dataset(repo / "speakersleuth", dialogues=2, variants=("main",))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(["./run.sh", "demo"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    started = json.loads((repo / "app.json").read_text())
    assert started == {"status": {"planned": 3, "seeded": 1, "running": True, "finished": False}, "written": 1}
    ended = json.loads((repo / "app-end.json").read_text())
    assert ended == {"planned": 3, "seeded": 3, "running": True, "finished": True}  # the sweep still runs
    steps = (repo / "steps.log").read_text().splitlines()
    assert [line.split()[1] for line in steps[:2]] == [
        "speakersleuth.builder_scripts",
        "speakersleuth.speakersleuth_dataset",
    ]
    assert f"--jobs {os.cpu_count()}" in next(line for line in steps if " baselines " in line)
    assert _ends_within(int((repo / "sweep.pid").read_text()), 10), "the sweep outlived the demo"


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie, ended but not yet reaped) within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False
