"""Voice-conversion backends: DSP conversions on speech-like synthetic voices, adapter plumbing.

The identity checks run on the synthetic source-filter voices of ``tests/support/vc_fixtures.py`` (no
words, out of domain for Resemblyzer): they show that WORLD and Praat move F0, formants and the
speaker embedding toward the target, not how convincing the conversion is on real speech. The
neural adapters run here on randomly initialised tiny models built from coqui's config classes
(FreeVC, YourTTS, OpenVoice) or with the model call injected (CosyVoice3); their output is noise and is only checked for
plumbing (length, rate, loudness, errors), never as a conversion result.
"""

from __future__ import annotations

import doctest
import json
import os

import numpy as np
import parselmouth
import pytest

import speakersleuth.builder_scripts.vc as vc
from speakersleuth.builder_scripts.vc import base, cosyvoice, world, yourtts
from speakersleuth.builder_scripts.vc.base import SAMPLING_RATE, rms
from speakersleuth.speech.model_dirs import ModelFolderError, use_model_dirs
from tests.support.vc_fixtures import VOICES, Voice, clips, speech_like

DSP = ("world", "praat")


def median_f0(audio: np.ndarray) -> float:
    """Median F0 (Hz) by Praat's autocorrelation pitch tracker, independent of WORLD's DIO."""
    pitch = parselmouth.Sound(audio.astype(np.float64), SAMPLING_RATE).to_pitch(0.01, 60, 700)
    f0 = pitch.selected_array["frequency"]
    return float(np.median(f0[f0 > 0]))


def semitones(a: float, b: float) -> float:
    return float(12 * np.log2(a / b))


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Small models on a shared 2-core machine run faster (and steadier) on one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def speakers():
    """Per voice: 3 reference clips, 3 held-out clips, and one odd-length turn to convert."""
    return {
        name: {
            "refs": clips(voice, 3, 2.5, seed=i + 1),
            "held": clips(voice, 3, 2.5, seed=i + 11),
            "turn": speech_like(voice, 2.0 + 0.0123 * (i + 1), seed=100 + i),
        }
        for i, (name, voice) in enumerate(VOICES.items())
    }


@pytest.fixture(scope="module")
def converters():
    return {name: vc.get_converter(name) for name in DSP}


@pytest.fixture(scope="module")
def encoder():
    from speakersleuth.speech.encoders import get_encoder

    return get_encoder("resemblyzer")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def converted(speakers, converters):
    """(backend, source, target) -> converted turn, for both cross-gender directions."""
    pairs = [("male_a", "female_a"), ("female_b", "male_b")]
    return {
        (name, s, t): converters[name].convert(speakers[s]["turn"], speakers[t]["refs"])
        for name in DSP
        for s, t in pairs
    }


def test_module_doctests():
    for module in (base, world, vc):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


class LongLoudWideBackend(base.VoiceConverter):
    """A backend whose own step returns its input longer, louder and with a 7 kHz tone added."""

    name, offline, bandwidth_hz = "long-loud-wide", True, 5000.0

    def _convert(self, source, target_clips, source_clips):
        tone = np.sin(2 * np.pi * 7000 * np.arange(source.size + 800) / SAMPLING_RATE)
        return 5.0 * (np.resize(source, source.size + 800) + 0.1 * tone)

    def _resynthesize(self, audio):
        return self._convert(audio, [], None)


def test_the_base_class_finishes_every_backends_output(speakers):
    """``convert`` and ``resynthesize`` give the input's length and loudness, band-limited."""

    def top_share(clip: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(clip)) ** 2
        return float(spectrum[np.fft.rfftfreq(clip.size, 1 / SAMPLING_RATE) > 6000].sum() / spectrum.sum())

    turn = speakers["male_a"]["turn"]
    backend = LongLoudWideBackend()
    assert top_share(backend._convert(turn, [], None)) > 0.01
    for out in (backend.convert(turn, []), backend.resynthesize(turn)):
        assert out.dtype == np.float32 and out.shape == turn.shape
        assert rms(out) == pytest.approx(rms(turn), rel=1e-3)
        assert top_share(out) < 1e-4


