"""What the check (``judges.check``) promises its users about its inputs, its fallbacks and its
recalibration, each stated with hand-made embeddings: a stand-in encoder maps a clip (a constant
waveform) to a vector chosen here, so every score is a cosine computed by hand and no model loads.
A constant waveform is no speech to webrtcvad, so here every clip counts as speech from end to end
(the cut to speech is tested in ``test_check_speech.py``)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import soundfile as sf

from speakersleuth.judges.__main__ import main as judges_main
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check import CheckInputError, Clip, Dialogue, Turn, check_dialogues, read_rttm, validate
from speakersleuth.judges.check.calibration import Calibration, load_calibration, recalibrate
from speakersleuth.judges.check.checker import recalibrate_on
from speakersleuth.judges.check.inputs import add_candidates, add_references

SR = 16000


@pytest.fixture(autouse=True)
def every_clip_is_speech(monkeypatch):
    """The check's cut to speech keeps a clip whole and counts all of it as speech."""
    from speakersleuth.judges.check.speech import Speech

    monkeypatch.setattr("speakersleuth.judges.check.listening.speech_of", lambda wave: Speech(wave, len(wave) / SR))


def at(cosine: float) -> np.ndarray:
    """A unit vector at ``cosine`` from the first axis (the reference's direction)."""
    return np.array([cosine, np.sqrt(1 - cosine**2), 0.0])


class HandMadeEncoder:
    """Stands in for a speaker encoder: clip ``k`` (a constant waveform at ``k`` / 100) is
    ``vectors[k]``."""

    def __init__(self, name: str, vectors: dict[int, np.ndarray]):
        self.name, self.vectors = name, vectors

    def encode(self, waves, batch_size: int = 32) -> np.ndarray:
        return np.stack([self.vectors[int(round(float(np.mean(w)) * 100))] for w in waves])


def clip(k: int, seconds: float = 1.0) -> Clip:
    """Clip ``k`` in memory."""
    return Clip(samples=np.full(int(seconds * SR), k / 100, dtype=np.float32), name=f"clip {k}")


def write_clip(path, k: int, seconds: float = 1.0):
    """Clip ``k`` as a 16 kHz wav file."""
    sf.write(path, np.full(int(seconds * SR), k / 100), SR, subtype="PCM_16")
    return path


#: A calibration file of the hand-made encoder: pairwise τ 0.5 (the default), reference τ 0.8.
CALIBRATION = Calibration(
    {
        "default": {"encoder": "hand-made", "method": "pairwise", "threshold": 0.5},
        "judges": [
            {"encoder": "hand-made", "method": "pairwise", "threshold": 0.5},
            {"encoder": "hand-made", "method": "reference", "threshold": 0.8},
        ],
        "source": {"dataset_name": "a test", "variants": ["main"], "commit": "0" * 40},
    },
    "test calibration",
)


@pytest.mark.parametrize("duration", ["0.000", "-0.500"])
def test_an_rttm_segment_without_length_is_refused_naming_its_line(tmp_path, duration):
    recording = write_clip(tmp_path / "call.wav", 10, seconds=3.0)
    (tmp_path / "call.rttm").write_text(
        f"SPEAKER call 1 0.000 1.000 <NA> <NA> a <NA> <NA>\nSPEAKER call 1 1.500 {duration} <NA> <NA> b <NA> <NA>\n"
    )
    with pytest.raises(CheckInputError, match=rf"call\.rttm line 2: start 1\.5 s, duration {float(duration):g} s"):
        read_rttm(tmp_path / "call.rttm", recording)


def test_references_and_candidates_reach_every_dialogue_of_a_manifest_not_only_the_first():
    """Speaker A speaks in both dialogues: ``--reference A=FILE`` gives both A's reference; turn
    "x" is in the second dialogue only: ``--candidates x=FILE`` reaches it there."""
    first = Dialogue([Turn("1", "A", Clip.from_file("a1.wav")), Turn("2", "B", Clip.from_file("b1.wav"))], name="d1")
    second = Dialogue([Turn("x", "A", Clip.from_file("a2.wav")), Turn("y", "C", Clip.from_file("c1.wav"))], name="d2")
    add_references([first, second], {"A": "refA.wav", "C": "refC.wav"})
    assert {d.name: {s: c.path.name for s, c in d.references.items()} for d in (first, second)} == {
        "d1": {"A": "refA.wav"},
        "d2": {"A": "refA.wav", "C": "refC.wav"},
    }
    add_candidates([first, second], {"x": ["x_take2.wav"]})
    assert {k: c.path.name for k, c in second.turns[0].candidates.items()} == {"x_take2.wav": "x_take2.wav"}
    assert all(not t.candidates for t in first.turns)


