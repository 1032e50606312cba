"""Recorded-corpus sources parse small fixtures in each corpus's real on-disk format into dialogues."""

from __future__ import annotations

import shutil

import pytest
import soundfile as sf
from pytest import approx

from speakersleuth.builder_scripts.sources import SOURCES, CorpusLayoutError, dailytalk, get_source_class
from speakersleuth.builder_scripts.sources.ami import AMI, AMI_EVAL_MEETINGS
from speakersleuth.builder_scripts.sources.base import lhotse_bars
from speakersleuth.builder_scripts.sources.bazinga import Bazinga
from speakersleuth.builder_scripts.sources.behavior_sd import BehaviorSD
from speakersleuth.builder_scripts.sources.dailytalk import DailyTalk
from tests.support.corpus_fixtures import behavior_sd_record, write_ami, write_bazinga, write_dailytalk, write_table

#: License identifiers of the Hub's table (https://huggingface.co/docs/hub/repositories-licenses),
#: the ones a corpus of ours could carry.
HUB_LICENSES = {
    "apache-2.0",
    "mit",
    "cc0-1.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc-by-nc-nd-4.0",
    "odc-by",
    "odbl",
    "unknown",
    "other",
}


def summary(dialogue):
    """(speaker, gender, text, file name, start, end, channel) per turn."""
    return [
        (t.speaker, t.gender, t.text, t.audio.path.name, t.audio.start, t.audio.end, t.audio.channel)
        for t in dialogue.turns
    ]


@pytest.mark.parametrize("name", ["dailytalk", "ami", "behavior_sd", "bazinga", "chitchat_tts"])
def test_registry_and_card_fields(name):
    cls = get_source_class(name)
    assert SOURCES[name].split(":")[1] == cls.__name__ and cls.name == name
    assert all(
        getattr(cls, a) for a in ("license", "hub_license", "citation", "homepage")
    ) and cls.__module__.endswith(name)
    assert cls.hub_license in HUB_LICENSES, cls.hub_license


# --- DailyTalk ---------------------------------------------------------------------------------

DT_SR = 22050
DT_DIALOGUES = {
    10: [(1 - u % 2, f"Line {u}.", 0.2 + 0.02 * u) for u in range(11)],
    2: [(0, "Hi, how are you?", 0.5), (1, "Fine, thanks.", 0.4), (0, "Great!", 0.3)],
}


@pytest.fixture(scope="module")
def dailytalk_dir(tmp_path_factory):
    return write_dailytalk(tmp_path_factory.mktemp("dt") / "dailytalk", DT_DIALOGUES, sr=DT_SR)


def test_dailytalk_dialogues_in_numeric_order(dailytalk_dir):
    dialogues = list(DailyTalk(dailytalk_dir).dialogues())
    assert [d.dialogue_id for d in dialogues] == ["2", "10"]
    for d in dialogues:
        expected = [
            (
                f"dailytalk_spk{spk}",
                "female" if spk == 1 else "male",
                text,
                f"{u}_{spk}_d{d.dialogue_id}.wav",
                0.0,
                approx(round(sec * DT_SR) / DT_SR),
                None,
            )
            for u, (spk, text, sec) in enumerate(DT_DIALOGUES[int(d.dialogue_id)])
        ]
        assert summary(d) == expected and d.source == "dailytalk"
    assert dialogues[1].speakers == ["dailytalk_spk0", "dailytalk_spk1"]


def test_dailytalk_reuses_its_manifests(dailytalk_dir, tmp_path):
    corpus = shutil.copytree(dailytalk_dir, tmp_path / "dailytalk")
    prepared = DailyTalk(corpus, tmp_path / "manifests")
    prepared.prepare()
    assert sorted(p.name for p in (tmp_path / "manifests").iterdir()) == sorted(dailytalk._MANIFESTS)
    first = list(prepared.dialogues())
    (corpus / "metadata.json").unlink()  # only the manifests can answer now
    assert list(DailyTalk(corpus, tmp_path / "manifests").dialogues()) == first
    with pytest.raises(CorpusLayoutError, match="metadata.json"):
        DailyTalk(corpus)


