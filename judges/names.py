"""Judge names: one grammar for every judge, parsed in one place.

- ``<method>-<encoder>``: an embedding judge, method ``pairwise``/``centroid``/``reference``/``core``,
  encoder spec ``resemblyzer``, ``ecapa:<folder>`` or ``wavlm:<folder>`` (``judges.embedding``);
- ``<kind>:<model>`` or ``<kind>:<base URL>:<model>``: an LALM judge (``judges.lalm``), e.g.
  ``openai:gpt-4o-audio-preview``, ``vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B``,
  ``gemini:gemini-2.5-pro``, ``transformers:/path/to/Qwen2.5-Omni-7B``.

``parse_judge_name`` returns the parts of a valid name and raises ``ValueError`` (naming what is
wrong) for anything else; the ``embedding_judge_name`` and ``lalm_judge_name`` variants also refuse
a judge of the other family. Pure Python: importing it loads nothing heavy.
"""

from __future__ import annotations

import re
from typing import NamedTuple

METHODS = ("pairwise", "centroid", "reference", "core")
LALM_KINDS = ("openai", "vllm", "gemini", "transformers")
_URL_AND_MODEL = re.compile(r"^(https?://[^/:\s]+(?::\d+)?(?:/[^:\s]*)?):(.+)$")
_FORMS = (
    f"<method>-<encoder> with method one of {', '.join(METHODS)} (e.g. centroid-resemblyzer, "
    "pairwise-ecapa:/path/to/model), or an LALM judge (openai:<model>, vllm:<base url>:<model>, "
    "gemini:<model>, transformers:<folder>)"
)


class EmbeddingJudgeName(NamedTuple):
    method: str
    encoder: str


class LALMJudgeName(NamedTuple):
    kind: str
    base_url: str | None
    model: str


def parse_judge_name(name: str) -> EmbeddingJudgeName | LALMJudgeName:
    """The parts of a judge name.

    >>> parse_judge_name("centroid-ecapa:/models/ecapa")
    EmbeddingJudgeName(method='centroid', encoder='ecapa:/models/ecapa')
    >>> parse_judge_name("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B")
    LALMJudgeName(kind='vllm', base_url='http://127.0.0.1:8000/v1', model='Qwen/Qwen2.5-Omni-7B')
    """
    method, dash, encoder = name.partition("-")
    if method in METHODS and dash and encoder:
        return EmbeddingJudgeName(method, encoder)
    kind, _, rest = name.partition(":")
    if kind not in LALM_KINDS or not rest:
        raise ValueError(f"unknown judge {name!r}: use {_FORMS}")
    if kind == "transformers":
        return LALMJudgeName(kind, None, rest)
    match = _URL_AND_MODEL.match(rest)
    if match:
        return LALMJudgeName(kind, match.group(1), match.group(2))
    if kind == "vllm" or rest.startswith(("http://", "https://")):
        raise ValueError(
            f"{name!r}: give the server as {kind}:<base URL>:<model>, e.g. "
            "vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B"
        )
    return LALMJudgeName(kind, None, rest)


def embedding_judge_name(name: str) -> EmbeddingJudgeName:
    """``parse_judge_name`` for a place that takes embedding judges only."""
    parsed = parse_judge_name(name)
    if not isinstance(parsed, EmbeddingJudgeName):
        raise ValueError(
            f"{name!r} is an LALM judge; use an embedding judge, <method>-<encoder> with method "
            f"one of {', '.join(METHODS)}"
        )
    return parsed


def lalm_judge_name(name: str) -> LALMJudgeName:
    """``parse_judge_name`` for a place that takes LALM judges only."""
    parsed = parse_judge_name(name)
    if not isinstance(parsed, LALMJudgeName):
        raise ValueError(
            f"{name!r} is an embedding judge; use an LALM judge, one of "
            + ", ".join(f"{k}:<model>" for k in LALM_KINDS)
            + " (vllm:<base URL>:<model>)"
        )
    return parsed
