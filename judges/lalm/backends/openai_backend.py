"""OpenAI Chat Completions backend: the OpenAI API (GPT-4o audio) and any OpenAI-compatible server.

Request (documented schema of ``POST {base_url}/chat/completions``)::

    {"model": ..., "temperature": 0, "seed": 0, "max_tokens": ...,
     "messages": [{"role": "system", "content": "..."},
                  {"role": "user", "content": [{"type": "text", "text": "Reference:"},
                                               {"type": "input_audio",
                                                "input_audio": {"data": "<base64 WAV>", "format": "wav"}},
                                               ...]}]}

vLLM serves open LALMs (Qwen2.5-Omni, Qwen2-Audio, ...) behind the same API; start it with a
``--limit-mm-per-prompt`` large enough for the clips of one prompt (up to 1 reference + 10 turns,
or 1 + 9 + 3 for discrimination). Keys come from the environment only: ``OPENAI_API_KEY`` for
the OpenAI API; for other servers the variable named by ``api_key_env`` (default ``VLLM_API_KEY``)
if it is set, else a placeholder (vLLM without ``--api-key`` accepts any).
"""

from __future__ import annotations

import base64
import os
from typing import Any

from speakersleuth.judges.lalm.backends.base import APIBackend, APISettings, BackendError, Prompt, Retry


def chat_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The ``messages`` of a Chat Completions request: system text, then one user message whose
    content interleaves text parts and ``input_audio`` parts in prompt order."""
    content: list[dict[str, Any]] = []
    for part in prompt.wav_and_text():
        if isinstance(part, bytes):
            data = base64.b64encode(part).decode("ascii")
            content.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
        else:
            content.append({"type": "text", "text": part})
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": content}]


class OpenAIBackend(APIBackend):
    """``kind`` is ``openai`` for the OpenAI API and ``vllm`` for any other compatible server."""

    defaults = APISettings(concurrency=8, timeout=120.0, max_tokens=256)

    def __init__(self, model: str, *, kind: str = "openai", **settings: Any) -> None:
        from openai import OpenAI

        super().__init__(model, **settings)
        self.kind = kind
        if kind == "openai":
            key = self.api_key(["OPENAI_API_KEY"])
        else:
            key = os.environ.get(self.api_key_env or "VLLM_API_KEY") or "EMPTY"
        # The SDK's own retries are off: Backend.generate retries, the same way for every backend.
        self.client = OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    @property
    def spec(self) -> str:
        return f"{self.kind}:{self.base_url}:{self.model}" if self.base_url else f"{self.kind}:{self.model}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": str(self.client.base_url), "max_tokens": self.max_tokens}

    def request_body(self, prompt: Prompt) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": chat_messages(prompt),
            "temperature": 0,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }

    def _send(self, prompt: Prompt) -> tuple[str | None, dict[str, Any]]:
        response = self.client.chat.completions.create(**self.request_body(prompt))
        if not response.choices:
            return None, {"finish_reason": "no choices"}
        choice = response.choices[0]
        meta = {
            "finish_reason": choice.finish_reason,
            "system_fingerprint": response.system_fingerprint,
            "model": response.model,
        }
        if response.usage is not None:
            meta["usage"] = {
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
            }
        return choice.message.content, meta

    def _classify(self, err: Exception) -> Retry | BackendError | None:
        import openai

        if isinstance(err, openai.APITimeoutError):
            return Retry("timeout")
        if isinstance(err, openai.APIConnectionError):  # the SDK's message is only "Connection error."
            # no connection made (refused, no route, DNS) vs one dropped: only the first says the server is not there
            return Retry(
                f"connection error: {err.__cause__ or err}", unreachable=isinstance(err.__cause__, self._refused)
            )
        if isinstance(err, openai.APIStatusError):
            return self.http_verdict(err.status_code, err.message, err.response.headers)
        return None