def test_registry_and_availability(tmp_path, monkeypatch):
    assert set(vc.CONVERTERS) == {"respeak", "world", "praat", "freevc", "yourtts", "openvoice", "cosyvoice3"}
    for name in vc.CONVERTERS:
        cls = vc.converter_class(name)
        assert issubclass(cls, base.VoiceConverter) and cls.name == name
        assert cls.offline == (name in (*DSP, "respeak"))
        assert cls.respeaks == (name == "respeak")
    monkeypatch.setenv(base.VC_DIR_ENV, str(tmp_path))
    assert vc.available_converters() == ["respeak", "world", "praat"]
    assert abs(sum(vc.PAPER_4VC_SHARES.values()) - 1) < 1e-9


@pytest.mark.parametrize("name", DSP)
def test_dsp_keeps_length_and_loudness(name, converted, speakers):
    for (backend, s, _), out in converted.items():
        if backend == name:
            turn = speakers[s]["turn"]
            assert out.dtype == np.float32 and out.shape == turn.shape
            assert np.isfinite(out).all() and np.abs(out).max() < 1.0
            assert rms(out) == pytest.approx(rms(turn), rel=1e-3)


@pytest.mark.parametrize("name", DSP)
def test_dsp_moves_f0_to_target_median(name, converted, speakers):
    for (backend, s, t), out in converted.items():
        if backend == name:
            target_median = world.speaker_profile(speakers[t]["refs"]).f0_median
            assert abs(semitones(median_f0(speakers[s]["turn"]), target_median)) > 8  # cross-gender
            assert abs(semitones(median_f0(out), target_median)) < 1.0, (s, t)


@pytest.mark.parametrize("name", DSP)
def test_dsp_keeps_the_turns_offset_from_its_speaker(name, converters, speakers):
    """A turn spoken 3 semitones above its speaker's usual pitch stays above the target's."""
    source = speakers["male_a"]
    high_turn = speech_like(Voice(f0=VOICES["male_a"].f0 * 2 ** (3 / 12), vtl=1.0, open_quotient=0.55), 2.0, 7)
    out = converters[name].convert(high_turn, speakers["female_a"]["refs"], source_clips=source["refs"])
    origin = world.speaker_profile(source["refs"])
    target = world.speaker_profile(speakers["female_a"]["refs"])
    scale = np.clip(target.log_f0_std / origin.log_f0_std, *world.F0_SCALE_RANGE)
    expected = target.f0_median * (world.f0_median(high_turn) / origin.f0_median) ** scale
    assert semitones(expected, target.f0_median) > 1.5
    assert abs(semitones(median_f0(out), expected)) < 1.0


def test_vtl_ratio_recovers_formant_scaling(speakers):
    profiles = {name: world.speaker_profile(s["refs"]) for name, s in speakers.items()}
    for s, t in [("male_a", "female_a"), ("female_a", "male_a"), ("male_a", "male_b"), ("female_b", "female_a")]:
        true = VOICES[t].vtl / VOICES[s].vtl
        assert world.vtl_ratio(profiles[s], profiles[t]) == pytest.approx(true, rel=0.05), (s, t)


def test_dsp_moves_identity_toward_target(converted, speakers, encoder):
    """Under Resemblyzer the converted turn is closer to held-out target clips than the source."""
    names = sorted(speakers)
    held = encoder.encode([clip for name in names for clip in speakers[name]["held"]]).reshape(len(names), 3, -1)
    centroid = dict(zip(names, held.mean(axis=1)))
    keys = sorted(converted)
    embedded = encoder.encode([converted[k] for k in keys] + [speakers[s]["turn"] for _, s, _ in keys])
    for key, conv, src in zip(keys, embedded[: len(keys)], embedded[len(keys) :]):
        _, s, t = key
        assert cosine(conv, centroid[t]) > cosine(src, centroid[t]) + 0.1, key
        assert cosine(conv, centroid[t]) > cosine(conv, centroid[s]), key


@pytest.mark.parametrize("name", DSP)
def test_resynthesize_keeps_f0_length_and_voice(name, converters, speakers, encoder):
    turn = speakers["female_a"]["turn"]
    out = converters[name].resynthesize(turn)
    assert out.dtype == np.float32 and out.shape == turn.shape
    assert rms(out) == pytest.approx(rms(turn), rel=1e-3)
    assert abs(semitones(median_f0(out), median_f0(turn))) < 0.3
    assert cosine(*encoder.encode([turn, out])) > 0.95


