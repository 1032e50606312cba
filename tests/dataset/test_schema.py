"""The schema, writer, card and validator of speakersleuth_dataset, through the stock libraries."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile as sf
from datasets import load_dataset
from huggingface_hub import DatasetCard, DatasetCardData

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.audio as ssd_audio
from tests.support.synthetic import build_synthetic_dataset, dialogue_records

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return build_synthetic_dataset(tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=3)


@pytest.fixture()
def corruptible(folder, tmp_path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


def test_nine_configs_registered():
    assert list(ssd.CONFIGS) == [
        "detection",
        "localization",
        "discrimination",
        "detection-4vc",
        "localization-4vc",
        "discrimination-4vc",
        "detection-10turn",
        "localization-10turn",
        "discrimination-10turn",
    ]
    assert ssd.get_config("localization-10turn").num_target_turns == 10
    with pytest.raises(ValueError, match="unknown config 'detect'"):
        ssd.get_config("detect")


@pytest.mark.parametrize("config", list(ssd.CONFIGS))
def test_every_config_loads_with_stock_load_dataset(folder, config):
    spec = ssd.CONFIGS[config]
    ds = load_dataset(str(folder), config, split="test", cache_dir=str(folder.parent / "hf_cache"))
    assert ds.features == spec.features
    assert len(ds) == (3 if spec.task == "discrimination" else 9)
    row = ds[0]
    n = spec.num_target_turns
    reference = row["reference_audio"].get_all_samples()  # decoded by torchcodec
    assert reference.sample_rate == ssd.SAMPLING_RATE and reference.data.shape[0] == 1
    assert reference.data.shape[1] == 3 * ssd.SAMPLING_RATE
    if spec.task == "discrimination":
        assert len(row["candidates"]) == 3 and len(row["context_audio"]) == n - 1
        assert row["gold_ranking"][0] == row["answer"]
        assert row["candidate_scenarios"][row["candidate_labels"].index(row["answer"])] == "S1"
    else:
        assert len(row["target_audio"]) == n
        samples = row["target_audio"][0].get_all_samples()
        assert samples.sample_rate == ssd.SAMPLING_RATE and samples.data.shape[1] == ssd.SAMPLING_RATE


def test_labels_and_audio_survive_round_trip(folder, tmp_path):
    import random

    records, _ = dialogue_records("main", 0, random.Random(0))
    with ssd.DatasetWriter(tmp_path / "one", "detection") as writer:
        writer.write_all(records)
    ds = load_dataset(
        str(tmp_path / "one"),
        data_files="main/detection/*.parquet",
        split="train",
        cache_dir=str(tmp_path / "hf_cache"),
    ).cast(ssd.TURN_FEATURES)
    by_id = {r["id"]: r for r in ds}
    for record in records:
        row = by_id[record["id"]]
        for key in ("scenario", "label", "inconsistent_turns", "converted_turn", "substitute_speaker", "turns"):
            assert row[key] == record[key], key
        decoded = row["target_audio"][record["converted_turn"] - 1 if record["converted_turn"] else 0]["array"]
        original = record["target_audio"][record["converted_turn"] - 1 if record["converted_turn"] else 0]
        assert decoded.shape == original.shape
        assert np.max(np.abs(decoded - original)) < 1e-3  # 16-bit FLAC


def test_load_helper_and_relative_name(folder, monkeypatch):
    ds = ssd.load("discrimination", root=folder, cache_dir=str(folder.parent / "hf_cache"))
    assert len(ds) == 3
    monkeypatch.chdir(folder.parent)
    assert (
        len(load_dataset("speakersleuth", "detection", split="test", cache_dir=str(folder.parent / "hf_cache"))) == 9
    )


def test_writer_reencodes_every_input_alike(tmp_path):
    wave = np.sin(np.linspace(0, 400, 44100)).astype(np.float32) * 0.3
    wav44 = tmp_path / "a.wav"
    sf.write(wav44, np.stack([wave, wave], 1), 44100, subtype="FLOAT")
    from_file = ssd.encode_audio(wav44, "x")
    from_array = ssd.encode_audio({"array": wave, "sampling_rate": 44100}, "x")
    assert from_file == from_array  # same bytes whatever the container, rate or channels
    info = sf.info(io.BytesIO(from_file["bytes"]))
    assert (info.samplerate, info.channels, info.format) == (16000, 1, "FLAC")
    assert from_file["path"] == "x.flac"


def test_a_clip_written_again_reuses_its_encoding(monkeypatch):
    encodes = []
    real_write = sf.write
    monkeypatch.setattr(ssd_audio.sf, "write", lambda *a, **k: encodes.append(1) or real_write(*a, **k))
    wave = (np.random.default_rng(3).standard_normal(16000) * 0.1).astype(np.float32)
    first, again = ssd.encode_audio(wave, "a"), ssd.encode_audio(wave.copy(), "b")
    assert len(encodes) == 1 and first["bytes"] == again["bytes"] and again["path"] == "b.flac"
    other = wave.copy()
    other[100] += 0.01
    assert ssd.encode_audio(other, "c")["bytes"] != first["bytes"] and len(encodes) == 2
    decoded, sr = sf.read(io.BytesIO(again["bytes"]), dtype="float32")
    assert sr == 16000 and np.abs(decoded - wave).max() < 1e-4


def test_writer_errors_name_record_and_column(tmp_path):
    import random

    records, _ = dialogue_records("main", 0, random.Random(0))
    bad = dict(records[0], reference_audio=str(tmp_path / "missing.wav"))
    with pytest.raises(
        FileNotFoundError, match=r"record 'main-synthetic-0000-S1' column reference_audio.*missing\.wav"
    ):
        with ssd.DatasetWriter(tmp_path, "detection") as writer:
            writer.write(bad)
    assert not list((tmp_path / "main").rglob("*.parquet")), "nothing half-written"
    assert not [p for p in (tmp_path / "main").iterdir() if p.name.startswith(".")], "temp folder removed"
    with pytest.raises(ValueError, match="missing columns \\['label'\\]"):
        ssd.DatasetWriter(tmp_path, "detection").write({k: v for k, v in records[0].items() if k != "label"})
    with pytest.raises(ValueError, match=r"record 'main-synthetic-0000-S1': unknown columns \['speaker_notes'\]$"):
        ssd.DatasetWriter(tmp_path, "detection").write(dict(records[0], speaker_notes="an extra column"))
    writer = ssd.DatasetWriter(tmp_path, "detection")
    writer.write(records[0])
    with pytest.raises(ValueError, match="duplicate id"):
        writer.write(records[0])
    writer.abort()


def test_writer_splits_shards_by_size(tmp_path):
    import random

    records, _ = dialogue_records("main", 0, random.Random(0))
    with ssd.DatasetWriter(tmp_path, "detection", max_shard_bytes=1) as writer:
        writer.write_all(records)
    shards = sorted((tmp_path / "main" / "detection").glob("test-*.parquet"))
    assert [p.name for p in shards] == [f"test-{i:05d}-of-00003.parquet" for i in range(3)]


def test_a_shard_closes_before_its_audio_passes_the_byte_limit(tmp_path):
    """A shard takes records while their audio fits within ``max_shard_bytes`` (reaching it exactly
    is within) and closes before the record that would pass it: with a limit of the first two
    records' bytes, shards of records 1-2, 3-4, 5-6, each at most the limit."""
    import random

    records = [r for i in range(2) for r in dialogue_records("main", i, random.Random(i))[0]]

    def audio_bytes(row):
        return len(row["reference_audio"]["bytes"]) + sum(len(c["bytes"]) for c in row["target_audio"])

    with ssd.DatasetWriter(tmp_path / "one", "detection") as writer:
        writer.write_all(records)
    sizes = [audio_bytes(row) for row in pq.read_table(_shard(tmp_path / "one", "detection")).to_pylist()]
    assert len(sizes) == 6 and len(set(sizes)) > 1
    limit = sizes[0] + sizes[1]
    with ssd.DatasetWriter(tmp_path / "split", "detection", max_shard_bytes=limit) as writer:
        writer.write_all(records)
    shards = [
        [audio_bytes(row) for row in pq.read_table(p).to_pylist()]
        for p in ssd.shard_paths(tmp_path / "split", "detection")
    ]
    assert all(sum(shard) <= limit for shard in shards), (shards, limit)
    assert shards[0] == sizes[:2] and sum(map(len, shards)) == 6
    assert all(sum(shard) + following[0] > limit for shard, following in zip(shards, shards[1:])), (shards, limit)


