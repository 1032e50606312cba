"""What the Space shows of a submission's scores: everything on a labelled build; on a blind copy,
a round run as the competitions that hold up run it (``BlindRound``).

Threat model (blind copy). The submitter knows the public folder (audio, text, ids), the scorer's
code and this policy, can send any valid file, read every page of the Space and its API, change
one line between two files to difference what comes back, send files at once, and open as many
identities (accounts) as it likes, each with its own budget.

The rules:

1. **Nothing private is shown while the round is open.** The test instances are split by dialogue,
   balanced per stratum of scenarios, into a public and a private part that share no dialogue (and,
   on an unpaired copy, no clip). While open, everything a page, a reply or the leaderboard shows of
   a file is a function of its public answers alone: the public part's released values and the
   Ladder's "not released"; the private part is scored and stored, never shown.
2. **Selection freezes at close.** When the round closes (``SPEAKERSLEUTH_ROUND=closed``, at
   ``closed_at``), each identity's selected file of a variant is its newest stored before
   ``closed_at`` and not withdrawn before it (``frozen_selection``); after close no file and no
   withdrawal is taken, and the closed table shows the selected files' private headline metrics.
3. **Each round has its own hidden set**, built with a secret seed, and retires it at close: the
   gold is published with the standings (``space.round``), so nothing private is left to protect.
4. **The Ladder on the public part** (Blum & Hardt, 2015): of the headline metrics (``RELEASED``),
   a file's public value is released, as the line at or below it on a fixed grid of step η, when
   it beats the identity's best released value by more than η; otherwise the page says "not
   released". η is the largest change one answer can make to the metric on the public part (at
   least ``MIN_STEP``): a file that differs from the identity's best in one answer is never
   released, and honest models a few answers apart are told apart. Public labels cannot be kept
   from a submitter with many accounts on any public leaderboard (each account's first release is
   its file's public value to within η); it decides nothing here, because the private part alone
   decides the standings and nothing of it is shown before close. One release at a time per
   identity: an identity's files are scored one after another against its updated history
   (``space.submitter``), so files sent at once are each compared with the best of those before.
5. **A round big enough to rank**: a round's build (the builder's ``--round``) is disjoint by
   construction, one instance per test dialogue, so N dialogues give N instances; η shrinks as
   1/N (the README says how many dialogues a step takes).

Also: a file answers every test instance of its variant (anything less is refused, naming what is
missing); no breakdowns, intervals or downloads on a blind copy, open or closed (the published gold
gives them); ``BLIND_RATE_LIMIT`` scored submissions per day; paired copies (test rows sharing a
dialogue or a clip) are refused (``check_unpaired``) unless ``SPEAKERSLEUTH_ALLOW_PAIRED`` serves
one with a banner.
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
#: The Ladder's smallest step η, in points (on a part so large that one answer moves a metric less).
MIN_STEP = 0.5
BLIND_RATE_LIMIT, BLIND_RATE_WINDOW_S = 5, 86_400
POLICY = "blind-round"


def policy_for(config, dataset, n_bootstrap: int = 1000) -> Disclosure:
    """The policy of a Space serving ``dataset``: a blind copy's round (``config.round_closed_at``,
    ``config.allow_paired``), else everything."""
    if ssd.is_blind(dataset):
        return BlindRound(n_bootstrap=n_bootstrap, closed_at=config.round_closed_at, allow_paired=config.allow_paired)
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
        """One row per ``row_key`` of the records not withdrawn: the newest submission's (the others
        stay on their pages). ``results`` may hold withdrawn records (a closed round reads them)."""
        newest: dict[tuple, StoredResult] = {}
        for record in sorted(results, key=lambda r: (r.created_at, r.id)):
            if record.withdrawal is None:
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
    """The public and private parts of a blind test split, and each released metric's Ladder step η
    on the public part (``step``)."""

    public: Gold
    private: Gold
    step: dict[str, float]


class BlindRound(Disclosure):
    """The policy of a blind copy's leaderboard (the module docstring); ``closed_at``: when the
    round closed (a Unix time; ``math.inf``: closed, everything stored counts; None: open);
    ``allow_paired``: serve a copy whose test rows share dialogues or clips (it leaks)."""

    blind = True

    def __init__(self, *, n_bootstrap: int = 1000, closed_at: float | None = None, allow_paired: bool = False) -> None:
        super().__init__(n_bootstrap=n_bootstrap)
        self.closed_at = closed_at
        self.closed = closed_at is not None
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
        public = score_submission(sub, parts.public, n_bootstrap=0)
        private = score_submission(sub, parts.private, n_bootstrap=self.n_bootstrap, seed=0)
        released, best = ladder(headline(public), ladder_best(history), parts.step)
        return {
            "policy": POLICY,
            "tasks": public["tasks"],
            "step": parts.step,
            "released": released,
            "ladder_best": best,
            "public": public,
            "private": private,
        }

    def row(self, record):
        if self.closed:
            shown_values = {key: round(value, 1) for key, value in headline(record.scores["private"]).items()}
        else:
            shown_values = record.scores["released"]
        return {key: shown_values.get(key) for key in TABLE2_KEYS}

    def rows(self, results):
        """While open, one row per ``row_key``: each metric's latest released value of the row's
        submissions not withdrawn; once closed, one row per identity and variant: its file of the
        ``frozen_selection`` with its private headline metrics."""
        ordered = sorted(results, key=lambda r: (r.created_at, r.id))
        if self.closed:
            return [(r, self.row(r)) for r in frozen_selection(ordered, self.closed_at).values()]
        merged: dict[tuple, tuple[StoredResult, dict]] = {}
        for record in ordered:
            released = record.scores["released"]
            if not released or record.withdrawal is not None:
                continue
            key = row_key(record)
            previous = merged.get(key, (None, dict.fromkeys(TABLE2_KEYS)))[1]
            merged[key] = (record, {**previous, **released})
        return list(merged.values())

    def selected(self, record: StoredResult, results: Iterable[StoredResult]) -> bool:
        """Whether ``record`` is its identity's file of the frozen selection (``results``: the
        variant's records, withdrawn too); False while the round is open."""
        if not self.closed:
            return False
        chosen = frozen_selection(results, self.closed_at).get((record.variant, record.submitter))
        return chosen is not None and chosen.id == record.id

    def breakdown_scores(self, record):
        return None

    @property
    def shows_details(self):
        return False

    def status(self, record):
        if self.closed:
            return (
                "The round is closed: each identity's selection froze at close (its newest file of the variant not "
                "withdrawn by then) and is shown with its private headline metrics; the round's gold is published."
            )
        released, step = record.scores["released"], record.scores["step"]
        parts = []
        for key in RELEASED:
            if key in released:
                parts.append(
                    f"{key}: {released[key]:.1f} released (the line at or below it, steps of {step[key]:.1f})"
                )
            elif _RAW[key][0] in record.scores["tasks"]:
                parts.append(f"{key}: not released (it did not beat your best by more than {step[key]:.1f} points)")
        return (
            "Blind round: scores on the public part of the test split only, through the Ladder; "
            + "; ".join(parts)
            + ". The private part decides the final ranking and is shown when the round closes."
        )


