"""Speaker encoders: the real loading and inference code on offline models.

ECAPA and WavLM are randomly initialised from small configs and written to local folders in
their real on-disk formats, then loaded through the same code that loads a staged checkpoint.
Resemblyzer uses the weights that ship in its wheel. Voices are synthetic (source-filter).
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
import torch
from scipy.signal import lfilter, sawtooth

from speech.encoders import check_encoder, get_encoder
from speech.encoders.ecapa import EcapaEncoder
from speech.encoders.resemblyzer import ResemblyzerEncoder
from speech.encoders.wavlm import WavLMEncoder
from speech.model_dirs import ModelFolderError, use_model_dirs

SR = 16_000

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

VOWELS = [(730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480), (570, 840, 2410)]


def voice(f0: float, formant_scale: float, seconds: float, seed: int, sr: int = SR) -> np.ndarray:
    """A synthetic voiced utterance: a sawtooth glottal source at a wandering F0 through the
    formant resonators of random vowels, one syllable every 0.25 s."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    contour = f0 * (1 + 0.06 * np.sin(2 * np.pi * 0.6 * t + rng.uniform(0, 6)) + 0.02 * rng.standard_normal())
    source = sawtooth(np.cumsum(2 * np.pi * contour / sr))
    syllable = int(0.25 * sr)
    out = np.zeros(n)
    for start in range(0, n, syllable):
        chunk = source[start : start + syllable]
        for formant, bandwidth in zip(VOWELS[rng.integers(len(VOWELS))], (80, 100, 120)):
            r = np.exp(-np.pi * bandwidth / sr)
            theta = 2 * np.pi * formant * formant_scale / sr
            chunk = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], chunk)
        out[start : start + chunk.size] = chunk * np.hanning(chunk.size)
    out = out / np.abs(out).max() * 0.3 + 0.001 * rng.standard_normal(n)
    return out.astype(np.float32)


def band_limited(seconds: float, sr: int, seed: int) -> np.ndarray:
    """The same analytic signal (partials below 3.5 kHz) sampled at any rate."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    freqs, phases = rng.uniform(80, 3500, 40), rng.uniform(0, 2 * np.pi, 40)
    wave = sum(np.sin(2 * np.pi * f * t + p) for f, p in zip(freqs, phases)) * (0.6 + 0.4 * np.sin(2 * np.pi * 1.3 * t))
    return (0.05 * wave).astype(np.float32)


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
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=SR, padding_value=0.0, do_normalize=True, return_attention_mask=True)
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


@pytest.fixture(scope="module", params=["ecapa", "wavlm-group", "wavlm-layer", "resemblyzer"])
def encoder(request):
    if request.param == "ecapa":
        return request.getfixturevalue("ecapa")
    if request.param == "resemblyzer":
        return request.getfixturevalue("resemblyzer")
    if request.param == "wavlm-group":
        return WavLMEncoder(request.getfixturevalue("wavlm_folder")[0])
    return WavLMEncoder.from_model(*_wavlm_model("layer"))


CLIPS = [voice(f0, 1.0, s, seed) for f0, s, seed in [(120, 1.1, 1), (200, 0.8, 2), (150, 1.4, 3), (110, 0.5, 4), (230, 1.2, 5)]]


# ------------------------------------------------------------------------------ all encoders


def test_shapes_and_normalisation(encoder):
    emb = encoder.encode(CLIPS, batch_size=2)
    assert emb.shape == (len(CLIPS), encoder.dim) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, encoder.dim)


def test_batched_equals_one_by_one(encoder):
    batched = encoder.encode(CLIPS, batch_size=8)
    single = np.concatenate([encoder.encode([c]) for c in CLIPS])
    np.testing.assert_allclose(batched, single, atol=2e-5)


def test_other_sampling_rate_is_resampled(encoder):
    at_16k = encoder.encode([band_limited(1.0, SR, 7)])[0]
    at_8k = encoder.encode([band_limited(1.0, 8000, 7)], sampling_rate=8000)[0]
    at_44k = encoder.encode([band_limited(1.0, 44_100, 7)], sampling_rate=44_100)[0]
    assert at_16k @ at_8k > 0.99 and at_16k @ at_44k > 0.99


def test_bad_input_is_named(encoder):
    with pytest.raises(ValueError, match="waveform 1 has shape"):
        encoder.encode([CLIPS[0], np.zeros((2, 100), np.float32)])
    with pytest.raises(ValueError, match="waveform 0 is empty"):
        encoder.encode([np.zeros(0, np.float32)])
    with pytest.raises(ValueError, match="waveform 2 is digital silence"):
        encoder.encode([CLIPS[0], CLIPS[1], np.zeros(SR, np.float32)])
    with pytest.raises(ValueError, match="waveform 0 contains NaN"):
        encoder.encode([np.full(SR, np.nan, np.float32)])


def test_very_short_clip_still_embeds(encoder):
    emb = encoder.encode([voice(180, 1.0, 0.05, 9)])
    assert np.all(np.isfinite(emb)) and abs(np.linalg.norm(emb) - 1) < 1e-5


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
    assert loaded.dim == 32 and not loaded.pad_batches  # group norm over time: equal lengths only
    np.testing.assert_allclose(loaded.encode(CLIPS), WavLMEncoder.from_model(model, extractor).encode(CLIPS), atol=1e-6)


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


def test_resemblyzer_same_voice_is_closer(resemblyzer):
    voices = [(110, 1.0), (135, 1.0), (210, 1.17), (240, 1.2)]
    a = resemblyzer.encode([voice(f0, k, 2.0, 100 + i) for i, (f0, k) in enumerate(voices)])
    b = resemblyzer.encode([voice(f0, k, 2.0, 200 + i) for i, (f0, k) in enumerate(voices)])
    sims = a @ b.T
    for i in range(len(voices)):
        others = np.delete(sims[i], i)
        assert sims[i, i] > others.max(), (i, sims.round(3))


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


def test_judges_cli_loads_an_encoder_from_its_model_dir(ecapa_folder, tmp_path, capsys):
    import json

    from judges.__main__ import main
    from tests.synthetic import build_synthetic_dataset

    dataset = build_synthetic_dataset(tmp_path / "ds", dialogues=1, variants=("main",))
    run = ["run", "--judge", "centroid-ecapa", "--dataset", str(dataset), "--tasks", "detection", "--out", str(tmp_path / "p.jsonl"), "--quiet"]
    try:
        assert main([*run, "--model-dir", f"ecapa={ecapa_folder[0]}"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert str(ecapa_folder[0]) in summary["judge"] and summary["counts"] == {"detection": 3}
        incomplete = shutil.copytree(ecapa_folder[0], tmp_path / "ecapa")
        (incomplete / "classifier.ckpt").unlink()
        assert main([*run, "--model-dir", f"ecapa={incomplete}"]) == 2
        assert f"error: ecapa: model folder {incomplete} (--model-dir ecapa=DIR) lacks classifier.ckpt" in capsys.readouterr().err
        assert main([*run, "--model-dir", f"wavlm={tmp_path}", "--judge", "centroid-wavlm"]) == 2
        assert f"error: wavlm: model folder {tmp_path} (--model-dir wavlm=DIR) lacks config.json" in capsys.readouterr().err
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
