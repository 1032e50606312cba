"""LALM backends and the judge names that select them.

``<kind>:<model>`` or ``<kind>:<base URL>:<model>``:

- ``openai:gpt-4o-audio-preview`` (key ``OPENAI_API_KEY``; ``openai:<url>:<model>`` for a proxy)
- ``vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B`` (any OpenAI-compatible server)
- ``gemini:gemini-2.5-pro`` (key ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``)
- ``transformers:/path/to/Qwen2.5-Omni-7B`` (a local checkpoint folder)
"""

from __future__ import annotations

import re

from judges.lalm.backends.base import Backend, RetryPolicy

KINDS = ("openai", "vllm", "gemini", "transformers")
_URL_AND_MODEL = re.compile(r"^(https?://[^/:\s]+(?::\d+)?(?:/[^:\s]*)?):(.+)$")


def is_lalm_judge(name: str) -> bool:
    return name.partition(":")[0] in KINDS


def parse_judge_name(name: str) -> tuple[str, str | None, str]:
    """``(kind, base_url or None, model)`` of an LALM judge name.

    >>> parse_judge_name("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B")
    ('vllm', 'http://127.0.0.1:8000/v1', 'Qwen/Qwen2.5-Omni-7B')
    >>> parse_judge_name("openai:gpt-4o-audio-preview")
    ('openai', None, 'gpt-4o-audio-preview')
    """
    kind, _, rest = name.partition(":")
    if kind not in KINDS or not rest:
        raise ValueError(f"{name!r} is not an LALM judge name; use one of "
                         + ", ".join(f"{k}:<model>" for k in KINDS) + " (vllm:<base URL>:<model>)")
    if kind == "transformers":
        return kind, None, rest
    match = _URL_AND_MODEL.match(rest)
    if match:
        return kind, match.group(1), match.group(2)
    if kind == "vllm" or rest.startswith(("http://", "https://")):
        raise ValueError(f"{name!r}: give the server as {kind}:<base URL>:<model>, e.g. "
                         "vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B")
    return kind, None, rest


def make_backend(name: str, **opts) -> Backend:
    """The backend for a judge name. Options: ``concurrency``, ``timeout``, ``max_tokens``, ``seed``,
    ``api_key_env``, ``base_url``, ``max_retries``, ``retry_base_delay``, ``retry_max_delay`` (HTTP);
    ``thinking_budget`` (Gemini); ``device``, ``dtype``, ``max_new_tokens``, ``attn_implementation``
    (transformers)."""
    kind, base_url, model = parse_judge_name(name)
    if kind == "transformers":
        from judges.lalm.backends.transformers_backend import TransformersBackend

        return TransformersBackend(model, **opts)
    fields = {"max_retries": "max_retries", "retry_base_delay": "base_delay", "retry_max_delay": "max_delay"}
    retry_opts = {field: opts.pop(key) for key, field in fields.items() if key in opts}
    retry = RetryPolicy(**retry_opts) if retry_opts else None
    override = opts.pop("base_url", None)
    base_url = base_url or override
    if kind == "gemini":
        from judges.lalm.backends.gemini_backend import GeminiBackend

        return GeminiBackend(model, base_url=base_url, retry=retry, **opts)
    from judges.lalm.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(model, kind=kind, base_url=base_url, retry=retry, **opts)
