"""Speaker bank queries on hand-made embeddings; building with the on-disk cache; save/load;
reading audio spans (``builder_scripts.audio``)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speakersleuth.builder_scripts.audio import load_span
from speakersleuth.builder_scripts.sources.base import AudioSpan
from speakersleuth.builder_scripts.speaker_bank import SpeakerBank
from speakersleuth.speech.encoders import SpeakerEncoder

SR = 16_000


@pytest.fixture
def bank():
    return SpeakerBank.from_embeddings(
        {
            "f1": ("female", [1.0, 0.0, 0.0]),
            "f2": ("female", [0.6, 0.8, 0.0]),
            "f3": ("female", [0.0, 0.0, 1.0]),
            "m1": ("male", [0.9, 0.1, 0.0]),
            "m2": ("male", [0.0, 1.0, 0.0]),
        },
        encoder_name="hand-made",
    )


def test_most_similar(bank):
    assert bank.most_similar("f1") == ("m1", pytest.approx(0.9 / np.hypot(0.9, 0.1)))
    assert bank.most_similar("f1", same_gender=True) == ("f2", pytest.approx(0.6))
    assert bank.most_similar("f1", exclude=["m1"])[0] == "f2"
    assert bank.most_similar("m2")[0] == "f2" and bank.most_similar("m2", same_gender=True)[0] == "m1"
    with pytest.raises(ValueError, match="no bank speaker left"):
        bank.most_similar("m1", exclude=["m2"], same_gender=True)
    with pytest.raises(KeyError, match="'x1' is not in the bank"):
        bank.most_similar("x1")
    name, cos = bank.nearest(np.array([0.0, 0.1, 1.0]), gender="male")
    assert name == "m2" and cos == pytest.approx(0.1 / np.hypot(0.1, 1.0))


def test_random_opposite_gender(bank):
    drawn = {bank.random_opposite_gender("f2", random.Random(s)) for s in range(50)}
    assert drawn == {"m1", "m2"}
    assert {bank.random_opposite_gender("m1", s) for s in range(50)} == {"f1", "f2", "f3"}
    assert bank.random_opposite_gender("f1", 7) == bank.random_opposite_gender("f1", random.Random(7))
    only_women = SpeakerBank.from_embeddings({"f1": ("female", [1, 0]), "f2": ("female", [0, 1])})
    with pytest.raises(ValueError, match="no speaker of the opposite gender"):
        only_women.random_opposite_gender("f1", 0)


def test_cosine_matrix(bank):
    m = bank.cosine_matrix()
    assert m.shape == (5, 5) and np.allclose(m, m.T) and np.allclose(np.diag(m), 1)
    i, j = bank.names.index("f2"), bank.names.index("m2")
    assert m[i, j] == pytest.approx(bank.cosine("f2", "m2")) == pytest.approx(0.8)


def test_bad_gender_is_named():
    with pytest.raises(ValueError, match="speaker 'x': gender 'F'"):
        SpeakerBank.from_embeddings({"x": ("F", [1, 0])})


# ------------------------------------------------------------------------------ build + cache


class SpectrumEncoder(SpeakerEncoder):
    """A test stand-in: the normalised magnitude spectrum in 64 bands. Counts the clips it embeds."""

    dim = 64

    def __init__(self, name: str = "spectrum"):
        self.name, self.calls = name, 0

    def _encode_batch(self, clips):
        self.calls += len(clips)
        return np.stack([np.abs(np.fft.rfft(c, 1024))[:512].reshape(64, 8).mean(1) for c in clips])


def tone(f0: float, seconds: float, seed: int, sr: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    noise = np.random.default_rng(seed).standard_normal(t.size)
    return (0.3 * np.sin(2 * np.pi * f0 * t) + 0.01 * noise).astype(np.float32)


@pytest.fixture
def clips(tmp_path):
    """Two speakers with two wav files each, and a third whose clips are spans of one file."""
    out = {}
    for name, gender, f0 in [("anna", "female", 220.0), ("bob", "male", 110.0)]:
        paths = []
        for k in range(2):
            path = tmp_path / f"{name}{k}.wav"
            sf.write(path, tone(f0 * (1 + 0.02 * k), 1.0, k), SR)
            paths.append(path)
        out[name] = (gender, paths)
    sf.write(
        tmp_path / "meeting.wav", np.stack([tone(180, 3.0, 5, 48_000), tone(300, 3.0, 6, 48_000)], axis=1), 48_000
    )
    out["cleo"] = (
        "female",
        [AudioSpan(tmp_path / "meeting.wav", 0.0, 1.0, 0), AudioSpan(tmp_path / "meeting.wav", 1.5, 2.5, 0)],
    )
    return out


def test_build_embeds_and_caches(clips, tmp_path):
    cache = tmp_path / "cache"
    enc = SpectrumEncoder()
    bank = SpeakerBank.build(clips, enc, cache_dir=cache, progress=False)
    assert enc.calls == 6 and bank.names == ["anna", "bob", "cleo"] and bank.encoder_name == "spectrum"
    anna = bank["anna"]
    assert anna.clip_embeddings.shape == (2, 64) and anna.gender == "female"
    expected = anna.clip_embeddings.mean(0)
    np.testing.assert_allclose(bank.embedding("anna"), expected / np.linalg.norm(expected), atol=1e-6)
    assert bank.most_similar("anna")[0] == "cleo"  # 180 Hz is nearer 220 Hz than 110 Hz

    again = SpeakerBank.build(clips, enc, cache_dir=cache, progress=False)
    assert enc.calls == 6  # every speaker came from the cache
    np.testing.assert_array_equal(again.cosine_matrix(), bank.cosine_matrix())
    assert again.key == bank.key

    sf.write(clips["bob"][1][1], tone(115, 1.0, 9), SR)  # one clip's content changes
    changed = SpeakerBank.build(clips, enc, cache_dir=cache, progress=False)
    assert enc.calls == 8  # only bob's two clips again
    assert changed.key != bank.key, "what draws on the bank must see the change"

    other = SpectrumEncoder("spectrum-v2")
    assert SpeakerBank.build(clips, other, cache_dir=cache, progress=False).key not in (bank.key, changed.key)
    assert other.calls == 6  # the encoder name is part of the key
    renamed = SpeakerBank.build({f"x/{n}": entry for n, entry in clips.items()}, enc, cache_dir=cache, progress=False)
    assert enc.calls == 8 and renamed.key != changed.key  # same clips (cached) under other names


def test_build_errors(clips, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.wav does not exist"):
        SpeakerBank.build({"x": ("male", [tmp_path / "nowhere.wav"])}, SpectrumEncoder(), progress=False)
    with pytest.raises(ValueError, match="speaker 'x' has no clips"):
        SpeakerBank.build({"x": ("male", [])}, SpectrumEncoder(), progress=False)


def test_save_load_round_trip(clips, tmp_path, bank):
    built = SpeakerBank.build(clips, SpectrumEncoder(), progress=False)
    for original in (built, bank):
        loaded = SpeakerBank.load(original.save(tmp_path / "bank" / f"{original.encoder_name}.npz"))
        assert (
            loaded.names == original.names
            and loaded.encoder_name == original.encoder_name
            and loaded.key == original.key
        )
        np.testing.assert_array_equal(loaded.cosine_matrix(), original.cosine_matrix())
        for name in original.names:
            a, b = original[name], loaded[name]
            assert (a.gender, a.clips) == (b.gender, b.clips)
            assert (a.clip_embeddings is None) == (b.clip_embeddings is None)
            if a.clip_embeddings is not None:
                np.testing.assert_array_equal(a.clip_embeddings, b.clip_embeddings)


# ------------------------------------------------------------------------------ audio spans


def dominant_hz(x: np.ndarray, sr: int = SR) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return float(np.argmax(spectrum) * sr / x.size)


def test_load_span(tmp_path):
    path = tmp_path / "stereo.flac"
    sf.write(path, np.stack([tone(440, 2.0, 0, 44_100), tone(1000, 2.0, 1, 44_100)], axis=1), 44_100)
    whole = load_span(path)
    assert whole.dtype == np.float32 and whole.shape == (2 * SR,)
    left = load_span(AudioSpan(path, 0.5, 1.25, 0))
    right = load_span(AudioSpan(path, 0.5, 1.25, 1))
    assert left.shape == right.shape == (12_000,)
    assert abs(dominant_hz(left) - 440) < 5 and abs(dominant_hz(right) - 1000) < 5
    # the mean of the channels, away from the resampling filter's edges
    np.testing.assert_allclose(whole[SR // 2 : SR // 2 + 12_000][50:-50], ((left + right) / 2)[50:-50], atol=2e-3)
    assert load_span(AudioSpan(path, 1.5, 9.0, 0)).shape == (SR // 2,)  # clipped at the file's end
    assert load_span(path, sampling_rate=8000).shape == (16_000,)


def test_load_span_errors(tmp_path):
    path = tmp_path / "mono.wav"
    sf.write(path, tone(200, 1.0, 0), SR)
    with pytest.raises(ValueError, match="channel 1 requested, the file has 1"):
        load_span(AudioSpan(path, 0, 0.5, 1))
    with pytest.raises(ValueError, match=r"span \[2.0, 3.0\) s is empty or outside the file"):
        load_span(AudioSpan(path, 2.0, 3.0))
    with pytest.raises(FileNotFoundError, match="absent.wav does not exist"):
        load_span(Path(tmp_path / "absent.wav"))


def _clip_bank(clips: dict[str, list[list[float]]]) -> SpeakerBank:
    from speakersleuth.builder_scripts.speaker_bank import BankSpeaker, _unit

    return SpeakerBank(
        [
            BankSpeaker(n, "female", _unit(np.mean(_unit(np.array(e)), axis=0)), (), _unit(np.array(e)))
            for n, e in clips.items()
        ]
    )


def test_equal_error_rate():
    from speakersleuth.builder_scripts.speaker_bank import equal_error_rate

    assert equal_error_rate([0.8, 0.9], [0.1, 0.2, 0.3]) == 0.0
    assert equal_error_rate([0.1, 0.2], [0.8, 0.9]) == 100.0
    # one same-speaker trial of four below every different one, one different of four above every same one
    assert equal_error_rate([0.1, 0.7, 0.8, 0.9], [0.2, 0.3, 0.4, 0.95]) == 25.0
    # the leaderboard's EER (speech.verification), not the mean at the closest curve point (25 here):
    # sklearn's curve (fpr, fnr) = (0, 1) (0, .5) (1, .5) (1, 0) crosses fnr = fpr between (0, .5) and (1, .5)
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve([1, 0, 1], [0.9, 0.7, 0.5])
    fnr = 1 - tpr
    k = int(np.flatnonzero(fnr <= fpr)[0])
    a, b = fnr[k - 1] - fpr[k - 1], fnr[k] - fpr[k]
    assert (
        equal_error_rate([0.9, 0.5], [0.7])
        == pytest.approx(100 * (fpr[k - 1] + a / (a - b) * (fpr[k] - fpr[k - 1])))
        == 50.0
    )
    with pytest.raises(ValueError, match="same- and different-speaker trials; got 0 and 1"):
        equal_error_rate([], [0.5])


def test_verification_stats_from_clip_embeddings():
    bank = _clip_bank(
        {"a": [[1, 0.1, 0], [1, -0.1, 0]], "b": [[0.1, 1, 0], [-0.1, 1, 0]], "c": [[0.8, 0.6, 0], [0, 0, 1]]}
    )
    stats = bank.verification_stats()
    assert (stats.same_trials, stats.different_trials) == (3, 12)
    # c's two clips (cosine 0) score below a-c and b-c pairs that reach 0.8: some trials must be wrong
    assert 0 < stats.eer < 50
    assert stats.nearest["a"][0] == "c" and stats.nearest["a"][1] == pytest.approx(bank.cosine("a", "c"))
    assert set(stats.nearest) == {"a", "b", "c"} and all(n != s for s, (n, _) in stats.nearest.items())
    clean = _clip_bank({"a": [[1, 0.1, 0], [1, -0.1, 0]], "b": [[0.1, 1, 0], [-0.1, 1, 0]]}).verification_stats()
    assert clean.eer == 0.0 and clean.nearest["a"] == ("b", pytest.approx(0.0, abs=1e-6))


def test_verification_stats_need_clip_embeddings(bank):
    with pytest.raises(ValueError, match="without: f1, f2"):
        bank.verification_stats()
