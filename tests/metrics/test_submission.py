"""Validation of predictions files: every kind of bad line is refused with its line number, the
whole file is refused, and nothing is written."""

from __future__ import annotations

import builtins
import hashlib
import io
import json
from pathlib import Path

import pytest

from speakersleuth.metrics.submission import Gold, SubmissionError, load_gold, parse_submission
from tests.support.synthetic import build_synthetic_dataset


def _gold() -> Gold:
    det = {
        f"d{i}-{s}": {
            "id": f"d{i}-{s}",
            "dialogue_id": f"d{i}",
            "source_dataset": "x",
            "scenario": s,
            "label": "consistent" if s == "S1" else "inconsistent",
            "num_target_turns": 5,
        }
        for i in range(2)
        for s in ("S1", "S2", "S3")
    }
    loc = {k: {**v, "inconsistent_turns": [] if v["scenario"] == "S1" else [2]} for k, v in det.items()}
    disc = {
        f"d{i}-D": {
            "id": f"d{i}-D",
            "dialogue_id": f"d{i}",
            "source_dataset": "x",
            "candidate_labels": ["A", "B", "C"],
            "answer": "B",
            "gold_ranking": ["B", "A", "C"],
        }
        for i in range(2)
    }
    return Gold("main", "test", {"detection": det, "localization": loc, "discrimination": disc})


GOLD = _gold()
GOOD = [
    {"task": "detection", "id": "d0-S1", "prediction": "consistent"},
    {"task": "localization", "id": "d0-S2", "prediction": [2]},
    {"task": "discrimination", "id": "d0-D", "prediction": "B", "ranking": ["B", "C", "A"]},
]


def _jsonl(*lines) -> bytes:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


def _refusal(*lines) -> list[str]:
    with pytest.raises(SubmissionError) as info:
        parse_submission(_jsonl(*GOOD, *lines), GOLD)
    return info.value.errors


#: A valid line of each task that GOOD does not hold yet: the bad lines below change one of them.
VALID = {
    "detection": {"task": "detection", "id": "d0-S2", "prediction": "consistent"},
    "localization": {"task": "localization", "id": "d0-S3", "prediction": [2]},
    "discrimination": {"task": "discrimination", "id": "d1-D", "prediction": "B"},
}


def _changed(task: str, /, **fields) -> dict:
    """``VALID[task]`` with ``fields`` set (a new key goes last)."""
    return {**VALID[task], **fields}


