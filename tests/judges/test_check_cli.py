"""``python -m speakersleuth.judges check`` run as the README types it, in a subprocess, on dialogues as people
have them: a small build's turns exported as wav/flac/mp3 files at 8 to 48 kHz, mono and stereo,
with a manifest; DailyTalk in its real layout (its metadata as the manifest); an AMI meeting's
Mix-Headset recording with an RTTM made from its NXT segments; a long recording of concatenated
turns with its RTTM. Bad input ends in one ``error:`` line naming the file, never a traceback."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.check import load_calibration
from tests.support.check_inputs import build_rows, decode_16k, export_row, write_audio, write_recording
from tests.support.corpus_fixtures import write_ami
from tests.support.fresh_machine import ROOT
from tests.support.pipeline_fixtures import write_dailytalk_speechlike
from tests.support.synthetic import build_synthetic_dataset
from tests.support.vc_fixtures import VOICES, Voice, speech_like


def judges_check(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``python -m speakersleuth.judges check ARGS`` in ``cwd`` (this checkout's modules first)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", **env}
    return subprocess.run(
        [sys.executable, "-m", "speakersleuth.judges", "check", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )


def refused(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return build_synthetic_dataset(tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=2, variants=("main",))


@pytest.fixture(scope="module")
def exported(build, tmp_path_factory):
    """Folder with ``dialogue/manifest.csv``: an S2 row's five target turns (speaker ``target``, turn
    k altered) and another dialogue's S1 turns (speaker ``other``), in five formats and rates."""
    rows = build_rows(build, ssd.config_name("detection", "main"))
    s2 = next(r for r in rows if r["scenario"] == "S2")
    other = next(r for r in rows if r["scenario"] == "S1" and r["dialogue_id"] != s2["dialogue_id"])
    work = tmp_path_factory.mktemp("user")
    export_row(s2, work / "dialogue", other=other)
    return work, s2