@pytest.mark.parametrize("name", DSP)
def test_dsp_output_depends_on_the_input_only(name, converters, speakers):
    """Same input, same output, whatever ran before (Praat's PSOLA is random unless seeded)."""
    turn, refs = speakers["male_b"]["turn"], speakers["female_b"]["refs"]
    first = converters[name].convert(turn, refs)
    converters[name].resynthesize(speakers["female_a"]["turn"])
    fresh = vc.get_converter(name)
    np.testing.assert_array_equal(fresh.convert(turn, refs), first)
    np.testing.assert_array_equal(fresh.resynthesize(turn), converters[name].resynthesize(turn))


@pytest.mark.parametrize("name", DSP)
def test_dsp_input_errors(name, converters, speakers):
    conv = converters[name]
    silence = np.zeros(SAMPLING_RATE, dtype=np.float32)
    with pytest.raises(ValueError, match="too little voiced speech"):
        conv.convert(speakers["male_a"]["turn"], [silence])
    with pytest.raises(ValueError, match="1-D"):
        conv.convert(np.zeros((2, 100), dtype=np.float32), speakers["female_a"]["refs"])
    with pytest.raises(ValueError, match="NaN"):
        conv.resynthesize(np.full(100, np.nan, dtype=np.float32))


# ---------------------------------------------------------------- neural adapters: missing files


@pytest.mark.parametrize("name", ["freevc", "yourtts", "openvoice", "cosyvoice3"])
def test_adapters_name_every_missing_file(name, tmp_path, monkeypatch):
    monkeypatch.setenv(base.VC_DIR_ENV, str(tmp_path))
    cls = vc.converter_class(name)
    folders = cls.model_folders()
    assert folders and all(f.path.parent == tmp_path and f.files for f in folders)
    with pytest.raises(ModelFolderError) as info:
        vc.get_converter(name)
    message = str(info.value)
    assert message.startswith(f"{name}: ") and cls.staging in message and "Nothing is downloaded" in message
    for folder in folders:
        assert f"model folder {folder.path} (--model-dir {folder.name}=DIR) does not exist; it needs" in message
        assert all(file in message for file in folder.files)


@pytest.mark.parametrize("name", ["freevc", "yourtts", "openvoice", "cosyvoice3"])
def test_model_dir_flag_beats_the_environment_and_an_argument_beats_both(name, tmp_path, monkeypatch):
    monkeypatch.setenv(base.VC_DIR_ENV, str(tmp_path / "env"))
    cls = vc.converter_class(name)
    use_model_dirs({name: tmp_path / "flag"})
    try:
        assert cls.model_folders()[0].path == tmp_path / "flag"
        (tmp_path / "flag").mkdir()
        with pytest.raises(ModelFolderError, match=f"model folder {tmp_path / 'flag'} .* lacks"):
            vc.get_converter(name)
        assert cls.model_folders(model_dir=tmp_path / "arg")[0].path == tmp_path / "arg"
    finally:
        use_model_dirs({})
    assert cls.model_folders()[0].path == tmp_path / "env" / vc.MODEL_DIRS[name]