def test_dailytalk_missing_or_corrupt_wav_is_named(dailytalk_dir, tmp_path):
    corpus = shutil.copytree(dailytalk_dir, tmp_path / "dailytalk")
    (corpus / "data/10/3_0_d10.wav").write_bytes(b"not audio")
    with pytest.raises(CorpusLayoutError, match="unreadable audio .*3_0_d10.wav"):
        DailyTalk(corpus)
    (corpus / "data/10/3_0_d10.wav").unlink()
    with pytest.raises(CorpusLayoutError, match="missing .*3_0_d10.wav"):
        DailyTalk(corpus)


# --- AMI ---------------------------------------------------------------------------------------


def _punc(at: float, mark: str) -> tuple:
    """A punctuation mark as AMI's words files hold it: a word of no duration, flagged ``punc``."""
    return (at, at, mark, "punc")


# Agents deliberately not in channel order: A on headset 1, B on headset 0.
AMI_MEETINGS = {
    "ES2004a": {
        "A": {
            "global_name": "FEE013",
            "channel": 1,
            "segments": [
                (
                    0.4,
                    1.9,
                    [(0.5, 0.9, "Okay"), _punc(0.9, "."), (1.0, 1.3, "Let's"), (1.3, 1.8, "start"), _punc(1.8, ".")],
                ),
                (3.6, 4.4, [(3.7, 3.9, "Th", "trunc"), (3.9, 4.0, "the"), (4.0, 4.3, "plan")]),
                (5.1, 5.7, [(5.2, 5.6, "Fine"), _punc(5.6, ".")]),
                (7.0, 7.9, [(7.1, 7.4, "Moving"), (7.4, 7.8, "on"), _punc(7.8, "?")]),
            ],
        },
        "B": {
            "global_name": "MEE014",
            "channel": 0,
            "segments": [
                (
                    2.0,
                    3.5,
                    [(2.1, 2.5, "Sure"), _punc(2.5, ","), (2.6, 2.9, "go"), (2.9, 3.3, "ahead"), _punc(3.3, ".")],
                ),
            ],
        },
        "C": {
            "global_name": "MEO015",
            "channel": 2,
            "segments": [
                (4.5, 5.1, [("vocalsound", 4.5, 4.6), (4.6, 5.0, "Yeah"), ("disfmarker", 5.0, 5.0)]),
            ],
        },
    },
    "ES2002a": {
        "A": {"global_name": "FEE005", "channel": 0, "segments": [(0.0, 1.0, [(0.1, 0.6, "Hello")])]},
        "B": {"global_name": "MEE006", "channel": 1, "segments": [(1.2, 2.0, [(1.3, 1.9, "Hi")])]},
    },
}


def ami_expected(file_of):
    rows = [
        ("FEE013", "female", "Okay. Let's start.", 1, 0.5, 1.8),
        ("MEE014", "male", "Sure, go ahead.", 0, 2.1, 3.3),
        ("FEE013", "female", "Th- the plan.", 1, 3.7, 4.3),
        ("MEO015", "male", "Yeah.", 2, 4.6, 5.0),
        ("FEE013", "female", "Fine.", 1, 5.2, 5.6),
        ("FEE013", "female", "Moving on?", 1, 7.1, 7.8),
    ]
    return [
        (spk, g, text, file_of(ch), approx(a, abs=1e-4), approx(b, abs=1e-4), None) for spk, g, text, ch, a, b in rows
    ]


@pytest.fixture(scope="module")
def ami_dir(tmp_path_factory):
    data = tmp_path_factory.mktemp("ami")
    write_ami(data, AMI_MEETINGS, annotations="zip")
    return data


def test_ami_ihm_turns_on_each_speakers_headset(ami_dir):
    (d,) = AMI(ami_dir, meetings=["ES2004a"]).dialogues()
    assert (d.dialogue_id, d.source) == ("ES2004a", "ami")
    # Full stops restored, a speaker's pieces merged across a 0.1 s pause but not across 1.5 s.
    assert summary(d) == ami_expected(lambda ch: f"ES2004a.Headset-{ch}.wav")
    assert d.speakers == ["FEE013", "MEE014", "MEO015"]