def table_rows(stdout: str) -> dict[tuple[str, str], list[str]]:
    """(speaker, turn) -> the cells of its table line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("speaker  turn"))
    found = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = line.split()
        found[(cells[0], cells[1])] = cells
    return found


def test_exported_turns_table_json_and_picture(exported):
    work, s2 = exported
    done = judges_check(
        "--manifest", "dialogue/manifest.csv", "--report-out", "report.json", "--plot-out", "check.png", "--no-progress",
        cwd=work,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((work / "report.json").read_text())
    default = load_calibration().default
    assert (report["encoder"], report["method"], report["threshold"]) == (
        default["encoder"], default["method"], default["threshold"],
    )  # fmt: skip
    assert [s["speaker"] for s in report["speakers"]] == ["target", "other"]
    turns = {(t["speaker"], t["turn"]): t for s in report["speakers"] for t in s["turns"]}
    assert len(turns) == 10 and [t["turn"] for t in report["speakers"][0]["turns"]] == ["1", "3", "5", "7", "9"]
    rows = table_rows(done.stdout)
    assert set(rows) == set(turns)
    for key, turn in turns.items():  # the table says what the JSON says
        # speaker, turn, seconds, speech, score, vs typical, flagged
        assert rows[key][2:4] == [f"{turn['seconds']:.2f}", f"{turn['speech_seconds']:.2f}"]
        assert rows[key][4] == f"{turn['score']:.3f}" and (rows[key][6] == "FLAGGED") == turn["flagged"]
    assert "TTS voices" in done.stdout and "calibrated on labelled dialogues of speech we did not make" in done.stdout
    image = matplotlib.image.imread(work / "check.png")
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 500


def test_json_output_and_the_disk_cache(exported, tmp_path):
    work, _ = exported
    first = judges_check(
        "--manifest", "dialogue/manifest.csv", "--json", "--cache", str(tmp_path), "--no-progress", cwd=work
    )
    assert first.returncode == 0, first.stderr
    again = judges_check("--manifest", "dialogue/manifest.csv", "--json", "--cache", str(tmp_path), cwd=work)
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert "embed [" not in again.stderr  # every clip from the disk cache: no bar
    assert len(list(tmp_path.rglob("*.npy"))) == 10


def test_candidates_and_a_reference_from_the_command_line(exported, build):
    work, s2 = exported
    k = s2["converted_turn"]
    original = next(r for r in build_rows(build, "detection") if r["id"] == s2["id"].replace("S2", "S1"))
    write_audio(work / "takes" / "redo.flac", decode_16k(original["target_audio"][k - 1]["bytes"]), 32000, 1)
    write_audio(work / "takes" / "ref.wav", decode_16k(s2["reference_audio"]["bytes"]), 16000, 1)
    turn = str(2 * k - 1)  # the target speaker's k-th turn in the exported manifest
    done = judges_check(
        "--manifest", "dialogue/manifest.csv", "--candidates", f"{turn}=takes/redo.flac", "--reference",
        "target=takes/ref.wav", "--reference", "other=dialogue/turns/other_2.flac", "--method", "reference", "--encoder", "campplus", "--json", "--no-progress", cwd=work,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    target = report["speakers"][0]
    assert report["method"] == "reference" and target["reference"] == "takes/ref.wav"
    (chosen,) = [t for t in target["turns"] if t["candidates"]]
    assert chosen["turn"] == turn and {c["label"] for c in chosen["candidates"]} == {turn, "redo.flac"}
    ranks = sorted(chosen["candidates"], key=lambda c: -c["score"])  # reference: higher is better
    assert [c["rank"] for c in ranks] == [1, 2]
    current = next(c for c in chosen["candidates"] if c["current"])
    assert current["score"] == pytest.approx(chosen["score"])  # its turn score, the same cosine


def test_calibrate_on_labelled_turns(exported):
    work, s2 = exported
    k = s2["converted_turn"]
    with (work / "dialogue" / "manifest.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        altered = row["speaker"] == "target" and row["turn"] == str(2 * k - 1)
        row["label"] = "1" if altered else ("0" if row["speaker"] == "target" else "")
    with (work / "dialogue" / "labels.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = judges_check(
        "--manifest", "dialogue/manifest.csv", "--calibrate", "dialogue/labels.csv", "--encoder", "campplus",
        "--report-out", "recalibrated.json", "--no-progress", cwd=work,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((work / "recalibrated.json").read_text())
    recalibration = report["recalibration"]
    assert report["threshold"] == recalibration["threshold"] and report["threshold_source"].startswith("recalibrated")
    assert (recalibration["consistent"], recalibration["inconsistent"]) == (4, 1)
    assert f"balanced accuracy {recalibration['balanced_accuracy']:.1f} %" in done.stdout
    assert "warning: τ rests on 4 consistent and 1 inconsistent labelled turns" in done.stdout


def test_dailytalk_in_its_real_layout(tmp_path):
    """DailyTalk's ``metadata.json`` and ``data/<d>/<u>_<spk>_d<d>.wav``, its two speakers."""
    root = write_dailytalk_speechlike(tmp_path / "DailyTalk", dialogues=1, turns=8)
    meta = json.loads((root / "metadata.json").read_text())["0"]
    with (tmp_path / "dailytalk.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["turn", "speaker", "path", "text"])
        for u in sorted(meta, key=int):
            spk = meta[u]["speaker"]
            writer.writerow([u, spk, f"DailyTalk/data/0/{u}_{spk}_d0.wav", meta[u]["text"]])
    done = judges_check(
        "--manifest", "dailytalk.csv", "--encoder", "campplus", "--json", "--no-progress", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(s["speaker"], [t["turn"] for t in s["turns"]]) for s in report["speakers"]] == [
        ("0", ["0", "2", "4", "6"]),
        ("1", ["1", "3", "5", "7"]),
    ]
    assert report["audio_seconds"] == pytest.approx(sum(1.1 + 0.1 * (u % 5) for u in range(8)), abs=0.01)


def test_an_ami_meeting_with_an_rttm_from_its_segments(tmp_path):
    """AMI's Mix-Headset recording and NXT segments; the RTTM written from the segments here."""
    woman, man = Voice(f0=210.0, vtl=1.15, open_quotient=0.68), Voice(f0=105.0, vtl=0.98, open_quotient=0.56)
    spans = {"A": [(0.5, 2.1), (4.4, 6.0), (8.3, 9.9)], "B": [(2.4, 4.1), (6.3, 8.0), (10.2, 11.6)]}
    meeting = {
        agent: {"global_name": name, "channel": c, "segments": [(a, b, [(a, b, "word")]) for a, b in spans[agent]]}
        for c, (agent, name) in enumerate((("A", "FEE005"), ("B", "MEE006")))
    }
    notes = write_ami(
        tmp_path, {"ES2002a": meeting}, seconds=12.0, annotations="folder", voices={"FEE005": woman, "MEE006": man}
    )
    names = {
        s.get("nxt_agent"): s.get("global_name")
        for s in ET.parse(notes / "corpusResources" / "meetings.xml").iter("speaker")
    }
    lines = []
    for agent, name in names.items():
        for seg in ET.parse(notes / "segments" / f"ES2002a.{agent}.segments.xml").iter("segment"):
            start, end = float(seg.get("transcriber_start")), float(seg.get("transcriber_end"))
            lines.append(f"SPEAKER ES2002a.Mix-Headset 1 {start:.3f} {end - start:.3f} <NA> <NA> {name} <NA> <NA>")
    (tmp_path / "ES2002a.rttm").write_text("\n".join(lines) + "\n")
    recording = "amicorpus/ES2002a/audio/ES2002a.Mix-Headset.wav"
    done = judges_check(
        "--rttm",
        "ES2002a.rttm",
        "--recording",
        recording,
        "--encoder",
        "campplus",
        "--json",
        "--no-progress",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [s["speaker"] for s in report["speakers"]] == ["FEE005", "MEE006"]  # FEE005 speaks first
    assert [t["turn"] for s in report["speakers"] for t in s["turns"]] == ["1", "3", "5", "2", "4", "6"]
    assert report["speakers"][0]["turns"][1]["audio"] == f"{recording} [4.40-6.00 s]"


@pytest.fixture(scope="module")
def recording(build, tmp_path_factory):
    """A long recording of the S2 row's turns between another speaker's turns, its RTTM, and an
    RTTM with one 0.3 s backchannel more."""
    rows = build_rows(build, "detection")
    s2 = next(r for r in rows if r["scenario"] == "S2")
    other = next(r for r in rows if r["dialogue_id"] != s2["dialogue_id"])
    turns = []
    for a, b in zip(s2["target_audio"], other["target_audio"]):
        turns += [("spk_0", decode_16k(a["bytes"])), ("spk_1", decode_16k(b["bytes"]))]
    work = tmp_path_factory.mktemp("long")
    audio, rttm = write_recording(turns, work, "call")
    text = rttm.read_text()
    (work / "backchannel.rttm").write_text(text + "SPEAKER call 1 0.050 0.300 <NA> <NA> spk_1 <NA> <NA>\n")
    return work, audio, rttm, s2


def test_a_long_recording_with_its_rttm(recording):
    work, audio, rttm, _ = recording
    done = judges_check(
        "--rttm", rttm.name, "--recording", audio.name, "--plot-out", "call.png", "--no-progress", cwd=work
    )
    assert done.returncode == 0, done.stderr
    rows = table_rows(done.stdout)
    assert sorted(rows) == sorted(
        [("spk_0", str(i)) for i in range(1, 11, 2)] + [("spk_1", str(i)) for i in range(2, 11, 2)]
    )
    assert (work / "call.png").stat().st_size > 10_000


def test_short_segments_are_refused_or_left_out(recording):
    work, audio, _, _ = recording
    refused(
        judges_check("--rttm", "backchannel.rttm", "--recording", audio.name, "--no-progress", cwd=work),
        "call.flac [0.05-0.35 s]: turn '1' (speaker 'spk_1') is 0.30 s long; the check needs at least 0.5 s",
    )
    done = judges_check(
        "--rttm", "backchannel.rttm", "--recording", audio.name, "--skip-short", "--json", "--no-progress", cwd=work
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "backchannel.rttm: left out 1 turns shorter than 0.5 s (1)" in report["notes"]
    assert sum(len(s["turns"]) for s in report["speakers"]) == 10


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    """A folder of turn files and an audio file that is not audio."""
    work = tmp_path_factory.mktemp("bad")
    for i in range(4):
        write_audio(work / f"t{i}.wav", speech_like(VOICES["male_a"], 1.0, seed=i), 16000, 1)
    write_audio(work / "short.wav", speech_like(VOICES["male_a"], 0.3, seed=9), 16000, 1)
    (work / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    write_audio(work / "silent.wav", np.zeros(16000, np.float32), 16000, 1)
    write_audio(work / "call.wav", np.concatenate([speech_like(VOICES["male_a"], 2.0, seed=5)] * 2), 16000, 1)
    return work


@pytest.mark.parametrize(
    ("manifest", "fragments"),
    [
        ("turn,speaker,path\n1,A,t0.wav\n2,A,gone.wav\n", ["gone.wav: no such audio file"]),
        ("turn,speaker,path\n1,A,t0.wav\n2,A,broken.wav\n", ["broken.wav: cannot read audio"]),
        ("turn,speaker,path\n1,A,t0.wav\n2,A,silent.wav\n", ["silent.wav: every sample is zero (digital silence)"]),
        ("turn,speaker,path\n1,A,t0.wav\n2,A,short.wav\n", ["short.wav: turn '2' (speaker 'A') is 0.30 s long"]),
        (
            "turn,speaker,path\n1,A,t0.wav\n2,B,t1.wav\n3,A,t2.wav\n",
            ["m.csv: speaker 'B' has only one turn", "--reference B=FILE"],
        ),
        ("turn,path\n1,t0.wav\n", ["m.csv: no column 'speaker' (columns: turn, path)"]),
    ],
)
def test_bad_manifests_end_in_one_line(bad, manifest, fragments):
    (bad / "m.csv").write_text(manifest)
    refused(judges_check("--manifest", "m.csv", cwd=bad), *fragments)


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        (
            "SPEAKER call 1 3.000 1.500 <NA> <NA> A <NA> <NA>",
            ["call.rttm line 2: the segment ends at 4.50 s, after the end of call.wav (4.00 s)"],
        ),
        (
            "SPEAKER meeting 1 1.000 1.500 <NA> <NA> A <NA> <NA>",  # another recording's: left out
            ["call.rttm: speaker 'A' has only one turn with audio ('1')"],
        ),
    ],
)
def test_bad_rttm_ends_in_one_line(bad, line, fragments):
    (bad / "call.rttm").write_text("SPEAKER call 1 0.000 1.000 <NA> <NA> A <NA> <NA>\n" + line + "\n")
    refused(judges_check("--rttm", "call.rttm", "--recording", "call.wav", cwd=bad), *fragments)


def test_missing_inputs_and_options(bad):
    refused(judges_check("--manifest", "nothing.csv", cwd=bad), "nothing.csv: no such manifest")
    refused(judges_check(cwd=bad), "give --manifest FILE, or --rttm FILE with --recording FILE")
    refused(judges_check("--rttm", "call.rttm", cwd=bad), "--rttm needs --recording")


def test_a_missing_extra_is_named_in_one_line(exported):
    """Without torch (the core install), the command names the extra to install."""
    work, _ = exported
    code = "import sys; sys.modules['torch'] = None; from judges.__main__ import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "check", "--manifest", "dialogue/manifest.csv"],
        cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr
        == "python -m speakersleuth.judges check: needs torch, which the 'check' extra installs: pip install 'speakersleuth[check]'\n"
    )


def test_help_says_where_the_numbers_come_from(tmp_path):
    done = judges_check("--help", cwd=tmp_path)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "calibrated on the SpeakerSleuth benchmark's TTS voices" in text and "it is a starting point" in text
    default = load_calibration().default
    real = load_calibration().entry(default["encoder"], default["method"])["labelled"]["real"]
    assert (
        f"Default judge: the {default['method']} method under {default['encoder']} at τ = {default['threshold']:g} "
        f"(on real speech we did not make, {real['planted_found']:g} % of planted turns found and "
        f"{real['false_flags']:g} % of clean turns flagged;"
    ) in text


# ------------------------------------------------------------------ people's files: broken, padded, short


@pytest.fixture(scope="module")
def real_talk(tmp_path_factory):
    """Four turns each of two real speakers (``tests/support/other_speech.py``) as wav files with a
    manifest, alternating; returns the folder and the turns (speaker, 16 kHz samples)."""
    from tests.support.other_speech import real_voice

    work = tmp_path_factory.mktemp("real_talk")
    turns = []
    for a, b in zip(real_voice("allison").turns[:4], real_voice("carlo").turns[:4]):
        turns += [("allison", a), ("carlo", b)]
    write_talk(work, "manifest.csv", turns)
    return work, turns


def write_talk(folder: Path, manifest: str, turns: list, suffix: str = ".wav") -> Path:
    """``turns`` as files ``t<i><suffix>`` (16 kHz) and their manifest."""
    lines = ["turn,speaker,path"]
    for i, (speaker, wave) in enumerate(turns, 1):
        write_audio(folder / f"t{i}{suffix}", wave, 16000, 1)
        lines.append(f"{i},{speaker},t{i}{suffix}")
    (folder / manifest).write_text("\n".join(lines) + "\n")
    return folder / manifest


def test_a_truncated_mp3_is_refused_not_judged(real_talk, tmp_path):
    _, turns = real_talk
    write_talk(tmp_path, "m.csv", turns, suffix=".mp3")
    whole = (tmp_path / "t3.mp3").read_bytes()
    (tmp_path / "t3.mp3").write_bytes(whole[: len(whole) // 8])  # the header still gives the whole length
    refused(
        judges_check("--manifest", "m.csv", "--no-progress", cwd=tmp_path),
        "t3.mp3: ",
        "decode of the",
        "its header gives: the file is damaged or cut short",
    )


def test_padding_moves_no_score_and_a_subsecond_turn_is_too_short_to_judge(real_talk, tmp_path):
    work, turns = real_talk
    plain = judges_check("--manifest", "manifest.csv", "--json", "--no-progress", cwd=work)
    assert plain.returncode == 0, plain.stderr
    silence = np.zeros(2 * 16000, np.float32)
    changed = list(turns)
    changed[2] = (turns[2][0], np.concatenate([silence, turns[2][1], silence]))  # 2 s of silence each side
    changed[4] = (turns[4][0], turns[4][1][: int(0.7 * 16000)])  # 0.7 s: over the 0.5 s floor, under 0.9 s of speech
    write_talk(tmp_path, "m.csv", changed)
    done = judges_check("--manifest", "m.csv", "--json", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = {t["turn"]: t for s in json.loads(plain.stdout)["speakers"] for t in s["turns"]}
    after = {t["turn"]: t for s in json.loads(done.stdout)["speakers"] for t in s["turns"]}
    assert after["3"]["seconds"] == pytest.approx(before["3"]["seconds"] + 4, abs=0.01)
    assert after["3"]["speech_seconds"] == pytest.approx(before["3"]["speech_seconds"], abs=0.1)
    assert not after["3"]["flagged"] and not before["3"]["flagged"]
    short = after["5"]
    assert (short["score"], short["flagged"], short["status"]) == (None, False, "too short to judge")
    assert short["speech_seconds"] < 0.9
    assert not any(t["flagged"] for t in after.values())


def test_outputs_are_made_or_refused_before_any_audio_is_read(real_talk, tmp_path):
    work, _ = real_talk
    out = tmp_path / "new" / "deeper"
    done = judges_check(
        "--manifest", "manifest.csv", "--plot-out", str(out / "check.png"), "--report-out", str(out / "r.json"),
        "--no-progress", cwd=work,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "speaker  turn" in done.stdout and (out / "check.png").is_file() and (out / "r.json").is_file()
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "missing.csv").write_text("turn,speaker,path\n1,A,nowhere.wav\n2,A,nowhere2.wav\n")
    refused(
        judges_check("--manifest", "missing.csv", "--plot-out", "a_file/check.png", cwd=tmp_path),
        "--plot-out a_file/check.png: cannot make its folder a_file",
    )  # the output is refused first: the missing audio is never looked at


def test_an_rttm_of_several_recordings_and_its_overlaps(real_talk, tmp_path):
    _, turns = real_talk
    recording, rttm = write_recording(turns, tmp_path, "call")
    lines = rttm.read_text().splitlines()
    start, duration = float(lines[1].split()[3]), float(lines[1].split()[4])
    overlap = f"SPEAKER call 1 {start + duration - 0.5:.3f} 1.200 <NA> <NA> guest <NA> <NA>"
    other = "SPEAKER another_call 1 1.000 99.000 <NA> <NA> someone <NA> <NA>"  # past this recording's end
    (tmp_path / "both.rttm").write_text("\n".join([*lines, overlap, other]) + "\n")
    recording.rename(tmp_path / "audio.flac")
    done = judges_check(
        "--rttm", "both.rttm", "--recording", "audio.flac", "--recording-id", "call", "--json", "--no-progress",
        "--reference", f"guest={tmp_path / 'audio.flac'}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {s["speaker"] for s in report["speakers"]} == {"allison", "carlo", "guest"}
    overlaps = [n for n in report["notes"] if "overlap for" in n]
    assert any("(carlo) and '3' (guest) overlap for 0.50 s" in n for n in overlaps), overlaps
    assert any("(guest) and '4' (allison) overlap for 0.30 s" in n for n in overlaps), overlaps
    refused(
        judges_check("--rttm", "both.rttm", "--recording", "audio.flac", cwd=tmp_path),
        "both.rttm: no SPEAKER lines of file id 'audio' (file ids in it: 'call', 'another_call')",
    )


def test_an_m4a_on_the_core_install_names_the_extra(real_talk, tmp_path):
    _, turns = real_talk
    write_talk(tmp_path, "m.csv", turns[:2])
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", tmp_path / "t1.wav", tmp_path / "t1.m4a"], check=True)
    (tmp_path / "m.csv").write_text("turn,speaker,path\n1,A,t1.m4a\n2,A,t2.wav\n")
    code = "import sys; sys.modules['torchcodec'] = None; from judges.__main__ import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "check", "--manifest", "m.csv"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    refused(done, "t1.m4a: cannot read audio", "the 'check' extra installs: pip install 'speakersleuth[check]'")
