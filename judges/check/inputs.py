"""Reading a dialogue as people have it: a manifest of turn files, or one recording and its RTTM.

Manifest (``.csv``, ``.tsv`` or ``.jsonl``; paths relative to the manifest's folder):

- ``turn``, ``speaker``, ``path``: one row per turn, in dialogue order (required);
- ``text``: the turn's words (optional, shown in reports);
- ``reference``: a clip of the row's speaker to compare with (optional; any of the speaker's rows);
- ``candidate_for``: on a candidate's row, the turn it may replace; its ``turn`` is the candidate's
  label, its ``path`` its file (regenerations to rank);
- ``label``: ``consistent`` or ``inconsistent`` (or 0 / 1) for ``--calibrate``;
- ``dialogue``: several dialogues in one manifest (each judged on its own).

RTTM (what diarization writes, pyannote among others): one line per segment,
``SPEAKER <file id> <channel> <start> <duration> <NA> <NA> <speaker> <NA> <NA>``; each segment of
the recording is a turn, in order of start time, named by its 1-based index. The segments read are
those of one file id: the recording's file name without its extension, or the one given
(``--recording-id``) when the RTTM describes several recordings; no segment may run past the
recording's end. Segments of different speakers that overlap are named in the report's notes
(both voices are heard there).

Every problem is one ``CheckInputError`` line naming the file (and line).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from speakersleuth.judges.check.audio import audio_info
from speakersleuth.judges.check.dialogue import Clip, Dialogue, Turn
from speakersleuth.judges.check.errors import CheckInputError

REQUIRED = ("turn", "speaker", "path")
#: A segment may end this much after the recording's end (rounding in RTTM writers).
RTTM_TOLERANCE_S = 0.01


def read_manifest(path: str | os.PathLike) -> list[Dialogue]:
    """The dialogues of a manifest (one, unless it has a ``dialogue`` column).

    Arguments
    ---------
    path : str or os.PathLike
        A ``.csv``, ``.tsv`` or ``.jsonl`` manifest (columns in the module docstring).

    Returns
    -------
    list of Dialogue
        In order of first appearance; a turn's ``label`` holds the row's label text, if any.

    Raises ``CheckInputError`` for a missing manifest, a missing column or cell, a candidate for
    a turn that is not there, or two reference clips for one speaker.

    Example
    -------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "manifest.csv").write_text(
    ...     "turn,speaker,path,candidate_for\\n1,host,a.wav,\\n2,guest,b.wav,\\n3,host,c.wav,\\n3b,host,takes/c2.wav,3\\n"
    ... )
    >>> (dialogue,) = read_manifest(folder / "manifest.csv")
    >>> [(t.id, t.speaker, t.audio.path.name, list(t.candidates)) for t in dialogue.turns]
    [('1', 'host', 'a.wav', []), ('2', 'guest', 'b.wav', []), ('3', 'host', 'c.wav', ['3b'])]
    >>> (folder / "bad.csv").write_text("turn,path\\n1,a.wav\\n") and read_manifest(folder / "bad.csv")
    Traceback (most recent call last):
    ...
    speakersleuth.judges.check.errors.CheckInputError: .../bad.csv: no column 'speaker' (columns: turn, path); a manifest needs turn, speaker, path
    """
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise CheckInputError(f"{path}: no rows")
    missing = [c for c in REQUIRED if c not in rows[0][1]]
    if missing:
        raise CheckInputError(
            f"{path}: no column {', '.join(repr(c) for c in missing)} (columns: {', '.join(rows[0][1]) or 'none'}); "
            f"a manifest needs {', '.join(REQUIRED)}"
        )
    groups: dict[str, list[tuple[int, dict]]] = {}
    for line, row in rows:
        groups.setdefault(_cell(row, "dialogue") or path.stem, []).append((line, row))
    return [_dialogue(path, name, group) for name, group in groups.items()]


def _rows(path: Path) -> list[tuple[int, dict]]:
    """``(line number, row)`` of a manifest; every value a string (empty when absent)."""
    if not path.is_file():
        raise CheckInputError(f"{path}: no such manifest")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise CheckInputError(f"{path} line {number}: not JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise CheckInputError(f"{path} line {number}: expected a JSON object per line")
            rows.append((number, {k: "" if v is None else str(v) for k, v in row.items()}))
        keys = list(dict.fromkeys(k for _, r in rows for k in r))
        return [(n, {k: r.get(k, "") for k in keys}) for n, r in rows]
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    table = list(csv.reader(text.splitlines(), delimiter=delimiter))
    if not table:
        return []
    header = [h.strip() for h in table[0]]
    return [
        (n, {h: (r[i].strip() if i < len(r) else "") for i, h in enumerate(header)})
        for n, r in enumerate(table[1:], 2)
        if any(c.strip() for c in r)
    ]


def _cell(row: dict, column: str) -> str:
    return str(row.get(column, "") or "").strip()


def _dialogue(path: Path, name: str, rows: list[tuple[int, dict]]) -> Dialogue:
    """One dialogue's turns, candidates and references from its rows."""
    folder, turns, references = path.parent, {}, {}
    candidates = []
    for line, row in rows:
        where = f"{path} line {line}"
        values = {c: _cell(row, c) for c in REQUIRED}
        empty = [c for c, v in values.items() if not v]
        if empty:
            raise CheckInputError(f"{where}: empty {', '.join(repr(c) for c in empty)}")
        clip = Clip.from_file(folder / values["path"])
        if _cell(row, "candidate_for"):
            candidates.append((where, row, values, clip))
            continue
        if values["turn"] in turns:
            raise CheckInputError(f"{where}: turn {values['turn']!r} appears twice")
        turns[values["turn"]] = Turn(
            values["turn"], values["speaker"], clip, _cell(row, "text"), label=_cell(row, "label") or None
        )
        if _cell(row, "reference"):
            _set_reference(references, values["speaker"], folder / _cell(row, "reference"), where)
    for where, row, values, clip in candidates:
        target = turns.get(_cell(row, "candidate_for"))
        if target is None:
            raise CheckInputError(
                f"{where}: candidate_for {_cell(row, 'candidate_for')!r} names no turn of the manifest"
            )
        if values["speaker"] != target.speaker:
            raise CheckInputError(
                f"{where}: candidate {values['turn']!r} is for turn {target.id!r} of speaker {target.speaker!r}, "
                f"not of {values['speaker']!r}"
            )
        if values["turn"] in target.candidates:
            raise CheckInputError(f"{where}: turn {target.id!r} has two candidates named {values['turn']!r}")
        target.candidates[values["turn"]] = clip
    return Dialogue(list(turns.values()), {s: Clip.from_file(p) for s, p in references.items()}, name, str(path))


