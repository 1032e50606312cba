"""What the Space shows of a submission's scores: everything on a labelled build; on a blind copy,
a round policy designed against submitters who probe.

Threat model (blind copy). The submitter knows the public folder (audio, text, ids), the scorer's
code and this policy, can send any valid file, read every page of the Space and its API, and
change one line between two files to difference what comes back. What must stay hidden are the
test labels: each instance's scenario and altered turn, each discrimination answer.

The policy, ``BlindRound``, takes two answers of the field and adds a budget:

- **Public and private parts** (Kaggle). The test instances are split, by dialogue and balanced
  within each scenario, by a keyed hash whose key is a digest of the private gold (so nobody can
  compute the split without the gold, and it is the same on every restart). While the round is
  open only the public part is ever scored for display; the private part is scored, stored, and
  shown when the maintainer closes the round (``SPEAKERSLEUTH_ROUND=closed``), when submissions
  stop. Nothing shown during the round depends on a private label, so no amount of probing
  recovers one.
- **The Ladder** (Blum & Hardt, ICML 2015) on the public part: of the headline metrics
  (``RELEASED``) a new value is released only when it beats the identity's best so far by more
  than the margin ``η`` and is then shown rounded down to a multiple of ``η``; otherwise the
  submission page says "not released". ``η`` is at least 1 point and at least the largest change
  one answer can make to that metric on the public part, so a file that differs from the
  identity's best in one answer never releases anything: one-line differencing learns nothing.
  Each metric can be released at most ``1 + 100 / η`` times per identity and variant.
- **No breakdowns, no downloads**: per-scenario and per-source values, confidence intervals, the
  analyses (duration quartiles, VC model, ...) and the stored predictions are not shown during
  the round; they are cells a single instance can steer, or (quartile boundaries) labels that
  public clip durations match.
- **A budget per identity**: a blind Space's default rate limit is ``BLIND_RATE_LIMIT`` scored
  submissions per day (``SPEAKERSLEUTH_BLIND_RATE_LIMIT`` / ``_WINDOW``).

What it does not stop: many accounts (each has its own Ladder and budget; the private part stays
hidden from all of them), and a submitter's own public-part score moving with their own answers.
Kaggle's split is taken whole; the Ladder's parameter-free variant (a significance test instead
of a fixed margin) is left: a fixed margin is what makes single-answer differencing provably
silent. Minimum cell sizes are not used: with the Ladder's margin no released number can be
steered by one instance, and breakdowns are off during the round.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import speakersleuth_dataset as ssd
from metrics.core import SCENARIOS
from metrics.score import TABLE2_KEYS, leaderboard_row, score_submission
from metrics.submission import Gold, Submission

from space.names import fold
from space.store import BASELINE_SUBMITTER, StoredResult

#: The headline metrics a blind round releases (one per task), and what each is in a score dict.
RELEASED = ("det_bal_acc", "loc_bal_f1", "disc_acc_avg")
_RAW = {"det_bal_acc": ("detection", "balanced_accuracy"), "loc_bal_f1": ("localization", "balanced_f1"),
        "disc_acc_avg": ("discrimination", "accuracy")}
#: Weight of one scenario's mean in a balanced score (``metrics.core.balanced``).
_SCENARIO_WEIGHT = {"S1": 0.5, "S2": 0.25, "S3": 0.25}
MIN_MARGIN = 1.0  # points
BLIND_RATE_LIMIT, BLIND_RATE_WINDOW_S = 5, 86_400
POLICY = "blind-round"


def policy_for(config, dataset, n_bootstrap: int = 1000) -> Disclosure:
    """The policy of a Space serving ``dataset``: a blind copy's round (``config.round_closed``), else everything."""
    if ssd.is_blind(dataset):
        return BlindRound(n_bootstrap=n_bootstrap, closed=config.round_closed)
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

    def __init__(self, *, n_bootstrap: int = 1000) -> None:
        self.n_bootstrap = n_bootstrap

    def score(self, sub: Submission, gold: Gold, history: list[StoredResult]) -> dict:
        """The scores to store for ``sub``; ``history`` is the submitter's earlier records of the variant."""
        return score_submission(sub, gold, n_bootstrap=self.n_bootstrap, seed=0)

    def history(self, records: Iterable[StoredResult], user: str, model_name: str) -> list[StoredResult]:
        """The records ``score`` compares a new submission with: every earlier one of ``user``
        (withdrawn too); for the Space's own baselines, those of the same model only."""
        return [r for r in records if r.submitter == user and (user != BASELINE_SUBMITTER or r.metadata.model_name == model_name)]

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

    @property
    def shows_details(self) -> bool:
        """Whether pages show analyses and offer the stored predictions."""
        return True

    def status(self, record: StoredResult) -> str:
        """A line on what was shown of ``record`` (empty on a labelled build)."""
        return ""


@dataclass(frozen=True)
class Parts:
    """The public and private parts of a blind test split, and each metric's Ladder margin."""

    public: Gold
    private: Gold
    margin: dict[str, float]


