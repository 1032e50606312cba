"""LALM backends, chosen by the judge name (``<kind>:<model>`` or ``<kind>:<base URL>:<model>``,
parsed by ``judges.names``):

- ``openai:gpt-4o-audio-preview`` (key ``OPENAI_API_KEY``; ``openai:<url>:<model>`` for a proxy)
- ``vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B`` (any OpenAI-compatible server)
- ``gemini:gemini-2.5-pro`` (key ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``)
- ``transformers:/path/to/Qwen2.5-Omni-7B`` (a local checkpoint folder)
"""

from __future__ import annotations

from speakersleuth.judges.lalm.backends.base import Backend, RetryPolicy
from speakersleuth.judges.names import lalm_judge_name


def make_backend(name: str, **opts) -> Backend:
    """The backend of an LALM judge's name: the object that sends a prompt to the model.

    Arguments
    ---------
    name : str
        An LALM judge's name (``judges.names``): ``openai:<model>``, ``openai:<base URL>:<model>``
        (a proxy), ``vllm:<base URL>:<model>``, ``gemini:<model>`` or ``transformers:<folder>``.
    **opts
        The backend's options. HTTP backends (openai, vllm, gemini): ``concurrency`` (requests in
        flight), ``timeout`` (seconds), ``max_tokens``, ``seed``, ``api_key_env`` (the variable
        holding the key), ``base_url`` (where the name gives none), and the retries'
        ``max_retries``, ``retry_base_delay``, ``retry_max_delay`` (seconds); Gemini also
        ``thinking_budget``. transformers: ``device``, ``dtype``, ``max_new_tokens``,
        ``attn_implementation``. An option the backend does not take raises ``TypeError``.

    Returns
    -------
    Backend
        An ``OpenAIBackend``, ``GeminiBackend`` or ``TransformersBackend``.

    Example
    -------
    >>> backend = make_backend("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B", concurrency=2, max_retries=1)
    >>> backend.spec, backend.max_concurrency, backend.retry.max_retries
    ('vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B', 2, 1)
    """
    kind, base_url, model = lalm_judge_name(name)
    if kind == "transformers":
        from speakersleuth.judges.lalm.backends.transformers_backend import TransformersBackend

        return TransformersBackend(model, **opts)
    fields = {"max_retries": "max_retries", "retry_base_delay": "base_delay", "retry_max_delay": "max_delay"}
    retry_opts = {field: opts.pop(key) for key, field in fields.items() if key in opts}
    retry = RetryPolicy(**retry_opts) if retry_opts else None
    override = opts.pop("base_url", None)
    base_url = base_url or override
    if kind == "gemini":
        from speakersleuth.judges.lalm.backends.gemini_backend import GeminiBackend

        return GeminiBackend(model, base_url=base_url, retry=retry, **opts)
    from speakersleuth.judges.lalm.backends.openai_backend import OpenAIBackend

    return OpenAIBackend(model, kind=kind, base_url=base_url, retry=retry, **opts)
