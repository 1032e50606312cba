"""The check's report for people and programs (``judges.check.report``, ``.results``): the table
line by line, the JSON, the picture."""

from __future__ import annotations

import json

import matplotlib.image

from speakersleuth.judges.check import (
    CandidateResult,
    CheckReport,
    SpeakerResult,
    TurnResult,
    format_table,
    plot_report,
    write_json,
)


def report(dialogues=("talk",)) -> CheckReport:
    speakers = []
    for d in dialogues:
        host = [
            TurnResult("1", "host", 1, 0.8123, False, "turns/1.wav", "Welcome back", [], 2.4, 2.25, 0.0562),
            TurnResult(
                "3",
                "host",
                2,
                0.4012,
                True,
                "turns/3.mp3",
                "a long sentence that goes on and on and on",
                [],
                3.1,
                2.9,
                -0.3549,
            ),
            TurnResult(
                "5",
                "host",
                3,
                0.7561,
                False,
                "turns/5.wav",
                candidates=[
                    CandidateResult("5b", 0.8011, 1, "takes/5b.wav"),
                    CandidateResult("5", 0.7561, 2, "turns/5.wav", current=True),
                ],
                seconds=1.8,
                speech_seconds=1.62,
                relative=0.0,
            ),
            TurnResult(
                "7",
                "host",
                None,
                None,
                False,
                "turns/7.wav",
                seconds=0.8,
                speech_seconds=0.51,
                status="too short to judge",
            ),
        ]
        guest = [TurnResult("2", "guest", 1, 0.91, False, "turns/2.flac [1.00-2.50 s]", "", [], 1.5, 1.44, 0.0)]
        speakers += [
            SpeakerResult(d, "host", "pairwise", 0.5, host, 0.5988),
            SpeakerResult(d, "guest", "reference", 0.6, guest, 0.09, reference="ref/guest.wav"),
        ]
    return CheckReport("eres2net", "pairwise", 0.5, "given (--threshold)", speakers, ["a note"], 12.5)


def test_the_table_says_what_the_score_is_and_which_turns_slipped():
    assert format_table(report()) == (
        "Speaker consistency: encoder eres2net, method pairwise, τ = 0.5\n"
        "τ: given (--threshold)\n"
        "score: mean cosine similarity to the speaker's other turns; a turn is flagged when score < 0.5\n"
        "(speakers with one turn: method reference, cosine similarity to the speaker's reference clip, "
        "flagged when score < 0.6)\n"
        "\n"
        "speaker  turn  seconds  speech  score  vs typical  flagged             audio                       text\n"
        "host     1     2.40     2.25    0.812  +0.056                          turns/1.wav                 Welcome back\n"
        "host     3     3.10     2.90    0.401  -0.355      FLAGGED             turns/3.mp3                 "
        "a long sentence that goes on an…\n"
        "host     5     1.80     1.62    0.756  +0.000                          turns/5.wav\n"
        "host     7     0.80     0.51    -      -           too short to judge  turns/7.wav\n"
        "guest    2     1.50     1.44    0.910  +0.000                          turns/2.flac [1.00-2.50 s]\n"
        "\n"
        "host: 1 of 3 turns flagged (3); 1 too short to judge\n"
        "guest: 0 of 1 turns flagged, against the reference ref/guest.wav\n"
        "\n"
        "Candidates, best first:\n"
        "  turn 5 (host): 5b 0.801, 5 (current) 0.756 -> keep 5b\n"
        "note: a note\n"
    )


def test_several_dialogues_get_a_column_and_the_json_round_trips(tmp_path):
    both = report(("ep1", "ep2"))
    table = format_table(both)
    assert "dialogue  speaker  turn" in table and "ep2/host: 1 of 3 turns flagged (3)" in table
    data = json.loads(write_json(both, tmp_path / "r.json").read_text())
    assert data == json.loads(json.dumps(both.to_dict()))
    assert data["flag_rule"] == "score < 0.5" and data["audio_seconds"] == 12.5
    host = data["speakers"][0]
    assert (host["dialogue"], host["consistent"], host["flagged_turns"]) == ("ep1", False, ["3"])
    assert host["turns"][2]["candidates"][0] == {
        "label": "5b", "score": 0.8011, "rank": 1, "audio": "takes/5b.wav", "current": False,
    }  # fmt: skip
    assert [t.turn for t in both.flagged] == ["3", "3"] and both.speaker("guest", "ep2").dialogue == "ep2"


def test_the_picture_has_a_panel_per_speaker(tmp_path):
    one = report()
    one.speakers = one.speakers[:1]
    small = matplotlib.image.imread(plot_report(one, tmp_path / "one.png"))
    large = matplotlib.image.imread(plot_report(report(("a", "b")), tmp_path / "four.png"))
    assert small.shape[1] == large.shape[1] and large.shape[0] > 2 * small.shape[0]
    red = (large[..., 0] > 0.7) & (large[..., 1] < 0.3) & (large[..., 2] < 0.3)
    assert red.sum() > 100  # τ lines and flagged turns are drawn in red