def test_yourtts_config_side_files_and_localisation(tmp_path):
    config = {
        "audio": {"sample_rate": 16000, "do_trim_silence": True},
        "d_vector_file": ["/home/author/VCTK/speakers.json"],
        "model_args": {"speaker_encoder_model_path": "/x/model_se.pth", "language_ids_file": "/x/language_ids.json"},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    missing = {p.name for p in yourtts.YourTTSConverter.missing_files(model_dir=tmp_path)}
    assert missing == {"model_file.pth", "model_se.pth", "config_se.json", "speakers.json", "language_ids.json"}
    local = yourtts.localized_config(config, tmp_path)
    assert local["d_vector_file"] == [str(tmp_path / "speakers.json")]
    assert local["model_args"]["language_ids_file"] == str(tmp_path / "language_ids.json")
    assert local["audio"]["do_trim_silence"] is False
    assert config["audio"]["do_trim_silence"] is True  # the original is not modified


# ------------------------------------------------- neural adapters: plumbing with injected models


class FakeCosyVoice:
    """Stands in for a CosyVoice model: yields the source in two chunks at 24 kHz, scaled."""

    sample_rate = 24000

    def __init__(self, keep: float = 1.0):
        self.keep = keep
        self.prompts = []

    def inference_vc(self, source_wav, prompt_wav, stream=False):
        import librosa
        import soundfile as sf
        import torch

        source, rate = sf.read(source_wav, dtype="float32")
        self.prompts.append(sf.read(prompt_wav, dtype="float32")[0])
        wave = librosa.resample(source, orig_sr=rate, target_sr=self.sample_rate)[: int(self.keep * len(source) * 1.5)]
        half = len(wave) // 2
        for part in (wave[:half], wave[half:]):
            yield {"tts_speech": torch.from_numpy(2.0 * part)[None, :]}


def test_cosyvoice_plumbing_prompt_and_length(speakers):
    fake = FakeCosyVoice()
    conv = cosyvoice.CosyVoiceConverter(model=fake)
    turn = speakers["female_b"]["turn"]
    refs = speakers["male_b"]["refs"]
    out = conv.convert(turn, refs)
    assert out.shape == turn.shape and rms(out) == pytest.approx(rms(turn), rel=1e-3)
    pause = int(cosyvoice.PROMPT_PAUSE_SECONDS * SAMPLING_RATE)
    assert len(fake.prompts[0]) == sum(map(len, refs)) + 2 * pause
    np.testing.assert_allclose(fake.prompts[0][: len(refs[0])], refs[0], atol=1e-6)
    with pytest.raises(ValueError, match="30 s limit"):
        conv.convert(np.ones(31 * SAMPLING_RATE, dtype=np.float32) * 0.1, refs)


def test_adapter_refuses_output_that_lost_the_timing(speakers):
    conv = cosyvoice.CosyVoiceConverter(model=FakeCosyVoice(keep=0.5))
    with pytest.raises(RuntimeError, match="did not keep the timing"):
        conv.convert(speakers["female_b"]["turn"], speakers["male_b"]["refs"])


def test_neural_resynthesis_modes(speakers):
    turn = speakers["male_b"]["turn"]
    fake = FakeCosyVoice()
    out = cosyvoice.CosyVoiceConverter(model=fake).resynthesize(turn)
    assert out.shape == turn.shape
    np.testing.assert_allclose(fake.prompts[0], turn, atol=1e-6)  # converted to its own voice
    identity = cosyvoice.CosyVoiceConverter(model=FakeCosyVoice(), resynthesis="identity")
    np.testing.assert_array_equal(identity.resynthesize(turn), turn)
    with pytest.raises(ValueError, match="resynthesis"):
        cosyvoice.CosyVoiceConverter(model=fake, resynthesis="vocoder")


# ------------------------------------- neural adapters: real coqui code on random tiny models

#: The tiny VITS-style decoder that the random FreeVC and OpenVoice checkpoints share (their own
#: arguments add the rest).
TINY_DECODER = {
    "inter_channels": 16,
    "hidden_channels": 16,
    "filter_channels": 32,
    "gin_channels": 16,
    "upsample_initial_channel": 32,
    "resblock_kernel_sizes": [3],
    "resblock_dilation_sizes": [[1, 3, 5]],
}


@pytest.fixture(scope="module")
def tiny_freevc(tmp_path_factory):
    """A FreeVC folder in the release layout, from coqui's config classes with random weights."""
    import torch
    from TTS.vc.configs.freevc_config import FreeVCArgs, FreeVCConfig
    from TTS.vc.layers.freevc.wavlm.wavlm import WavLM, WavLMConfig
    from TTS.vc.models.freevc import FreeVC

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("freevc24")
    wavlm_cfg = {
        "encoder_layers": 1,
        "encoder_embed_dim": 32,
        "encoder_ffn_embed_dim": 64,
        "encoder_attention_heads": 2,
        "conv_feature_layers": "[(32,10,5)] + [(32,3,2)] * 4 + [(32,2,2)] * 2",
        "conv_pos": 16,
        "conv_pos_groups": 4,
    }
    torch.save({"cfg": wavlm_cfg, "model": WavLM(WavLMConfig(wavlm_cfg)).state_dict()}, folder / "WavLM-Large.pt")
    args = FreeVCArgs(
        ssl_dim=32, upsample_rates=[10, 6, 4, 2], upsample_kernel_sizes=[20, 12, 8, 4], **TINY_DECODER
    )  # 10*6*4*2 = 480 samples per 20 ms WavLM frame: 24 kHz out, as in freevc24
    config = FreeVCConfig(model_args=args)
    home = tmp_path_factory.mktemp("tts-home")
    (home / "tts" / "wavlm").mkdir(parents=True)
    (home / "tts" / "wavlm" / "WavLM-Large.pt").symlink_to(folder / "WavLM-Large.pt")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TTS_HOME", str(home))  # coqui's FreeVC loads WavLM from here at init
        model = FreeVC(config)
    torch.save({"model": model.state_dict()}, folder / "model.pth")
    config.save_json(str(folder / "config.json"))
    return folder


def test_freevc_adapter_runs_coqui_end_to_end(tiny_freevc, speakers, monkeypatch):
    monkeypatch.delenv("TTS_HOME", raising=False)
    conv = vc.get_converter("freevc", model_dir=tiny_freevc)
    assert "TTS_HOME" not in os.environ  # only set while the model was built
    assert conv.input_rate == 16000 and conv._model.output_sample_rate == 24000
    turn = speakers["male_a"]["turn"]
    a = conv.convert(turn, speakers["female_a"]["refs"][:1])
    b = conv.convert(turn, speakers["male_b"]["refs"][:1])
    assert a.shape == b.shape == turn.shape and a.dtype == np.float32 and np.isfinite(a).all()
    assert rms(a) == pytest.approx(rms(turn), rel=1e-3)
    assert not np.allclose(a, b)  # the target clips condition the decoder


def test_model_dir_reaches_the_backend(tiny_freevc, tiny_yourtts):
    """What the pipeline does, ``get_converter(name)``, loads from the ``--model-dir`` folder."""
    use_model_dirs({"freevc": tiny_freevc, "yourtts": tiny_yourtts})
    try:
        assert vc.get_converter("freevc")._model.output_sample_rate == 24000
        assert vc.get_converter("yourtts").input_rate == 16000
    finally:
        use_model_dirs({})


def test_freevc_refuses_configs_that_would_download(tiny_freevc, tmp_path):
    for name in ("model.pth", "WavLM-Large.pt"):
        (tmp_path / name).symlink_to(tiny_freevc / name)
    config = json.loads((tiny_freevc / "config.json").read_text())
    config["model_args"]["use_spk"] = True
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="use_spk"):
        vc.get_converter("freevc", model_dir=tmp_path)


