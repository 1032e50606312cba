"""Every published clip decodes with the decoder ``datasets`` uses (torchcodec on FFmpeg), not only
with soundfile, which the project itself reads with.

``tests/support/fixtures/ffmpeg51-invalid-residual.flac`` is a clip of an embedded build, written by soundfile 0.14
(libsndfile 1.2.2) at its default FLAC level: soundfile reads it, FFmpeg 5.1 rejects its last frame
("invalid residual"), so ``datasets`` raised on that row.
"""

from __future__ import annotations

import io
import random
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf
from datasets import load_dataset
from torchcodec.decoders import AudioDecoder

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.audio as ssd_audio
from tests.support import FIXTURES
from tests.support.synthetic import build_synthetic_dataset, dialogue_records

REJECTED = FIXTURES / "ffmpeg51-invalid-residual.flac"
LIBSNDFILE_DEFAULT_LEVEL = 0.6  # what soundfile wrote before the writer chose its levels


@pytest.fixture(scope="module")
def rejected_pcm() -> np.ndarray:
    pcm, rate = sf.read(REJECTED, dtype="int16")
    assert rate == ssd.SAMPLING_RATE and pcm.ndim == 1
    return pcm


def _torchcodec_pcm(data: bytes) -> np.ndarray:
    """int16 samples as torchcodec decodes them, independent of the module under test."""
    samples = AudioDecoder(data).get_all_samples()
    assert samples.sample_rate == ssd.SAMPLING_RATE and samples.data.shape[0] == 1
    return np.rint(samples.data.numpy()[0] * 32768).astype(np.int16)


def test_the_fixture_is_rejected_by_ffmpeg_but_read_by_soundfile(rejected_pcm):
    try:
        AudioDecoder(REJECTED.read_bytes()).get_all_samples()
    except RuntimeError as err:
        assert "Invalid data found when processing input" in str(err)
    else:
        pytest.fail(
            "torchcodec/FFmpeg now decodes the fixture: the FFmpeg 5.1 bug these tests guard against is gone here"
        )
    assert rejected_pcm.size == 31360 and np.abs(rejected_pcm).max() > 1000


def test_libsndfile_default_level_writes_the_rejected_bytes(rejected_pcm):
    buffer = io.BytesIO()
    sf.write(
        buffer,
        rejected_pcm,
        ssd.SAMPLING_RATE,
        format="FLAC",
        subtype="PCM_16",
        compression_level=LIBSNDFILE_DEFAULT_LEVEL,
    )
    assert buffer.getvalue() == REJECTED.read_bytes()


def test_encode_audio_of_the_rejected_samples_decodes_bit_exact(rejected_pcm):
    clip = ssd.encode_audio(rejected_pcm.astype(np.float32) / 32768, "x")
    assert np.array_equal(_torchcodec_pcm(clip["bytes"]), rejected_pcm)
    assert sf.info(io.BytesIO(clip["bytes"])).format == "FLAC" and clip["path"] == "x.flac"


def test_encode_audio_falls_back_to_a_level_ffmpeg_reads(rejected_pcm, monkeypatch):
    monkeypatch.setattr(ssd_audio, "_RECENT_FLAC", OrderedDict())
    monkeypatch.setattr(ssd_audio, "FLAC_LEVELS", (LIBSNDFILE_DEFAULT_LEVEL, 0.0))
    clip = ssd.encode_audio(rejected_pcm.astype(np.float32) / 32768, "x")
    assert clip["bytes"] != REJECTED.read_bytes()
    assert np.array_equal(_torchcodec_pcm(clip["bytes"]), rejected_pcm)