BAD_LINES = {
    "bad JSON": ('{"task": "detection", "id": "d0-S2", "prediction": "consistent"', "not valid JSON"),
    "not an object": ('["detection", "d0-S2", "consistent"]', "expected a JSON object, got a list"),
    "NaN": ('{"task": "detection", "id": "d0-S2", "prediction": NaN}', "NaN is not valid JSON"),
    "control character": (
        '{"task": "detection", "id": "d0-S2\t", "prediction": "consistent"}',
        "not valid JSON (Invalid control character at column 35)",
    ),
    "repeated JSON key": (
        '{"task": "detection", "id": "d0-S2", "id": "d0-S3", "prediction": "consistent"}',
        'key "id" appears more than once',
    ),
    "missing task": ({"id": "d0-S2", "prediction": "consistent"}, 'missing key "task"'),
    "task not a string": (_changed("detection", task=1), "task must be a string, got 1"),
    "unknown task": (_changed("detection", task="detect"), 'unknown task "detect"; tasks are "detection"'),
    "unknown key": (_changed("detection", confidence=0.3), 'unknown key(s) "confidence" on a detection line'),
    "score on localization": (_changed("localization", score=0.3), 'unknown key(s) "score" on a localization line'),
    "score string": (
        _changed("detection", score="0.3"),
        'detection score must be a finite number (higher = more likely inconsistent), got "0.3"',
    ),
    "score bool": (
        _changed("detection", score=True),
        "detection score must be a finite number (higher = more likely inconsistent), got true",
    ),
    "score null": (
        _changed("detection", prediction=None, score=None),
        "detection score must be a finite number (higher = more likely inconsistent), got null",
    ),
    "score infinite": (
        '{"task": "detection", "id": "d0-S2", "prediction": "consistent", "score": 1e400}',
        "detection score must be a finite number (higher = more likely inconsistent), got Infinity",
    ),
    "score beyond floats": (
        '{"task": "detection", "id": "d0-S2", "prediction": "consistent", "score": 1' + "0" * 400 + "}",
        "detection score must be a finite number",
    ),
    "score Infinity": (
        '{"task": "detection", "id": "d0-S2", "prediction": "consistent", "score": -Infinity}',
        "-Infinity is not valid JSON",
    ),
    "ranking on detection": (_changed("detection", ranking=["A"]), 'unknown key(s) "ranking"'),
    "missing prediction": ({"task": "detection", "id": "d0-S2"}, 'missing key(s) "prediction"'),
    "id not a string": (_changed("detection", id=3), "id must be a string, got 3"),
    "unknown id": (_changed("detection", id="zz"), 'unknown detection id "zz" for variant main, split test'),
    "id of another task": (_changed("detection", id="d0-D"), "(it is a discrimination id)"),
    "duplicate": (
        _changed("detection", id="d0-S1", prediction="inconsistent"),
        'duplicate detection id "d0-S1" (first given on line 1)',
    ),
    "detection value": (
        _changed("detection", prediction="yes"),
        'detection prediction must be "consistent" or "inconsistent", got "yes"',
    ),
    "detection bool": (_changed("detection", prediction=True), "got true"),
    "localization string": (
        _changed("localization", prediction="3"),
        'localization prediction must be a list of turn positions 1..5, got "3"',
    ),
    "localization int": (_changed("localization", prediction=3), "must be a list of turn positions 1..5, got 3"),
    "localization float": (_changed("localization", prediction=[2.0]), "got [2.0]"),
    "localization bool": (_changed("localization", prediction=[True]), "got [true]"),
    "localization range": (_changed("localization", prediction=[0, 2, 6]), "position(s) 0, 6 outside 1..5"),
    "localization repeat": (_changed("localization", prediction=[2, 2]), "repeats position(s) 2"),
    "discrimination label": (_changed("discrimination", prediction="D"), 'must be one of "A", "B", "C", got "D"'),
    "discrimination lower case": (_changed("discrimination", prediction="b"), 'got "b"'),
    "ranking short": (
        _changed("discrimination", ranking=["B", "A"]),
        'ranking must be a permutation of "A", "B", "C"',
    ),
    "ranking repeat": (
        _changed("discrimination", ranking=["B", "B", "A"]),
        'ranking repeats label(s) "B"; ranking must be a permutation',
    ),
    "ranking repeat, all labels": (
        _changed("discrimination", ranking=["A", "B", "C", "A"]),
        'ranking repeats label(s) "A"',
    ),
    "ranking unknown": (_changed("discrimination", ranking=["B", "A", "D"]), "ranking must be a permutation"),
    "ranking string": (_changed("discrimination", ranking="BAC"), 'got "BAC"'),
}


@pytest.mark.parametrize("kind", BAD_LINES)
def test_each_bad_line_is_refused_with_its_line_number(kind):
    line, message = BAD_LINES[kind]
    errors = _refusal(line)
    assert len(errors) == 1, errors
    assert errors[0].startswith("line 4: "), errors
    assert message in errors[0], errors


def test_task_without_gold_in_the_dataset_is_refused():
    gold = Gold("10turn", "test", {"detection": GOLD.tasks["detection"]})
    with pytest.raises(SubmissionError) as info:
        parse_submission(_jsonl(GOOD[0], GOOD[2]), gold)
    assert info.value.errors == [
        'line 2: task "discrimination" has no gold in this dataset (variant 10turn, split test); it has "detection"'
    ]


def test_several_problems_of_one_line_are_all_named():
    errors = _refusal({"task": "discrimination", "id": "d0-D", "prediction": "Z", "ranking": ["A"], "note": 1})
    assert [e.split(": ", 1)[1].split(" ")[0] for e in errors] == ["unknown", "duplicate", "discrimination", "ranking"]
    assert all(e.startswith("line 4: ") for e in errors)


def test_every_error_is_listed_and_good_lines_are_not():
    bad = [BAD_LINES[k][0] for k in ("bad JSON", "unknown id", "localization range")]
    errors = _refusal(bad[0], GOOD[0], bad[1], "", bad[2])
    assert [e.split(":")[0] for e in errors] == ["line 4", "line 5", "line 6", "line 8"]
    assert "duplicate" in errors[1]  # line 5 repeats line 1


def test_hostile_lines_are_refused_quickly():
    errors = _refusal("[" * 100_000, {"task": "localization", "id": "d1-S3", "prediction": [1] * 200_000})
    assert errors[0] == "line 4: not valid JSON here (nested too deeply)"
    assert errors[1] == "line 5: localization prediction repeats position(s) 1"


def test_invalid_utf8_is_refused_by_line():
    data = _jsonl(*GOOD) + b'{"task": "detection", "id": "d1-S1", "prediction": "consistent\xff"}\n'
    with pytest.raises(SubmissionError) as info:
        parse_submission(data, GOLD)
    assert info.value.errors[0].startswith("line 4: not valid UTF-8")