def test_openvoice_adapter_builds_from_the_original_config(tmp_path, speakers):
    """The architecture and STFT come from the checkpoint's own config.json (here tiny, 22.05 kHz)."""
    import torch
    from TTS.vc.configs.openvoice_config import OpenVoiceConfig
    from TTS.vc.models.openvoice import OpenVoice

    original = {
        "_version_": "v2",
        "data": {"sampling_rate": 22050, "filter_length": 256, "hop_length": 64, "win_length": 256, "n_speakers": 0},
        "model": {
            "zero_g": True,
            "n_heads": 2,
            "n_layers": 1,
            "upsample_rates": [4, 4, 4],
            "upsample_kernel_sizes": [8, 8, 8],
            **TINY_DECODER,
        },
    }
    config = OpenVoiceConfig()
    for key, value in original["model"].items():
        setattr(config.model_args, key, value)
    config.audio.fft_size = 256
    torch.manual_seed(0)
    torch.save({"model": OpenVoice(config).state_dict()}, tmp_path / "checkpoint.pth")
    (tmp_path / "config.json").write_text(json.dumps(original))

    conv = vc.get_converter("openvoice", model_dir=tmp_path)
    assert conv.input_rate == 22050
    turn = speakers["female_b"]["turn"]
    out = conv.convert(turn, speakers["male_a"]["refs"][:2])
    assert out.shape == turn.shape and out.dtype == np.float32 and np.isfinite(out).all()
    # random weights give a peaky output once its DC offset is removed: limited at the peak, not clipped
    assert rms(out) == pytest.approx(rms(turn), rel=1e-3) or np.abs(out).max() == pytest.approx(0.999)


