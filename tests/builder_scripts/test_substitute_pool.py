"""The substitute pool of S2 and S3 is the whole build's: every source's speakers, plus an optional
extra pool source; a pool that cannot serve S2 and S3 is refused before any work. Builds run on
DailyTalk and AMI in their real on-disk formats, spoken by speech-like voices."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.pipeline import BuildOptions, substitute_bank
from speakersleuth.builder_scripts.pipeline import build as run_build
from speakersleuth.builder_scripts.scenarios import SubstitutePoolError, check_pool
from speakersleuth.builder_scripts.sources.ami import AMI
from speakersleuth.builder_scripts.sources.dailytalk import DailyTalk
from speakersleuth.builder_scripts.speaker_bank import SpeakerBank
from speakersleuth.builder_scripts.units import Clock
from tests.support.builder_cli import cli, one_source, outputs
from tests.support.pipeline_fixtures import (
    AMI_SPEAKERS,
    SpeechLikeCorpus,
    speechlike_voicing,
    write_ami_speechlike,
    write_dailytalk_speechlike,
)
from tests.support.substitute_choices import choices

pytestmark = pytest.mark.filterwarnings("ignore")


def options(tmp: Path, **overrides) -> BuildOptions:
    base = dict(
        out=tmp / "speakersleuth",
        cache=tmp / "cache",
        sources=("dailytalk", "ami"),
        variants=("main",),
        dialogues=2,
        validation_dialogues=0,
        progress=False,
    )
    return BuildOptions(**(base | overrides))


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpora")
    SpeechLikeCorpus(root / "speechlike", dialogues=6).write()
    write_ami_speechlike(root / "ami")
    return {
        "dailytalk": write_dailytalk_speechlike(root / "dailytalk"),
        "ami": root / "ami",
        "speechlike": root / "speechlike",
    }


def build(opts: BuildOptions, corpora: dict[str, Path]) -> dict:
    ami = AMI(corpus_dir=corpora["ami"], output_dir=corpora["ami"] / "extracted", meetings=AMI_SPEAKERS)
    return run_build(opts, sources={"dailytalk": DailyTalk(corpora["dailytalk"]), "ami": ami})


def substitute_names(root: Path, source: str) -> set[str]:
    """The S2 and S3 substitutes named in the rows of one source's dialogues."""
    return {
        row["substitute_speaker"]
        for scenarios in substitutes(root, source).values()
        for row in scenarios.values()
        if row["scenario"] != "S1"
    }


def substitutes(root: Path, source: str) -> dict[str, dict[str, dict]]:
    """dialogue id -> scenario -> detection row (main), for one source's dialogues."""
    out: dict[str, dict[str, dict]] = {}
    for row in ssd.read_rows(root, "detection").to_pylist():
        if row["source_dataset"] == source:
            out.setdefault(row["dialogue_id"], {})[row["scenario"]] = row
    return out


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, corpora):
    """DailyTalk (two voices) built with AMI, in an empty cache."""
    tmp = tmp_path_factory.mktemp("mixed")
    return tmp, build(options(tmp), corpora)


def test_dailytalk_alone_is_refused_before_any_work(corpora, tmp_path):
    with pytest.raises(SubstitutePoolError, match=re.escape("dailytalk: 2 speakers (1 female, 1 male)")) as refused:
        build(options(tmp_path, sources=("dailytalk",)), corpora)
    assert "at least 3 speakers of both genders" in str(refused.value) and "--substitute-pool embedded" in str(
        refused.value
    )
    assert not any((tmp_path / "cache" / stage).exists() for stage in ("speaker_bank", "units")), (
        "nothing was embedded or converted"
    )


def dailytalk_alone(corpora: dict[str, Path], tmp: Path, *options: str) -> list[str]:
    """The builder's arguments for two main dialogues of DailyTalk alone, written under ``tmp``."""
    return [
        "build",
        *one_source("dailytalk", corpora["dailytalk"]),
        *outputs(tmp),
        "--variant",
        "main",
        "--dialogues",
        "2",
        *options,
    ]


def test_cli_refuses_dailytalk_alone_in_one_line(corpora, tmp_path, capsys):
    from speakersleuth.builder_scripts.__main__ import main

    args = dailytalk_alone(corpora, tmp_path, "--no-progress")
    with pytest.raises(SystemExit) as exited:
        main(args)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]  # after lhotse's progress while it reads the corpus
    assert last.startswith(
        "python -m speakersleuth.builder_scripts build: error: the substitute speaker pool is too small (dailytalk: 2 speakers"
    )
    assert "--substitute-pool embedded" in last


def test_cli_with_jobs_refuses_dailytalk_alone_once_with_exit_2(corpora, tmp_path):
    """With --jobs the shards meet the refusal; the command still ends on that one line, exit 2,
    and does not ask for a rerun (nothing would change)."""
    args = dailytalk_alone(corpora, tmp_path, "--jobs", "2")
    done = cli(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "rerun" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("the substitute speaker pool is too small") == 1, done.stderr[-2000:]
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("python -m speakersleuth.builder_scripts build: error: the substitute speaker pool is too small")
    )