def test_ami_mix_from_an_annotation_folder_and_meeting_order(tmp_path):
    write_ami(tmp_path, AMI_MEETINGS, annotations="dir")
    dialogues = list(
        AMI(
            tmp_path, annotations_dir=tmp_path / "annotations", mic="ihm-mix", meetings=["ES2004a", "ES2002a"]
        ).dialogues()
    )
    assert [d.dialogue_id for d in dialogues] == ["ES2004a", "ES2002a"]
    assert summary(dialogues[0]) == ami_expected(lambda ch: "ES2004a.Mix-Headset.wav")
    assert [(t.speaker, t.text) for t in dialogues[1].turns] == [("FEE005", "Hello."), ("MEE006", "Hi.")]


def test_ami_longer_max_pause_merges_more(ami_dir):
    (d,) = AMI(ami_dir, meetings=["ES2004a"], max_pause=2.0).dialogues()
    assert summary(d)[-1] == (
        "FEE013",
        "female",
        "Fine. Moving on?",
        "ES2004a.Headset-1.wav",
        approx(5.2, abs=1e-4),
        approx(7.8, abs=1e-4),
        None,
    )
    assert len(d.turns) == 5


def test_ami_eval_meetings_are_lhotse_test_partition():
    from lhotse.recipes.ami import PARTITIONS

    assert len(AMI_EVAL_MEETINGS) == 16 and set(AMI_EVAL_MEETINGS) == set(PARTITIONS["full-corpus-asr"]["test"])


def test_ami_missing_files_are_named(ami_dir, tmp_path):
    data = shutil.copytree(ami_dir, tmp_path / "ami")
    with pytest.raises(CorpusLayoutError, match="ES2004b"):  # the default: all 16 eval meetings; the fixture has two
        AMI(data)
    (data / "amicorpus/ES2004a/audio/ES2004a.Headset-2.wav").unlink()
    with pytest.raises(CorpusLayoutError, match=r"ES2004a\.Headset-2\.wav"):
        AMI(data, meetings=["ES2004a"])
    (data / "ami_public_manual_1.6.2.zip").unlink()
    with pytest.raises(CorpusLayoutError, match="ami_public_manual_1.6.2"):
        AMI(data)


def test_ami_extracts_its_annotations_into_output_dir(ami_dir, tmp_path):
    data = shutil.copytree(ami_dir, tmp_path / "ami")
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    (d,) = AMI(data, tmp_path / "out", meetings=["ES2004a"]).dialogues()
    assert summary(d) == ami_expected(lambda ch: f"ES2004a.Headset-{ch}.wav")
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before  # the corpus folder is not written
    assert (tmp_path / "out/ami_public_manual_1.6.2/corpusResources/meetings.xml").is_file()


def test_ami_corrupt_headset_is_named(ami_dir, tmp_path):
    data = shutil.copytree(ami_dir, tmp_path / "ami")
    (data / "amicorpus/ES2004a/audio/ES2004a.Headset-0.wav").write_bytes(b"RIFF....")
    with pytest.raises(CorpusLayoutError, match=r"ES2004a\.Headset-0\.wav"):
        list(AMI(data, meetings=["ES2004a"]).dialogues())


# --- Behavior-SD -------------------------------------------------------------------------------

BSD_SR = 22050
BSD_RECORDS = [
    # mono FLAC, overlapping backchannel
    dict(
        soda_index=7,
        utterances=[(1, "So, um, we should plan.", 0.0, 1.5), (0, "Yeah.", 1.2, 1.6), (0, "Let's go.", 1.8, 2.6)],
        genders=["female", "male"],
        speaker_ids=["0001024622_0", "0000805189_1"],
    ),
    # one channel per speaker, last utterance 0.05 s past the audio end (clipped)
    dict(
        soda_index=9,
        utterances=[(0, "Hi.", 0.0, 0.5), (1, "Hello there.", 0.7, 1.45)],
        genders=["male", "male"],
        speaker_ids=["0000000001_0", "0000000002_1"],
        channels=2,
        audio_seconds=1.4,
        audio_format="WAV",
    ),
]


