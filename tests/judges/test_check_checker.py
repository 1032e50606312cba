"""The check itself (``judges.check.checker``): every score, flag and ranking against the same
quantities computed here by hand with numpy on the encoder's embeddings of the decoded files; the
content-keyed cache (memory and disk); recalibration on labelled turns."""

from __future__ import annotations

import shutil
from math import gcd

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check import (
    CheckInputError,
    Clip,
    Dialogue,
    Turn,
    check_dialogues,
    load_calibration,
    recalibrate_on,
)
from speakersleuth.judges.check.calibration import recalibrate
from tests.support.check_inputs import write_audio
from tests.support.vc_fixtures import VOICES, speech_like

SR = 16000
#: The scoring tests compare with embeddings of the whole decoded files: the check's cut to speech
#: is tested on its own (tests/judges/test_check_speech.py).
WHOLE = {"cut_to_speech": False}
#: (turn, speaker, voice, file format): speaker A's turn 5 is another voice
PLAN = [
    ("1", "A", "male_a", ("wav", 8000, 1)),
    ("2", "B", "female_a", ("flac", 22050, 1)),
    ("3", "A", "male_a", ("mp3", 44100, 2)),
    ("4", "B", "female_a", ("wav", 48000, 2)),
    ("5", "A", "female_b", ("flac", 16000, 1)),
    ("6", "B", "female_a", ("wav", 16000, 1)),
    ("7", "A", "male_a", ("flac", 44100, 1)),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The turns of ``PLAN`` as files, two candidates for turn 5 and a reference clip of A."""
    root = tmp_path_factory.mktemp("dialogue")
    paths = {}
    for i, (turn, _, voice, (suffix, rate, channels)) in enumerate(PLAN):
        paths[turn] = write_audio(root / f"t{turn}.{suffix}", speech_like(VOICES[voice], 1.4, seed=i), rate, channels)
    paths["5a"] = write_audio(root / "5a.wav", speech_like(VOICES["male_a"], 1.3, seed=50), 24000, 1)
    paths["5b"] = write_audio(root / "5b.mp3", speech_like(VOICES["female_b"], 1.3, seed=51), 44100, 1)
    paths["refA"] = write_audio(root / "refA.flac", speech_like(VOICES["male_a"], 3.0, seed=99), 16000, 1)
    return paths


def by_hand(path) -> np.ndarray:
    """The file decoded here: soundfile, the channels' mean, scipy's polyphase resampling to 16 kHz."""
    data, rate = sf.read(path, dtype="float32", always_2d=True)
    g = gcd(rate, SR)
    return resample_poly(data.mean(axis=1), SR // g, rate // g).astype(np.float32)


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def dialogue(files, candidates=True) -> Dialogue:
    turns = [Turn(t, s, Clip.from_file(files[t])) for t, s, _, _ in PLAN]
    if candidates:
        turns[4].candidates = {"5a": Clip.from_file(files["5a"]), "5b": Clip.from_file(files["5b"])}
    return Dialogue(turns, name="talk", source="talk.csv")


@pytest.fixture(scope="module")
def embedded(files, campplus):
    """Every file's embedding, computed here: decoded by hand, one encoder call per clip."""
    return {name: unit(campplus.encode([by_hand(p)])[0]) for name, p in files.items()}


def test_pairwise_scores_flags_and_ranking_equal_numpy_by_hand(files, campplus, embedded):
    tau = 0.7
    report = check_dialogues(
        dialogue(files), method="pairwise", threshold=tau, cache=EmbeddingCache(campplus), **WHOLE
    )
    assert (report.encoder, report.method, report.threshold) == ("campplus", "pairwise", tau)
    for speaker in ("A", "B"):
        ids = [t for t, s, _, _ in PLAN if s == speaker]
        e = np.stack([embedded[i] for i in ids])
        sim = e @ e.T
        expected = [(sim[i].sum() - 1.0) / (len(ids) - 1) for i in range(len(ids))]
        result = report.speaker(speaker)
        assert [t.turn for t in result.turns] == ids and [t.position for t in result.turns] == [1, 2, 3, 4][: len(ids)]
        np.testing.assert_allclose([t.score for t in result.turns], expected, atol=2e-5)
        assert [t.flagged for t in result.turns] == [s < tau for s in expected]
        assert result.detection_score == pytest.approx(1 - min(expected), abs=2e-5)
        assert result.consistent == all(s >= tau for s in expected)
    # turn 5's takes: its own and two candidates, each against A's other turns, highest first
    context = np.stack([embedded[i] for i in ("1", "3", "7")])
    takes = {label: float((embedded[label] @ context.T).mean()) for label in ("5", "5a", "5b")}
    ranked = report.speaker("A").turns[2].candidates
    assert [c.label for c in ranked] == sorted(takes, key=lambda k: -takes[k])
    np.testing.assert_allclose([c.score for c in ranked], sorted(takes.values(), reverse=True), atol=2e-5)
    assert [c.current for c in ranked] == [c.label == "5" for c in ranked]
    assert report.speaker("A").turns[2].score == pytest.approx(takes["5"], abs=2e-5)  # the same quantity
    assert report.audio_seconds == pytest.approx(7 * 1.4, abs=0.01)


def test_centroid_and_reference_methods_by_hand(files, campplus, embedded):
    cache = EmbeddingCache(campplus)
    report = check_dialogues(
        dialogue(files, candidates=False), method="centroid", threshold=0.25, cache=cache, **WHOLE
    )
    ids = ["1", "3", "5", "7"]
    e = np.stack([embedded[i] for i in ids])
    c = e.mean(axis=0)
    expected = 1 - e @ c / np.linalg.norm(c)
    np.testing.assert_allclose([t.score for t in report.speaker("A").turns], expected, atol=2e-5)
    assert [t.flagged for t in report.speaker("A").turns] == list(expected > 0.25)
    assert report.speaker("A").detection_score == pytest.approx(expected.max(), abs=2e-5)

    with_ref = dialogue(files, candidates=False)
    with_ref.references = {"A": Clip.from_file(files["refA"]), "B": Clip.from_file(files["2"])}
    report = check_dialogues(with_ref, method="reference", threshold=0.6, cache=cache, **WHOLE)
    expected = e @ embedded["refA"]
    np.testing.assert_allclose([t.score for t in report.speaker("A").turns], expected, atol=2e-5)
    assert [t.turn for t in report.speaker("A").flagged] == [i for i, s in zip(ids, expected) if s < 0.6]
    assert report.speaker("A").reference == str(files["refA"])


def test_a_one_turn_speaker_is_judged_against_its_reference(files, campplus, embedded):
    calibration = load_calibration()
    talk = Dialogue(
        [Turn(t, s, Clip.from_file(files[t])) for t, s, _, _ in PLAN if s == "A" or t == "2"],
        {"B": Clip.from_file(files["4"])},
    )
    report = check_dialogues(talk, encoder="campplus", method="pairwise", cache=EmbeddingCache(campplus), **WHOLE)
    b = report.speaker("B")
    expected_tau = calibration.entry("campplus", "reference")["threshold"]
    assert (b.method, b.threshold) == ("reference", expected_tau)
    assert b.turns[0].score == pytest.approx(float(embedded["2"] @ embedded["4"]), abs=2e-5)
    assert report.speaker("A").method == "pairwise"
    assert report.speaker("A").threshold == calibration.entry("campplus", "pairwise")["threshold"]
    assert not [n for n in report.notes if "is not used" in n]  # B's reference is read
    talk.references["A"] = Clip.from_file(files["refA"])  # A's is not: pairwise compares A's turns
    noted = check_dialogues(talk, encoder="campplus", method="pairwise", cache=EmbeddingCache(campplus), **WHOLE).notes
    assert [n.split(" is not used")[0] for n in noted if "is not used" in n] == [f"A's reference clip {files['refA']}"]
    with pytest.raises(CheckInputError, match="speaker 'B' has only one turn"):
        talk.references = {}
        check_dialogues(talk, encoder="campplus", cache=EmbeddingCache(campplus), **WHOLE)


def test_the_cache_is_keyed_by_content_in_memory_and_on_disk(files, campplus, tmp_path):
    cache = EmbeddingCache(campplus, tmp_path / "cache")
    first = check_dialogues(dialogue(files), cache=cache)
    assert cache.encoded == 9 and cache.disk_hits == 0
    check_dialogues(dialogue(files), cache=cache)
    assert cache.encoded == 9  # nothing encoded again
    copy = {**files, "1": shutil.copy(files["1"], tmp_path / "renamed.wav")}  # same bytes, other name
    fresh = EmbeddingCache(campplus, tmp_path / "cache")
    again = check_dialogues(dialogue(copy), cache=fresh)
    assert (fresh.encoded, fresh.disk_hits) == (0, 9)
    assert [t.score for t in again.speakers[0].turns] == [t.score for t in first.speakers[0].turns]
    sf.write(tmp_path / "renamed.wav", by_hand(files["3"]), SR)  # other content under that name
    check_dialogues(dialogue(copy), cache=fresh)
    assert fresh.encoded == 1


def test_recalibration_on_labelled_turns(files, campplus, embedded):
    labelled = dialogue(files, candidates=False)
    for turn in labelled.turns:
        turn.label = "inconsistent" if turn.id == "5" else "consistent"
    labelled.turns[-1].label = None  # unlabelled: context only
    recalibration, report = recalibrate_on(
        labelled, source="labels.csv", method="pairwise", threshold=0.5, cache=EmbeddingCache(campplus)
    )
    scores = {t.turn: t.score for s in report.speakers for t in s.turns}
    labels = {t.id: t.label == "inconsistent" for t in labelled.turns if t.label}
    tau = recalibration.threshold
    flagged = {t: scores[t] < tau for t in labels}
    hits = np.mean([flagged[t] for t in labels if labels[t]])
    rejections = np.mean([not flagged[t] for t in labels if not labels[t]])
    assert recalibration.balanced_accuracy == pytest.approx(50 * (hits + rejections))
    best = max(
        50
        * (
            np.mean([scores[t] < g for t in labels if labels[t]])
            + np.mean([scores[t] >= g for t in labels if not labels[t]])
        )
        for g in np.arange(0.01, 1.0, 0.01)
    )
    assert recalibration.balanced_accuracy == pytest.approx(best)
    assert (recalibration.consistent, recalibration.inconsistent) == (5, 1)
    assert "5 consistent and 1 inconsistent" in recalibration.warning


def test_recalibration_needs_both_kinds_of_label():
    with pytest.raises(CheckInputError, match="labels.csv: no turn is labelled inconsistent"):
        recalibrate("pairwise", [0.8, 0.7], [False, False], previous=0.5, source="labels.csv")
    many = recalibrate("centroid", [0.1] * 10 + [0.5] * 10, [False] * 10 + [True] * 10, previous=0.3, source="x")
    assert (many.threshold, many.balanced_accuracy, many.warning) == (0.3, 100.0, None)
