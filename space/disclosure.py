"""What the Space shows of a submission's scores: everything on a labelled build; on a blind copy,
a round policy designed against submitters who probe, alone or with many identities.

Threat model (blind copy). The submitter knows the public folder (audio, text, ids), the scorer's
code and this policy, can send any valid file, read every page of the Space and its API, change
one line between two files to difference what comes back, send files at once, and open as many
identities (accounts) as it likes, each with its own budget. What must stay hidden are the test
labels: each instance's scenario and altered turn, each discrimination answer. The server's
secret is the gold itself: the split and the release grid are keyed by a digest of it.

The policy, ``BlindRound`` (Kaggle's round and Blum & Hardt's Ladder, taken whole):

- **Full coverage**: a file answers every test instance of its variant, every task; anything less
  is refused, naming what is missing. Every score is an aggregate over a whole part.
- **Public and private parts** (Kaggle). The test instances are split, by dialogue and balanced
  within each scenario, by a keyed hash. While the round is open only the public part is shown;
  the private part is scored and stored, and shown when the maintainer closes the round
  (``SPEAKERSLEUTH_ROUND=closed``), when submissions stop.
- **The Ladder on a keyed grid**: of the headline metrics (``RELEASED``), a file's value is shown
  as its *level*, the grid line at or below it on a grid of step ``η`` whose offset is drawn for
  that file (``grid_offset``: HMAC of the gold's key, the part, the identity, the variant, the
  metric and the file's hash). It is released when the level beats the identity's best raw value
  so far by more than ``η``; otherwise the page says "not released". ``η`` is ``STEPS_PER_ANSWER``
  times the largest change one answer can make to the metric on the part (at least 1 point), so:
  a file that differs from the identity's best in one answer is never released (its level is
  below that best plus ``η``); and for any file, one answer moves its level's distribution, and
  so whether it is released and what is shown, by at most ``2 / STEPS_PER_ANSWER`` in total
  variation (one answer moves the raw value and the best each by at most ``η / STEPS_PER_ANSWER``;
  the offset is uniform and fresh per file). No edge can be aimed at: nobody knows where a file's
  grid lines are before it is scored, and what one file shows says nothing of another's grid.
- **One release at a time per identity**: an identity's files are scored one after another
  against its updated history (``space.submitter``), so files sent at once cannot all be compared
  with the same best.
- **Closing**: once closed, each identity's *selected* submission of a variant (its newest that
  it has not withdrawn) is shown with its three private headline metrics on its private keyed
  grid (same rule and step rule on the private part), and no other file shows anything private.
- **No breakdowns, no downloads, ever** on a blind copy: per-scenario and per-source values,
  confidence intervals, analyses and the stored predictions are not shown, open or closed. The
  maintainer who wants them publishes the gold (the gold folder as a public dataset), after
  which the copy is a labelled build and a Space serving it with its gold shows everything.
- **A budget per identity**: ``BLIND_RATE_LIMIT`` scored submissions per day.
- **Paired copies are refused** (``check_unpaired``): a copy whose test instances share a
  dialogue or a clip (across rows or variants) shows its gold to anyone who compares its rows,
  whatever the leaderboard does; ``SPEAKERSLEUTH_ALLOW_PAIRED`` serves one anyway, with a banner.

The bound (``STEPS_PER_ANSWER`` = K). Each scored file is decided by any one answer with
probability at most 2/K (1/K for an identity's first file, which has no best); an identity's
files that differ from its best in one answer are never released. So a submitter needs on
average at least K/2 scored files per public (or, after closing, K selected files: one identity
each, per private) label it learns by differencing, and at least K identities per label when
each identity differences from a known constant file with its first release. With many
identities the leak grows linearly with the files sent, never by one answer per file.
What it does not stop: a submitter's own public score moving with their own answers, and
aggregate attacks that combine many files' levels (each level is the raw value minus a uniform
draw of width ``η``); the private part decides the ranking and is shown once, on its grid.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.core import SCENARIOS
from speakersleuth.metrics.score import TABLE2_KEYS, leaderboard_row, score_submission
from speakersleuth.metrics.submission import Gold, Submission
from speakersleuth.space.names import fold
from speakersleuth.space.store import BASELINE_SUBMITTER, StoredResult

#: The headline metrics a blind round releases (one per task), and what each is in a score dict.
RELEASED = ("det_bal_acc", "loc_bal_f1", "disc_acc_avg")
_RAW = {
    "det_bal_acc": ("detection", "balanced_accuracy"),
    "loc_bal_f1": ("localization", "balanced_f1"),
    "disc_acc_avg": ("discrimination", "accuracy"),
}
#: Weight of one scenario's mean in a balanced score (``metrics.core.balanced``).
_SCENARIO_WEIGHT = {"S1": 0.5, "S2": 0.25, "S3": 0.25}
MIN_MARGIN = 1.0  # points
#: The release grid's step in units of the largest change one answer can make to the metric (the bound's K).
STEPS_PER_ANSWER = 10
BLIND_RATE_LIMIT, BLIND_RATE_WINDOW_S = 5, 86_400
POLICY = "blind-round"


def policy_for(config, dataset, n_bootstrap: int = 1000) -> Disclosure:
    """The policy of a Space serving ``dataset``: a blind copy's round (``config.round_closed``,
    ``config.allow_paired``), else everything."""
    if ssd.is_blind(dataset):
        return BlindRound(n_bootstrap=n_bootstrap, closed=config.round_closed, allow_paired=config.allow_paired)
    return Disclosure(n_bootstrap=n_bootstrap)


def released_task(key: str) -> str:
    """The task a released metric belongs to."""
    return _RAW[key][0]


def row_key(record: StoredResult) -> tuple:
    """One leaderboard row per identity, model name (as a reader sees it) and setting, variant."""
    return record.variant, record.submitter, tuple(sorted(fold(record.metadata.model_name))), record.metadata.setting


class Disclosure:
    """A labelled build's policy: every score is shown, per submission and on the leaderboard."""

    blind = False
    closed = False
    paired = False

    def __init__(self, *, n_bootstrap: int = 1000) -> None:
        self.n_bootstrap = n_bootstrap

    def score(self, sub: Submission, gold: Gold, history: list[StoredResult], identity: str = "") -> dict:
        """The scores to store for ``sub`` of ``identity``; ``history`` is its earlier records of the variant."""
        return score_submission(sub, gold, n_bootstrap=self.n_bootstrap, seed=0)

    def missing(self, sub: Submission, gold: Gold) -> str | None:
        """Why ``sub`` answers too little of ``gold`` to be scored (None: it may be scored)."""
        return None

    def history(self, records: Iterable[StoredResult], user: str, model_name: str) -> list[StoredResult]:
        """The records ``score`` compares a new submission with: every earlier one of ``user``
        (withdrawn too); for the Space's own baselines, those of the same model only."""
        return [
            r
            for r in records
            if r.submitter == user and (user != BASELINE_SUBMITTER or r.metadata.model_name == model_name)
        ]

    def row(self, record: StoredResult) -> dict:
        """The flat leaderboard row shown for ``record``."""
        return leaderboard_row(record.scores)

    def breakdown_scores(self, record: StoredResult) -> dict | None:
        """The score dict whose full breakdown a page may show (None: none may be)."""
        return record.scores

    def rows(self, results: Iterable[StoredResult]) -> list[tuple[StoredResult, dict]]:
        """One row per ``row_key``: the newest submission's (the others stay on their pages)."""
        newest: dict[tuple, StoredResult] = {}
        for record in sorted(results, key=lambda r: (r.created_at, r.id)):
            newest[row_key(record)] = record
        return [(r, self.row(r)) for r in newest.values()]

    def check(self, gold: Gold) -> None:
        """Raise ``ValueError`` when ``gold`` cannot be served under this policy."""

    def check_copy(self, dataset, golds: list[Gold]) -> None:
        """Raise ``ValueError`` when the served ``dataset`` (with the gold of each variant) cannot be served."""

    @property
    def shows_details(self) -> bool:
        """Whether pages show analyses and offer the stored predictions."""
        return True

    def status(self, record: StoredResult) -> str:
        """A line on what was shown of ``record`` (empty on a labelled build)."""
        return ""


