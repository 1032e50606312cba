"""The LALM answer parser on a corpus of realistic free-form answers (and on what must fail)."""

from __future__ import annotations

import doctest

import pytest

import speakersleuth.judges.lalm.parsing as parsing
from speakersleuth.judges.lalm.parsing import json_values, parse_answer, strip_reasoning

#: Realistic free-form answers to a question of a few labels, per kind and label: each must be read
#: as that label.
LABELLED = {
    "detection": {
        "inconsistent": [
            '{"answer": "inconsistent"}',
            '{"answer": "not consistent"}',
            '{"answer": "Not consistent."}',
            "{'answer': 'Inconsistent'}",
            '{"consistent": false}',
            "Answer: inconsistent",
            "**Final answer:** Inconsistent.",
            "Turn 3 sounds like a different person, so the dialogue is inconsistent.",
            "No, turn 4 is spoken by someone else.",
            "The voices are not consistent: turn 2 has a much lower pitch.",
            "Reasoning: the timbre of turn 3 differs from the reference.\nAnswer: inconsistent",
        ],
        "consistent": [
            'Sure! Here is my answer:\n```json\n{"answer": "consistent"}\n```',
            "The speaker is consistent across all five turns.",
            "All turns sound like the same speaker as the reference.",
            "Yes.",
            "There is no inconsistency in the speaker's voice.",
            "<think>Turn 2 seems different at first... no, it is just noise.</think>\nconsistent",
            "Answer: consistent\nExplanation: turn 2 is noisier but the voice does not change.",
            "Although turn 2 has some echo, the speaker is consistent.",
        ],
    },
    "choice": {  # discrimination classification
        "A": ["Candidate A sounds most similar to the reference."],
        "B": [
            '{"answer": "B"}',
            "B",
            "**Answer:** B",
            "The answer is B, not A.",
            "Candidate B is the original; A and C are not.",
        ],
        "C": [
            '{"answer": "Candidate C"}',
            "(C)",
            "A careful comparison shows that candidate C matches the target speaker.",
            "Option A is a different voice, but option C matches.",
        ],
    },
    "same_speaker": {  # per-turn comparison
        False: [
            '{"same_speaker": false}',
            "No.",
            "The voice in the clip is different from the reference.",
        ],
        True: [
            "{'same_speaker': True}",
            "Yes, it is the same person.",
            "The clip and the reference are spoken by the same speaker.",
        ],
    },
}

#: Answers naming turns (localization) or an order of the candidates (ranking): (answer, the value
#: it must be read as).
STRUCTURED = {
    "localization": [
        ('{"inconsistent_turns": [3]}', [3]),
        ('{"inconsistent_turns": []}', []),
        ('{"inconsistent_turns": ["Turn 2", "Turn 4"]}', [2, 4]),
        ('```json\n{"inconsistent_turns": [4, 2, 4]}\n```', [2, 4]),
        ("[3]", [3]),
        ("Turn 3", [3]),
        ("turns 2 and 4", [2, 4]),
        ("3", [3]),
        ("2, 4", [2, 4]),
        ("none", []),
        ("None of the turns are inconsistent.", []),
        ("All five turns are spoken by the same person.", []),
        ("Answer: []", []),
        ("Turn 3 is inconsistent, while turns 1, 2, 4 and 5 are consistent.", [3]),
        ("Turns 1, 2, 4 and 5 match the reference; turn 3 is from a different speaker.", [3]),
        ("All turns are consistent except turn 3.", [3]),
        ("The inconsistent turns are: Turn 2, Turn 5.", [2, 5]),
        ("Turns 2-4 are spoken by another person.", [2, 3, 4]),
        ("Reasoning: turn 1 is close to the reference.\nAnswer: turn 4", [4]),
    ],
    "ranking": [
        ('{"ranking": ["B", "C", "A"]}', ["B", "C", "A"]),
        ('{"ranking": "B > A > C"}', ["B", "A", "C"]),
        ('["C", "A", "B"]', ["C", "A", "B"]),
        ("B > C > A", ["B", "C", "A"]),
        ("B, C, A", ["B", "C", "A"]),
        ("C >> A >> B", ["C", "A", "B"]),
        ("A → C → B", ["A", "C", "B"]),
        ("1. B\n2. C\n3. A", ["B", "C", "A"]),
        ("Ranking: C > A > B", ["C", "A", "B"]),
        ("Of candidates A, B and C, the ranking is B, then A, then C.", ["B", "A", "C"]),
        ("First: candidate B, second: candidate A, third: candidate C.", ["B", "A", "C"]),
    ],
}

