"""Configuration of the Space, read from the environment (and overridden by the command line).

Environment variables (all optional except the dataset):

``SPEAKERSLEUTH_DATASET``      built dataset folder, or a Hub dataset id (downloaded once at start)
``SPEAKERSLEUTH_GOLD``         the test gold of a blind dataset (``python -m speakersleuth.speakersleuth_dataset blind``):
                              a local folder, or a private Hub dataset id read with ``HF_TOKEN``
``SPEAKERSLEUTH_DATA_DIR``     where the results store and caches live (default ``./data/space``)
``SPEAKERSLEUTH_RESULTS_REPO`` Hub dataset repo for results; with ``HF_TOKEN`` selects the Hub store
``SPEAKERSLEUTH_HOST``/``_PORT`` address to listen on (default 127.0.0.1:7860; 0.0.0.0 only on Spaces)
``SPEAKERSLEUTH_RATE_LIMIT``   submissions one user may make per window (default 10)
``SPEAKERSLEUTH_RATE_WINDOW``  the window in seconds (default 3600)
``SPEAKERSLEUTH_BLIND_RATE_LIMIT`` / ``_BLIND_RATE_WINDOW`` the same on a blind copy, the budget of its round
                              (default 5 per 86400 s; ``space.disclosure``)
``SPEAKERSLEUTH_ROUND``        ``open`` (default) or ``closed``: a blind copy's round; once closed, no
                              submission or withdrawal is taken and the leaderboard shows each identity's
                              selection, frozen at the close, with its private headline metrics
``SPEAKERSLEUTH_ROUND_CLOSED_AT`` when a closed round closed (ISO 8601, UTC; ``python -m
                              speakersleuth.space.round close`` prints it): files stored or withdrawn
                              after it change no selection (default: everything in the store counts)
``SPEAKERSLEUTH_ALLOW_PAIRED`` ``1`` to serve a *paired* blind copy (``ALLOW_PAIRED_HELP`` says what it leaks;
                              the page shows it as a banner); by default such a copy is refused
``SPEAKERSLEUTH_MAX_BYTES``    largest predictions file accepted (default 20 MB)
``SPEAKERSLEUTH_MAX_LINES``    most lines accepted in one file (default 200,000)
``SPEAKERSLEUTH_STORE_BUDGET`` most bytes of (canonical) predictions the store keeps (default 1 GB)
``SPEAKERSLEUTH_UPLOAD_TTL``   seconds an upload that was never submitted stays on disk (default 3600)
``SPEAKERSLEUTH_UPLOAD_BUDGET`` bytes one network address may upload per UPLOAD_TTL (default 10 x MAX_BYTES)
``SPEAKERSLEUTH_UPLOAD_CAP``   most bytes Gradio's upload folder may hold; uploads past it are refused (default 2 GB)
``SPEAKERSLEUTH_CONCURRENCY``  submissions scored at once (default 2)
``SPEAKERSLEUTH_REVIEWERS``    who may review instances in the Review tab: comma-separated Hugging Face
                              usernames; off Spaces, ``ip:<address>`` names a network address
``SPACE_ID``                   set by Hugging Face Spaces: enables the login button and OAuth identity
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd

ENV_PREFIX = "SPEAKERSLEUTH_"
ALLOW_PAIRED_HELP = (
    "serve a paired blind copy, whose test rows share dialogues or clips (across rows or variants): "
    "anyone who compares those rows' audio finds the altered turn and the scenario, i.e. the hidden "
    "gold, whatever the leaderboard shows; for a demo only, never for a ranking"
)


def parse_reviewers(raw: str) -> tuple[str, ...]:
    """``SPEAKERSLEUTH_REVIEWERS`` as identities (``space.submitter.Submitter.identity``): a bare name is a
    Hugging Face username (``hf:<name>``, lower case), ``ip:<address>`` a network address (off Spaces)."""
    reviewers = []
    for entry in filter(None, (part.strip() for part in raw.split(","))):
        kind, _, name = entry.partition(":") if ":" in entry else ("hf", "", entry)
        if kind not in ("hf", "ip") or not name:
            raise ValueError(f"{ENV_PREFIX}REVIEWERS: {entry!r} is neither a Hugging Face username nor ip:<address>")
        reviewers.append(f"{kind}:{name}".lower())
    return tuple(reviewers)


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(ENV_PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENV_PREFIX}{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{ENV_PREFIX}{name} must not be negative, got {value}")
    return value


def _flag(env: dict[str, str], name: str) -> bool:
    raw = env.get(ENV_PREFIX + name, "").strip().lower()
    if raw not in ("", "0", "1", "false", "true", "no", "yes"):
        raise ValueError(f"{ENV_PREFIX}{name} must be 1 or 0, got {raw!r}")
    return raw in ("1", "true", "yes")


def _round_closed_at(env: dict[str, str]) -> float | None:
    """When the round closed (``math.inf``: closed at no given time), or None while it is open."""
    raw, when = env.get(ENV_PREFIX + "ROUND", ""), env.get(ENV_PREFIX + "ROUND_CLOSED_AT", "").strip()
    value = raw.strip().lower() or "open"
    if value not in ("open", "closed"):
        raise ValueError(f"{ENV_PREFIX}ROUND must be open or closed, got {raw!r}")
    if value == "open":
        if when:
            raise ValueError(f"{ENV_PREFIX}ROUND_CLOSED_AT is set ({when!r}) but the round is open")
        return None
    return parse_moment(when, f"{ENV_PREFIX}ROUND_CLOSED_AT") if when else math.inf


def parse_moment(text: str, what: str) -> float:
    """An ISO 8601 time (UTC unless it names its zone) as a Unix time; ``what`` names it in the error.

    >>> parse_moment("1970-01-02T00:00", "the close"), parse_moment("1970-01-02T01:00+01:00", "the close")
    (86400.0, 86400.0)
    """
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be an ISO 8601 time, got {text!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


@dataclass(frozen=True)
class SpaceConfig:
    """Everything the app needs to know; build with ``SpaceConfig.from_env()``."""

    dataset: str = ""
    gold: str = ""
    data_dir: Path = Path("data/space")
    results_repo: str | None = None
    hf_token: str | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    port: int = 7860
    rate_limit: int = 10
    rate_window_s: int = 3600
    blind_rate_limit: int = 5
    blind_rate_window_s: int = 86_400
    round_closed_at: float | None = None
    allow_paired: bool = False
    max_bytes: int = 20_000_000
    max_lines: int = 200_000
    store_budget_bytes: int = 1_000_000_000
    upload_ttl_s: int = 3600
    upload_budget_bytes: int = 200_000_000
    upload_cap_bytes: int = 2_000_000_000
    concurrency: int = 2
    space_id: str | None = None
    reviewers: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides) -> SpaceConfig:
        env = dict(os.environ if env is None else env)
        config = cls(
            dataset=env.get(ENV_PREFIX + "DATASET", ""),
            gold=env.get(ENV_PREFIX + "GOLD", ""),
            data_dir=Path(env.get(ENV_PREFIX + "DATA_DIR") or "data/space"),
            results_repo=env.get(ENV_PREFIX + "RESULTS_REPO") or None,
            hf_token=env.get("HF_TOKEN") or None,
            # A Spaces container must listen on all interfaces; anywhere else the default is local.
            host=env.get(ENV_PREFIX + "HOST") or ("0.0.0.0" if env.get("SPACE_ID") else "127.0.0.1"),
            port=_int(env, "PORT", 7860),
            rate_limit=_int(env, "RATE_LIMIT", 10),
            rate_window_s=_int(env, "RATE_WINDOW", 3600),
            blind_rate_limit=_int(env, "BLIND_RATE_LIMIT", 5),
            blind_rate_window_s=_int(env, "BLIND_RATE_WINDOW", 86_400),
            round_closed_at=_round_closed_at(env),
            allow_paired=_flag(env, "ALLOW_PAIRED"),
            max_bytes=_int(env, "MAX_BYTES", 20_000_000),
            max_lines=_int(env, "MAX_LINES", 200_000),
            store_budget_bytes=_int(env, "STORE_BUDGET", 1_000_000_000),
            upload_ttl_s=max(1, _int(env, "UPLOAD_TTL", 3600)),
            upload_budget_bytes=_int(env, "UPLOAD_BUDGET", 10 * _int(env, "MAX_BYTES", 20_000_000)),
            upload_cap_bytes=_int(env, "UPLOAD_CAP", 2_000_000_000),
            concurrency=max(1, _int(env, "CONCURRENCY", 2)),
            space_id=env.get("SPACE_ID") or None,
            reviewers=parse_reviewers(env.get(ENV_PREFIX + "REVIEWERS", "")),
        )
        config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
        return replace(config, data_dir=Path(config.data_dir))

    @property
    def round_closed(self) -> bool:
        """Whether a blind copy's round is closed (``round_closed_at`` is set)."""
        return self.round_closed_at is not None

    @property
    def on_spaces(self) -> bool:
        """True when running on Hugging Face Spaces (OAuth login available); elsewhere a submitter
        is known by their network address."""
        return self.space_id is not None

    def is_reviewer(self, identity: str | None) -> bool:
        """Whether ``identity`` (``hf:<user>`` or ``ip:<address>``) is one of the configured reviewers."""
        return identity is not None and identity.lower() in self.reviewers

    @property
    def uses_hub_store(self) -> bool:
        return bool(self.results_repo and self.hf_token)

    def dataset_folder(self) -> Path:
        """The dataset as a local folder: the path itself, or a snapshot of the Hub id."""
        if not self.dataset:
            raise ValueError(f"no dataset configured: pass --dataset <folder> or set {ENV_PREFIX}DATASET")
        return self._local_folder(self.dataset, "dataset")

    def gold_folder(self) -> Path | None:
        """The private test gold of a blind dataset as a local folder (None when not configured)."""
        return self._local_folder(self.gold, "gold") if self.gold else None

    def _local_folder(self, value: str, what: str) -> Path:
        """``value`` (a folder or a Hub dataset id, downloaded with the token under the data folder) as a local folder."""
        return ssd.local_folder(
            value, what, token=self.hf_token, local_dir=self.data_dir / what / value.replace("/", "--")
        )
