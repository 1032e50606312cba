"""Reading a dialogue as people have it (``judges.check.audio``, ``.inputs``, ``.dialogue``):
decoding any format, rate and channel count to 16 kHz mono, manifests (CSV, TSV, JSONL), RTTM
files, and the one-line refusal of each kind of bad input, naming the file."""

from __future__ import annotations

import json
import os
import subprocess
from math import gcd

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from speakersleuth.judges.check import CheckInputError, Clip, Dialogue, Turn, read_manifest, read_rttm, validate
from speakersleuth.judges.check.audio import audio_info, decode
from speakersleuth.judges.check.inputs import add_candidates, add_references
from tests.support.check_inputs import write_samples

SR = 16000


def chord(seconds: float, rate: int) -> np.ndarray:
    """300 Hz + 700 Hz, float64."""
    t = np.arange(int(round(seconds * rate))) / rate
    return 0.2 * np.sin(2 * np.pi * 300 * t) + 0.1 * np.sin(2 * np.pi * 700 * t)


def write(path, seconds: float = 1.2, rate: int = SR, channels: int = 1):
    """A chord file; channel c is the chord times (1 - 0.3 c). mp3 through the ffmpeg CLI."""
    wave = chord(seconds, rate)
    data = np.stack([wave * (1 - 0.3 * c) for c in range(channels)], axis=1) if channels > 1 else wave
    return write_samples(path, data, rate)


def peaks(wave: np.ndarray, rate: int = SR) -> list[float]:
    """The two strongest frequencies (Hz), sorted."""
    spectrum = np.abs(np.fft.rfft(wave * np.hanning(len(wave))))
    freqs = np.fft.rfftfreq(len(wave), 1 / rate)
    top = []
    for i in np.argsort(spectrum)[::-1]:
        if all(abs(freqs[i] - f) > 30 for f in top):
            top.append(float(freqs[i]))
        if len(top) == 2:
            return sorted(top)
    return sorted(top)


