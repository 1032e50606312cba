"""The "Check your audio" tab's handler (``space.check_tab``): real turn files judged as
``judges.check`` judges them, each hostile upload refused in one line naming it, the limits
refused before anything is decoded, and nothing written but Gradio's own uploads (deleted)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import speakersleuth.space.check_tab as tab
from tests.support.check_audio import as_uploads, write_check_dialogue

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory, one_torch_thread):
    root = tmp_path_factory.mktemp("check-tab")
    return write_check_dialogue(root / "dialogue", root / "tts")


@pytest.fixture(scope="module")
def expected(dialogue):
    """What ``judges.check.check`` itself returns for the turn files and for the recording."""
    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.judges.check import check, resolve_settings

    settings = resolve_settings()

    def run(**inputs):
        cache = EmbeddingCache(tab.shared_encoder(settings.encoder))
        return check(cache=cache, **inputs)

    return run(manifest=dialogue.manifest), run(rttm=dialogue.rttm, recording=dialogue.recording)


def table_of(dialogue) -> list[list[str]]:
    return [[p.name, s] for p, s in zip(dialogue.turns, dialogue.speakers)]


def flagged_rows(report) -> list[list]:
    return tab.flagged_frame(report).values.tolist()


def test_turn_files_flag_the_turns_judges_check_flags(dialogue, expected, tmp_path):
    report = expected[0]
    assert dialogue.intruder in [t.turn for t in report.flagged]  # the other voice's turn is flagged
    paths = as_uploads(dialogue.turns, tmp_path)
    status, picture, frame, *cleared = tab.check_handler(tab.TURNS, paths, table_of(dialogue), None, None, None)
    assert frame.values.tolist() == flagged_rows(report)
    assert frame["turn"].tolist() == [t.turn for t in report.flagged]
    assert frame["score"].tolist() == [round(t.score, 3) for t in report.flagged]
    assert f"**{len(report.flagged)} of 9 turns flagged.**" in status
    assert f"τ = {report.threshold:g}: " in status and "a starting point" in status
    assert picture.size[0] > 300 and picture.size[1] > 200
    assert cleared == [None] * 4
    assert not any(Path(p).exists() for p in paths)  # the uploads are deleted after the check


def test_recording_and_rttm_flag_the_turns_judges_check_flags(dialogue, expected, tmp_path):
    report = expected[1]
    assert "5" in [t.turn for t in report.flagged]  # the intruder is the fifth segment
    recording, rttm = as_uploads([dialogue.recording, dialogue.rttm], tmp_path)
    outcome = tab.run_check(tab.RTTM, None, None, [recording], [rttm], None)
    assert outcome.line == ""
    assert flagged_rows(outcome.report) == flagged_rows(report)
    assert flagged_rows(report)[0][1].startswith("5 (")  # the span is shown with the turn


def test_the_table_orders_the_turns_and_names_the_speakers(dialogue, expected, tmp_path):
    """Turn 9 (host) marked as the guest's: the table, not the file name, says whose turn it is."""
    table = table_of(dialogue)
    table[-1][1] = "guest"
    outcome = tab.run_check(tab.TURNS, as_uploads(dialogue.turns, tmp_path), table, None, None, None)
    assert [t.turn for t in outcome.report.speaker("guest").turns][-1] == dialogue.turns[-1].name
    assert len(outcome.report.speaker("host").turns) == 4


def test_the_speakers_table_is_filled_from_the_file_names(tmp_path):
    names = ["10_guest.wav", "2_host.wav", "host-1.flac", "7.wav"]
    paths = [str(tmp_path / n) for n in names]
    assert tab.speaker_table(paths, None) == [
        ["2_host.wav", "host"],
        ["7.wav", ""],
        ["10_guest.wav", "guest"],
        ["host-1.flac", "host"],
    ]
    kept = tab.speaker_table(paths, [["7.wav", "narrator"], ["gone.wav", "x"]])
    assert ["7.wav", "narrator"] in kept and len(kept) == 4


def wav(path: Path, seconds: float, f0: float = 150.0) -> Path:
    t = np.arange(int(seconds * 16_000)) / 16_000
    sf.write(path, (0.3 * np.sin(2 * np.pi * f0 * t)).astype(np.float32), 16_000, subtype="PCM_16")
    return path


def flac_claiming_hours(path: Path) -> Path:
    """A 1 s FLAC whose STREAMINFO says it holds 2^36 - 1 samples (about 50 days at 16 kHz)."""
    wav(path.with_suffix(".tmp.wav"), 1.0)
    data, rate = sf.read(path.with_suffix(".tmp.wav"))
    sf.write(path, data, rate, format="FLAC")
    raw = bytearray(path.read_bytes())
    raw[8 + 13] |= 0x0F
    raw[8 + 14 : 8 + 18] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(raw))
    return path


