"""The backend interface of the LALM judges: what a prompt is, what a backend returns, retries.

A ``Prompt`` is backend-neutral: a system text plus an ordered list of ``Text`` and ``Audio``
parts (labels and clips interleaved, in the order the model should hear them). Each backend turns
it into its own request (chat messages with ``input_audio`` parts, Gemini ``Part``s, or a chat
template plus a processor call) and returns a ``Completion`` with the raw text.

HTTP backends share ``Backend.generate``: it retries what ``_classify`` calls retryable (429, 5xx,
timeouts, dropped connections) with exponential backoff and full jitter, honouring a server's
``Retry-After``; it raises ``RequestError`` for a request that failed for good (the harness records
it and retries the instance on the next run) and ``FatalBackendError`` for what no retry can fix
(a missing or rejected key, an unknown model), which stops the run. A server that cannot be reached
at all (``RetryPolicy.unreachable_after`` connection attempts in a row fail, across requests, with
no answer between them) also stops the run, instead of every instance spending its retries.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from speakersleuth.speakersleuth_dataset import SAMPLING_RATE


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True, eq=False)
class Audio:
    """A mono float32 clip at 16 kHz; ``name`` says what it is (``reference``, ``turn 3``...)."""

    samples: np.ndarray
    name: str

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLING_RATE


@dataclass(frozen=True)
class Prompt:
    """``answers``: for a yes/no question, its two complete answers, the one meaning
    "inconsistent" first; a backend that sees the model's logits reports the probability of the
    first against the second as ``Completion.meta["p_inconsistent"]``."""

    system: str
    parts: tuple[Text | Audio, ...]
    answers: tuple[str, ...] = ()

    @property
    def clips(self) -> list[Audio]:
        return [p for p in self.parts if isinstance(p, Audio)]

    @property
    def text(self) -> str:
        """The text of the prompt with each clip shown as ``<audio: name>`` (for logs and tests)."""
        return "".join(p.text if isinstance(p, Text) else f"<audio: {p.name}>" for p in self.parts)

    def key(self) -> str:
        """A digest of everything the model sees; equal prompts get equal keys."""
        digest = hashlib.sha256(self.system.encode())
        for part in self.parts:
            if isinstance(part, Text):
                digest.update(b"T" + part.text.encode())
            else:
                digest.update(b"A" + np.ascontiguousarray(part.samples, dtype=np.float32).tobytes())
        return digest.hexdigest()[:32]

    def wav_and_text(self) -> list[bytes | str]:
        """The parts as a remote API takes them, in order: a clip as WAV bytes (``wav_bytes``),
        a text part as its text (empty ones left out)."""
        return [
            wav_bytes(p.samples) if isinstance(p, Audio) else p.text
            for p in self.parts
            if isinstance(p, Audio) or p.text
        ]


@dataclass
class Completion:
    text: str
    latency_s: float = 0.0
    attempts: int = 1
    meta: dict[str, Any] = field(default_factory=dict)


class BackendError(Exception):
    """Base class of backend failures."""


class RequestError(BackendError):
    """One request failed for good (after retries, or rejected as malformed)."""


class FatalBackendError(BackendError):
    """No request can succeed (missing or rejected key, unknown model, bad endpoint)."""


@dataclass(frozen=True)
class Retry:
    """``_classify``'s answer for a retryable failure; ``after`` is a server's Retry-After;
    ``unreachable``: no connection to the server could be made (refused, no route, DNS)."""

    reason: str
    after: float | None = None
    unreachable: bool = False


@dataclass
class RetryPolicy:
    """Exponential backoff with full jitter: retry k waits U(0, min(max_delay, base * 2**k)), or
    longer when the server's Retry-After asks for it (up to ``max_retry_after``). After
    ``unreachable_after`` failed connection attempts in a row (any requests) the run stops."""

    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 600.0
    unreachable_after: int = 3

    def delay(self, retry: int, after: float | None, rng: random.Random) -> float:
        wait = rng.uniform(0, min(self.max_delay, self.base_delay * 2**retry))
        return max(wait, min(after or 0.0, self.max_retry_after))


def retry_after_seconds(headers: Any) -> float | None:
    """A ``Retry-After`` header given in seconds (the HTTP-date form is ignored)."""
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def http_status_verdict(status: int, where: str, detail: str, after: float | None = None) -> Retry | BackendError:
    """The shared policy for an HTTP error status: retry 408/409/429/5xx; stop the run on
    401/403/404 (key or model wrong); fail just this request on any other 4xx."""
    if status in (408, 409, 429) or status >= 500:
        return Retry(f"HTTP {status}", after)
    if status in (401, 403, 404):
        return FatalBackendError(f"{where}: HTTP {status}: {detail}")
    return RequestError(f"{where}: HTTP {status}: {detail}")


def wav_bytes(samples: np.ndarray) -> bytes:
    """16-bit PCM WAV at 16 kHz, the format every audio API accepts."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.clip(samples, -1.0, 1.0), SAMPLING_RATE, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