@pytest.mark.parametrize(
    ("suffix", "rate", "channels"),
    [("wav", 8000, 1), ("flac", 22050, 1), ("wav", 44100, 2), ("flac", 48000, 2), ("wav", 16000, 1)],
)
def test_lossless_files_decode_to_the_mean_of_their_channels_at_16k(tmp_path, suffix, rate, channels):
    path = write(tmp_path / f"turn.{suffix}", rate=rate, channels=channels)
    wave = decode(path)
    pcm, sr = sf.read(path, dtype="int16", always_2d=True)  # the stored integers, by hand
    mono = (pcm.astype(np.float64) / 32768).mean(axis=1)
    g = gcd(rate, SR)
    expected = resample_poly(mono, SR // g, rate // g)
    assert wave.dtype == np.float32 and wave.ndim == 1
    assert len(wave) == len(expected) == int(np.ceil(len(mono) * SR / rate))
    np.testing.assert_allclose(wave, expected, atol=2e-5)
    assert audio_info(path).seconds == pytest.approx(1.2, abs=1e-4)
    assert (audio_info(path).sampling_rate, audio_info(path).channels) == (rate, channels)


@pytest.mark.parametrize(("rate", "channels"), [(44100, 2), (22050, 1), (48000, 2)])
def test_mp3_decodes_to_16k_mono_with_its_frequencies(tmp_path, rate, channels):
    path = write(tmp_path / "turn.mp3", rate=rate, channels=channels)
    wave = decode(path)
    assert wave.ndim == 1 and abs(len(wave) / SR - 1.2) < 0.08  # an mp3 carries encoder padding
    assert peaks(wave) == pytest.approx([300, 700], abs=3)
    level = np.sqrt(np.mean(chord(1.2, SR) ** 2)) * (1 - 0.15 * (channels - 1))  # the channels' mean
    assert np.sqrt(np.mean(wave**2)) == pytest.approx(level, rel=0.05)


def test_a_span_is_read_without_the_rest(tmp_path):
    path = write(tmp_path / "long.wav", seconds=3.0, rate=SR)
    whole = decode(path)
    np.testing.assert_array_equal(decode(path, 1.25, 2.0), whole[20000:32000])
    at_44k = decode(write(tmp_path / "long44.flac", seconds=3.0, rate=44100), 1.0, 2.0)
    assert len(at_44k) == SR
    np.testing.assert_allclose(at_44k[400:-400], decode(tmp_path / "long44.flac")[SR + 400 : 2 * SR - 400], atol=2e-3)


def test_missing_and_unreadable_audio_name_the_file(tmp_path):
    with pytest.raises(CheckInputError, match=r"nowhere\.wav: no such audio file"):
        audio_info(tmp_path / "nowhere.wav")
    bad = tmp_path / "notes.wav"
    bad.write_text("these are notes, not audio")
    with pytest.raises(CheckInputError, match=r"notes\.wav: cannot read audio"):
        audio_info(bad)
    with pytest.raises(CheckInputError, match=r"notes\.wav: cannot read audio"):
        decode(bad)


def test_a_flac_cut_short_after_its_header_is_refused_in_one_line(tmp_path):
    """The header reads (the length check passes), the frames break off: libsndfile loses sync and
    FFmpeg cannot receive a frame; the check names the file, it does not crash (the audit's case)."""
    whole = write(tmp_path / "whole.flac", seconds=20.0, rate=44100).read_bytes()
    cut = tmp_path / "cut.flac"
    cut.write_bytes(whole[:20000])
    assert audio_info(cut).seconds > 19  # the header still promises the whole file
    with pytest.raises(CheckInputError, match=r"cut\.flac: cannot decode audio \(.*FFmpeg: "):
        decode(cut)


def test_a_files_header_is_read_once_per_version(tmp_path, monkeypatch):
    """The check validates before its model loads and again inside ``check_dialogues``: the second
    read of the same file is remembered; a file written anew is read again."""
    import speakersleuth.judges.check.audio as audio

    reads = []
    real = audio.sf.info
    monkeypatch.setattr(audio.sf, "info", lambda path: reads.append(path) or real(path))
    path = write(tmp_path / "once.wav", seconds=1.0)
    assert audio_info(path) == audio_info(tmp_path / "." / "once.wav")  # the same file by another name
    assert len(reads) == 1
    os.utime(path, ns=(0, 12345))  # a new version: another modification time
    assert audio_info(path).seconds == pytest.approx(1.0) and len(reads) == 2


@pytest.fixture
def turns(tmp_path):
    """Four 1 s turn files in a subfolder, two speakers, and one short (0.3 s) file."""
    for name in ("a1", "b1", "a2", "b2", "a2x", "ref"):
        write(tmp_path / "dlg" / "audio" / f"{name}.wav", seconds=1.0)
    write(tmp_path / "dlg" / "audio" / "short.wav", seconds=0.3)
    return tmp_path / "dlg"


def test_csv_manifest_paths_are_relative_to_it(turns, tmp_path):
    (turns / "m.csv").write_text(
        "turn,speaker,path,text,candidate_for,reference\n"
        "1,alice,audio/a1.wav,Hello there,,audio/ref.wav\n"
        '2,bob,audio/b1.wav,"Hi, you",,\n'
        "3,alice,audio/a2.wav,,,\n"
        "4,bob,audio/b2.wav,Bye,,\n"
        "3b,alice,audio/a2x.wav,,3,\n"
    )
    (dialogue,) = read_manifest(turns / "m.csv")
    assert [(t.id, t.speaker, t.audio.path, t.text) for t in dialogue.turns] == [
        ("1", "alice", turns / "audio" / "a1.wav", "Hello there"),
        ("2", "bob", turns / "audio" / "b1.wav", "Hi, you"),
        ("3", "alice", turns / "audio" / "a2.wav", ""),
        ("4", "bob", turns / "audio" / "b2.wav", "Bye"),
    ]
    assert {k: c.path for k, c in dialogue.turns[2].candidates.items()} == {"3b": turns / "audio" / "a2x.wav"}
    assert {s: c.path for s, c in dialogue.references.items()} == {"alice": turns / "audio" / "ref.wav"}
    assert dialogue.speakers == ["alice", "bob"] and dialogue.source == str(turns / "m.csv")
    assert validate(dialogue) == pytest.approx(4.0)  # the turns' seconds


def test_jsonl_and_tsv_manifests_with_several_dialogues(turns):
    rows = [
        {"dialogue": "d1", "turn": "1", "speaker": "A", "path": "audio/a1.wav", "label": "consistent"},
        {"dialogue": "d1", "turn": "2", "speaker": "A", "path": "audio/a2.wav", "label": "inconsistent"},
        {"dialogue": "d2", "turn": "1", "speaker": "B", "path": "audio/b1.wav"},
        {"dialogue": "d2", "turn": "2", "speaker": "B", "path": "audio/b2.wav", "text": None},
    ]
    (turns / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (turns / "m.tsv").write_text(
        "dialogue\tturn\tspeaker\tpath\n"
        + "".join(f"{r['dialogue']}\t{r['turn']}\t{r['speaker']}\t{r['path']}\n" for r in rows)
    )
    for name in ("m.jsonl", "m.tsv"):
        dialogues = read_manifest(turns / name)
        assert [d.name for d in dialogues] == ["d1", "d2"]
        assert [[t.audio.path.name for t in d.turns] for d in dialogues] == [
            ["a1.wav", "a2.wav"],
            ["b1.wav", "b2.wav"],
        ]
    assert [t.label for t in read_manifest(turns / "m.jsonl")[0].turns] == ["consistent", "inconsistent"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("turn,path\n1,audio/a1.wav\n", r"m\.csv: no column 'speaker' \(columns: turn, path\)"),
        ("turn,speaker,path\n1,A,\n", r"m\.csv line 2: empty 'path'"),
        ("turn,speaker,path\n1,A,audio/a1.wav\n1,A,audio/a2.wav\n", r"m\.csv line 3: turn '1' appears twice"),
        (
            "turn,speaker,path,candidate_for\n1,A,audio/a1.wav,\nx,A,audio/a2.wav,9\n",
            r"line 3: candidate_for '9' names no turn",
        ),
        (
            "turn,speaker,path,candidate_for\n1,A,audio/a1.wav,\nx,B,audio/a2.wav,1\n",
            r"line 3: candidate 'x' is for turn '1' of speaker 'A', not of 'B'",
        ),
        (
            "turn,speaker,path,reference\n1,A,audio/a1.wav,audio/ref.wav\n2,A,audio/a2.wav,audio/b1.wav\n",
            r"line 3: speaker 'A' has two reference clips",
        ),
        ("", r"m\.csv: no rows"),
    ],
)
def test_bad_manifests_are_refused_in_one_line(turns, text, message):
    (turns / "m.csv").write_text(text)
    with pytest.raises(CheckInputError, match=message) as caught:
        read_manifest(turns / "m.csv")
    assert "\n" not in str(caught.value)


def test_a_missing_manifest_and_a_bad_jsonl_line(turns):
    with pytest.raises(CheckInputError, match=r"none\.csv: no such manifest"):
        read_manifest(turns / "none.csv")
    (turns / "m.jsonl").write_text('{"turn": "1", "speaker": "A", "path": "audio/a1.wav"}\n{"turn": 2,\n')
    with pytest.raises(CheckInputError, match=r"m\.jsonl line 2: not JSON"):
        read_manifest(turns / "m.jsonl")


def _dialogue(turns, specs, references=None):
    return Dialogue(
        [Turn(str(i), s, Clip.from_file(turns / "audio" / f"{f}.wav")) for i, (s, f) in enumerate(specs, 1)],
        {s: Clip.from_file(turns / "audio" / f"{f}.wav") for s, f in (references or {}).items()},
        source="m.csv",
    )


def test_validate_refuses_what_cannot_be_judged(turns):
    with pytest.raises(
        CheckInputError, match=r"short\.wav: turn '2' \(speaker 'A'\) is 0\.30 s long; the check needs at least 0\.5 s"
    ):
        validate(_dialogue(turns, [("A", "a1"), ("A", "short"), ("A", "a2")]))
    lone = _dialogue(turns, [("A", "a1"), ("B", "b1"), ("A", "a2")])
    with pytest.raises(
        CheckInputError, match=r"m\.csv: speaker 'B' has only one turn with audio \('2'\).*--reference B=FILE"
    ):
        validate(lone)
    assert validate(_dialogue(turns, [("A", "a1"), ("B", "b1"), ("A", "a2")], {"B": "ref"})) == pytest.approx(3.0)
    with pytest.raises(CheckInputError, match=r"speaker 'A' has no reference clip, which the reference method needs"):
        validate(_dialogue(turns, [("A", "a1"), ("A", "a2")]), needs_reference=True)
    with pytest.raises(CheckInputError, match=r"a reference clip is given for speaker 'C', who has no turn"):
        validate(_dialogue(turns, [("A", "a1"), ("A", "a2")], {"C": "ref"}))
    with pytest.raises(CheckInputError, match=r"nothing\.wav: no such audio file"):
        validate(_dialogue(turns, [("A", "a1"), ("A", "nothing")]))


def test_references_and_candidates_given_apart(turns):
    dialogues = [_dialogue(turns, [("A", "a1"), ("B", "b1"), ("A", "a2"), ("B", "b2")])]
    add_references(dialogues, {"B": turns / "audio" / "ref.wav"})
    add_candidates(dialogues, {"3": [turns / "audio" / "a2x.wav", turns / "audio" / "a1.wav"]})
    assert dialogues[0].references["B"].path.name == "ref.wav"
    assert list(dialogues[0].turns[2].candidates) == ["a2x.wav", "a1.wav"]
    with pytest.raises(CheckInputError, match=r"--reference Z=x\.wav: no speaker 'Z' \(speakers: A, B\)"):
        add_references(dialogues, {"Z": "x.wav"})
    with pytest.raises(CheckInputError, match=r"--candidates 9=\.\.\.: no turn named '9'"):
        add_candidates(dialogues, {"9": ["x.wav"]})


def test_rttm_segments_become_turns_in_time_order(tmp_path):
    recording = write(tmp_path / "meeting.flac", seconds=10.0, rate=SR)
    (tmp_path / "meeting.rttm").write_text(
        ";; written by a diarization pipeline\n"
        "SPEAKER meeting 1 4.200 1.500 <NA> <NA> spk_1 <NA> <NA>\n"
        "SPEAKER meeting 1 0.500 2.000 <NA> <NA> spk_0 <NA> <NA>\n"
        "\n"
        "SPEAKER meeting 1 8.000 1.995 <NA> <NA> spk_0 <NA> <NA>\n"
    )
    dialogue = read_rttm(tmp_path / "meeting.rttm", recording)
    got = [(t.id, t.speaker, t.audio.path, t.audio.start, t.audio.end) for t in dialogue.turns]
    assert got == [
        ("1", "spk_0", recording, 0.5, 2.5),
        ("2", "spk_1", recording, 4.2, pytest.approx(5.7)),
        ("3", "spk_0", recording, 8.0, pytest.approx(9.995)),
    ]
    np.testing.assert_array_equal(dialogue.turns[1].audio.load(), decode(recording)[67200:91200])
    assert dialogue.name == "meeting"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "SPEAKER meeting 1 9.000 1.500 <NA> <NA> spk_1 <NA> <NA>",
            r"meeting\.rttm line 1: the segment ends at 10\.50 s, after the end of .*meeting\.flac \(10\.00 s\)",
        ),
        (
            "SPEAKER other_call 1 1.000 1.500 <NA> <NA> spk_1 <NA> <NA>",
            r"no SPEAKER lines of file id 'meeting' \(file ids in it: 'other_call'\); name the recording's id with "
            "--recording-id",
        ),
        (
            "SPEAKER meeting 1 one 1.500 <NA> <NA> spk_1 <NA> <NA>",
            r"line 1: start 'one' and duration '1\.500' must be numbers",
        ),
        ("SPEAKER meeting 1 1.0", r"line 1: 4 fields"),
        ("SPKR-INFO meeting 1 <NA> <NA> <NA> unknown spk_1 <NA>", r"meeting\.rttm: no SPEAKER lines"),
    ],
)
def test_bad_rttm_is_refused_in_one_line(tmp_path, line, message):
    recording = write(tmp_path / "meeting.flac", seconds=10.0, rate=SR)
    (tmp_path / "meeting.rttm").write_text(line + "\n")
    with pytest.raises(CheckInputError, match=message):
        read_rttm(tmp_path / "meeting.rttm", recording)