def test_error_message_shows_fifty_then_counts_the_rest():
    lines = [{"task": "detection", "id": f"nope{i}", "prediction": "consistent"} for i in range(60)]
    with pytest.raises(SubmissionError) as info:
        parse_submission(_jsonl(*lines), GOLD)
    assert len(info.value.errors) == 60
    text = str(info.value)
    assert text.splitlines()[0] == "submission refused: 60 error(s)"
    assert "line 50:" in text and "line 51:" not in text and text.endswith("... and 10 more")


def test_size_and_line_limits():
    data = _jsonl(*GOOD)
    with pytest.raises(SubmissionError, match=r"bytes, more than the limit of 100"):
        parse_submission(data, GOLD, max_bytes=100)
    with pytest.raises(SubmissionError, match=r"file has 3 lines, more than the limit of 2"):
        parse_submission(data, GOLD, max_lines=2)


def test_the_line_cap_counts_a_last_line_without_a_final_newline():
    """Three lines with two newlines (no final one) are three lines, as with a final newline."""
    data = b"\n".join(json.dumps(line).encode() for line in GOOD)
    assert data.count(b"\n") == 2 and not data.endswith(b"\n")
    with pytest.raises(SubmissionError, match=r"file has 3 lines, more than the limit of 2"):
        parse_submission(data, GOLD, max_lines=2)
    assert parse_submission(data, GOLD, max_lines=3).num_lines == 3
    assert parse_submission(data + b"\n", GOLD, max_lines=3).num_lines == 3


def test_a_file_of_exactly_the_limits_is_accepted():
    data = _jsonl(*GOOD)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert lines == len(GOOD) >= 2
    accepted = parse_submission(data, GOLD, max_bytes=len(data), max_lines=lines)
    assert accepted.predictions == parse_submission(data, GOLD).predictions
    with pytest.raises(SubmissionError, match=rf"file has {lines} lines, more than the limit of {lines - 1}"):
        parse_submission(data, GOLD, max_lines=lines - 1)
    with pytest.raises(SubmissionError, match=rf"file is {len(data)} bytes"):
        parse_submission(data, GOLD, max_bytes=len(data) - 1)


