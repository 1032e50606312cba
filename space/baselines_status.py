"""How far the baselines are, as the seeder writes it and the Leaderboard tab reads it: the status
file (``STATUS_FILE`` in the Space's data folder) and the tab's line (``baselines_note``). Apart from
``space.seed`` so that the Space's app, which the Hub tree carries, does not carry the seeder."""

from __future__ import annotations

import json
from pathlib import Path

#: What ``space.seed.follow`` writes in the Space's data folder: ``planned``, ``seeded``, ``running``
#: (whether the baselines' process still runs) and ``finished`` (whether it wrote every file).
STATUS_FILE = "baselines-status.json"


def read_progress(path: Path) -> dict:
    """The baselines' progress (empty before they wrote it)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def baselines_note(status: Path) -> str:
    """The Leaderboard tab's line on baselines still being judged (empty when none are, or none were seeded here).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / STATUS_FILE
    >>> baselines_note(path)
    ''
    >>> _ = path.write_text('{"planned": 24, "seeded": 6, "running": true, "finished": false}')
    >>> baselines_note(path)
    '6 of 24 baseline runs are on the board; 18 are still running (Refresh shows them as they finish).'
    >>> _ = path.write_text('{"planned": 24, "seeded": 6, "running": false, "finished": false}')
    >>> baselines_note(path)
    'The baselines stopped after 6 of 24 runs; see the log of ./run.sh demo.'
    """
    state = read_progress(status)
    if not state or state["finished"] or state["planned"] is None:
        return ""
    planned, seeded = state["planned"], state["seeded"]
    if not state["running"]:
        return f"The baselines stopped after {seeded} of {planned} runs; see the log of ./run.sh demo."
    return (
        f"{seeded} of {planned} baseline runs are on the board; {planned - seeded} are still running "
        "(Refresh shows them as they finish)."
    )
