"""The writer of a dataset: ``DatasetWriter`` streams the records of one config and split into
parquet shards (audio encoded by ``speakersleuth_format.audio``), moved into place only when complete."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import List

from speakersleuth.speakersleuth_format.audio import encode_audio
from speakersleuth.speakersleuth_format.schema import MAX_SHARD_BYTES, SPLITS, get_config


class DatasetWriter:
    """Writes the records of one config and split as ``<split>-NNNNN-of-MMMMM.parquet`` shards.

    Records are dicts with the config's columns; audio columns take anything ``load_waveform``
    takes. Rows stream to disk in row groups, so memory does not grow with the dataset. Shards go
    to a temporary folder first and replace ``<out>/<variant>/<task>/<split>-*`` only on
    ``close()`` (use the writer as a context manager); an exception leaves the old files as they
    were.

    >>> import tempfile, numpy as np
    >>> out = tempfile.mkdtemp()
    >>> # with DatasetWriter(out, "detection") as w: w.write(record)  # see tests for full records
    """

    def __init__(
        self,
        out_dir: str | os.PathLike,
        config: str,
        split: str = "test",
        *,
        max_shard_bytes: int = MAX_SHARD_BYTES,
        row_group_rows: int = 32,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
        self.spec = get_config(config)
        self.split = split
        self.out_dir = Path(out_dir)
        self.max_shard_bytes = max_shard_bytes
        self.row_group_rows = row_group_rows
        self.schema = self.spec.features.arrow_schema
        self._target = self.out_dir / self.spec.data_dir
        self._target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self.spec.task}-{split}-", dir=self._target.parent))
        self._shards: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._shard_bytes = 0
        self._pending: list[dict[str, Any]] = []
        self._ids: set[str] = set()
        self.num_rows = 0

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def write(self, record: Mapping[str, Any]) -> None:
        """Encode and queue one record; raises ``ValueError`` naming the record and column."""
        row = self._encode(record)
        size = sum(_audio_bytes(row[c]) for c in self.spec.audio_columns)
        if self._writer is not None and self._shard_bytes + size > self.max_shard_bytes:
            self._flush()
            self._writer.close()
            self._writer = None
        if self._writer is None:
            path = self._tmp / f"shard-{len(self._shards):05d}.parquet"
            self._shards.append(path)
            self._writer = pq.ParquetWriter(path, self.schema)
            self._shard_bytes = 0
        self._pending.append(row)
        self._shard_bytes += size
        self.num_rows += 1
        if len(self._pending) >= self.row_group_rows:
            self._flush()

    def write_all(self, records: Iterable[Mapping[str, Any]]) -> int:
        for record in records:
            self.write(record)
        return self.num_rows

    def close(self) -> list[Path]:
        """Finish the shards and move them into place; returns the final shard paths."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        n = len(self._shards)
        self._target.mkdir(parents=True, exist_ok=True)
        for old in self._target.glob(f"{self.split}-*.parquet"):
            old.unlink()
        final = []
        for i, shard in enumerate(self._shards):
            dest = self._target / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            os.replace(shard, dest)
            final.append(dest)
        shutil.rmtree(self._tmp, ignore_errors=True)
        return final

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _flush(self) -> None:
        if self._pending and self._writer is not None:
            self._writer.write_table(pa.Table.from_pylist(self._pending, schema=self.schema))
            self._pending = []

    def _encode(self, record: Mapping[str, Any]) -> dict[str, Any]:
        rid = record.get("id")
        where = f"{self.spec.name} record {rid!r}"
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"{self.spec.name}: record has no string 'id'")
        if rid in self._ids:
            raise ValueError(f"{where}: duplicate id")
        expected, given = set(self.spec.features), set(record)
        if given != expected:
            parts = []
            if expected - given:
                parts.append(f"missing columns {sorted(expected - given)}")
            if given - expected:
                parts.append(f"unknown columns {sorted(given - expected)}")
            raise ValueError(f"{where}: {'; '.join(parts)}")
        if record["variant"] != self.spec.variant:
            raise ValueError(f"{where}: variant {record['variant']!r} written to config {self.spec.name}")
        self._ids.add(rid)
        row = dict(record)
        for column in self.spec.audio_columns:
            value = record[column]
            if isinstance(self.spec.features[column], List):
                row[column] = [
                    encode_audio(v, f"{rid}-{column}-{i}", where=f"{where} column {column}[{i}]")
                    for i, v in enumerate(value)
                ]
            else:
                row[column] = encode_audio(value, f"{rid}-{column}", where=f"{where} column {column}")
        return row


def _audio_bytes(value: Any) -> int:
    if isinstance(value, list):
        return sum(len(v["bytes"]) for v in value)
    return len(value["bytes"])
