"""The results store's records and its interface: what a submitter says (``Metadata``), one
stored submission (``StoredResult``), a withdrawal and a review decision, the errors ``add``
raises, and ``ResultsStore``, the interface ``space.sqlite_store`` and ``space.hub_store``
implement (``space.store`` describes both and opens the one a configuration asks for).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from speakersleuth.space.text import encodable

#: The identity ``space.seed`` stores the built-in baselines under; its rows are the verified ones.
BASELINE_SUBMITTER = "seed"


@dataclass(frozen=True)
class Metadata:
    """What a submitter says about the model (already validated by the submit handler)."""

    model_name: str
    organisation: str = ""
    model_type: str = "other"
    access: str = "open"
    link: str = ""
    model_date: str = ""
    setting: str = ""  # one of ``metrics.analysis.SETTINGS``, or "" (not tagged)

    def __post_init__(self) -> None:  # a name stored before the form refused surrogates must still draw
        for name, value in asdict(self).items():
            object.__setattr__(self, name, encodable(value))


@dataclass(frozen=True)
class Withdrawal:
    """Who withdrew a submission, when and why."""

    submitter: str
    at: float
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", encodable(self.reason))


@dataclass(frozen=True)
class ReviewDecision:
    """One reviewer's verdict (``accept`` or ``reject``, with a reason) on one dialogue of one variant."""

    variant: str
    dialogue_id: str
    reviewer: str
    decision: str
    reason: str
    at: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", encodable(self.reason))


class StoreFull(RuntimeError):
    """Storing a submission would take the stored predictions past the store's size budget."""

    def __init__(self, used: int, size: int, budget: int):
        self.used, self.size, self.budget = used, size, budget
        super().__init__(
            f"the results store holds {used:,} bytes of predictions; {size:,} more would pass its budget of {budget:,}"
        )


class RateLimited(RuntimeError):
    """``add``'s ``rate_limit``: the submitter already made ``limit`` submissions in the window."""