@pytest.fixture(scope="module")
def behavior_sd_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bsd")
    records = [behavior_sd_record(sr=BSD_SR, **r) for r in BSD_RECORDS]
    write_table(root / "local/data/test-00000-of-00001.parquet", records)
    write_table(
        root / "local/data/validation-00000-of-00001.parquet",
        [behavior_sd_record(1, [(0, "Other split.", 0.0, 1.0)], ["male", "female"], ["a", "b"])],
    )
    write_table(root / "arrow/test/data-00000-of-00001.arrow", records[:1])
    return root


def test_behavior_sd_parquet(behavior_sd_dir, tmp_path):
    dialogues = list(BehaviorSD(behavior_sd_dir / "local", tmp_path, split="test").dialogues())
    cache = tmp_path / "test"
    assert [d.dialogue_id for d in dialogues] == ["test-7", "test-9"]
    assert summary(dialogues[0]) == [
        ("0000805189_1", "male", "So, um, we should plan.", "test-7.wav", 0.0, 1.5, None),
        ("0001024622_0", "female", "Yeah.", "test-7.wav", 1.2, 1.6, None),
        ("0001024622_0", "female", "Let's go.", "test-7.wav", 1.8, 2.6, None),
    ]
    assert summary(dialogues[1]) == [
        ("0000000001_0", "male", "Hi.", "test-9.wav", 0.0, 0.5, 0),
        ("0000000002_1", "male", "Hello there.", "test-9.wav", 0.7, approx(1.4), 1),
    ]
    info7, info9 = sf.info(cache / "test-7.wav"), sf.info(cache / "test-9.wav")
    assert (info7.samplerate, info7.channels, info7.frames) == (BSD_SR, 1, round(2.8 * BSD_SR))
    assert (info9.channels, info9.frames) == (2, round(1.4 * BSD_SR))
    # A rerun reuses the cached wavs instead of decoding again.
    mtime = (cache / "test-7.wav").stat().st_mtime_ns
    assert list(BehaviorSD(behavior_sd_dir / "local", tmp_path).dialogues()) == dialogues
    assert (cache / "test-7.wav").stat().st_mtime_ns == mtime


def test_behavior_sd_arrow_matches_parquet(behavior_sd_dir, tmp_path):
    (from_arrow,) = BehaviorSD(behavior_sd_dir / "arrow", tmp_path / "a").dialogues()
    from_parquet = next(iter(BehaviorSD(behavior_sd_dir / "local", tmp_path / "p").dialogues()))
    assert summary(from_arrow) == summary(from_parquet)
    (other,) = BehaviorSD(behavior_sd_dir / "local", tmp_path / "v", split="validation").dialogues()
    assert other.dialogue_id == "test-1" and other.turns[0].text == "Other split."


@pytest.mark.parametrize("drop, message", [("tts_genders", "tts_genders"), ("audio", "has 0 audio columns")])
def test_behavior_sd_missing_column_is_named(tmp_path, drop, message):
    record = behavior_sd_record(sr=BSD_SR, **BSD_RECORDS[0])
    path = write_table(tmp_path / "test-0.parquet", [record], drop=(drop,))
    with pytest.raises(CorpusLayoutError, match=message) as err:
        list(BehaviorSD(tmp_path, tmp_path / "c").dialogues())
    assert str(path) in str(err.value)


def test_behavior_sd_bad_inputs(tmp_path):
    with pytest.raises(CorpusLayoutError, match="split 'test'"):
        BehaviorSD(tmp_path, tmp_path / "c")
    (tmp_path / "test.parquet").write_bytes(b"junk")
    with pytest.raises(CorpusLayoutError, match="test.parquet"):
        list(BehaviorSD(tmp_path, tmp_path / "c").dialogues())
    record = behavior_sd_record(3, [(0, "Too long.", 0.0, 2.0)], ["male", "female"], ["a", "b"], audio_seconds=1.0)
    write_table(tmp_path / "test.parquet", [record])
    with pytest.raises(CorpusLayoutError, match="test-3: utterance 0"):
        list(BehaviorSD(tmp_path, tmp_path / "c").dialogues())


