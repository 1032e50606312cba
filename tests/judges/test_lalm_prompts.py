"""LALM prompt templates: what each setting shows, in which order, and what it asks for."""

from __future__ import annotations

import re

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.lalm.backends.base import Audio, Prompt, Text
from speakersleuth.judges.lalm.harness import DISCRIMINATION_COLUMNS, TURN_COLUMNS, discrimination_instance, turn_instance
from speakersleuth.judges.lalm.prompts import (
    ANSWER_FORMATS,
    SETTINGS,
    SYSTEM,
    VOICE_FOCUS,
    check_setting,
    discrimination_queries,
    turn_queries,
)
from tests.support.synthetic import build_synthetic_dataset


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    folder = build_synthetic_dataset(tmp_path_factory.mktemp("prompts"), dialogues=2, variants=("main", "10turn"))
    turn = ssd.read_rows(folder, "detection", columns=TURN_COLUMNS).to_pylist()[1]  # an S2 instance
    disc = ssd.read_rows(folder, "discrimination", columns=DISCRIMINATION_COLUMNS).to_pylist()[0]
    long = ssd.read_rows(folder, "localization-10turn", columns=TURN_COLUMNS).to_pylist()[0]
    return turn_instance(turn), discrimination_instance(disc), turn_instance(long)


def layout(prompt: Prompt) -> list[str]:
    """The prompt as a list: clip names as ``<name>``, text parts verbatim."""
    return [f"<{p.name}>" if isinstance(p, Audio) else p.text for p in prompt.parts]


def label_before_each_clip(prompt: Prompt) -> list[tuple[str, str]]:
    """(the text right before each clip, the clip's name)."""
    out, last = [], ""
    for part in prompt.parts:
        if isinstance(part, Text):
            last = part.text
        else:
            out.append((last.strip().splitlines()[-1], part.name))
    return out


def test_every_prompt_asks_for_timbre_json_and_ignores_noise(rows):
    turn, disc, _ = rows
    prompts = [q.prompt for s in SETTINGS for t in ("detection", "localization") for q in turn_queries(t, s, turn)]
    prompts += [q.prompt for s in SETTINGS if s != "per_turn" for q in discrimination_queries(s, disc)]
    for prompt in prompts:
        assert prompt.system == SYSTEM
        text = prompt.parts[-1].text  # question, guidance and format come after the clips
        assert VOICE_FOCUS in text
        for word in ("timbre", "echo", "noise", "interjections"):
            assert word in text
        assert "JSON" in text and any(fmt in text for fmt in ANSWER_FORMATS.values())
        assert not re.search(r"\bS[123]\b|gender|voice.conver|synthetic", prompt.text)  # no gold or provenance


def test_main_setting_reference_then_numbered_turns(rows):
    turn, _, _ = rows
    (detection,) = turn_queries("detection", "main", turn)
    (localization,) = turn_queries("localization", "main", turn)
    assert detection.kind == "detection" and localization.kind == "localization"
    pairs = label_before_each_clip(detection.prompt)
    assert pairs == [("Reference recording of the target speaker:", "reference")] + [
        (f"Turn {k}:", f"turn {k}") for k in range(1, 6)
    ]
    for k, clip in enumerate(detection.prompt.clips[1:]):
        np.testing.assert_array_equal(clip.samples, turn.target_audio[k])
    np.testing.assert_array_equal(detection.prompt.clips[0].samples, turn.reference)
    assert "(text)" not in detection.prompt.text  # no other speakers' text without the context setting
    assert '"inconsistent_turns"' in localization.prompt.parts[-1].text
    assert "1 to 5" in localization.prompt.parts[-1].text


def test_context_setting_interleaves_other_speakers_text_in_dialogue_order(rows):
    turn, _, _ = rows
    (query,) = turn_queries("detection", "context", turn)
    lines = [x.strip() for x in layout(query.prompt) if x.strip()]
    expected = []
    number = {p: k for k, p in enumerate(turn.target_positions, start=1)}
    for i, t in enumerate(turn.turns):
        if i in number:
            expected += [f"Turn {number[i]}:", f"<turn {number[i]}>"]
        else:
            expected.append(f"Speaker 2 (text): {t['text']}")
    body = lines[lines.index("<reference>") + 2 : -1]
    assert body == expected
    assert turn.turns[0]["speaker"] not in query.prompt.text  # speaker ids are not shown


def test_no_reference_setting_has_no_reference_clip(rows):
    turn, disc, _ = rows
    for query in turn_queries("localization", "no_reference", turn) + discrimination_queries("no_reference", disc):
        names = [c.name for c in query.prompt.clips]
        assert "reference" not in names and "Reference" not in query.prompt.text
        assert "most of these turns" in query.prompt.text or "speaks the other turns" in query.prompt.text


def test_per_turn_setting_one_comparison_per_turn(rows):
    turn, disc, long = rows
    for inst, n in ((turn, 5), (long, 10)):
        queries = turn_queries("detection", "per_turn", inst)
        assert [q.turn for q in queries] == list(range(1, n + 1))
        for q in queries:
            assert q.kind == "same_speaker" and [c.name for c in q.prompt.clips] == ["reference", f"turn {q.turn}"]
            np.testing.assert_array_equal(q.prompt.clips[1].samples, inst.target_audio[q.turn - 1])
    # the same comparison serves detection and localization (equal prompts, equal keys)
    assert [q.prompt.key() for q in turn_queries("detection", "per_turn", turn)] == [
        q.prompt.key() for q in turn_queries("localization", "per_turn", turn)
    ]
    with pytest.raises(ValueError, match="per_turn"):
        discrimination_queries("per_turn", disc)


def test_discrimination_masks_the_turn_and_labels_candidates(rows):
    _, disc, _ = rows
    choice, ranking = discrimination_queries("main", disc)
    assert (choice.kind, ranking.kind) == ("choice", "ranking")
    m = disc.masked_position
    context = [k for k in range(1, 6) if k != m]
    assert label_before_each_clip(choice.prompt) == (
        [("Reference recording of the target speaker:", "reference")]
        + [(f"Turn {k}:", f"turn {k}") for k in context]
        + [(f"Candidate {x}:", f"candidate {x}") for x in "ABC"]
    )
    assert f"Turn {m}: [missing" in choice.prompt.text
    for clip, expected in zip(choice.prompt.clips[-3:], disc.candidates):
        np.testing.assert_array_equal(clip.samples, expected)
    assert '"ranking"' in ranking.prompt.parts[-1].text and "most likely first" in ranking.prompt.parts[-1].text
    assert choice.prompt.parts[:-1] == ranking.prompt.parts[:-1]  # same material, different question
    assert len(discrimination_queries("main", disc, ranking=False)) == 1
    (ctx, _) = discrimination_queries("context", disc)
    assert "Speaker 2 (text):" in ctx.prompt.text and f"Turn {m}: [missing" in ctx.prompt.text


def test_format_lines_suggest_no_answer():
    for fmt in ANSWER_FORMATS.values():
        assert not re.search(r"\[\s*\d", fmt)  # no example turn number
        assert not re.search(r'"[ABC]"', fmt)  # no example label


def test_prompt_keys_follow_content(rows):
    turn, _, _ = rows
    a = turn_queries("detection", "main", turn)[0].prompt
    b = turn_queries("detection", "main", turn)[0].prompt
    assert a.key() == b.key()
    changed = Prompt(a.system, (*a.parts[:2], Audio(a.clips[1].samples * 0.5, "turn 1"), *a.parts[3:]))
    assert changed.key() != a.key()


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown prompt setting 'audio'; known: main, context"):
        check_setting("audio")