class Refused(ValueError):
    """``add``'s ``admit`` check found reasons (``errors``) not to store a submission."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


#: A check run on every stored record (withdrawn too) under the store's write lock, so what it
#: decides cannot race another submission; returns the reasons to refuse (none: store it).
Admit = Callable[[list["StoredResult"]], list[str]]


@dataclass(frozen=True)
class StoredResult:
    """One accepted submission as the leaderboard reads it (without the raw predictions)."""

    id: str
    variant: str
    sha256: str
    metadata: Metadata
    submitter: str
    created_at: float
    num_lines: int
    scores: dict[str, Any]
    withdrawal: Withdrawal | None = None

    @property
    def verified(self) -> bool:
        """A built-in baseline, stored by the Space's own seeding, not by a submitter."""
        return self.submitter == BASELINE_SUBMITTER

    def to_json(self) -> dict[str, Any]:
        """The record as the Hub store writes it (a withdrawal is a file of its own)."""
        data = asdict(self)
        del data["withdrawal"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoredResult:
        return cls(**{**data, "metadata": Metadata(**data["metadata"])})


def result_id(variant: str, sha256: str) -> str:
    """The public id of a submission: its variant and the start of its file hash."""
    return f"{variant}-{sha256[:16]}"


class ResultsStore(ABC):
    """Where accepted submissions and the submission log live."""

    def add(
        self,
        *,
        variant: str,
        sha256: str,
        predictions: bytes,
        scores: dict[str, Any],
        metadata: Metadata,
        submitter: str,
        num_lines: int,
        now: float | None = None,
        budget_bytes: int | None = None,
        admit: Admit | None = None,
        rate_limit: tuple[int, float] | None = None,
    ) -> tuple[StoredResult, bool]:
        """Store a scored submission atomically; returns ``(record, created)``. When the same
        ``(variant, sha256)`` is already stored (withdrawn or not), nothing is written and the
        first record comes back with ``created=False``. Nothing is written either when the stored
        predictions would pass ``budget_bytes`` (``StoreFull``) or ``admit`` refuses (``Refused``).
        With ``rate_limit=(limit, window_s)`` the submission is also one attempt of ``submitter``
        at ``now`` in the rate-limit log (``acquire``, ``retry_at``), logged with it in the same
        transaction; nothing is written (``RateLimited``) when ``submitter`` already has ``limit``
        attempts in the last ``window_s`` seconds. Only a stored submission uses quota."""
        record = StoredResult(
            id=result_id(variant, sha256),
            variant=variant,
            sha256=sha256,
            metadata=metadata,
            submitter=submitter,
            created_at=time.time() if now is None else now,
            num_lines=num_lines,
            scores=scores,
        )
        return self.store_record(record, predictions, Limits(budget_bytes, admit, rate_limit))

    @abstractmethod
    def store_record(
        self, record: StoredResult, predictions: bytes, limits: Limits | None = None
    ) -> tuple[StoredResult, bool]:
        """``add`` once its record is made: store ``record`` and its ``predictions`` if
        ``limits`` admit them (none: no check), or return the record already stored for its
        ``(variant, sha256)``."""

    @abstractmethod
    def find(self, variant: str, sha256: str) -> StoredResult | None:
        """The record of the same predictions submitted earlier (perhaps withdrawn), if any."""

    @abstractmethod
    def results(
        self, variant: str | None = None, *, include_withdrawn: bool = False, submitter: str | None = None
    ) -> list[StoredResult]:
        """Every accepted submission (of one variant; of one submitter) not withdrawn (unless
        asked), oldest first."""

    @abstractmethod
    def get(self, result_id: str) -> StoredResult:
        """One stored submission by its id, withdrawn or not; ``KeyError`` if unknown."""

    @abstractmethod
    def predictions(self, result_id: str) -> bytes:
        """The canonical predictions of a stored submission; ``KeyError`` if unknown."""

    @abstractmethod
    def withdraw(self, result_id: str, submitter: str, reason: str = "", now: float | None = None) -> StoredResult:
        """Take a submission off the leaderboard, recording ``Withdrawal(submitter, now, reason)``;
        returns the withdrawn record. ``KeyError`` if unknown; ``PermissionError`` if
        ``submitter`` did not submit it; ``ValueError`` if it is already withdrawn."""

    @abstractmethod
    def stored_bytes(self) -> int:
        """The size of all stored predictions (what ``budget_bytes`` limits)."""

    @abstractmethod
    def acquire(self, submitter: str, limit: int, window_s: float, now: float | None = None) -> bool:
        """Atomically check the rate limit and log one submission attempt: ``True`` (and logged)
        when ``submitter`` made fewer than ``limit`` attempts in the last ``window_s`` seconds. The
        window is half-open, ``(now - window_s, now]``: an attempt exactly ``window_s`` old has left
        it, so the time ``retry_at`` names is one that ``acquire`` grants (``add``'s ``rate_limit``
        counts alike)."""

    @abstractmethod
    def retry_at(self, submitter: str, limit: int, window_s: float, now: float) -> float:
        """When ``submitter`` may next be granted ``acquire`` (``now`` if already)."""

    @abstractmethod
    def add_review(self, decision: ReviewDecision) -> None:
        """Append one review decision (earlier ones stay: the audit trail)."""

    @abstractmethod
    def reviews(self) -> list[ReviewDecision]:
        """Every review decision ever stored, oldest first."""

    def close(self) -> None:
        """Release resources (flush pending pushes)."""

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_withdrawal(record: StoredResult, submitter: str) -> None:
    """Refuse a withdrawal by anyone but the submitter, or of a record already withdrawn."""
    if record.submitter != submitter:
        raise PermissionError(f"{record.id} was submitted by another user; only its submitter can withdraw it")
    if record.withdrawal is not None:
        raise ValueError(f"{record.id} is already withdrawn")


@dataclass(frozen=True)
class Limits:
    """What a new submission must pass to be stored: ``ResultsStore.add``'s ``budget_bytes``,
    ``admit`` and ``rate_limit``."""

    budget_bytes: int | None = None
    admit: Admit | None = None
    rate_limit: tuple[int, float] | None = None

    def check(
        self,
        record: StoredResult,
        predictions: bytes,
        *,
        stored_bytes: int,
        every_result: Callable[[], list[StoredResult]],
        attempts_since: Callable[[float], int],
    ) -> None:
        """Refuse new ``predictions`` as ``ResultsStore.add`` does, in its order: their size over
        ``budget_bytes`` (``StoreFull``; measured only then), refused by ``admit`` over every stored
        result, withdrawn included (``Refused``), or past ``rate_limit`` (``RateLimited``).
        ``every_result`` and ``attempts_since(time)`` read the store only when their check is asked for."""
        if self.budget_bytes is not None and stored_bytes + len(predictions) > self.budget_bytes:
            raise StoreFull(stored_bytes, len(predictions), self.budget_bytes)
        if self.admit is not None and (errors := self.admit(every_result())):
            raise Refused(errors)
        if self.rate_limit is not None:
            limit, window_s = self.rate_limit
            if attempts_since(record.created_at - window_s) >= limit:
                raise RateLimited(f"{record.submitter} made {limit} submissions in the last {window_s} s")