def test_a_turn_with_candidates_only_is_no_turn_with_audio_for_the_one_turn_refusal():
    """A speaks once and has a turn still to choose (candidates, no audio): one turn with audio,
    so without a reference clip A cannot be judged."""
    talk = Dialogue(
        [
            Turn("1", "A", clip(10)),
            Turn("2", "B", clip(20)),
            Turn("3", "A", None, candidates={"3a": clip(11)}),
            Turn("4", "B", clip(21)),
        ],
        source="talk.csv",
    )
    with pytest.raises(CheckInputError, match=r"talk\.csv: speaker 'A' has only one turn with audio \('1', '3'\)"):
        validate(talk)
    talk.references["A"] = clip(12)
    assert validate(talk) == pytest.approx(3.0)


def test_a_one_turn_speaker_is_judged_by_the_reference_methods_tau():
    """Pairwise at τ 0.5 for the check; B has one turn with audio (and one still to choose) and a
    reference clip: B is judged against it at the reference method's τ, 0.8, so B's turn at cosine
    0.7 to the reference (by hand) is flagged, which at 0.5 it would not be. A stays pairwise."""
    vectors = {10: at(1.0), 11: at(1.0), 20: at(0.7), 21: at(0.9), 30: at(1.0)}
    talk = Dialogue(
        [
            Turn("1", "A", clip(10)),
            Turn("2", "B", clip(20)),
            Turn("3", "A", clip(11)),
            Turn("4", "B", None, candidates={"4a": clip(21)}),
        ],
        {"B": clip(30)},
    )
    cache = EmbeddingCache(HandMadeEncoder("hand-made", vectors))
    report = check_dialogues(talk, method="pairwise", calibration=CALIBRATION, cache=cache)
    b = report.speaker("B")
    assert (b.method, b.threshold) == ("reference", 0.8)
    assert b.turns[0].score == pytest.approx(0.7, abs=1e-6) and [t.turn for t in b.flagged] == ["2"]
    assert (report.speaker("A").method, report.speaker("A").threshold) == ("pairwise", 0.5)


@pytest.mark.parametrize(
    ("consistent", "inconsistent", "warned"), [(12, 3, True), (3, 12, True), (9, 10, True), (10, 10, False)]
)
def test_recalibration_warns_when_either_label_has_fewer_than_ten_turns(consistent, inconsistent, warned):
    scores = [0.9] * consistent + [0.2] * inconsistent
    labels = [False] * consistent + [True] * inconsistent
    r = recalibrate("pairwise", scores, labels, previous=0.5, source="labels.csv")
    assert (r.consistent, r.inconsistent) == (consistent, inconsistent)
    assert (r.warning is not None) == warned, r.warning


def test_recalibration_counts_only_the_turns_the_chosen_method_judges():
    """A's three consistent turns and one inconsistent are judged pairwise; B's one turn, labelled
    inconsistent, is judged against B's reference (the fallback) and is not counted: 3 and 1."""
    vectors = {10: at(1.0), 11: at(1.0), 12: at(1.0), 13: at(0.0), 20: at(0.9), 30: at(1.0)}
    labels = {"1": "consistent", "2": "inconsistent", "3": "consistent", "4": "consistent", "5": "inconsistent"}
    turns = [Turn("1", "A", clip(10)), Turn("2", "B", clip(20)), Turn("3", "A", clip(11))]
    turns += [Turn("4", "A", clip(12)), Turn("5", "A", clip(13))]
    for turn in turns:
        turn.label = labels[turn.id]
    cache = EmbeddingCache(HandMadeEncoder("hand-made", vectors))
    recalibration, _ = recalibrate_on(
        Dialogue(turns, {"B": clip(30)}), source="labels.csv", method="pairwise", calibration=CALIBRATION, cache=cache
    )
    assert (recalibration.consistent, recalibration.inconsistent) == (3, 1)


