"""The shared speech layer: resampling and the waveform check (``speech.audio``), atomic writes
(``speech.files``) and the registry of speaker encoders (``speech.encoders``)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from scipy.signal import resample_poly

from speakersleuth.speech.audio import SAMPLING_RATE, check_waveform, resample
from speakersleuth.speech.encoders import (
    SpeakerEncoder,
    available_encoders,
    base,
    check_encoder,
    folder_encoders,
    get_encoder,
    register_encoder,
)
from speakersleuth.speech.files import atomic_path, write_bytes_atomic, write_text_atomic
from speakersleuth.speech.model_dirs import ModelFolderError

# ------------------------------------------------------------------------------------ audio


def test_resample_filters_float64_in_float64_and_the_rest_in_float32():
    """The TTS post-processing hands Praat's float64 output over; the encoders and the dataset
    hand float32. Each is filtered at its own precision, as before the three copies became one."""
    wav = np.random.default_rng(0).standard_normal(4410)
    assert resample(wav, 44_100).tobytes() == resample_poly(wav, 160, 441).astype(np.float32).tobytes()
    single = wav.astype(np.float32)
    assert resample(single, 44_100).tobytes() == resample_poly(single, 160, 441).astype(np.float32).tobytes()
    assert resample(wav, 44_100).tobytes() != resample(single, 44_100).tobytes()
    assert resample(wav, SAMPLING_RATE).dtype == np.float32 and resample(wav, 8000).shape == (8820,)


@pytest.mark.parametrize(
    "wav, message",
    [
        (np.zeros((2, 10)), r"turn 3 has shape \(2, 10\); expected a 1-D mono array"),
        (np.zeros(0), "turn 3 is empty"),
        (np.array([0.1, np.inf]), "turn 3 contains NaN or infinite samples"),
        (np.array([np.nan, 0.1]), "turn 3 contains NaN or infinite samples"),
    ],
)
def test_a_bad_waveform_is_named(wav, message):
    with pytest.raises(ValueError, match=message):
        check_waveform(wav, "turn 3")


def test_a_good_waveform_comes_back_contiguous_float32():
    wav = check_waveform(np.arange(10, dtype=np.float64)[::2], "clip")
    assert wav.dtype == np.float32 and wav.flags.c_contiguous and wav.tolist() == [0, 2, 4, 6, 8]


# ------------------------------------------------------------------------------------ files


def test_a_failure_mid_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b"old content")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            f.write(b"half of the new")
            raise RuntimeError("killed mid-write")
    assert path.read_bytes() == b"old content"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_a_failed_fsync_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    write_bytes_atomic(path, b"old content")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_bytes_atomic(path, b"new content", durable=True)
    assert path.read_bytes() == b"old content"
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_an_atomic_write_never_truncates_what_a_reader_has_open(tmp_path):
    """A reader that opened the old file reads it whole; the name then holds the new text only."""
    path = tmp_path / "submissions" / "x.json"
    write_text_atomic(path, "old content")
    with open(path, encoding="utf-8") as reader:
        write_text_atomic(path, "né")
        assert reader.read() == "old content"
    assert path.read_bytes() == "né".encode("utf-8")
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_the_temporary_name_matches_no_pattern_of_the_finished_files(tmp_path):
    with atomic_path(tmp_path / "bank" / "a.npy") as tmp:
        assert tmp.parent == tmp_path / "bank" and tmp.parent.is_dir()
        assert not tmp.match("*.npy") and tmp.name.startswith(".")
        tmp.write_bytes(b"x")
        assert list((tmp_path / "bank").glob("*.npy")) == []
    assert (tmp_path / "bank" / "a.npy").read_bytes() == b"x"


def test_keep_existing_lets_the_first_writer_win(tmp_path):
    path = tmp_path / "clip.wav"
    for data in (b"first", b"second"):
        with atomic_path(path, keep_existing=True) as tmp:
            tmp.write_bytes(data)
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["clip.wav"]


# ------------------------------------------------------------------------------- encoders


@pytest.fixture
def registry(monkeypatch):
    """The encoder registry as it is, restored after the test."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


def test_an_encoder_registered_in_its_own_module_is_built_by_get_encoder(registry, tmp_path):
    @register_encoder("toy")
    class ToyEncoder(SpeakerEncoder):
        dim = 2
        staging = "Put toy.bin into it."
        model_files = ("toy.bin",)

        def __init__(self, source, device="cpu"):
            base.checked_model_dir(source, type(self))
            self.name = f"toy:{source}"

        def _encode_batch(self, clips):
            return np.array([[c.size, 1000.0] for c in clips])

    assert "toy" in available_encoders() and "toy" in folder_encoders()
    with pytest.raises(ModelFolderError, match=r"toy: model folder .* lacks toy.bin\. Put toy.bin into it\."):
        check_encoder(f"toy:{tmp_path}")
    (tmp_path / "toy.bin").write_bytes(b"weights")
    check_encoder(f"toy:{tmp_path}")
    encoder = get_encoder(f"Toy:{tmp_path}")
    assert isinstance(encoder, ToyEncoder) and encoder.name == f"toy:{tmp_path}"
    vectors = encoder.encode([np.full(800, 0.5), np.full(400, 0.25)], sampling_rate=8000)
    resampled_sizes = np.array([[1600, 1000], [800, 1000]])  # at 16 kHz, normalised
    np.testing.assert_allclose(
        vectors, resampled_sizes / np.linalg.norm(resampled_sizes, axis=1, keepdims=True), rtol=1e-6
    )


def test_an_unknown_encoder_lists_the_known_ones():
    known = (
        "campplus[:<weights.pt>], dvector[:<embedder.onnx>], ecapa:<folder>, eres2net[:<weights.ckpt>], "
        "resemblyzer[:<weights.pt>], wavlm:<folder>"
    )
    with pytest.raises(ValueError, match=re.escape(f"unknown encoder 'xvector:/m'; known: {known}") + "$"):
        get_encoder("xvector:/m")


def test_a_name_is_registered_once(registry):
    with pytest.raises(ValueError, match="encoder 'ecapa' is registered twice"):
        register_encoder("ecapa")(type("OtherEcapa", (SpeakerEncoder,), {"_encode_batch": lambda self, clips: clips}))