@pytest.fixture(scope="module")
def tiny_yourtts(tmp_path_factory):
    """A YourTTS folder in the release layout: VITS with d-vectors + an LSTM speaker encoder, random
    weights; like the release, config.json names side files by the author's absolute paths and
    trims silence."""
    import torch
    from TTS.config.shared_configs import BaseAudioConfig
    from TTS.encoder.configs.speaker_encoder_config import SpeakerEncoderConfig
    from TTS.encoder.utils.generic_utils import setup_encoder_model
    from TTS.tts.configs.vits_config import VitsArgs, VitsConfig
    from TTS.tts.models.vits import Vits

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("your_tts")
    encoder_config = SpeakerEncoderConfig(
        model_params={"model_name": "lstm", "input_dim": 40, "proj_dim": 16, "lstm_dim": 16, "num_lstm_layers": 1},
        audio=BaseAudioConfig(sample_rate=16000, num_mels=40, fft_size=512, win_length=400, hop_length=160),
        num_classes_in_batch=2,
        num_utter_per_class=2,
        num_loader_workers=0,
    )
    torch.save({"model": setup_encoder_model(encoder_config).state_dict()}, folder / "model_se.pth")
    encoder_config.save_json(str(folder / "config_se.json"))
    rng = np.random.default_rng(0)
    speakers = {f"clip{i}": {"name": f"spk{i}", "embedding": rng.standard_normal(16).tolist()} for i in range(2)}
    (folder / "speakers.json").write_text(json.dumps(speakers))

    def config_with_paths(root: str) -> VitsConfig:
        args = VitsArgs(
            hidden_channels=16,
            hidden_channels_ffn_text_encoder=32,
            num_layers_text_encoder=1,
            num_layers_posterior_encoder=2,
            num_layers_flow=1,
            resblock_kernel_sizes_decoder=[3],
            resblock_dilation_sizes_decoder=[[1, 3, 5]],
            upsample_initial_channel_decoder=16,
            use_sdp=False,
            init_discriminator=False,
            use_d_vector_file=True,
            d_vector_dim=16,
            d_vector_file=[f"{root}/speakers.json"],
            speaker_encoder_model_path=f"{root}/model_se.pth",
            speaker_encoder_config_path=f"{root}/config_se.json",
        )
        audio = BaseAudioConfig(
            sample_rate=16000, fft_size=1024, win_length=1024, hop_length=256, do_trim_silence=True
        )
        return VitsConfig(
            audio=audio,
            model_args=args,
            use_phonemes=False,
            use_d_vector_file=True,
            d_vector_dim=16,
            d_vector_file=[f"{root}/speakers.json"],
        )

    model = Vits(config_with_paths(str(folder)))
    torch.save({"model": model.state_dict()}, folder / "model_file.pth")
    config_with_paths("/home/author/your_tts").save_json(str(folder / "config.json"))
    return folder


def test_yourtts_adapter_runs_coqui_end_to_end(tiny_yourtts, speakers):
    conv = vc.get_converter("yourtts", model_dir=tiny_yourtts)
    turn = speakers["female_a"]["turn"]
    a = conv.convert(turn, speakers["male_a"]["refs"][:2])
    b = conv.convert(turn, speakers["male_b"]["refs"][:2])
    assert a.shape == b.shape == turn.shape and a.dtype == np.float32 and np.isfinite(a).all()
    assert rms(a) == pytest.approx(rms(turn), rel=1e-3)
    assert not np.allclose(a, b)  # the target clips' d-vector conditions the flow and decoder
    # a second of leading silence survives: the release's silence trimming is turned off
    padded = np.concatenate([np.zeros(SAMPLING_RATE, dtype=np.float32), turn])
    assert conv.convert(padded, speakers["male_a"]["refs"][:1]).shape == padded.shape


@pytest.mark.parametrize("name", DSP)
def test_dsp_outputs_share_one_bandwidth(name, converted, converters, speakers):
    """Formant shifts change the top of the band; converted and resynthesised clips are band-limited
    alike, so the top band does not tell which turn was converted."""
    from speakersleuth.builder_scripts.vc.world import BANDWIDTH_HZ

    def top_share(clip: np.ndarray) -> float:
        spectrum = np.abs(np.fft.rfft(clip)) ** 2
        freqs = np.fft.rfftfreq(clip.size, 1 / SAMPLING_RATE)
        return float(spectrum[freqs > BANDWIDTH_HZ + 400].sum() / spectrum.sum())

    turn = speakers["male_a"]["turn"]
    assert top_share(turn) > 1e-3  # the fixture voices do have energy up there
    clips = [
        converters[name].resynthesize(turn),
        converted[(name, "male_a", "female_a")],
        converted[(name, "female_b", "male_b")],
    ]
    assert all(top_share(c) < 1e-4 for c in clips), [top_share(c) for c in clips]