def test_encode_audio_refuses_a_clip_no_level_makes_decodable(rejected_pcm, monkeypatch):
    monkeypatch.setattr(ssd_audio, "_RECENT_FLAC", OrderedDict())
    monkeypatch.setattr(ssd_audio, "FLAC_LEVELS", (LIBSNDFILE_DEFAULT_LEVEL,))
    with pytest.raises(
        ValueError, match=r"record 'r1' column target_audio\[2\]: FFmpeg .* reads none of the FLAC encodings"
    ):
        ssd.encode_audio(rejected_pcm.astype(np.float32) / 32768, "x", where="record 'r1' column target_audio[2]")
    assert not ssd_audio._RECENT_FLAC, "a refused encoding is not cached"


def test_encode_audio_refuses_a_clip_decoded_to_other_samples(monkeypatch):
    """Decoding without an error is not enough: the samples must come back exactly."""
    real = ssd.stock_decoder

    class OffByOne:
        def __init__(self, clip):
            self.decoder = real(clip)

        def get_all_samples(self):
            samples = self.decoder.get_all_samples()
            samples.data[0, -1] += 1 / 32768
            return samples

    monkeypatch.setattr(ssd_audio, "_RECENT_FLAC", OrderedDict())
    monkeypatch.setattr(ssd_audio, "stock_decoder", OffByOne)
    with pytest.raises(ValueError, match="reads none of the FLAC encodings"):
        ssd.encode_audio(np.full(1600, 0.25, np.float32), "x")


def test_validator_names_the_clip_ffmpeg_rejects(tmp_path, capsys):
    folder = build_synthetic_dataset(tmp_path / "ds", dialogues=1, variants=("main",))
    path = ssd.shard_paths(folder, "localization")[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[2]["target_audio"][1] = {"bytes": REJECTED.read_bytes(), "path": "x.flac"}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    ssd.write_card(folder, "# synthetic folder, one clip replaced")  # its digests and sizes describe the new shard
    assert ssd.validate_folder(folder, check_audio=False)  # only decoding finds it
    with pytest.raises(ssd.DatasetValidationError) as info:
        ssd.validate_folder(folder)
    assert info.value.errors == [
        f"config localization split test row 2 (id {rows[2]['id']!r}, main/localization/{path.name} row 2) "
        "column target_audio[1]: audio does not decode with datasets' decoder (torchcodec/FFmpeg): "
        "Could not flush decoder: Invalid data found when processing input"
    ]
    assert ssd.main(["validate", "--dataset", str(folder)]) == 1
    assert "config localization split test row 2" in capsys.readouterr().err


def test_stock_load_dataset_decodes_every_clip_of_a_written_folder(tmp_path, rejected_pcm):
    """Written by the writer, with the rejected clip's samples as one dialogue's reference."""
    out = tmp_path / "ds"
    rng = random.Random(0)
    made = [dialogue_records("main", i, rng) for i in range(2)]
    rejected_wave = rejected_pcm.astype(np.float32) / 32768
    for record in [*made[0][0], made[0][1]]:
        record["reference_audio"] = rejected_wave
    turn_records = [r for records, _ in made for r in records]
    for config, records in (
        ("detection", turn_records),
        ("localization", turn_records),
        ("discrimination", [d for _, d in made]),
    ):
        with ssd.DatasetWriter(out, config) as writer:
            writer.write_all(records)
    ssd.write_card(out, "# test folder")
    ssd.validate_folder(out)
    for config, expected_clips in (("detection", 6 * 6), ("localization", 6 * 6), ("discrimination", 2 * 8)):
        ds = load_dataset(str(out), config, split="test", cache_dir=str(tmp_path / "hf_cache"))
        decoded = 0
        for row in ds:
            for column in ssd.CONFIGS[config].audio_columns:
                for decoder in row[column] if isinstance(row[column], list) else [row[column]]:
                    assert decoder.get_all_samples().data.shape[1] > 0
                    decoded += 1
        assert decoded == expected_clips
        reference = ds[0]["reference_audio"].get_all_samples().data.numpy()[0]
        assert np.array_equal(np.rint(reference * 32768), rejected_pcm)