def frozen_selection(results: Iterable[StoredResult], closed_at: float) -> dict[tuple[str, str], StoredResult]:
    """Each (variant, identity)'s selected file at the moment ``closed_at``: its newest stored
    before then and not withdrawn before then (a later withdrawal, or file, changes nothing)."""
    selection: dict[tuple[str, str], StoredResult] = {}
    for record in sorted(results, key=lambda r: (r.created_at, r.id)):
        withdrawn = record.withdrawal is not None and record.withdrawal.at <= closed_at
        if record.created_at <= closed_at and not withdrawn:
            selection[(record.variant, record.submitter)] = record
    return selection


def headline(scores: dict) -> dict[str, float]:
    """Each released metric's raw value in ``scores`` (one part's score dict), of the tasks it has."""
    values = {}
    for metric in RELEASED:
        task, name = _RAW[metric]
        if scores.get(task, {}).get(name) is not None:
            values[metric] = scores[task][name]
    return values


def ladder_level(raw: float, step: float) -> float:
    """The line at or below ``raw`` of the fixed grid of ``step`` (multiples of it), as shown: one decimal.

    >>> ladder_level(67.3, 2.5), ladder_level(67.5, 2.5), ladder_level(0.4, 2.5)
    (65.0, 67.5, 0.0)
    """
    return round(step * math.floor(raw / step + 1e-9), 1)


def ladder(
    values: dict[str, float], best: dict[str, float], step: dict[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """The Ladder's answer for a file's public ``values`` against the identity's ``best`` released
    values: (what is released, the identity's best afterwards). A metric is released, as its
    ``ladder_level``, when it has no best yet or beats it by more than its ``step``.

    >>> ladder({"det_bal_acc": 62.0}, {"det_bal_acc": 60.0}, {"det_bal_acc": 2.5})
    ({}, {'det_bal_acc': 60.0})
    >>> ladder({"det_bal_acc": 62.6}, {"det_bal_acc": 60.0}, {"det_bal_acc": 2.5})
    ({'det_bal_acc': 62.5}, {'det_bal_acc': 62.6})
    """
    released, new_best = {}, dict(best)
    for key, raw in values.items():
        if key not in best or raw > best[key] + step[key]:
            released[key], new_best[key] = ladder_level(raw, step[key]), raw
    return released, new_best


def ladder_best(history: list[StoredResult]) -> dict[str, float]:
    """The submitter's best released raw public value of each released metric (withdrawn records count)."""
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
    return Parts(halves[0], halves[1], {key: ladder_step(halves[0], key) for key in RELEASED})


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


def ladder_step(gold: Gold, key: str) -> float:
    """The Ladder's step η of ``key`` on the part ``gold``, in points: the largest change one
    instance's answer can make to it (rounded up to 0.1), and at least ``MIN_STEP``.

    >>> g = Gold("main", "test", {"discrimination": {f"d{i}": {"dialogue_id": f"d{i}"} for i in range(40)}})
    >>> ladder_step(g, "disc_acc_avg")
    2.5
    """
    task = _RAW[key][0]
    rows = list(gold.tasks.get(task, {}).values())
    if not rows:
        return MIN_STEP
    if task == "discrimination":
        influence = 100.0 / len(rows)
    else:
        counts = {s: sum(row["scenario"] == s for row in rows) for s in SCENARIOS}
        influence = max(100.0 * _SCENARIO_WEIGHT[s] / n for s, n in counts.items() if n)
    return max(MIN_STEP, math.ceil(influence * 10 - 1e-6) / 10)