def test_dailytalk_with_another_corpus_keeps_its_dialogues(mixed):
    tmp, report = mixed
    assert report["dialogues"] == {"main": 4}
    card = (tmp / "speakersleuth" / "README.md").read_text()
    assert "| main | test | dailytalk | 2 | 6 | 2 |" in card and "| main | test | ami | 2 | 6 | 2 |" in card
    dailytalk = substitutes(tmp / "speakersleuth", "dailytalk")
    assert len(dailytalk) == 2
    for scenarios in dailytalk.values():
        s2, s3 = scenarios["S2"], scenarios["S3"]
        assert (
            s2["substitute_speaker"] != s3["substitute_speaker"]
            and s3["substitute_similarity"] > s2["substitute_similarity"]
        )
        # the other DailyTalk voice is the dialogue's other speaker: the substitutes come from AMI
        assert s2["substitute_speaker"].startswith("ami/") and s3["substitute_speaker"].startswith("ami/")
    named = substitute_names(tmp / "speakersleuth", "ami")
    assert all("/" not in name or name.startswith("dailytalk/") for name in named), named


def test_speakers_of_two_corpora_with_the_same_ids_stay_apart(corpora, tmp_path):
    class Twin(SpeechLikeCorpus):
        name = "twin"

    opts = options(tmp_path)
    one = SpeechLikeCorpus(corpora["speechlike"], dialogues=6)
    alone, _ = substitute_bank(opts, [one], Clock())
    both, pool = substitute_bank(opts, [one, Twin(corpora["speechlike"], dialogues=6)], Clock())
    assert alone.names == [f"speechlike/{s}" for s in ("f1", "f2", "f3", "m1", "m2", "m3")]
    assert both.names == alone.names + [f"twin/{s}" for s in ("f1", "f2", "f3", "m1", "m2", "m3")] and set(
        pool
    ) == set(both.names)
    assert alone.key != both.key


def test_embedded_voices_as_the_pool_of_a_dailytalk_build(mixed, corpora, tmp_path, monkeypatch):
    """DailyTalk alone with ``--substitute-pool embedded``, in the cache of the DailyTalk + AMI build:
    the same dialogues, but their units (made with AMI's voices) are made again from the new pool."""
    speechlike_voicing(monkeypatch)
    shutil.copytree(mixed[0] / "cache", tmp_path / "cache")
    opts = options(
        tmp_path,
        sources=("dailytalk",),
        substitute_pool=("embedded",),
        source_args={"chitchat_tts": {"max_dialogues": 60}},
    )
    assert opts.substitute_pool == ("chitchat_tts",)
    report = build(opts, corpora)
    assert report["dialogues"] == {"main": 2} and report["seconds"].get("vc", 0) > 0
    assert (
        substitutes(tmp_path / "speakersleuth", "dailytalk").keys()
        == substitutes(mixed[0] / "speakersleuth", "dailytalk").keys()
    )
    for scenarios in substitutes(tmp_path / "speakersleuth", "dailytalk").values():
        assert scenarios["S2"]["substitute_speaker"].startswith("chitchat_tts/"), (
            "a unit made with the old pool was reused"
        )
        assert scenarios["S3"]["substitute_similarity"] > scenarios["S2"]["substitute_similarity"]
    assert "**chitchat_tts**" in (tmp_path / "speakersleuth" / "README.md").read_text(), (
        "the card credits the pool's voices"
    )


@pytest.mark.parametrize(
    ("genders", "refused"),
    [
        ({"a/f1": "female", "a/m1": "male"}, "a: 2 speakers (1 female, 1 male)"),
        (
            {"a/f1": "female", "a/f2": "female", "b/f3": "female"},
            "a: 2 speakers (2 female, 0 male); b: 1 speaker (1 female, 0 male)",
        ),
        ({}, "no speakers"),
        ({"a/f1": "female", "a/m1": "male", "b/m1": "male"}, None),
    ],
)
def test_pool_rule(genders, refused):
    if refused is None:
        check_pool(genders)
    else:
        with pytest.raises(SubstitutePoolError, match=re.escape(refused)):
            check_pool(genders)


def test_s2_is_not_s3_when_the_nearest_speaker_is_of_the_other_gender():
    bank = SpeakerBank.from_embeddings(
        {
            "x/t": ("female", [1.0, 0.0, 0.0]),
            "x/m1": ("male", [0.9, 0.1, 0.0]),
            "x/m2": ("male", [0.0, 1.0, 0.0]),
            "x/f2": ("female", [0.0, 0.0, 1.0]),
        }
    )
    for choice in choices(bank, "x/t", 20):
        assert (choice.s3.speaker, choice.s2.speaker) == ("x/m1", "x/m2")
    assert np.isclose(choice.s3.similarity, bank.cosine("x/t", "x/m1"), atol=1e-4)
