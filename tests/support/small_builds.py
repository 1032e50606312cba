"""A small build of the speech-like corpus (``tests.support.pipeline_fixtures``) with the offline
WORLD/Praat backends, for the builder's and the Review tab's tests; the default one made once per
test session (``shared_speechlike_build``), and the fingerprint that compares two builds."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts import pipeline
from speakersleuth.builder_scripts.pipeline import BuildOptions
from tests.support.pipeline_fixtures import SpeechLikeCorpus
from tests.support.shared_folders import shared_folder


def build_options(tmp: Path, **overrides) -> BuildOptions:
    """Two main dialogues and one of ten turns under ``tmp``, WORLD and Praat, no progress bars."""
    base = dict(
        out=tmp / "speakersleuth",
        cache=tmp / "cache",
        sources=("speechlike",),
        dialogues=2,
        dialogues_10turn=1,
        margin=0.5,
        vc="world",
        vc_4vc=("world", "praat"),
        validation_dialogues=0,
        progress=False,
    )
    return BuildOptions(**(base | overrides))


def build_speechlike(opts: BuildOptions, corpus_root: Path) -> dict:
    """The build's report, from the six-dialogue speech-like corpus recorded at ``corpus_root``."""
    return pipeline.build(opts, sources={"speechlike": SpeechLikeCorpus(corpus_root, dialogues=6)})


def record_speechlike(root: Path) -> Path:
    """Write the six-dialogue speech-like corpus to ``root``."""
    SpeechLikeCorpus(root, dialogues=6).write()
    return root


def shared_speechlike_build(tmp_path_factory, name: str) -> tuple[Path, dict]:
    """A module's own copy of the default build (``build_options``) of the recorded speech-like
    corpus, made once per test session: ``(folder, report)``, the folder holding ``corpus/``,
    ``speakersleuth/`` and ``cache/``."""

    def make(folder: Path) -> None:
        report = build_speechlike(build_options(folder), record_speechlike(folder / "corpus"))
        (folder / "report.json").write_text(json.dumps(report, default=str))

    copy = Path(
        shutil.copytree(shared_folder(tmp_path_factory, "speechlike-build", make), tmp_path_factory.mktemp(name) / "b")
    )
    return copy, json.loads((copy / "report.json").read_text())


def fingerprint(root: Path) -> dict:
    """Ids, labels and audio hashes of every config, independent of row order."""
    out = {}
    for name in ssd.CONFIGS:
        spec = ssd.CONFIGS[name]
        rows = ssd.read_rows(root, name).to_pylist()
        for row in rows:
            audio = b"".join(
                clip["bytes"]
                for column in spec.audio_columns
                for clip in (row[column] if isinstance(row[column], list) else [row[column]])
            )
            gold = row.get("label") or row.get("answer")
            out[(name, row["id"])] = (
                gold,
                row.get("inconsistent_turns"),
                row.get("gold_ranking"),
                hashlib.sha256(audio).hexdigest(),
            )
    return out
