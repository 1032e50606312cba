"""A small build of the speech-like corpus (``tests.support.pipeline_fixtures``) with the offline
WORLD/Praat backends, for the builder's and the Review tab's tests."""

from __future__ import annotations

from pathlib import Path

from speakersleuth.builder_scripts import pipeline
from speakersleuth.builder_scripts.pipeline import BuildOptions
from tests.support.pipeline_fixtures import SpeechLikeCorpus


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