def test_card_parses_with_huggingface_hub(folder):
    card = DatasetCard.load(folder / "README.md")
    assert isinstance(card.data, DatasetCardData)
    configs = card.data.to_dict()["configs"]
    assert [c["config_name"] for c in configs] == list(ssd.CONFIGS)
    assert configs[0]["default"] is True
    assert configs[4]["data_files"] == [{"split": "test", "path": "4vc/localization/test-*.parquet"}]


def test_valid_folder_passes_validator_and_cli(folder):
    counts = ssd.validate_folder(folder)
    assert counts["detection/test"] == 9 and counts["discrimination-10turn/test"] == 3
    proc = subprocess.run(
        [sys.executable, "-m", "speakersleuth.speakersleuth_dataset", "validate", "--dataset", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "valid" in proc.stdout


def _rewrite(path: Path, column: str, fn) -> None:
    table = pq.read_table(path)
    rows = table.to_pylist()
    fn(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def _shard(root: Path, config: str) -> Path:
    return ssd.shard_paths(root, config)[0]


def _context_with_masked_turn(row: dict) -> list[dict]:
    """The context as a builder that drops the turn after k instead of turn k would write it."""
    k, context = row["masked_position"], list(row["context_audio"])
    original = row["candidates"][row["candidate_scenarios"].index("S1")]
    return context[: k - 1] + [original] + context[k:]


def _flac(rate: int, channels: int) -> dict:
    """One second of a 440 Hz tone as a stored clip: FLAC at ``rate`` Hz with ``channels`` channels."""
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(rate) / rate)
    buffer = io.BytesIO()
    sf.write(buffer, np.tile(tone[:, None], (1, channels)), rate, format="FLAC")
    return {"bytes": buffer.getvalue(), "path": "x.flac"}


CORRUPTIONS = {
    "duplicate id": (
        "detection",
        lambda rows: rows[1].update(id=rows[0]["id"]),
        r"duplicate id 'main-synthetic-0000-S1'",
    ),
    "label contradicts scenario": (
        "detection",
        lambda rows: rows[0].update(label="inconsistent"),
        r"S1 must be consistent",
    ),
    "inconsistent turn is not the converted one": (
        "localization",
        lambda rows: rows[1].update(inconsistent_turns=[(rows[1]["converted_turn"] % 5) + 1]),
        r"must be exactly the converted turn",
    ),
    "converted turn plus another (detection)": (
        "detection",
        lambda rows: rows[1].update(inconsistent_turns=[rows[1]["converted_turn"], rows[1]["converted_turn"] % 5 + 1]),
        r"row 1 .*inconsistent_turns \[\d, \d\] must be exactly the converted turn",
    ),
    "converted turn plus another (localization)": (
        "localization",
        lambda rows: rows[2].update(inconsistent_turns=[rows[2]["converted_turn"], rows[2]["converted_turn"] % 5 + 1]),
        r"row 2 .*inconsistent_turns \[\d, \d\] must be exactly the converted turn",
    ),
    "context holds the masked turn": (
        "discrimination",
        lambda rows: rows[0].update(context_audio=_context_with_masked_turn(rows[0])),
        r"context_audio holds candidate \['[ABC]'\] \(the masked turn \d",
    ),
    "wrong gold ranking": (
        "discrimination",
        lambda rows: rows[0].update(gold_ranking=list(reversed(rows[0]["gold_ranking"]))),
        r"gold_ranking .* must be .* \(S1 > S3 > S2\)",
    ),
    "answer not the original": (
        "discrimination",
        lambda rows: rows[0].update(answer=next(l for l in "ABC" if l != rows[0]["answer"])),
        r"answer .* is not the original \(S1\) candidate",
    ),
    "wrong number of target turns": (
        "detection",
        lambda rows: rows[0].update(target_audio=rows[0]["target_audio"][:4]),
        r"4 target audio clips, expected 5",
    ),
    "undecodable audio": (
        "detection",
        lambda rows: rows[0].update(reference_audio={"bytes": b"not audio", "path": "x.flac"}),
        r"config detection split test row 0 \(id 'main-synthetic-0000-S1', .*\) column reference_audio: "
        r"audio does not decode with datasets' decoder",
    ),
    "converted turn 0 (turns count from 1)": (
        "detection",
        lambda rows: rows[1].update(converted_turn=0, inconsistent_turns=[0]),
        r"row 1 .*converted_turn 0 is not a position 1\.\.5",
    ),
    "a clip at 8 kHz": (
        "detection",
        lambda rows: rows[0].update(reference_audio=_flac(8000, channels=1)),
        r"row 0 .* column reference_audio: 8000 Hz, 1 channel\(s\); expected 16000 Hz mono",
    ),
    "a stereo clip": (
        "detection",
        lambda rows: rows[0].update(reference_audio=_flac(16000, channels=2)),
        r"row 0 .* column reference_audio: 16000 Hz, 2 channel\(s\); expected 16000 Hz mono",
    ),
    "S2 substitute of the same gender": (
        "detection",
        lambda rows: rows[1].update(substitute_gender=rows[1]["target_gender"]),
        r"S2 substitute has the target's gender",
    ),
}


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_validator_names_each_corruption(corruptible, kind):
    config, fn, pattern = CORRUPTIONS[kind]
    path = _shard(corruptible, config)
    _rewrite(path, "", fn)
    with pytest.raises(ssd.DatasetValidationError, match=pattern) as info:
        ssd.validate_folder(corruptible)
    assert path.name in str(info.value) or "duplicate id" in kind


def test_validator_catches_wrong_type(corruptible):
    path = _shard(corruptible, "detection")
    table = pq.read_table(path)
    index = table.schema.get_field_index("converted_turn")
    table = table.set_column(index, "converted_turn", pa.array([str(v) for v in table["converted_turn"].to_pylist()]))
    pq.write_table(table, path)
    with pytest.raises(ssd.DatasetValidationError, match=r"converted_turn: string instead of int32"):
        ssd.validate_folder(corruptible)


def test_validator_catches_missing_file_and_id_mismatch(corruptible):
    _shard(corruptible, "localization-4vc").unlink()
    _rewrite(_shard(corruptible, "localization"), "", lambda rows: rows.pop())
    with pytest.raises(ssd.DatasetValidationError) as info:
        ssd.validate_folder(corruptible)
    message = str(info.value)
    assert "config 'localization-4vc' split 'test': no file matches '4vc/localization/test-*.parquet'" in message
    assert "main/test: detection and localization ids differ" in message
    proc = subprocess.run(
        [sys.executable, "-m", "speakersleuth.speakersleuth_dataset", "validate", "--dataset", str(corruptible)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "INVALID" in proc.stderr


def test_detection_and_localization_ids_are_compared_as_sets_not_counts(corruptible):
    """Localization holding as many rows as detection, one of them under an id detection lacks:
    the ids differ, named on both sides."""

    def rename_last(rows):
        rows[-1]["id"] = "main-synthetic-9999-S3"

    path = _shard(corruptible, "localization")
    last = pq.read_table(path).column("id").to_pylist()[-1]
    _rewrite(path, "", rename_last)
    with pytest.raises(ssd.DatasetValidationError) as info:
        ssd.validate_folder(corruptible, check_audio=False)
    assert (
        f"main/test: detection and localization ids differ (only in detection: [{last!r}], "
        "only in localization: ['main-synthetic-9999-S3'])"
    ) in str(info.value)


def test_validator_catches_missing_card(corruptible):
    (corruptible / "README.md").unlink()
    with pytest.raises(ssd.DatasetValidationError, match="README.md \\(the dataset card\\) is missing"):
        ssd.validate_folder(corruptible)


def test_read_rows_by_id_and_gold(folder):
    table = ssd.read_rows(folder, "detection", ids=["main-synthetic-0001-S3"], columns=["id", "scenario"])
    assert table.to_pylist() == [{"id": "main-synthetic-0001-S3", "scenario": "S3"}]
    gold = ssd.read_gold(folder, "10turn")
    assert set(gold) == {"detection", "localization", "discrimination"}
    assert {r["num_target_turns"] for r in gold["localization"]} == {10}
    with pytest.raises(ValueError, match="unknown variant"):
        ssd.read_gold(folder, "5vc")


def test_variants_and_tasks_present_count_the_shards_of_a_split(tmp_path):
    from tests.support.synthetic import build_synthetic_dataset

    root = build_synthetic_dataset(tmp_path / "ds", dialogues=2, variants=("10turn", "main"))
    assert ssd.variants_present(root) == ["main", "10turn"]  # schema order, whatever order they were built in
    for shard in ssd.shard_paths(root, ssd.config_name("discrimination", "10turn")):
        shard.unlink()  # 10turn now lacks one task
    assert ssd.variants_present(root) == ["main", "10turn"]
    assert ssd.variants_present(root, every_task=True) == ["main"]
    assert ssd.variants_present(root, "validation") == []
    assert ssd.tasks_present(root, "10turn") == ["detection", "localization"]
    assert ssd.tasks_present(root, "main") == list(ssd.TASKS) and ssd.tasks_present(root, "4vc") == []


def test_every_column_of_every_config_has_one_description():
    columns = {column for spec in ssd.CONFIGS.values() for column in spec.features}
    assert set(ssd.COLUMN_DESCRIPTIONS) == columns, (
        f"without a description: {sorted(columns - set(ssd.COLUMN_DESCRIPTIONS))}; "
        f"describing no column: {sorted(set(ssd.COLUMN_DESCRIPTIONS) - columns)}"
    )


#: The metadata keys of a dataset card the Hub knows (its card spec: DatasetCardData's fields plus
#: these), and ours: ``build_seed`` (which ``blind`` reads) and the shards' digests.
HUB_CARD_KEYS = {"tags", "configs", "dataset_info", "license_name", "license_link", "license_details", "viewer"}
OUR_CARD_KEYS = {"build_seed", "shard_sha256"}


def test_card_metadata_describes_the_shards_and_round_trips_through_huggingface_hub(folder):
    import inspect

    from datasets import Features

    card = DatasetCard.load(folder / "README.md")
    header = card.data.to_dict()
    known = set(inspect.signature(DatasetCardData).parameters) - {"ignore_metadata_errors", "kwargs"}
    assert set(header) <= known | HUB_CARD_KEYS | OUR_CARD_KEYS, set(header) - known - HUB_CARD_KEYS
    assert DatasetCard(card.content).data.to_dict() == header == DatasetCard.load(folder / "README.md").data.to_dict()
    infos = {info["config_name"]: info for info in header["dataset_info"]}
    assert list(infos) == sorted(ssd.CONFIGS)
    total = 0
    for name, spec in ssd.CONFIGS.items():
        loaded = load_dataset(str(folder), name, split="test")
        [split] = infos[name]["splits"]
        assert (split["name"], split["num_examples"]) == ("test", loaded.num_rows) and split["num_bytes"] > 0
        assert Features._from_yaml_list(infos[name]["features"]) == spec.features == loaded.features
        files = ssd.shard_paths(folder, name)
        assert infos[name]["download_size"] == sum(p.stat().st_size for p in files)
        assert infos[name]["dataset_size"] == split["num_bytes"]
        total += loaded.num_rows
    assert total == 6 * 9 + 3 * 3 and header["size_categories"] == ["n<1K"]


def test_validator_refuses_a_card_whose_dataset_info_does_not_describe_the_shards(corruptible):
    shard = ssd.shard_paths(corruptible, "localization-4vc")[0]
    pq.write_table(pq.read_table(shard).slice(1), shard)
    with pytest.raises(
        ssd.DatasetValidationError,
        match="dataset_info of config 'localization-4vc' does not describe its "
        "shards \\(card: test 9 rows, shards: test 8 rows\\)",
    ):
        ssd.validate_folder(corruptible, check_audio=False)