def _set_reference(references: dict[str, Path], speaker: str, clip: Path, where: str) -> None:
    known = references.setdefault(speaker, clip)
    if known != clip:
        raise CheckInputError(f"{where}: speaker {speaker!r} has two reference clips ({known} and {clip})")


def read_rttm(rttm: str | os.PathLike, recording: str | os.PathLike, recording_id: str | None = None) -> Dialogue:
    """The turns of one recording from its RTTM: each ``SPEAKER`` segment a turn, by start time.

    Arguments
    ---------
    rttm : str or os.PathLike
        The RTTM file (lines of other types, comments and blank lines are skipped).
    recording : str or os.PathLike
        The recording it describes, any format ``judges.check.audio`` reads.
    recording_id : str, optional
        The file id of the recording's segments (default: the recording's file name without its
        extension); segments of other file ids are left out.

    Returns
    -------
    Dialogue
        Turns ``1``, ``2``, ... (in order of start time), each a span of the recording; their
        text says when it is.

    Raises ``CheckInputError`` for a malformed line, a segment past the recording's end or of no
    length, or an RTTM without segments of the file id (naming the ids it has).

    Example
    -------
    >>> import tempfile, numpy as np, soundfile as sf
    >>> folder = Path(tempfile.mkdtemp())
    >>> sf.write(folder / "call.wav", np.zeros(16000 * 6, np.float32), 16000)
    >>> _ = (folder / "call.rttm").write_text(
    ...     "SPEAKER call 1 3.10 2.50 <NA> <NA> spk_1 <NA> <NA>\\nSPEAKER call 1 0.40 2.00 <NA> <NA> spk_0 <NA> <NA>\\n"
    ... )
    >>> [(t.id, t.speaker, t.text) for t in read_rttm(folder / "call.rttm", folder / "call.wav").turns]
    [('1', 'spk_0', '0.40-2.40 s'), ('2', 'spk_1', '3.10-5.60 s')]
    """
    rttm, recording = Path(rttm), Path(recording)
    if not rttm.is_file():
        raise CheckInputError(f"{rttm}: no such RTTM file")
    length = audio_info(recording).seconds
    wanted = recording_id or recording.stem
    segments, ids = [], []
    for number, line in enumerate(rttm.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith(";") or fields[0] != "SPEAKER":
            continue
        ids.append(fields[1] if len(fields) > 1 else "")
        if ids[-1] == wanted or len(fields) < 8:
            segments.append(_segment(fields, f"{rttm} line {number}", recording, length))
    if not segments:
        found = ", ".join(repr(i) for i in dict.fromkeys(ids)) or "none"
        raise CheckInputError(
            f"{rttm}: no SPEAKER lines of file id {wanted!r} (file ids in it: {found}); "
            "name the recording's id with --recording-id ID"
        )
    segments.sort(key=lambda s: (s[0], s[1]))
    turns = [
        Turn(str(i), speaker, Clip.from_file(recording, start, end), f"{start:.2f}-{end:.2f} s")
        for i, (start, end, speaker) in enumerate(segments, 1)
    ]
    return Dialogue(turns, {}, recording.stem, str(rttm), overlaps(turns, segments))


def overlaps(turns: list[Turn], segments: list[tuple[float, float, str]]) -> list[str]:
    """A note for each pair of turns of different speakers whose segments overlap.

    >>> turns = [Turn("1", "A", None), Turn("2", "B", None), Turn("3", "A", None)]
    >>> overlaps(turns, [(0.0, 2.0, "A"), (1.5, 3.0, "B"), (3.0, 4.0, "A")])
    ["turns '1' (A) and '2' (B) overlap for 0.50 s (1.50-2.00 s): both voices are heard there"]
    """
    notes = []
    for i, (start, end, speaker) in enumerate(segments):
        for j in range(i + 1, len(segments)):
            other_start, other_end, other = segments[j]
            if other_start >= end:
                break
            if other != speaker:
                first, last = other_start, min(end, other_end)
                notes.append(
                    f"turns {turns[i].id!r} ({speaker}) and {turns[j].id!r} ({other}) overlap for "
                    f"{last - first:.2f} s ({first:.2f}-{last:.2f} s): both voices are heard there"
                )
    return notes


def _segment(fields: list[str], where: str, recording: Path, length: float) -> tuple[float, float, str]:
    """``(start, end, speaker)`` of one SPEAKER line, checked against its recording."""
    if len(fields) < 8:
        raise CheckInputError(
            f"{where}: {len(fields)} fields; an RTTM line is SPEAKER <file> <chan> <start> <dur> <NA> <NA> <speaker> <NA> <NA>"
        )
    try:
        start, duration = float(fields[3]), float(fields[4])
    except ValueError:
        raise CheckInputError(f"{where}: start {fields[3]!r} and duration {fields[4]!r} must be numbers") from None
    if start < 0 or duration <= 0:
        raise CheckInputError(f"{where}: start {start:g} s, duration {duration:g} s; both must be positive")
    if start + duration > length + RTTM_TOLERANCE_S:
        raise CheckInputError(
            f"{where}: the segment ends at {start + duration:.2f} s, after the end of {recording} ({length:.2f} s)"
        )
    return start, min(start + duration, length), fields[7]


def add_references(dialogues: Sequence[Dialogue], references: Mapping[str, str | os.PathLike]) -> None:
    """Give speakers reference clips (``--reference SPEAKER=FILE``), in every dialogue where they
    speak; a speaker who speaks in none is refused."""
    for speaker, clip in references.items():
        hits = [d for d in dialogues if speaker in d.speakers]
        if not hits:
            known = ", ".join(dict.fromkeys(s for d in dialogues for s in d.speakers))
            raise CheckInputError(f"--reference {speaker}={clip}: no speaker {speaker!r} (speakers: {known})")
        for dialogue in hits:
            dialogue.references[speaker] = Clip.from_file(clip)


def add_candidates(dialogues: Sequence[Dialogue], candidates: Mapping[str, Sequence[str | os.PathLike]]) -> None:
    """Give turns candidate clips (``--candidates TURN=a.wav,b.wav``), labelled by file name; the
    turn must be in exactly one dialogue."""
    for turn_id, files in candidates.items():
        hits = [t for d in dialogues for t in d.turns if t.id == turn_id]
        if len(hits) != 1:
            problem = "no turn" if not hits else f"{len(hits)} turns (one per dialogue)"
            raise CheckInputError(f"--candidates {turn_id}=...: {problem} named {turn_id!r}")
        for file in files:
            label = Path(file).name
            if label in hits[0].candidates or label == turn_id:
                raise CheckInputError(f"--candidates {turn_id}=...: {label!r} is given twice")
            hits[0].candidates[label] = Clip.from_file(file)