@pytest.fixture
def hand_made_campplus(monkeypatch):
    """The command's encoder "campplus" is the hand-made one: each clip at cosine k / 100 to the
    reference (clip 99, the first axis)."""
    vectors = {k: at(k / 100) for k in range(1, 100)} | {99: at(1.0)}
    monkeypatch.setattr(
        "speakersleuth.speech.encoders.get_encoder", lambda spec, **kw: HandMadeEncoder("campplus", vectors)
    )


def write_manifest(path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["turn", "speaker", "path", "reference", "label"])
        writer.writeheader()
        writer.writerows([{"reference": "", "label": ""} | row for row in rows])


def test_the_check_runs_at_the_tau_it_just_calibrated(tmp_path, hand_made_campplus, capsys):
    """The reference method (the shipped campplus τ is 0.7): ten consistent labelled turns at
    cosine 0.40 to the reference, ten inconsistent at 0.10. Every τ in 0.11..0.40 flags exactly
    the inconsistent ones; the closest to 0.7 is 0.40 (by hand). The check then runs at 0.40: of
    turns at 0.50, 0.45 and 0.30 only the last is flagged (at 0.7 all three would be)."""
    assert load_calibration().entry("campplus", "reference")["threshold"] == 0.7
    write_clip(tmp_path / "ref.wav", 99, seconds=3.0)
    for k in (10, 30, 40, 45, 50):
        write_clip(tmp_path / f"c{k}.wav", k)
    labelled = [{"turn": str(i), "speaker": "A", "path": "c40.wav", "label": "consistent"} for i in range(10)]
    labelled += [{"turn": str(10 + i), "speaker": "A", "path": "c10.wav", "label": "inconsistent"} for i in range(10)]
    labelled[0]["reference"] = "ref.wav"
    write_manifest(tmp_path / "labels.csv", labelled)
    turns = [{"turn": str(i), "speaker": "A", "path": f"c{k}.wav"} for i, k in enumerate((50, 45, 30), 1)]
    turns[0]["reference"] = "ref.wav"
    write_manifest(tmp_path / "talk.csv", turns)
    args = ["check", "--manifest", str(tmp_path / "talk.csv"), "--calibrate", str(tmp_path / "labels.csv")]
    assert judges_main([*args, "--encoder", "campplus", "--method", "reference", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["threshold"] == pytest.approx(0.40) and report["recalibration"]["threshold"] == pytest.approx(0.40)
    assert [t["turn"] for s in report["speakers"] for t in s["turns"] if t["flagged"]] == ["3"]


def test_skip_short_drops_the_short_turns_of_the_calibrate_file_too(tmp_path, hand_made_campplus, capsys):
    """A labelled file with one 0.3 s turn: without ``--skip-short`` it is refused; with it the turn
    is left out (a note names it) and the calibration runs on the rest."""
    write_clip(tmp_path / "ref.wav", 99, seconds=3.0)
    for k in (10, 40):
        write_clip(tmp_path / f"c{k}.wav", k)
    write_clip(tmp_path / "short.wav", 40, seconds=0.3)
    labelled = [{"turn": str(i), "speaker": "A", "path": "c40.wav", "label": "consistent"} for i in range(3)]
    labelled += [
        {"turn": "9", "speaker": "A", "path": "c10.wav", "label": "inconsistent"},
        {"turn": "short", "speaker": "A", "path": "short.wav", "label": "consistent"},
    ]
    labelled[0]["reference"] = "ref.wav"
    write_manifest(tmp_path / "labels.csv", labelled)
    write_manifest(tmp_path / "talk.csv", [{"turn": "1", "speaker": "A", "path": "c40.wav", "reference": "ref.wav"}])
    args = ["check", "--manifest", str(tmp_path / "talk.csv"), "--calibrate", str(tmp_path / "labels.csv")]
    args += ["--encoder", "campplus", "--method", "reference", "--json", "--no-progress"]
    assert judges_main(args) == 2
    assert "short.wav: turn 'short' (speaker 'A') is 0.30 s long" in capsys.readouterr().err
    assert judges_main([*args, "--skip-short"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["recalibration"]["consistent"], report["recalibration"]["inconsistent"]) == (3, 1)
    assert any("labels.csv: left out 1 turns shorter than 0.5 s (short)" in note for note in report["notes"])