def test_size_limit_checked_before_reading_a_path(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_bytes(_jsonl(*GOOD) * 10)
    with pytest.raises(SubmissionError, match="more than the limit"):
        parse_submission(path, GOLD, max_bytes=200)


def test_empty_file_and_missing_path_are_refused(tmp_path):
    with pytest.raises(SubmissionError, match="holds no predictions"):
        parse_submission(b"\n \n", GOLD)
    with pytest.raises(SubmissionError, match="no such file"):
        parse_submission(tmp_path / "absent.jsonl", GOLD)


def test_str_is_a_path_and_jsonl_text_must_be_bytes(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(_jsonl(*GOOD))
    assert (
        parse_submission(str(path), GOLD) == parse_submission(path, GOLD) == parse_submission(path.read_bytes(), GOLD)
    )
    with pytest.raises(TypeError, match="pass JSONL text as bytes"):
        parse_submission(_jsonl(*GOOD).decode(), GOLD)


def test_accepted_file_content():
    raw = (
        b"\xef\xbb\xbf"
        + _jsonl(*GOOD).replace(b"\n", b"\r\n")
        + b"\n"
        + _jsonl(
            {"task": "detection", "id": "d1-S1", "prediction": None},
            {"task": "discrimination", "id": "d1-D", "prediction": "A"},
            {"task": "localization", "id": "d1-S1", "prediction": []},
        )
    )
    sub = parse_submission(raw, GOLD)
    assert sub.num_lines == 6
    assert sub.sha256 == hashlib.sha256(raw).hexdigest()
    assert sub.predictions == {
        "detection": {"d0-S1": {"prediction": "consistent"}, "d1-S1": {"prediction": None}},
        "localization": {"d0-S2": {"prediction": [2]}, "d1-S1": {"prediction": []}},
        "discrimination": {"d0-D": {"prediction": "B", "ranking": ["B", "C", "A"]}, "d1-D": {"prediction": "A"}},
    }


def test_detection_scores_are_floats_given_on_every_detection_line_or_none():
    scored = [
        {"task": "detection", "id": f"d1-{s}", "prediction": None if s == "S3" else "inconsistent", "score": score}
        for s, score in (("S1", 1), ("S2", -0.25), ("S3", 0.5))
    ]
    sub = parse_submission(_jsonl(*scored), GOLD)
    assert sub.predictions["detection"] == {
        "d1-S1": {"prediction": "inconsistent", "score": 1.0},
        "d1-S2": {"prediction": "inconsistent", "score": -0.25},
        "d1-S3": {"prediction": None, "score": 0.5},
    }
    assert b'"id":"d1-S1","prediction":"inconsistent","score":1.0}' in sub.canonical()
    assert sub.canonical() == parse_submission(_jsonl(*scored[::-1]).replace(b": 1,", b": 1.0,"), GOLD).canonical()
    errors = _refusal(*scored)  # GOOD's detection line (line 1) has no score
    assert errors == [
        'line 1: detection line without "score" while line 4 has one; '
        "either every detection line carries a score or none does"
    ]


@pytest.mark.parametrize(
    "spellings",
    [
        ["0.0", "-0.0", "0", "-0", "0e0", "-0e-3", "0.000"],
        ["1.0", "1e0", "1", "1.00", "10e-1", "0.1e1"],
        ["0.5", "5e-1", "0.50000000000000001", "50E-2"],
    ],
)
def test_every_spelling_of_one_score_is_one_canonical_form_and_hash(spellings):
    """-0.0 is 0.0 (the same number: the same submission, not two of them), as 1e0 is 1.0."""

    def canonical(score: str) -> bytes:
        lines = [
            json.dumps({"task": "detection", "id": f"d0-{s}", "prediction": "consistent", "score": 0.25})
            for s in ("S2", "S3")
        ]
        lines.insert(0, '{"task": "detection", "id": "d0-S1", "prediction": "consistent", "score": %s}' % score)
        return parse_submission(_jsonl(*lines), GOLD).canonical()

    forms = {canonical(score) for score in spellings}
    assert len(forms) == 1, forms
    assert len({hashlib.sha256(form).hexdigest() for form in forms}) == 1
    assert b"-0" not in forms.pop()


def test_parsing_writes_nothing(tmp_path, monkeypatch):
    real_open = builtins.open

    def read_only_open(file, mode="r", *args, **kwargs):
        assert not set(mode) & set("wax+"), f"parse_submission opened {file} with mode {mode!r}"
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", read_only_open)
    monkeypatch.setattr(io, "open", read_only_open)  # what Path.open calls
    monkeypatch.setattr(Path, "write_bytes", lambda *a: pytest.fail("write_bytes called"))
    monkeypatch.setattr(Path, "write_text", lambda *a, **k: pytest.fail("write_text called"))
    monkeypatch.chdir(tmp_path)
    good = tmp_path.parent / f"{tmp_path.name}-good.jsonl"
    bad = tmp_path.parent / f"{tmp_path.name}-bad.jsonl"
    with real_open(good, "wb") as f:
        f.write(_jsonl(*GOOD))
    with real_open(bad, "wb") as f:
        f.write(_jsonl(*GOOD, "{oops"))
    parse_submission(good, GOLD)
    with pytest.raises(SubmissionError):
        parse_submission(bad, GOLD)
    assert list(tmp_path.iterdir()) == []


def test_load_gold_from_a_built_folder(tmp_path_factory):
    folder = build_synthetic_dataset(tmp_path_factory.mktemp("gold") / "ds", dialogues=2, variants=("main",))
    gold = load_gold(folder, "main")
    assert (gold.variant, gold.split) == ("main", "test")
    assert sorted(gold.tasks) == ["detection", "discrimination", "localization"]
    assert len(gold.tasks["detection"]) == 6 and len(gold.tasks["discrimination"]) == 2
    row = gold.tasks["localization"]["main-synthetic-0000-S1"]
    assert row["num_target_turns"] == 5 and row["inconsistent_turns"] == []
    with pytest.raises(FileNotFoundError):
        load_gold(folder, "4vc")


def test_canonical_form_is_the_answers_not_the_encoding():
    gold = Gold(
        "main",
        "test",
        {
            "localization": {"l1": {"id": "l1", "num_target_turns": 3}},
            "discrimination": {"c1": {"id": "c1", "candidate_labels": ["A", "B"]}},
        },
    )
    a = (
        b'{"task": "localization", "id": "l1", "prediction": [3, 1]}\n'
        b'{"task": "discrimination", "id": "c1", "prediction": "B", "ranking": null}\n'
    )
    b = b'{"task":"discrimination","id":"c1","prediction":"B"}\r\n{"prediction":[1,3],"id":"l1","task":"localization"}'
    assert (
        parse_submission(a, gold).canonical()
        == parse_submission(b, gold).canonical()
        == (
            b'{"task":"discrimination","id":"c1","prediction":"B"}\n{"task":"localization","id":"l1","prediction":[1,3]}\n'
        )
    )
    ranked = b'{"task":"discrimination","id":"c1","prediction":"B","ranking":["B","A"]}\n'
    assert parse_submission(ranked, gold).canonical() == ranked  # a ranking is an answer: kept, in its order