def hostile(kind: str, folder: Path, dialogue) -> tuple[str, list[Path], str]:
    """``(mode, files, the file the line must name)``: a good dialogue with one bad file."""
    good = list(dialogue.turns[:4])
    if kind == "not audio":
        bad = folder / "03_host.wav"
        bad.write_text("this is a text file, not a recording\n" * 20)
    elif kind == "zero-length":
        bad = folder / "03_host.wav"
        bad.touch()
    elif kind == "truncated":
        bad = folder / "03_host.wav"
        bad.write_bytes(dialogue.turns[2].read_bytes()[: 44 + 6400])  # the header and 0.2 s of samples
    elif kind == "short turn":
        bad = wav(folder / "03_host.wav", 0.3)
    elif kind == "huge header":
        bad = flac_claiming_hours(folder / "03_host.flac")
    else:
        raise ValueError(kind)
    return tab.TURNS, [good[0], good[1], bad, good[3]], bad.name


@pytest.mark.parametrize("kind", ["not audio", "zero-length", "truncated", "short turn", "huge header"])
def test_a_hostile_turn_file_gets_one_line_naming_it(kind, dialogue, tmp_path, monkeypatch):
    monkeypatch.setattr(tab, "shared_encoder", lambda spec: pytest.fail("the encoder ran on a refused dialogue"))
    mode, files, name = hostile(kind, tmp_path, dialogue)
    paths = as_uploads(files, tmp_path / "uploads")
    table = [[Path(p).name, s] for p, s in zip(paths, ["host", "guest", "host", "guest"])]
    outcome = tab.run_check(mode, paths, table, None, None, None)
    assert outcome.report is None
    assert outcome.line.startswith(f"{name}: ") and "\n" not in outcome.line, outcome.line
    assert str(tmp_path) not in outcome.line and "Traceback" not in outcome.line
    status = tab.check_handler(mode, as_uploads(files, tmp_path / "again"), table, None, None, None)[0]
    assert status.startswith("**Not checked.**") and status.count("\n") == 0


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda line: line.replace("SPEAKER session", "SPEAKER other"), "no SPEAKER lines of file id 'session'"),
        (lambda line: line.replace(" 1 0.000 ", " 1 90.000 "), "line 1: the segment ends at"),
        (lambda line: "SPEAKER session 1 oops", "line 1: 4 fields"),
    ],
    ids=["file id", "past the end", "malformed"],
)
def test_an_rttm_that_does_not_match_gets_one_line_naming_it(change, says, dialogue, tmp_path, monkeypatch):
    monkeypatch.setattr(tab, "shared_encoder", lambda spec: pytest.fail("the encoder ran on a refused dialogue"))
    lines = dialogue.rttm.read_text().splitlines()
    bad = tmp_path / dialogue.rttm.name
    changed = [change(lines[0]), *lines[1:]] if "file id" not in says else [change(x) for x in lines]  # every line
    bad.write_text("\n".join(changed) + "\n")
    recording, rttm = as_uploads([dialogue.recording, bad], tmp_path / "uploads")
    line = tab.run_check(tab.RTTM, None, None, [recording], [rttm], None).line
    assert line.startswith("session.rttm") and says in line and "\n" not in line, line


def test_a_reference_named_for_no_speaker_is_refused(dialogue, tmp_path):
    ref = wav(tmp_path / "narrator.wav", 2.0)
    paths = as_uploads(dialogue.turns, tmp_path / "turns")
    line = tab.run_check(tab.TURNS, paths, table_of(dialogue), None, None, as_uploads([ref], tmp_path / "r")).line
    assert line.startswith("narrator.wav: ") and "'narrator'" in line


def no_decoding(monkeypatch, *, headers_allowed: bool) -> None:
    """Fail the test if any audio is decoded (or, unless ``headers_allowed``, any header read)."""
    import speakersleuth.judges.check.audio as audio
    import speakersleuth.judges.check.dialogue as dialogue
    import speakersleuth.judges.check.inputs as inputs

    monkeypatch.setattr(dialogue, "decode", lambda *a, **k: pytest.fail("decoded before the limits"))
    monkeypatch.setattr(dialogue.Clip, "load", lambda self: pytest.fail("decoded before the limits"))
    if not headers_allowed:  # each module that reads headers, under the name it calls
        for module in (audio, dialogue, inputs):
            monkeypatch.setattr(
                module, "audio_info", lambda *a, **k: pytest.fail("read a header before the size limits")
            )


def test_too_many_files_are_refused_before_anything_is_read(tmp_path, monkeypatch):
    no_decoding(monkeypatch, headers_allowed=False)
    files = [wav(tmp_path / f"{i:02d}_host.wav", 0.6) for i in range(tab.MAX_FILES + 1)]
    line = tab.run_check(tab.TURNS, as_uploads(files, tmp_path / "u"), None, None, None, None).line
    assert line == f"{tab.MAX_FILES + 1} files: a check takes at most {tab.MAX_FILES}."


def test_too_many_bytes_are_refused_before_anything_is_read(dialogue, tmp_path, monkeypatch):
    no_decoding(monkeypatch, headers_allowed=False)
    size = sum(p.stat().st_size for p in dialogue.turns)
    monkeypatch.setattr(tab, "MAX_UPLOAD_BYTES", size - 1)
    line = tab.run_check(tab.TURNS, as_uploads(dialogue.turns, tmp_path), table_of(dialogue), None, None, None).line
    assert line.startswith(f"{size / 1e6:.1f} MB in all: a check takes at most")


