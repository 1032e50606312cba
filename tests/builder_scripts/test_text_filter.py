"""The text filters: a window with profanity or a slur is dropped whatever the coherence filter,
before any LLM is asked; a clean window goes on to the coherence rules."""

from __future__ import annotations

import pytest

from speakersleuth.builder_scripts.verification import PROFANITY, HeuristicTextFilter, LLMTextFilter, get_text_filter, profane_words
from tests.support.lalm_http_double import serve

QUESTION = {"speaker": "A", "text": "How did the football game go last night?", "is_target": False}


def window(answer: str) -> list[dict]:
    return [QUESTION, {"speaker": "B", "text": answer, "is_target": True}]


def test_profanity_in_any_turn_drops_the_window():
    assert HeuristicTextFilter().check(window("It was a fucking disaster, honestly.")) == PROFANITY
    assert HeuristicTextFilter().check(window("It was a total disaster, honestly.")) is None


def test_masked_and_accented_spellings_are_caught_but_place_names_are_not():
    assert profane_words("what a sh*t show") and profane_words("what a shït show")
    assert profane_words("We drove through Scunthorpe and Penistone.") == []


def test_profanity_is_dropped_before_an_llm_is_asked():
    unreachable = LLMTextFilter("http://127.0.0.1:9/v1", "any-model", retries=0, timeout=1)
    assert unreachable.check(window("Shut up, you bitch.")) == PROFANITY  # no request: port 9 would refuse


def test_the_coherence_rules_still_apply_to_clean_text():
    assert HeuristicTextFilter().check([QUESTION, dict(QUESTION, speaker="A")]) == "text: a single speaker"


def test_a_short_turn_of_the_other_speaker_does_not_reject_the_window():
    """Only target turns must be long enough to judge a voice by; an interlocutor's "Yes." is fine."""
    answer = {"speaker": "B", "text": "We won two to one, a late goal.", "is_target": True}
    assert (
        HeuristicTextFilter().check(
            [
                QUESTION,
                answer,
                {"speaker": "A", "text": "Really?", "is_target": False},
                answer | {"text": "Yes, really."},
            ]
        )
        is None
    )
    assert HeuristicTextFilter().check([QUESTION, answer | {"text": "Yes."}]) == "text: a target turn is too short"


@pytest.mark.parametrize(
    "spec, base_url, model",
    [
        (
            "openai-compatible:http://localhost:8000/v1:Qwen/Qwen2.5-7B-Instruct",
            "http://localhost:8000/v1",
            "Qwen/Qwen2.5-7B-Instruct",
        ),
        ("openai-compatible:https://api.openai.com/v1:gpt-4o-mini", "https://api.openai.com/v1", "gpt-4o-mini"),
    ],
)
def test_the_llm_filter_spec_splits_the_url_from_the_model_at_the_last_colon(spec, base_url, model):
    """The URL may hold colons (scheme, port); the model is what follows the last one."""
    chosen = get_text_filter(spec)
    assert (chosen.base_url, chosen.model) == (base_url, model)


def _completion(text: str) -> tuple[int, dict, dict]:
    return (
        200,
        {},
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        },
    )


def test_the_llm_filter_retries_a_busy_server_and_reads_its_verdict(monkeypatch):
    monkeypatch.setenv("TEXT_FILTER_KEY", "sk-test")
    clean = window("It went well, we won two to one.")
    with serve() as server:
        llm = LLMTextFilter(f"{server.url}/v1", "judge-model", api_key_env="TEXT_FILTER_KEY", retries=2, timeout=5)
        server.script.extend(
            [
                (503, {"Retry-After": "0"}, {"error": {"message": "busy"}}),
                _completion('{"coherent": false, "reason": "garbled"}'),
            ]
        )
        assert llm.check(clean) == "text: judged incoherent by LLM"
        assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2  # the 503 was retried
        request = server.requests[-1]
        assert request["headers"]["authorization"] == "Bearer sk-test"
        assert request["body"]["model"] == "judge-model" and request["body"]["temperature"] == 0
        assert "B: It went well" in request["body"]["messages"][0]["content"]

        server.reset()
        server.script.append(_completion('{"coherent": true, "reason": "fine"}'))
        assert llm.check(clean) is None
        server.script.append(_completion("I think it is coherent."))
        assert llm.check(clean) == "text: unparseable LLM answer"


def test_the_llm_filter_gives_up_on_a_client_error_and_after_its_retries():
    clean = window("It went well, we won two to one.")
    with serve() as server:
        llm = LLMTextFilter(f"{server.url}/v1", "judge-model", retries=1, timeout=5)
        server.script.append((400, {}, {"error": {"message": "bad request"}}))
        with pytest.raises(RuntimeError, match=r"llm:judge-model: HTTP 400 from"):
            llm.check(clean)
        assert len(server.requests) == 1  # a 400 is not retried
        server.reset()
        server.script.extend([(500, {"Retry-After": "0"}, {"error": {"message": "down"}})] * 2)
        with pytest.raises(RuntimeError, match=r"HTTP 500"):
            llm.check(clean)
        assert len(server.requests) == 2  # one try and one retry
    with pytest.raises(RuntimeError, match=r"no answer from"):
        LLMTextFilter("http://127.0.0.1:9/v1", "judge-model", retries=0, timeout=1).check(clean)
