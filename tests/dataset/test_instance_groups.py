"""``instance_groups`` (what ``blind --unpaired`` keeps one row of) groups rows by their decoded
samples: a copy whose clips were re-encoded (other FLAC bytes, the same samples) groups as before."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd
from tests.support.synthetic import build_synthetic_dataset


def _clips(value) -> list[dict]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, dict) and v.get("bytes")]


def _reencode(clip: dict, tag: str, level: float) -> None:
    samples, rate = sf.read(io.BytesIO(clip["bytes"]), dtype="int16")
    out = io.BytesIO()
    channels = 1 if samples.ndim == 1 else samples.shape[1]
    with sf.SoundFile(out, "w", rate, channels, subtype="PCM_16", format="FLAC", compression_level=level) as f:
        f.comment = tag  # a tag naming the row: no two rows' clips keep the same bytes
        f.write(samples)
    clip["bytes"] = out.getvalue()


def _reencode_every_row(folder: Path) -> None:
    """Every clip of every test row under new FLAC bytes that differ from row to row."""
    for path in sorted(folder.rglob("test-*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pylist()
        for n, row in enumerate(rows):
            for value in row.values():
                for clip in _clips(value):
                    _reencode(clip, f"{path.relative_to(folder)} row {n}", 0.0 if n % 2 else 1.0)
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def _clip_bytes(folder: Path) -> Counter:
    return Counter(
        clip["bytes"]
        for path in folder.rglob("test-*.parquet")
        for row in pq.read_table(path).to_pylist()
        for value in row.values()
        for clip in _clips(value)
    )


def test_rows_whose_clips_were_reencoded_still_group_by_their_samples(tmp_path):
    full = build_synthetic_dataset(tmp_path / "full", dialogues=2, variants=("main",))
    ssd.write_card(full, "# SpeakerSleuth (synthetic)\n\nFor tests only.", build_seed=2**62 + 12345)
    ssd.write_blind(full, tmp_path / "public", tmp_path / "gold")  # no dialogue column: only the audio groups
    public = tmp_path / "public"
    before = ssd.instance_groups(public)
    sizes = Counter(before.values())
    assert len(sizes) == 2 and min(sizes.values()) >= 4, sizes  # two dialogues: S1, S2, S3 and discrimination each
    assert max(_clip_bytes(public).values()) > 1  # the rows of a dialogue share clips byte for byte ...

    _reencode_every_row(public)
    assert max(_clip_bytes(public).values()) == 1  # ... and no longer do
    assert ssd.instance_groups(public) == before
