"""The text filters: a window with profanity or a slur is dropped whatever the coherence filter,
before any LLM is asked; a clean window goes on to the coherence rules."""

from __future__ import annotations

from builder_scripts.verification import PROFANITY, HeuristicTextFilter, LLMTextFilter, profane_words

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