def test_m4a_goes_through_ffmpeg(tmp_path):
    """AAC in MP4, which libsndfile does not read: decoded by FFmpeg through torchcodec."""
    path = tmp_path / "turn.m4a"
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=300:duration=1.2",
            "-ar",
            "44100",
            "-ac",
            "2",
            path,
        ],
        check=True,
    )
    with pytest.raises(sf.LibsndfileError):
        sf.info(path)
    assert (audio_info(path).sampling_rate, audio_info(path).channels) == (44100, 2)
    wave = decode(path)
    strongest = np.fft.rfftfreq(len(wave), 1 / SR)[np.argmax(np.abs(np.fft.rfft(wave)))]
    assert abs(len(wave) / SR - 1.2) < 0.08 and strongest == pytest.approx(300, abs=3)


def test_the_api_takes_int_ids_and_stereo_samples_as_files_are_taken():
    """``Turn(7, ...)`` is turn "7"; 2-D samples are downmixed either way round (the shorter side is
    the channels); anything else is a ``CheckInputError`` naming the clip."""
    left, right = np.full(16000, 0.2, np.float32), np.full(16000, 0.4, np.float32)
    turn = Turn(7, 3, Clip(samples=np.stack([left, right], axis=1), name="stereo"))
    assert (turn.id, turn.speaker) == ("7", "3")
    np.testing.assert_allclose(turn.audio.load(), np.full(16000, 0.3), atol=1e-6)  # the channels' mean
    np.testing.assert_allclose(Clip(samples=np.stack([left, right])).load(), np.full(16000, 0.3), atol=1e-6)
    assert Clip(samples=np.stack([left, right], axis=1)).seconds() == 1.0
    with pytest.raises(CheckInputError, match=r"cube: samples of shape \(4, 4, 4\); give 1-D samples"):
        Clip(samples=np.ones((4, 4, 4)), name="cube").load()
    with pytest.raises(CheckInputError, match="nan contains NaN"):
        Clip(samples=np.full(16000, np.nan), name="nan").load()
    for bad in (None, True, 2.5, " "):
        with pytest.raises(CheckInputError, match="a turn id is"):
            Turn(bad, "A", None)
