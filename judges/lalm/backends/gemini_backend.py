"""Gemini backend through the google-genai SDK (``genai.Client(...).models.generate_content``).

Each clip goes inline as a ``Part`` (``audio/wav``), interleaved with text ``Part``s in prompt
order; the system text is the ``system_instruction``; decoding uses temperature 0 (and a seed).
Inline data is limited to about 20 MB per request (Gemini audio guide), far above one instance.
Gemini 2.5 models think before answering; the thinking tokens count toward ``max_output_tokens``,
so the default leaves it unset, and ``thinking_budget`` can bound thinking (0 turns it off on
Flash and Flash-Lite; 2.5 Pro requires at least 128).

The key comes from the environment only: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (or the
variable named by ``api_key_env``). ``base_url`` points the client at another endpoint (a proxy,
or a local test server).
"""

from __future__ import annotations

from typing import Any

from speakersleuth.judges.lalm.backends.base import (
    APIBackend,
    APISettings,
    BackendError,
    Prompt,
    Retry,
    http_client_errors,
)

MAX_INLINE_BYTES = 20 * 1000**2


class GeminiBackend(APIBackend):
    kind = "gemini"
    defaults = APISettings(concurrency=4, timeout=300.0, max_tokens=None)

    def __init__(self, model: str, *, thinking_budget: int | None = None, **settings: Any) -> None:
        from google import genai
        from google.genai import types

        super().__init__(model, **settings)
        key = self.api_key(["GEMINI_API_KEY", "GOOGLE_API_KEY"])
        self.types = types
        self.thinking_budget = thinking_budget
        http_options = types.HttpOptions(
            base_url=self.base_url,
            timeout=int(self.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),  # Backend.generate retries
        )
        self.client = genai.Client(api_key=key, http_options=http_options)
        self._transport_errors = http_client_errors(
            "TimeoutException", "TransportError"
        )  # timeouts, dropped connections

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "max_output_tokens": self.max_tokens, "thinking_budget": self.thinking_budget}

    def contents(self, prompt: Prompt) -> list:
        """One user ``Content`` whose parts interleave text and inline WAV audio."""
        parts, size = [], 0
        for part in prompt.wav_and_text():
            if isinstance(part, bytes):
                size += len(part)
                parts.append(self.types.Part.from_bytes(data=part, mime_type="audio/wav"))
            else:
                parts.append(self.types.Part.from_text(text=part))
        if size > MAX_INLINE_BYTES:
            raise BackendError(
                f"{self.spec}: {size} bytes of inline audio exceed the {MAX_INLINE_BYTES}-byte request limit"
            )
        return [self.types.Content(role="user", parts=parts)]

    def config(self, prompt: Prompt):
        thinking = None
        if self.thinking_budget is not None:
            thinking = self.types.ThinkingConfig(thinking_budget=self.thinking_budget)
        return self.types.GenerateContentConfig(
            system_instruction=prompt.system,
            temperature=0.0,
            seed=self.seed,
            max_output_tokens=self.max_tokens,
            thinking_config=thinking,
        )

    def _send(self, prompt: Prompt) -> tuple[str | None, dict[str, Any]]:
        response = self.client.models.generate_content(
            model=self.model, contents=self.contents(prompt), config=self.config(prompt)
        )
        meta: dict[str, Any] = {"model_version": response.model_version}
        if response.candidates:
            reason = response.candidates[0].finish_reason
            meta["finish_reason"] = getattr(reason, "value", reason)
        if response.usage_metadata is not None:
            usage = response.usage_metadata
            meta["usage"] = {
                "prompt_tokens": usage.prompt_token_count,
                "completion_tokens": usage.candidates_token_count,
                "thoughts_tokens": usage.thoughts_token_count,
            }
        return response.text, meta

    def _classify(self, err: Exception) -> Retry | BackendError | None:
        from google.genai import errors

        if isinstance(err, errors.APIError):
            headers = getattr(err.response, "headers", None)
            return self.http_verdict(int(err.code or 0), err.message or str(err), headers)
        if isinstance(err, self._transport_errors):
            return Retry(f"{type(err).__name__}: {err}", unreachable=isinstance(err, self._refused))
        return None
