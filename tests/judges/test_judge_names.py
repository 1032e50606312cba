"""Judge names (``judges.names``): one parser for embedding and LALM judges, one contract (the
parts of a valid name, or a ValueError that says what is wrong)."""

from __future__ import annotations

import pytest

from speakersleuth.judges.names import (
    EmbeddingJudgeName,
    LALMJudgeName,
    embedding_judge_name,
    lalm_judge_name,
    parse_judge_name,
)


def test_valid_names_give_their_parts():
    assert parse_judge_name("pairwise-ecapa:/models/ecapa-voxceleb") == EmbeddingJudgeName(
        "pairwise", "ecapa:/models/ecapa-voxceleb"
    )
    assert parse_judge_name("gemini:gemini-2.5-pro") == LALMJudgeName("gemini", None, "gemini-2.5-pro")
    assert parse_judge_name("transformers:/models/Qwen2.5-Omni-3B") == LALMJudgeName(
        "transformers", None, "/models/Qwen2.5-Omni-3B"
    )
    assert parse_judge_name("vllm:http://gpu-host:8000:Qwen/Qwen2-Audio-7B-Instruct") == LALMJudgeName(
        "vllm", "http://gpu-host:8000", "Qwen/Qwen2-Audio-7B-Instruct"
    )
    assert parse_judge_name("openai:gpt-4o-audio-preview") == LALMJudgeName("openai", None, "gpt-4o-audio-preview")


@pytest.mark.parametrize(
    "name, message",
    [
        ("median-resemblyzer", "unknown judge 'median-resemblyzer': use <method>-<encoder>"),
        ("centroid-", "unknown judge 'centroid-'"),
        ("openai:", "unknown judge 'openai:'"),
        ("vllm:Qwen/Qwen2.5-Omni-7B", "give the server as vllm:<base URL>:<model>"),
    ],
)
def test_a_name_of_no_judge_is_refused_with_what_is_wrong(name, message):
    with pytest.raises(ValueError, match=message):
        parse_judge_name(name)


def test_a_place_for_one_family_refuses_the_other():
    assert embedding_judge_name("centroid-resemblyzer") == ("centroid", "resemblyzer")
    assert lalm_judge_name("gemini:gemini-2.5-pro").model == "gemini-2.5-pro"
    with pytest.raises(ValueError, match="'gemini:gemini-2.5-pro' is an LALM judge; use an embedding judge"):
        embedding_judge_name("gemini:gemini-2.5-pro")
    with pytest.raises(ValueError, match="'centroid-resemblyzer' is an embedding judge; use an LALM judge"):
        lalm_judge_name("centroid-resemblyzer")
    with pytest.raises(ValueError, match="unknown judge"):
        embedding_judge_name("median-resemblyzer")