#: Answers that must be unparseable, per kind.
UNPARSEABLE = {
    "detection": [
        "I cannot determine whether the speaker is consistent.",
        "I'm sorry, but I can't analyze audio recordings.",
        "The answer could be consistent or inconsistent.",
        '{"answer": "maybe"}',
        "<think>Let me compare the voices. Turn 1 is",
        "",
        "Please provide the audio files.",
    ],
    "localization": [
        '{"inconsistent_turns": [7]}',
        "Turn 6 is different.",
        '{"inconsistent_turns": [true]}',
        "I am unable to listen to audio files.",
        "It is hard to say whether any turn differs.",
    ],
    "choice": [
        "It could be A, B or C.",
        "I am unable to listen to audio.",
        '{"answer": "D"}',
        "A nice question.",
    ],
    "ranking": [
        "B > B > A",
        "B > C",
        '{"ranking": ["B", "C"]}',
        "I can't rank these recordings.",
    ],
    "same_speaker": [
        '{"same_speaker": "unclear"}',
        "Sorry, I cannot compare voices.",
    ],
}

#: (kind, raw answer, expected value); None means it must be unparseable.
CORPUS = [
    *((kind, text, label) for kind, labels in LABELLED.items() for label, texts in labels.items() for text in texts),
    *((kind, text, value) for kind, cases in STRUCTURED.items() for text, value in cases),
    *((kind, text, None) for kind, texts in UNPARSEABLE.items() for text in texts),
]


@pytest.mark.parametrize("kind,text,expected", CORPUS, ids=[f"{k}:{t[:40]}" for k, t, _ in CORPUS])
def test_corpus(kind, text, expected):
    result = parse_answer(kind, text, num_turns=5)
    assert result.value == expected, result.how
    assert result.ok == (expected is not None)
    if expected is None:
        assert result.how not in ("json", "answer", "prose")


def test_failure_reasons_are_recorded():
    assert (
        parse_answer("localization", '{"inconsistent_turns": [7]}', num_turns=5).how
        == "invalid: turn(s) [7] outside 1..5"
    )
    assert parse_answer("choice", "I'm sorry, I can't determine which candidate it is.").how == "refusal"
    assert parse_answer("ranking", "B > B > A").how.startswith("invalid: ranking ['B', 'B', 'A'] is not a permutation")
    assert parse_answer("detection", "<think>unfinished").how == "empty answer"
    assert parse_answer("detection", "\x04p\ufffd\ufffd Dw\ufffd").how == "no answer found"


def test_turn_numbers_are_checked_against_the_number_of_turns():
    assert parse_answer("localization", "turns 8 and 10", num_turns=10).value == [8, 10]
    assert parse_answer("localization", "turns 8 and 10", num_turns=5).value is None


@pytest.mark.parametrize("num_turns", [5, None])
@pytest.mark.parametrize(
    "text", ["0", "turn 0", "Turn 0 is different.", '{"inconsistent_turns": [0]}', "turns 0 and 3"]
)
def test_turn_zero_is_refused_since_turns_count_from_one(text, num_turns):
    result = parse_answer("localization", text, num_turns=num_turns)
    assert result == parsing.Parsed(None, f"invalid: turn(s) [0] outside 1..{num_turns or 'N'}")


def test_json_wins_over_prose_and_the_last_json_decides():
    text = 'Turn 2 sounds off. {"inconsistent_turns": [1]} On reflection: {"inconsistent_turns": [4]}'
    assert parse_answer("localization", text, num_turns=5) == parsing.Parsed([4], "json")
    assert json_values('x {"a": [1, {"b": "}"}]} y [2, 3]') == [{"a": [1, {"b": "}"}]}, [2, 3]]


@pytest.mark.parametrize(
    "kind, text, expected",
    [
        ("detection", "Answer: consistent\nWait, turn 3's pitch drops halfway.\nAnswer: inconsistent", "inconsistent"),
        ("choice", "Answer: A.\nOn a second listen A is too bright.\nFinal answer: B (A and C are both off)", "B"),
        ("localization", "Answer: turn 2\nNo: turn 2 is only noisier.\nAnswer: turns 4 and 5", [4, 5]),
    ],
)
def test_the_answer_is_read_after_the_last_answer_mark(kind, text, expected):
    """A reply that answers, reconsiders and answers again means its last answer; within that last
    answer line the first mention counts (what follows it is commentary)."""
    assert parse_answer(kind, text, num_turns=5) == parsing.Parsed(expected, "answer")


def test_strip_reasoning():
    assert strip_reasoning("<think>a</think> b <think>c</think> d") == "d"
    assert strip_reasoning("Reasoning: long\nthoughts\nAnswer: B") == "Answer: B"
    assert strip_reasoning("Reasoning: only this") == "Reasoning: only this"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown answer kind 'label'"):
        parse_answer("label", "A")


def test_module_examples():
    for module in (parsing,):  # (judges.lalm.backends has no examples)
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