@dataclass(frozen=True)
class Parts:
    """The public and private parts of a blind test split, each metric's grid step on each part
    (``margin``: the public part's, the Ladder's margin), and the key of the grids' offsets."""

    public: Gold
    private: Gold
    margin: dict[str, float]
    private_margin: dict[str, float]
    key: bytes


class BlindRound(Disclosure):
    """The policy of a blind copy's leaderboard (the module docstring); ``closed``: the round is
    over; ``allow_paired``: serve a copy whose test rows share dialogues or clips (it leaks)."""

    blind = True

    def __init__(self, *, n_bootstrap: int = 1000, closed: bool = False, allow_paired: bool = False) -> None:
        super().__init__(n_bootstrap=n_bootstrap)
        self.closed = closed
        self.allow_paired = allow_paired

    @staticmethod
    def parts(gold: Gold) -> Parts:
        """``split_parts(gold)``, made once per gold (kept in its cache, beside the scorer's arrays)."""
        if "disclosure_parts" not in gold.cache:
            gold.cache["disclosure_parts"] = split_parts(gold)
        return gold.cache["disclosure_parts"]

    def check(self, gold):
        self.parts(gold)

    def check_copy(self, dataset, golds):
        shared = shared_instances(dataset, golds)
        if shared and not self.allow_paired:
            raise ValueError(
                f"{dataset}: a paired blind copy: {shared} test instances share a dialogue or a clip with "
                "another row or variant, so comparing rows shows their gold; serve the --unpaired copy, or "
                "start with --allow-paired (SPEAKERSLEUTH_ALLOW_PAIRED=1) for a demo that may leak"
            )
        self.paired = bool(shared)

    def missing(self, sub, gold):
        gaps = []
        for task, rows in gold.tasks.items():
            answered = sub.predictions.get(task, {})
            lacking = sorted(rid for rid in rows if answered.get(rid, {}).get("prediction") is None)
            if lacking:
                gaps.append(f"{task} {len(lacking)} of {len(rows)} (e.g. {lacking[0]})")
        if not gaps:
            return None
        return (
            f"a blind round scores whole files: answer every {gold.variant} test instance of every task; "
            f"without an answer: {', '.join(gaps)}"
        )

    def score(self, sub, gold, history, identity=""):
        parts = self.parts(gold)
        digest = hashlib.sha256(sub.canonical()).hexdigest()
        public = score_submission(sub, parts.public, n_bootstrap=0)
        private = score_submission(sub, parts.private, n_bootstrap=self.n_bootstrap, seed=0)
        best = ladder_best(history)
        released, new_best = {}, dict(best)
        for key, (raw, level) in grid_levels(
            public, parts.margin, parts.key, "public", identity, gold.variant, digest
        ).items():
            if key not in best or level > best[key] + parts.margin[key]:
                released[key], new_best[key] = shown(level), raw
        private_levels = grid_levels(
            private, parts.private_margin, parts.key, "private", identity, gold.variant, digest
        )
        return {
            "policy": POLICY,
            "tasks": private["tasks"],
            "margin": parts.margin,
            "released": released,
            "ladder_best": new_best,
            "private_margin": parts.private_margin,
            "private_released": {key: shown(level) for key, (_, level) in private_levels.items()},
            "public": public,
            "private": private,
        }

    def row(self, record):
        shown_values = record.scores.get("private_released" if self.closed else "released", {})
        return {key: shown_values.get(key) for key in TABLE2_KEYS}

    def rows(self, results):
        """While open, one row per ``row_key``: each metric's latest released value of the row's
        submissions; once closed, one row per identity and variant: its selected submission (the
        newest it has not withdrawn) with its private levels."""
        ordered = sorted(results, key=lambda r: (r.created_at, r.id))
        if self.closed:
            selected = {(r.variant, r.submitter): r for r in ordered}
            return [(r, self.row(r)) for r in selected.values()]
        merged: dict[tuple, tuple[StoredResult, dict]] = {}
        for record in ordered:
            released = record.scores["released"]
            if not released:
                continue
            key = row_key(record)
            previous = merged.get(key, (None, dict.fromkeys(TABLE2_KEYS)))[1]
            merged[key] = (record, {**previous, **released})
        return list(merged.values())

    def breakdown_scores(self, record):
        return None

    @property
    def shows_details(self):
        return False

    def status(self, record):
        if self.closed:
            return (
                "The round is closed: each identity's selected submission of a variant (its newest not withdrawn) "
                "is shown with its private headline metrics on a keyed grid; nothing else of the private part is shown."
            )
        released, margin = record.scores["released"], record.scores["margin"]
        parts = []
        for key in RELEASED:
            if key in released:
                parts.append(
                    f"{key}: {released[key]:.1f} released (a line of a grid of step {margin[key]:.1f} "
                    "drawn for this file, at or below its value)"
                )
            elif _RAW[key][0] in record.scores["tasks"]:
                parts.append(f"{key}: not released (it did not beat your best by more than {margin[key]:.1f} points)")
        return (
            "Blind round: scores on the public part of the test split only, through the Ladder; "
            + "; ".join(parts)
            + ". The private part decides the final ranking and is shown when the round closes."
        )