# --- Bazinga -----------------------------------------------------------------------------------

BZ_EPISODES = {
    "TheBigBangTheory.Season01.Episode02": [
        ("penny", 2.0, 3.0, "Hi."),
        ("sheldon_cooper", 0.5, 1.8, "Hello, Penny."),
        ("leonard_hofstadter", 3.5, 4.0, ""),
    ],
    "TheBigBangTheory.Season01.Episode01": [
        ("sheldon_cooper", 0.2, 1.0, "Bazinga!"),
        ("leonard_hofstadter", 1.2, 2.5, "Oh, come on."),
    ],
}
BZ_GENDERS = {"sheldon_cooper": "male", "penny": "Female", "leonard_hofstadter": "male"}


@pytest.fixture(scope="module")
def bazinga_dir(tmp_path_factory):
    return write_bazinga(tmp_path_factory.mktemp("bz"), BZ_EPISODES, BZ_GENDERS)


def test_bazinga_layout(bazinga_dir):
    e1, e2 = Bazinga(bazinga_dir).dialogues()
    assert e1.dialogue_id == "TheBigBangTheory.Season01.Episode01"
    assert summary(e1) == [
        ("sheldon_cooper", "male", "Bazinga!", f"{e1.dialogue_id}.flac", 0.2, 1.0, None),
        ("leonard_hofstadter", "male", "Oh, come on.", f"{e1.dialogue_id}.flac", 1.2, 2.5, None),
    ]
    # Sorted by start; the empty-text row is skipped.
    assert [(t.speaker, t.gender, t.text) for t in e2.turns] == [
        ("sheldon_cooper", "male", "Hello, Penny."),
        ("penny", "female", "Hi."),
    ]


def test_bazinga_errors_name_the_problem(bazinga_dir, tmp_path):
    root = shutil.copytree(bazinga_dir, tmp_path / "bz")
    (root / "speakers.csv").write_text("speaker,gender\nsheldon_cooper,male\npenny,female\n")
    with pytest.raises(CorpusLayoutError, match="'leonard_hofstadter' has no row in .*speakers.csv"):
        list(Bazinga(root).dialogues())
    (root / "audio/TheBigBangTheory.Season01.Episode01.flac").unlink()
    with pytest.raises(CorpusLayoutError, match=r"missing audio .*audio/TheBigBangTheory\.Season01\.Episode01"):
        Bazinga(root)
    (root / "speakers.csv").unlink()
    with pytest.raises(CorpusLayoutError, match="missing .*speakers.csv"):
        Bazinga(root)


def test_chitchat_without_a_two_party_conversation_is_refused(tmp_path):
    """Read with ``max_dialogues`` (no normalised cache), a file of one-sender chats is refused too."""
    import json

    from speakersleuth.builder_scripts.sources.chitchat_tts import ChitchatTTS

    (tmp_path / "dataset.json").write_text(
        json.dumps({"c1": {"messages": [[{"sender": "a", "text": "hello there"}]]}})
    )
    source = ChitchatTTS(tmp_path / "tts", corpus_dir=tmp_path, max_dialogues=5)
    with pytest.raises(
        CorpusLayoutError, match="dataset.json holds no conversation of two senders with at least 2 speakable"
    ):
        list(source.dialogues())


def test_lhotse_bars_are_disabled_only_under_no_progress_and_put_back_after_an_error():
    """``lhotse_bars(False, module)``: the module's ``tqdm`` makes disabled bars while the block
    runs, and is the module's own again afterwards, also when the block raises."""
    from types import SimpleNamespace

    from tqdm.auto import tqdm

    module = SimpleNamespace(tqdm=tqdm)
    with lhotse_bars(True, module):
        assert module.tqdm is tqdm
    with pytest.raises(RuntimeError), lhotse_bars(False, module):
        with module.tqdm(range(3)) as bar:
            assert bar.disable
        raise RuntimeError("a corrupt corpus")
    assert module.tqdm is tqdm