class BlindRound(Disclosure):
    """The policy of a blind copy's leaderboard (the module docstring); ``closed``: the round is over."""

    blind = True

    def __init__(self, *, n_bootstrap: int = 1000, closed: bool = False) -> None:
        super().__init__(n_bootstrap=n_bootstrap)
        self.closed = closed

    @staticmethod
    def parts(gold: Gold) -> Parts:
        """``split_parts(gold)``, made once per gold (kept in its cache, beside the scorer's arrays)."""
        if "disclosure_parts" not in gold.cache:
            gold.cache["disclosure_parts"] = split_parts(gold)
        return gold.cache["disclosure_parts"]

    def check(self, gold):
        self.parts(gold)

    def score(self, sub, gold, history):
        parts = self.parts(gold)
        public = score_submission(sub, parts.public, n_bootstrap=0)
        best = ladder_best(history)
        released, new_best = {}, dict(best)
        for key in RELEASED:
            task, name = _RAW[key]
            raw = public.get(task, {}).get(name)
            if raw is None:
                continue
            if key not in best or raw > best[key] + parts.margin[key]:
                released[key] = round(math.floor(raw / parts.margin[key] + 1e-9) * parts.margin[key], 1)
                new_best[key] = raw
        private = score_submission(sub, parts.private, n_bootstrap=self.n_bootstrap, seed=0)
        return {"policy": POLICY, "tasks": private["tasks"], "margin": parts.margin, "released": released,
                "ladder_best": new_best, "public": public, "private": private}

    def row(self, record):
        if self.closed:
            return leaderboard_row(record.scores["private"])
        return {key: record.scores["released"].get(key) for key in TABLE2_KEYS}

    def rows(self, results):
        """One row per ``row_key``: while open, each metric's latest released value of the row's
        submissions; once closed, the newest submission's private scores."""
        if self.closed:
            return super().rows(results)
        merged: dict[tuple, tuple[StoredResult, dict]] = {}
        for record in sorted(results, key=lambda r: (r.created_at, r.id)):
            released = record.scores["released"]
            if not released:
                continue
            key = row_key(record)
            previous = merged.get(key, (None, dict.fromkeys(TABLE2_KEYS)))[1]
            merged[key] = (record, {**previous, **released})
        return list(merged.values())

    def breakdown_scores(self, record):
        return record.scores["private"] if self.closed else None

    @property
    def shows_details(self):
        return False

    def status(self, record):
        if self.closed:
            return "The round is closed: scores on the private part of the test split, which decides the final ranking."
        released, margin = record.scores["released"], record.scores["margin"]
        parts = []
        for key in RELEASED:
            if key in released:
                parts.append(f"{key}: {released[key]:.1f} released (rounded down to a multiple of {margin[key]:.1f})")
            elif _RAW[key][0] in record.scores["tasks"]:
                parts.append(f"{key}: not released (it did not beat your best by more than {margin[key]:.1f} points)")
        return ("Blind round: scores on the public part of the test split only, through the Ladder; " + "; ".join(parts)
                + ". The private part decides the final ranking and is shown when the round closes.")


def ladder_best(history: list[StoredResult]) -> dict[str, float]:
    """The submitter's best raw public value of each released metric (withdrawn records count)."""
    best: dict[str, float] = {}
    for record in history:
        for key, value in record.scores.get("ladder_best", {}).items():
            best[key] = max(value, best.get(key, -math.inf))
    return best


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
        tasks = {task: {rid: row for rid, row in rows.items() if (row["dialogue_id"] in public) == keep}
                 for task, rows in gold.tasks.items()}
        halves.append(Gold(gold.variant, gold.split, tasks))
    for half, name in zip(halves, ("public", "private")):
        for task, rows in gold.tasks.items():
            missing = sorted({row.get("scenario") for row in rows.values()} - {row.get("scenario") for row in half.tasks[task].values()})
            if missing:
                raise ValueError(f"the blind {gold.variant} test split is too small for a round: its {name} part has no "
                                 f"{task} instance of {', '.join(map(str, missing))} (each scenario needs two dialogues)")
    return Parts(halves[0], halves[1], {key: _margin(halves[0], key) for key in RELEASED})


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
            digest.update(f"{task}\0{rid}\0{row['dialogue_id']}\0{row.get('scenario')}\0{row.get('answer')}\n".encode())
    return digest.digest()


def _margin(gold: Gold, key: str) -> float:
    """The Ladder's margin of ``key`` in points: at least ``MIN_MARGIN`` and more than the largest
    change one instance's answer can make to it on ``gold`` (the next 0.1 above it), so that no
    file that differs from the submitter's best in one answer can release a value.

    >>> g = Gold("main", "test", {"discrimination": {f"d{i}": {"dialogue_id": f"d{i}"} for i in range(4)}})
    >>> _margin(g, "disc_acc_avg")
    25.1
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
    return max(MIN_MARGIN, round(math.floor(influence * 10 + 1e-9) / 10 + 0.1, 1))