def grid_offset(key: bytes, *fields: str) -> float:
    """A number in [0, 1) that nobody without ``key`` can predict, the same for the same ``fields``."""
    digest = hmac.new(key, "\0".join(fields).encode("utf-8"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def grid_level(raw: float, step: float, offset: float) -> float:
    """The line at or below ``raw`` of the grid of ``step`` whose lines sit at ``offset * step`` plus
    multiples of ``step``: ``raw`` less a remainder in [0, step), uniform when ``offset`` is.

    >>> grid_level(50.0, 10.0, 0.25), grid_level(50.0, 10.0, 0.0), grid_level(2.0, 10.0, 0.5)
    (42.5, 50.0, -5.0)
    """
    base = offset * step
    return base + step * math.floor((raw - base) / step + 1e-9)


def grid_levels(scores: dict, steps: dict[str, float], key: bytes, *fields: str) -> dict[str, tuple[float, float]]:
    """Each released metric ``scores`` has: (its raw value, its level on the grid drawn for ``fields`` and the metric)."""
    levels = {}
    for metric in RELEASED:
        task, name = _RAW[metric]
        raw = scores.get(task, {}).get(name)
        if raw is not None:
            levels[metric] = (raw, grid_level(raw, steps[metric], grid_offset(key, *fields, metric)))
    return levels


def shown(level: float) -> float:
    """A level as shown: one decimal, a level below 0 as 0."""
    return max(0.0, round(level, 1))


def ladder_best(history: list[StoredResult]) -> dict[str, float]:
    """The submitter's best raw public value of each released metric (withdrawn records count)."""
    best: dict[str, float] = {}
    for record in history:
        for key, value in record.scores.get("ladder_best", {}).items():
            best[key] = max(value, best.get(key, -math.inf))
    return best


def shared_instances(dataset, golds: list[Gold]) -> int:
    """How many test instances of the copy ``dataset`` (with the gold of every variant) share a
    dialogue (the gold's ``dialogue_id``) or a clip (``speakersleuth_dataset.instance_groups``)
    with another instance, in any variant."""
    members: dict[object, set[str]] = defaultdict(set)
    for gold in golds:
        for rows in gold.tasks.values():
            for rid, row in rows.items():
                members[("dialogue", row["dialogue_id"])].add(rid)
    for rid, group in ssd.instance_groups(dataset).items():
        members[("clips", group)].add(rid)
    return len({rid for ids in members.values() if len(ids) > 1 for rid in ids})


def split_parts(gold: Gold) -> Parts:
    """Split ``gold`` by dialogue into a public and a private half, balanced within each stratum of
    dialogues (the scenarios and tasks they hold), ordered by a keyed hash keyed by the gold itself."""
    key = _gold_digest(gold)
    strata: dict[tuple, list[str]] = defaultdict(list)
    for dialogue, signature in _signatures(gold).items():
        strata[signature].append(dialogue)
    public: set[str] = set()
    for dialogues in strata.values():
        ordered = sorted(dialogues, key=lambda d: hmac.new(key, d.encode("utf-8"), hashlib.sha256).digest())
        public.update(ordered[: (len(ordered) + 1) // 2])
    halves = []
    for keep in (True, False):
        tasks = {
            task: {rid: row for rid, row in rows.items() if (row["dialogue_id"] in public) == keep}
            for task, rows in gold.tasks.items()
        }
        halves.append(Gold(gold.variant, gold.split, tasks))
    for half, name in zip(halves, ("public", "private")):
        for task, rows in gold.tasks.items():
            missing = sorted(
                {row.get("scenario") for row in rows.values()}
                - {row.get("scenario") for row in half.tasks[task].values()}
            )
            if missing:
                raise ValueError(
                    f"the blind {gold.variant} test split is too small for a round: its {name} part has no "
                    f"{task} instance of {', '.join(map(str, missing))} (each scenario needs two dialogues)"
                )
    return Parts(
        halves[0],
        halves[1],
        {key: _margin(halves[0], key) for key in RELEASED},
        {key: _margin(halves[1], key) for key in RELEASED},
        hashlib.sha256(b"release grid\0" + key).digest(),
    )


def _signatures(gold: Gold) -> dict[str, tuple]:
    signature: dict[str, set] = defaultdict(set)
    for task, rows in gold.tasks.items():
        for row in rows.values():
            signature[row["dialogue_id"]].add((task, row.get("scenario")))
    return {dialogue: tuple(sorted(s, key=str)) for dialogue, s in signature.items()}


def _gold_digest(gold: Gold) -> bytes:
    digest = hashlib.sha256(gold.variant.encode())
    for task in sorted(gold.tasks):
        for rid in sorted(gold.tasks[task]):
            row = gold.tasks[task][rid]
            digest.update(
                f"{task}\0{rid}\0{row['dialogue_id']}\0{row.get('scenario')}\0{row.get('answer')}\n".encode()
            )
    return digest.digest()


def _margin(gold: Gold, key: str) -> float:
    """The grid step (the Ladder's margin) of ``key`` on ``gold`` in points: ``STEPS_PER_ANSWER``
    times the largest change one instance's answer can make to it (rounded up to 0.1), and at
    least ``MIN_MARGIN``.

    >>> g = Gold("main", "test", {"discrimination": {f"d{i}": {"dialogue_id": f"d{i}"} for i in range(40)}})
    >>> _margin(g, "disc_acc_avg")
    25.0
    """
    task = _RAW[key][0]
    rows = list(gold.tasks.get(task, {}).values())
    if not rows:
        return MIN_MARGIN
    if task == "discrimination":
        influence = 100.0 / len(rows)
    else:
        counts = {s: sum(row["scenario"] == s for row in rows) for s in SCENARIOS}
        influence = max(100.0 * _SCENARIO_WEIGHT[s] / n for s, n in counts.items() if n)
    return max(MIN_MARGIN, math.ceil(STEPS_PER_ANSWER * influence * 10 - 1e-6) / 10)