def test_too_long_audio_is_refused_from_the_headers_before_decoding(dialogue, tmp_path, monkeypatch):
    no_decoding(monkeypatch, headers_allowed=True)
    seconds = sum(sf.info(p).duration for p in dialogue.turns)
    monkeypatch.setattr(tab, "MAX_AUDIO_SECONDS", seconds - 1)
    line = tab.run_check(tab.TURNS, as_uploads(dialogue.turns, tmp_path), table_of(dialogue), None, None, None).line
    assert line == f"{seconds:.0f} s of audio in all: a check takes at most {seconds - 1:g} s."


def test_a_header_claiming_hours_is_refused_before_decoding(dialogue, tmp_path, monkeypatch):
    no_decoding(monkeypatch, headers_allowed=True)
    files = [*dialogue.turns[:3], flac_claiming_hours(tmp_path / "04_guest.flac")]
    line = tab.run_check(tab.TURNS, as_uploads(files, tmp_path / "u"), None, None, None, None).line
    assert line.startswith("04_guest.flac: its header says") and "at most 600 s" in line


def test_without_the_encoders_the_tab_says_which_extra_it_needs(dialogue, tmp_path, monkeypatch):
    import importlib.util

    import gradio as gr

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else find_spec(name, *a))
    line = tab.run_check(tab.TURNS, as_uploads(dialogue.turns, tmp_path), table_of(dialogue), None, None, None).line
    assert (
        line == "Check your audio: needs torch, which the 'check' extra installs: pip install 'speakersleuth[check]'"
    )
    with gr.Blocks() as blocks, gr.Tabs():
        tab.build_check_tab()
    shown = [c.value for c in blocks.blocks.values() if getattr(c, "elem_id", None) == "ss-check-unavailable"]
    assert shown == [f"**This Space cannot check audio.** {line}"]


def test_an_installed_copy_with_the_encoders_can_check(tmp_path):
    """Away from the clone (no top-level ``judges`` on the path, as in an installed copy), the tab
    finds the package's own judges and the encoders' torch."""
    code = "from speakersleuth.space.check_tab import unavailable; print(unavailable())"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "None", proc.stdout + proc.stderr


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_a_check_writes_nothing_to_the_data_dir_the_store_or_temp(dialogue, dataset, tmp_path, monkeypatch):
    """The Space's data folder (its store inside) and the temporary folder are as they were: the
    uploads are deleted, the picture drawn in memory, embeddings never on disk."""
    from speakersleuth.space.config import SpaceConfig
    from speakersleuth.space.store import open_store

    config = replace(SpaceConfig.from_env({}, dataset=str(dataset)), data_dir=tmp_path / "data")
    store = open_store(config)
    scratch, work = tmp_path / "tmp", tmp_path / "cwd"
    scratch.mkdir()
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(work)
    monkeypatch.setenv("SPEAKERSLEUTH_DATA_DIR", str(config.data_dir))

    def state():
        held = (len(store.results(include_withdrawn=True)), len(store.reviews()), store.stored_bytes())
        return held, tree(config.data_dir), tree(scratch), tree(work)

    before = state()
    paths = as_uploads(dialogue.turns, tmp_path / "uploads")
    frame = tab.check_handler(tab.TURNS, paths, table_of(dialogue), None, None, None)[2]
    assert len(frame) >= 1  # the check ran, to the picture
    assert state() == before
    assert list((tmp_path / "uploads").iterdir()) == []  # each upload and its folder gone
    assert os.listdir(scratch) == []


def test_the_space_imports_judges_only_inside_functions():
    """``space -> judges`` is lazy: no module of the Space imports ``judges`` when it is imported,
    so the torch-free Hub tree (which leaves ``judges`` out) starts."""
    import ast

    root = Path(tab.__file__).parent
    top_level = {
        f"{path.name}: {name}"
        for path in root.glob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
        if name.removeprefix("speakersleuth.").split(".")[0] == "judges"
    }
    assert not top_level
    inside = [n for n in ast.walk(ast.parse(Path(tab.__file__).read_text())) if isinstance(n, ast.ImportFrom)]
    assert {n.module for n in inside if n.module.startswith("speakersleuth.judges")} >= {
        "speakersleuth.judges.check",
        "speakersleuth.judges.cache",
    }


def test_any_other_failure_while_decoding_is_one_general_line(dialogue, tmp_path, monkeypatch, caplog):
    """An exception of a decoding library (not a ``CheckInputError``) shows no traceback, no path
    and no library message on the page; the server's log keeps it."""
    from speakersleuth.judges.check.dialogue import Clip

    def explode(self):
        raise RuntimeError(f"libsndfile: internal error in {self.path}")

    monkeypatch.setattr(Clip, "load", explode)
    paths = as_uploads(dialogue.turns, tmp_path)
    line = tab.run_check(tab.TURNS, paths, table_of(dialogue), None, None, None).line
    assert line == "The check failed on these files (the audio could not be processed); nothing was kept."
    assert "libsndfile: internal error" in caplog.text