class Backend:
    """One model behind one API. Subclasses implement ``_send`` and, for HTTP, ``_classify``."""

    kind = "base"
    #: How many requests the harness may have in flight at once.
    max_concurrency = 1

    def __init__(self, model: str, *, retry: RetryPolicy | None = None, sleep=time.sleep, seed: int = 0) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.retries = 0
        self._unreachable = 0  # failed connection attempts in a row, across requests

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.model}"

    def describe(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model}

    def generate(self, prompt: Prompt) -> Completion:
        """Send ``prompt``; retry retryable failures; raise ``RequestError``/``FatalBackendError``."""
        start = time.perf_counter()
        for attempt in range(self.retry.max_retries + 1):
            try:
                text, meta = self._send(prompt)
            except BackendError:
                raise
            except Exception as err:
                verdict = self._classify(err)
                self._count_unreachable(verdict)
                if isinstance(verdict, BackendError):
                    raise verdict from err
                if not isinstance(verdict, Retry):
                    raise
                if attempt == self.retry.max_retries:
                    raise RequestError(
                        f"{self.spec}: gave up after {attempt + 1} attempts ({verdict.reason})"
                    ) from err
                with self._lock:
                    self.retries += 1
                    wait = self.retry.delay(attempt, verdict.after, self._rng)
                self._sleep(wait)
                continue
            self._count_unreachable(None)
            return Completion(text if text is not None else "", time.perf_counter() - start, attempt + 1, meta)
        raise AssertionError("unreachable")

    def _count_unreachable(self, verdict: Retry | BackendError | None) -> None:
        """Count a failed connection attempt (reset by any other outcome); raise ``FatalBackendError``
        once ``unreachable_after`` of them came in a row."""
        with self._lock:
            self._unreachable = self._unreachable + 1 if isinstance(verdict, Retry) and verdict.unreachable else 0
            if self._unreachable >= self.retry.unreachable_after:
                raise FatalBackendError(
                    f"{self.spec}: cannot reach the server ({self.retry.unreachable_after} connection attempts in "
                    f"a row failed: {verdict.reason}); is it running at that address?"
                )

    def _send(self, prompt: Prompt) -> tuple[str | None, dict[str, Any]]:
        raise NotImplementedError

    def _classify(self, err: Exception) -> Retry | BackendError | None:
        """``Retry`` for a transient failure, a ``BackendError`` to raise instead of ``err``, or
        ``None`` to let ``err`` through unchanged."""
        return None

    def close(self) -> None:
        """Release clients or model memory."""


def http_client_errors(*names: str) -> tuple[type[Exception], ...]:
    """The exception classes ``names`` (``ConnectError``, ``TransportError``, ...) of the HTTP clients an
    SDK may use (httpx, httpx2), of those installed. Called when a backend is made: importing httpx
    from a worker thread while the SDK looks it up in ``sys.modules`` leaves it half-initialised."""
    errors: list[type[Exception]] = []
    for module in ("httpx", "httpx2"):
        try:
            mod = __import__(module)
        except ImportError:
            continue
        errors += [getattr(mod, name) for name in names]
    return tuple(errors)


def api_key_from_env(where: str, names: list[str]) -> str:
    """The value of the first of the environment variables ``names`` that is set; a
    ``FatalBackendError`` naming them when none is."""
    key = next((os.environ[n] for n in names if os.environ.get(n)), None)
    if not key:
        raise FatalBackendError(f"{where}: set the API key in the environment variable {' or '.join(names)}")
    return key


@dataclass(frozen=True)
class APISettings:
    """The settings every API backend takes (``make_backend`` says what each means); a backend's
    ``defaults`` give the first three its own values."""

    concurrency: int
    timeout: float
    max_tokens: int | None
    base_url: str | None = None
    api_key_env: str | None = None
    seed: int = 0
    retry: RetryPolicy | None = None
    sleep: Callable[[float], Any] | None = None


class APIBackend(Backend):
    """A model behind a remote API, reached through its SDK client (``self.client``, closed by
    ``close``) and asked at temperature 0; ``settings`` (``APISettings``) override the backend's
    ``defaults``, and a setting it does not have raises ``TypeError``."""

    defaults: APISettings

    def __init__(self, model: str, **settings: Any) -> None:
        unknown = sorted(set(settings) - {f.name for f in fields(APISettings)})
        if unknown:  # named as Python names it for the backend's own signature
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument {unknown[0]!r}")
        chosen = replace(self.defaults, **settings)
        super().__init__(model, retry=chosen.retry, seed=chosen.seed, sleep=chosen.sleep or time.sleep)
        self.base_url = chosen.base_url
        self.api_key_env = chosen.api_key_env
        self.timeout = chosen.timeout
        self.max_concurrency = max(1, int(chosen.concurrency))
        self.max_tokens = chosen.max_tokens
        self.seed = chosen.seed
        self._refused = http_client_errors("ConnectError")  # no connection made: the server is not there

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url, "temperature": 0, "seed": self.seed}

    def api_key(self, names: list[str]) -> str:
        """The key from the environment variable ``api_key_env`` names, else from the first of
        ``names`` that is set (``api_key_from_env``)."""
        return api_key_from_env(self.spec, [self.api_key_env] if self.api_key_env else names)

    def http_verdict(self, status: int, detail: str, headers: Any) -> Retry | BackendError:
        """``http_status_verdict`` of an HTTP error, with the server's Retry-After from ``headers``."""
        return http_status_verdict(status, self.spec, detail, retry_after_seconds(headers))

    def close(self) -> None:
        self.client.close()
