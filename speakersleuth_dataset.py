"""SpeakerSleuth: the schema of the benchmark, its writer, validator and readers.

This file is the single source of truth for what a SpeakerSleuth dataset folder holds. Since
``datasets`` 4 there are no loading scripts, so this module is *not* a loading script: a built
folder is plain parquet plus a dataset card whose YAML ``configs:`` block maps each config to its
shards, and the stock library loads it with no remote code::

    from datasets import load_dataset
    ds = load_dataset("speakersleuth", "detection", split="test")   # the folder a build made

What this module offers on top:

- ``CONFIGS``: the nine configs (``detection``, ``localization``, ``discrimination`` for the main
  variant, ``<task>-4vc``, ``<task>-10turn``), each with its ``datasets.Features``.
- ``DatasetWriter``: what the builder writes through. Audio given as file paths, bytes or arrays is
  decoded, resampled to 16 kHz mono and re-encoded in one format (FLAC, 16 bit) with a neutral file
  name, so no clip can be told apart by its container, rate or name; every clip is read back by
  ``datasets``' own decoder (torchcodec on FFmpeg) before it is written. Shards are written under a
  temporary name and moved into place when complete: a killed build leaves nothing half-written.
- ``write_card``: the dataset card, with its ``configs:`` block generated from ``CONFIGS`` and the
  SHA-256 of every shard (``shard_sha256``), so that anyone can check a download or a rebuild.
- ``validate_folder`` / ``python -m speakersleuth_dataset validate --dataset <folder or Hub id>``: schema, ids, labels
  against provenance, discrimination answers, every clip decoded as ``datasets`` decodes it, and
  every shard against the card's digest.
- ``load``: ``load_dataset`` on a folder by absolute path, offline.
- ``collate``: rows of any config as one batch for a torch ``DataLoader`` (audio decoded and
  zero-padded, with lengths and masks); ``COLUMN_DESCRIPTIONS``: what each column means (the card's
  data-fields section); ``shard_metadata``: the card's ``dataset_info`` and ``size_categories``.
- ``read_gold`` and ``read_rows``: fast pyarrow readers that skip audio (for the scorer) or read one
  instance (for the Space viewer) without decoding the whole dataset.
- ``write_blind`` / ``python -m speakersleuth_dataset blind --dataset <build> --public-out <dir> --gold-out <dir>``:
  a public copy whose test split carries no gold or provenance (``BLIND_COLUMNS``), with ids that
  are a keyed hash under a random secret (not recomputable) and rows in the order of those ids (a
  dialogue's S1/S2/S3 scattered); the gold, under the public ids, goes to a private folder that
  ``read_gold`` (and so ``python -m metrics.score --gold``) reads. The validation split stays
  labelled (for calibration). A dialogue's rows share clips (S1/S2/S3 differ in one turn), so a
  submitter who groups rows by their audio can find the altered turn; ``--unpaired`` keeps one
  instance per group of rows that share a dialogue or any clip (``instance_groups``), which closes
  that leak. The altered turn and the candidate order follow from the build's seed and the
  dialogue, whose text is public: ``blind`` refuses a build whose seed anyone could try
  (``GUESSABLE_SEEDS``; the card records it as ``build_seed``).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import importlib.util
import io
import os
import random
import re
import secrets
import shutil
import sys
import tempfile
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import soundfile as sf
from datasets import Audio, Features, List, Value

from speech.audio import SAMPLING_RATE, check_waveform, resample
from speech.files import write_text_atomic

TASKS = ("detection", "localization", "discrimination")
SPLITS = ("test", "validation")
SCENARIOS = ("S1", "S2", "S3")
LABELS = ("consistent", "inconsistent")
GENDERS = ("female", "male")
CANDIDATE_LABELS = ("A", "B", "C")
#: Gold order of the discrimination candidates: original, similar speaker, gender switch.
GOLD_SCENARIO_ORDER = ("S1", "S3", "S2")
MAX_SEGMENT_TURNS = 20

#: The paper's page and BibTeX entry: the one citation of the project. The dataset card, the
#: scorer and the Space use it from here; each metric folder (which must load alone) carries a
#: copy that ``tests/metrics/test_metrics.py`` checks equal to it, as do the metric cards.
PAPER_URL = "https://aclanthology.org/2026.acl-long.944/"
CITATION = """\
@inproceedings{lee2026speakersleuth,
  title         = {SpeakerSleuth: Can Large Audio-Language Models Judge Speaker Consistency across Multi-turn Dialogues?},
  author        = {Lee, Jonggeun and Pyo, Junseong and Seo, Gyuhyeon and Jo, Yohan},
  booktitle     = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},
  year          = {2026},
  pages         = {20612--20636},
  url           = {https://aclanthology.org/2026.acl-long.944/},
  eprint        = {2601.04029},
  archivePrefix = {arXiv}
}
"""


@dataclass(frozen=True)
class VariantSpec:
    """What makes a variant of the benchmark.

    A segment holds ``target_turns`` turns of the target speaker among at most
    ``max_window_turns`` turns; variants with the same ``target_turns`` are built on the same
    segments (main and 4vc). The converted turn of every dialogue is made by the build's one
    backend, or, with ``draws_backend``, by a backend drawn per dialogue among several (4vc).
    """

    name: str
    target_turns: int
    draws_backend: bool = False
    max_window_turns: int = MAX_SEGMENT_TURNS


VARIANT_SPECS = {
    s.name: s for s in (VariantSpec("main", 5), VariantSpec("4vc", 5, draws_backend=True), VariantSpec("10turn", 10))
}
VARIANTS = tuple(VARIANT_SPECS)
#: The columns of a human-review sheet (``review.csv``): the builder exports and reads it
#: (``--review-decisions``), the Space's Review tab writes it. The builder reads variant,
#: dialogue_id, decision and reason.
REVIEW_FIELDS = ("dialogue_id", "variant", "converted_turn", "vc_model", "text", "audio_files", "decision", "reason")


def segment_sharing(variant: str) -> tuple[str, ...]:
    """The variants built on the same segments as ``variant`` (itself included), in schema order."""
    n = VARIANT_SPECS[variant].target_turns
    return tuple(v for v, spec in VARIANT_SPECS.items() if spec.target_turns == n)


MAX_SHARD_BYTES = 500 * 1000**2
AUDIO_FORMAT = "FLAC"

_TURN = {"speaker": Value("string"), "text": Value("string"), "is_target": Value("bool")}
_AUDIO = Audio(sampling_rate=SAMPLING_RATE)

_COMMON = {
    "id": Value("string"),
    "dialogue_id": Value("string"),
    "source_dataset": Value("string"),
    "variant": Value("string"),
    "target_speaker": Value("string"),
    "target_gender": Value("string"),
    "turns": List(_TURN),
    "target_turn_positions": List(Value("int32")),
    "reference_audio": _AUDIO,
    "vc_model": Value("string"),
}

#: Detection and localization share their instances (same ids, same columns); a task reads its gold
#: column (``label`` or ``inconsistent_turns``).
TURN_FEATURES = Features(
    {
        **_COMMON,
        "scenario": Value("string"),
        "target_audio": List(_AUDIO),
        "label": Value("string"),
        "inconsistent_turns": List(Value("int32")),
        "converted_turn": Value("int32"),
        "substitute_speaker": Value("string"),
        "substitute_gender": Value("string"),
        "substitute_similarity": Value("float32"),
    }
)

DISCRIMINATION_FEATURES = Features(
    {
        **_COMMON,
        "context_audio": List(_AUDIO),
        "masked_position": Value("int32"),
        "candidates": List(_AUDIO),
        "candidate_labels": List(Value("string")),
        "candidate_scenarios": List(Value("string")),
        "candidate_substitute_speakers": List(Value("string")),
        "candidate_similarities": List(Value("float32")),
        "answer": Value("string"),
        "gold_ranking": List(Value("string")),
    }
)


#: What each column means, for the card's data-fields section (``data_fields_section``); every
#: column of ``TURN_FEATURES`` and ``DISCRIMINATION_FEATURES`` has one (a test checks both ways).
#: Positions: ``target_turn_positions`` index ``turns`` from 0; the target turns k = 1..N
#: (``inconsistent_turns``, ``converted_turn``, ``masked_position``, localization answers) from 1.
COLUMN_DESCRIPTIONS = {
    "id": "Opaque instance id, the key of a prediction line; a detection row and its localization row share it.",
    "dialogue_id": "`<source>/<dialogue>` of the corpus; S1, S2 and S3 of a dialogue (and its discrimination row) share it.",
    "source_dataset": "The corpus the dialogue comes from (the card's sources list its license).",
    "variant": "`main`, `4vc` or `10turn`: the config's variant.",
    "target_speaker": "The corpus's id of the speaker whose turns are judged.",
    "target_gender": "`female` or `male`.",
    "turns": "The dialogue window as text, every speaker's turns in order: `speaker`, `text`, and `is_target` "
    "(a turn of the target speaker).",
    "target_turn_positions": "Where the target turns are in `turns` (0-based): the k-th target turn (k = 1..N) is "
    "`turns[target_turn_positions[k - 1]]`.",
    "reference_audio": "One clip of the target speaker from outside the window (at least 3 s).",
    "vc_model": "The voice-conversion backend of the converted clip(s) (null for the S1 rows of the turn tasks).",
    "scenario": "Gold: `S1` (consistent), `S2` (turn k converted to the other gender) or `S3` (to the most similar speaker).",
    "target_audio": "The N target turns' clips in dialogue order (list of clips; N = 5, or 10 for `-10turn`).",
    "label": "Gold (detection): `consistent` (S1) or `inconsistent` (S2, S3).",
    "inconsistent_turns": "Gold (localization): the 1-based target turns that were converted: `[k]` for S2/S3, `[]` for S1.",
    "converted_turn": "Provenance: k, the 1-based target turn converted in S2/S3 (null for S1).",
    "substitute_speaker": "Provenance: whose voice turn k was converted to (`<source>/<speaker>` when from another "
    "corpus; null for S1).",
    "substitute_gender": "Provenance: the substitute's gender (null for S1).",
    "substitute_similarity": "Provenance: cosine of the substitute's and the target's mean speaker embeddings (null for S1).",
    "context_audio": "The N - 1 target turns other than the masked one, in dialogue order (list of clips).",
    "masked_position": "k, the 1-based target turn that is masked and that the candidates would fill.",
    "candidates": "Three clips of turn k, one per scenario (S1 original, S2, S3), in the order of `candidate_labels`.",
    "candidate_labels": "`A`, `B`, `C`: the names a prediction uses for the candidates.",
    "candidate_scenarios": "Gold: each candidate's scenario.",
    "candidate_substitute_speakers": "Provenance: each candidate's substitute speaker (null for the original).",
    "candidate_similarities": "Provenance: each candidate's speaker similarity to the target (1.0 for the original).",
    "answer": "Gold (discrimination): the label of the original candidate.",
    "gold_ranking": "Gold (ranking): the labels best first, original > similar speaker (S3) > gender switch (S2).",
}


@dataclass(frozen=True)
class ConfigSpec:
    """One config of the benchmark: a task on a variant."""

    name: str
    task: str
    variant: str

    @property
    def features(self) -> Features:
        return DISCRIMINATION_FEATURES if self.task == "discrimination" else TURN_FEATURES

    @property
    def num_target_turns(self) -> int:
        return VARIANT_SPECS[self.variant].target_turns

    @property
    def data_dir(self) -> str:
        """Folder of the config's shards, relative to the dataset root."""
        return f"{self.variant}/{self.task}"

    @property
    def audio_columns(self) -> tuple[str, ...]:
        return tuple(n for n, f in self.features.items() if _is_audio(f))


def config_name(task: str, variant: str) -> str:
    """``detection`` for the main variant, ``detection-4vc`` otherwise."""
    return task if variant == "main" else f"{task}-{variant}"


CONFIGS: dict[str, ConfigSpec] = {
    config_name(t, v): ConfigSpec(config_name(t, v), t, v) for v in VARIANTS for t in TASKS
}
DEFAULT_CONFIG = "detection"


def get_config(name: str) -> ConfigSpec:
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown config {name!r}; known: {', '.join(CONFIGS)}") from None


def _is_audio(feature: Any) -> bool:
    return isinstance(feature, Audio) or (isinstance(feature, List) and isinstance(feature.feature, Audio))


# --------------------------------------------------------------------------------------- audio


def load_waveform(source: Any, *, where: str = "audio") -> np.ndarray:
    """Return a float32 mono waveform at 16 kHz from a path, bytes, a ``{path|bytes|array}`` dict
    or a 1-D array (taken to be at 16 kHz). ``where`` names the value in error messages."""
    sr = SAMPLING_RATE
    if isinstance(source, Mapping):
        if source.get("array") is not None:
            array, sr = np.asarray(source["array"]), int(source.get("sampling_rate", SAMPLING_RATE))
        elif source.get("bytes") is not None:
            return load_waveform(source["bytes"], where=where)
        elif source.get("path"):
            return load_waveform(source["path"], where=where)
        else:
            raise ValueError(f"{where}: audio dict has no array, bytes or path")
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"{where}: audio file not found: {path}")
        try:
            array, sr = sf.read(path, dtype="float32", always_2d=True)
        except Exception as err:  # soundfile raises LibsndfileError/RuntimeError variants
            raise ValueError(f"{where}: cannot read audio file {path}: {err}") from None
        array = array.mean(axis=1)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        try:
            array, sr = sf.read(io.BytesIO(bytes(source)), dtype="float32", always_2d=True)
        except Exception as err:
            raise ValueError(f"{where}: cannot decode audio bytes: {err}") from None
        array = array.mean(axis=1)
    else:
        array = np.asarray(source)
    return resample(check_waveform(array, where), sr)


#: FLAC of the most recently encoded clips, by content: a dialogue's S1/S2/S3 rows, its detection
#: and localization copies and its discrimination record share most of their clips.
_RECENT_FLAC: OrderedDict[bytes, bytes] = OrderedDict()
_RECENT_FLAC_CLIPS = 64

#: FLAC compression levels (soundfile's 0-1 scale: 1.0 is libFLAC's -8), tried in order until the
#: stock decoder reads the clip back bit-exact. FFmpeg 5.1's FLAC parser splits the last frame of a
#: few streams at a false sync code ("invalid residual"); which streams depends on the bits a level
#: writes, so another level of the same samples decodes. All levels keep one container (FLAC).
FLAC_LEVELS = (1.0, 0.0, 0.5, 0.75)


def encode_audio(source: Any, name: str, *, where: str = "audio") -> dict[str, Any]:
    """Encode any accepted audio value as the stored ``{"bytes", "path"}`` struct (16 kHz FLAC).

    The bytes are decoded once by ``datasets``' own decoder (torchcodec on FFmpeg) before they are
    returned: a clip it cannot read back sample for sample is never published."""
    pcm = pcm16(load_waveform(source, where=where))
    key = hashlib.blake2b(pcm.tobytes(), digest_size=16).digest()
    data = _RECENT_FLAC.get(key)
    if data is None:
        data = _RECENT_FLAC[key] = _verified_flac(pcm, where)
        if len(_RECENT_FLAC) > _RECENT_FLAC_CLIPS:
            _RECENT_FLAC.popitem(last=False)
    else:
        _RECENT_FLAC.move_to_end(key)
    return {"bytes": data, "path": f"{name}.flac"}


def pcm16(wave: np.ndarray) -> np.ndarray:
    """16-bit samples of a float waveform, quantized as libsndfile does (x 32768, rounded, clipped)."""
    return np.clip(np.rint(wave * 32768.0), -32768, 32767).astype(np.int16)


def stock_decoder(clip: Mapping[str, Any]):
    """The decoder ``datasets`` gives for a stored clip (torchcodec ``AudioDecoder`` on FFmpeg)."""
    return _AUDIO.decode_example({"bytes": clip["bytes"], "path": clip.get("path")})


def _verified_flac(pcm: np.ndarray, where: str) -> bytes:
    """FLAC of ``pcm`` at the first of ``FLAC_LEVELS`` that ``stock_decoder`` reads back exactly."""
    for level in FLAC_LEVELS:
        buffer = io.BytesIO()
        sf.write(buffer, pcm, SAMPLING_RATE, format=AUDIO_FORMAT, subtype="PCM_16", compression_level=level)
        try:
            decoded = stock_decoder({"bytes": buffer.getvalue()}).get_all_samples().data.numpy()
        except RuntimeError:  # torchcodec's error for a stream FFmpeg rejects
            continue
        if decoded.shape == (1, pcm.size) and np.array_equal(np.rint(decoded[0] * 32768.0), pcm):
            return buffer.getvalue()
    raise ValueError(
        f"{where}: FFmpeg (torchcodec, what datasets decodes with) reads none of the FLAC encodings "
        f"of this clip (compression levels {FLAC_LEVELS}) back sample for sample"
    )


# -------------------------------------------------------------------------------------- writer


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


# ---------------------------------------------------------------------------------------- card


#: The card's YAML key for the shards' digests: ``{path in the folder: SHA-256 hex}``.
DIGESTS_KEY = "shard_sha256"


def shard_digests(root: str | os.PathLike) -> dict[str, str]:
    """The SHA-256 of every parquet shard under ``<variant>/<task>/``, by its path in the folder
    (sorted). A build is deterministic, so a rebuild with the same seed, sources and code has the
    same digests; the card (which holds them) and the histogram are not shards."""
    root = Path(root)
    digests = {}
    for path in sorted(p for spec in CONFIGS.values() for p in (root / spec.data_dir).glob("*.parquet")):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digests[path.relative_to(root).as_posix()] = digest.hexdigest()
    return digests


def card_yaml(out_dir: str | os.PathLike) -> dict[str, Any]:
    """The card's YAML header: one ``configs:`` entry per config with shards on disk, and the
    shards' digests (``DIGESTS_KEY``)."""
    root = Path(out_dir)
    configs = []
    for spec in CONFIGS.values():
        splits = [s for s in SPLITS if any((root / spec.data_dir).glob(f"{s}-*.parquet"))]
        if not splits:
            continue
        entry: dict[str, Any] = {"config_name": spec.name}
        if spec.name == DEFAULT_CONFIG:
            entry["default"] = True
        entry["data_files"] = [{"split": s, "path": f"{spec.data_dir}/{s}-*.parquet"} for s in splits]
        configs.append(entry)
    if not configs:
        raise ValueError(f"{root}: no config has shards; nothing to describe")
    return {
        "pretty_name": "SpeakerSleuth",
        "language": ["en"],
        "task_categories": ["audio-classification"],
        "tags": ["speaker-consistency", "voice-conversion", "dialogue", "audio-language-models"],
        "configs": configs,
        DIGESTS_KEY: shard_digests(root),
    }


def feature_type(feature: Any) -> str:
    """A column's type in words, from its ``datasets`` feature.

    >>> feature_type(TURN_FEATURES["target_audio"]), feature_type(TURN_FEATURES["turns"])
    ('list of audio clips', 'list of {speaker: string, text: string, is_target: bool}')
    """
    if isinstance(feature, Audio):
        return "audio clip"
    if isinstance(feature, List):
        inner = feature.feature
        if isinstance(inner, dict):
            return "list of {" + ", ".join(f"{k}: {feature_type(v)}" for k, v in inner.items()) + "}"
        return "list of " + ("audio clips" if isinstance(inner, Audio) else feature_type(inner))
    return feature.dtype


def data_fields_section(configs: Iterable[str], features_of: Callable[[str], Features] | None = None) -> str:
    """The card's data-fields tables: per distinct features of ``configs`` (config names; their
    features by ``features_of``, by default the config's own), every column with its type
    (``feature_type``) and meaning (``COLUMN_DESCRIPTIONS``), under a heading that names the configs
    it describes."""
    features_of = features_of or (lambda name: get_config(name).features)
    groups: dict[tuple, tuple[list[str], list[str]]] = {}
    for name in configs:
        rows = [
            f"| `{column}` | {feature_type(feature)} | {COLUMN_DESCRIPTIONS[column]} |"
            for column, feature in features_of(name).items()
        ]
        groups.setdefault(tuple(rows), ([], rows))[0].append(name)
    return "\n\n".join(
        "\n".join(
            [f"### {', '.join(f'`{n}`' for n in names)}", "", "| column | type | meaning |", "|---|---|---|", *rows]
        )
        for names, rows in groups.values()
    )


def size_category(rows: int) -> str:
    """The Hub's size bucket for ``rows`` rows (the ``size_categories`` values ``datasets`` lists).

    >>> size_category(999), size_category(1000), size_category(1050), size_category(10**4)
    ('n<1K', '1K<n<10K', '1K<n<10K', '10K<n<100K')
    """
    import importlib.resources
    import json

    names = json.loads(
        importlib.resources.files("datasets.utils.resources").joinpath("size_categories.json").read_text()
    )
    buckets = [name for name in names if name != "unknown"]  # n<1K, 1K<n<10K, ... n>1T: one per power of ten
    return buckets[min(max(len(str(rows)) - 3, 0), len(buckets) - 1)]


def shard_metadata(out_dir: str | os.PathLike, configs: list[dict[str, Any]]) -> dict[str, Any]:
    """The card's ``dataset_info`` (per config: features, rows and bytes per split, download and
    dataset size) and ``size_categories`` (the rows of every config and split, as the Hub's viewer
    counts them), read from the parquet metadata of the shards ``configs`` point at. ``num_bytes``
    is the uncompressed size of a split's data, ``download_size`` the size of its files."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    root, infos = Path(out_dir), DatasetInfosDict()
    for entry in configs:
        splits, schemas, paths = SplitDict(), set(), []
        for files in entry["data_files"]:
            found = sorted(root.glob(files["path"]))
            metas = [pq.ParquetFile(path).metadata for path in found]
            schemas |= {meta.schema.to_arrow_schema() for meta in metas}
            splits.add(
                SplitInfo(
                    name=files["split"],
                    num_examples=sum(m.num_rows for m in metas),
                    num_bytes=sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups)),
                )
            )
            paths += found
        if len(schemas) != 1:
            raise ValueError(
                f"{root}: config {entry['config_name']!r}: its splits' shards have {len(schemas)} different schemas"
            )
        infos[entry["config_name"]] = DatasetInfo(
            features=Features.from_arrow_schema(schemas.pop()),
            splits=splits,
            download_size=sum(p.stat().st_size for p in paths),
            dataset_size=sum(s.num_bytes for s in splits.values()),
        )
    card = DatasetCardData()
    infos.to_dataset_card_data(card)
    rows = sum(split.num_examples for info in infos.values() for split in info.splits.values())
    return {"size_categories": [size_category(rows)], "dataset_info": card["dataset_info"]}


def write_card(out_dir: str | os.PathLike, body: str, **yaml_overrides: Any) -> Path:
    """Write ``<out>/README.md``: generated YAML header plus ``body`` (markdown). ``yaml_overrides``
    (e.g. the build's ``license``, a blind copy's ``configs``) replace generated keys, except
    ``shard_metadata``'s, which always describe the shards on disk."""
    import yaml

    header = card_yaml(out_dir) | yaml_overrides
    header |= shard_metadata(out_dir, header["configs"])
    text = "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + body.strip() + "\n"
    return write_text_atomic(Path(out_dir) / "README.md", text)


# ------------------------------------------------------------------------------------- readers


def load(config: str = DEFAULT_CONFIG, split: str = "test", root: str | os.PathLike = "speakersleuth", **kwargs):
    """``datasets.load_dataset`` on a built folder, by absolute path, so no Hub lookup happens."""
    from datasets import load_dataset

    get_config(config)
    root = Path(root).resolve()
    if not (root / "README.md").is_file():
        raise FileNotFoundError(f"{root}: not a SpeakerSleuth folder (no README.md); build one first")
    return load_dataset(str(root), config, split=split, **kwargs)


#: The audio columns of any config: ``collate`` decodes and pads them.
AUDIO_COLUMNS = frozenset(column for spec in CONFIGS.values() for column in spec.audio_columns)


def collate(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Batch rows of any config for a torch ``DataLoader`` (``DataLoader(ds, collate_fn=collate)``).

    Each audio column is decoded (the ``AudioDecoder`` that ``datasets`` yields, also under
    ``with_format("torch")`` or after ``cast_column(c, List(Audio(sampling_rate=...)))``; or a
    stored ``{"bytes": ...}`` clip) and zero-padded into a float32 tensor: ``reference_audio`` as
    ``(batch, samples)``, a list-of-clips column (``target_audio``, ``context_audio``,
    ``candidates``) as ``(batch, clips, samples)``. Beside it go ``<column>_lengths`` (int64, the
    samples of each clip), ``<column>_mask`` (bool, True on real samples) and
    ``<column>_sampling_rate``. Every other column is a list of the rows' values, as read.
    """
    import torch

    batch: dict[str, Any] = {}
    for column in rows[0]:
        values = [row[column] for row in rows]
        if column not in AUDIO_COLUMNS:
            batch[column] = values
            continue
        single = not isinstance(values[0], (list, tuple))
        decoded = [
            [_samples(c, f"row {i} column {column}") for c in ([v] if single else v)] for i, v in enumerate(values)
        ]
        rates = {rate for clips in decoded for _, rate in clips}
        if len(rates) > 1:
            raise ValueError(f"collate: column {column} mixes sampling rates {sorted(rates)}; cast it to one")
        lengths = torch.zeros(len(rows), max(len(clips) for clips in decoded), dtype=torch.int64)
        for i, clips in enumerate(decoded):
            lengths[i, : len(clips)] = torch.tensor([wave.numel() for wave, _ in clips], dtype=torch.int64)
        audio = torch.zeros(*lengths.shape, int(lengths.max()) if lengths.numel() else 0)
        for i, clips in enumerate(decoded):
            for j, (wave, _) in enumerate(clips):
                audio[i, j, : wave.numel()] = wave
        mask = torch.arange(audio.shape[-1]) < lengths[..., None]
        if single:
            audio, lengths, mask = audio[:, 0], lengths[:, 0], mask[:, 0]
        batch |= {
            column: audio,
            f"{column}_lengths": lengths,
            f"{column}_mask": mask,
            f"{column}_sampling_rate": rates.pop() if rates else None,
        }
    return batch


def _samples(clip: Any, where: str):
    """A clip's mono float32 samples (a 1-D tensor) and its sampling rate."""
    if isinstance(clip, Mapping):
        if clip.get("bytes") is None:
            raise ValueError(f"collate: {where} is a dict without audio bytes (keys {sorted(clip)})")
        clip = stock_decoder(clip)
    if not hasattr(clip, "get_all_samples"):
        raise ValueError(f"collate: {where} is a {type(clip).__name__}, not a decoded audio clip")
    samples = clip.get_all_samples()
    return samples.data.float().mean(dim=0), int(samples.sample_rate)


#: A Hub repository id: ``owner/name``.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def local_folder(
    value: str | os.PathLike,
    what: str = "dataset",
    *,
    token: str | None = None,
    local_dir: str | os.PathLike | None = None,
) -> Path:
    """A dataset (or gold) given as a folder or a Hub dataset id (``owner/name``) as a local folder:
    the folder itself, or a snapshot of the Hub repository (into ``local_dir``, else the Hub cache).
    Raises ValueError, one line naming ``what`` and ``value``, for anything else or a failed download.

    >>> local_folder("/no/such/folder")
    Traceback (most recent call last):
    ...
    ValueError: dataset /no/such/folder: no such folder, and not a Hub dataset id (owner/name)
    """
    text = os.fspath(value)
    path = Path(text).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists() or not HUB_ID.fullmatch(text):
        raise ValueError(
            f"{what} {text}: "
            + ("not a folder" if path.exists() else "no such folder")
            + ", and not a Hub dataset id (owner/name)"
        )
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(snapshot_download(text, repo_type="dataset", token=token, local_dir=local_dir)).resolve()
    except (HfHubHTTPError, LocalEntryNotFoundError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"{what} {text}: no such folder here, and the Hub dataset could not be fetched ({reason})"
        ) from None


def shard_paths(root: str | os.PathLike, config: str, split: str = "test") -> list[Path]:
    spec = get_config(config)
    return sorted((Path(root) / spec.data_dir).glob(f"{split}-*.parquet"))


def tasks_present(root: str | os.PathLike, variant: str, split: str = "test") -> list[str]:
    """The tasks of ``variant`` with shards of ``split`` in the built folder ``root``, in schema order."""
    return [t for t in TASKS if shard_paths(root, config_name(t, variant), split)]


def variants_present(root: str | os.PathLike, split: str = "test", *, every_task: bool = False) -> list[str]:
    """The variants with shards of ``split`` in the built folder ``root``, in schema order: of at
    least one task, or (``every_task``) of all three."""
    wanted = len(TASKS) if every_task else 1
    return [v for v in VARIANTS if len(tasks_present(root, v, split)) >= wanted]


def read_rows(
    root: str | os.PathLike,
    config: str,
    split: str = "test",
    *,
    columns: list[str] | None = None,
    ids: Iterable[str] | None = None,
) -> pa.Table:
    """Read rows of a config straight from its shards (audio stays encoded bytes).

    ``columns`` limits what is read (audio columns are the bulk of a shard); ``ids`` reads only
    those instances, using parquet's filter, so a viewer can fetch one instance per click.
    """
    spec = get_config(config)
    paths = shard_paths(root, config, split)
    if not paths:
        raise FileNotFoundError(f"{Path(root) / spec.data_dir}: no {split} shards for config {config!r}")
    filters = None
    if ids is not None:
        filters = [("id", "in", list(ids))]
    tables = [pq.read_table(p, columns=columns, filters=filters) for p in paths]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


GOLD_COLUMNS = {
    "detection": ["id", "dialogue_id", "source_dataset", "scenario", "label", "target_turn_positions"],
    "localization": ["id", "dialogue_id", "source_dataset", "scenario", "inconsistent_turns", "target_turn_positions"],
    "discrimination": ["id", "dialogue_id", "source_dataset", "candidate_labels", "answer", "gold_ranking"],
}


def read_gold(root: str | os.PathLike, variant: str = "main", split: str = "test") -> dict[str, list[dict]]:
    """Gold labels of every task present for a variant, without reading audio, from a built folder
    or the gold folder of a blind copy (``write_blind``).

    Returns ``{task: [row, ...]}``; turn-task rows carry ``num_target_turns``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    if not Path(root).is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    gold = {}
    for task in TASKS:
        name = config_name(task, variant)
        paths = shard_paths(root, name, split)
        if not paths:
            continue
        if not set(GOLD_COLUMNS[task]) <= set(pq.read_schema(paths[0]).names):
            raise ValueError(
                f"{root}: the {split} split of {name!r} holds no gold: this is a blind copy's public "
                "folder; its gold is the folder that `blind --gold-out` wrote (python -m metrics.score --gold <gold_dir>)"
            )
        rows = read_rows(root, name, split, columns=GOLD_COLUMNS[task]).to_pylist()
        for row in rows:
            if "target_turn_positions" in row:
                row["num_target_turns"] = len(row.pop("target_turn_positions"))
        gold[task] = rows
    if not gold:
        raise FileNotFoundError(f"{root}: no {split} shards for variant {variant!r}")
    return gold


# ------------------------------------------------------------------------------------ blind copy

#: Columns of a test row that give away its gold, how it was made, or its dialogue (and so the
#: S1/S2/S3 rows that belong together): a blind copy's test split leaves them out.
BLIND_COLUMNS = (
    "dialogue_id",
    "label",
    "inconsistent_turns",
    "scenario",
    "converted_turn",
    "vc_model",
    "substitute_speaker",
    "substitute_gender",
    "substitute_similarity",
    "candidate_scenarios",
    "candidate_substitute_speakers",
    "candidate_similarities",
    "answer",
    "gold_ranking",
)
BLIND_NOTE = """## Blind test split

This is the blind copy of the build: the test split has no gold or provenance column, its ids are a
keyed hash of the build's ids under a secret that is not published, and its rows are in the order of
those ids. Submissions are scored against the private gold (on the leaderboard Space, or with
`python -m metrics.score --predictions predictions.jsonl --dataset <public copy> --gold <gold_dir>`). The validation split keeps its labels,
as the configs `<config>-validation` (e.g. `load_dataset(path, "detection-validation", split="validation")`)."""
#: Paragraphs of the build card's introduction that a blind card leaves out (they speak of gold
#: columns and of S1/S2/S3 sharing a dialogue), by their first words; and the sections it keeps.
BUILD_CARD_TEST_PARAGRAPHS = ("Judge each instance on its own", "Report results on `test`")
BUILD_CARD_PUBLIC_SECTIONS = ("Data fields", "Using the data in a training loop", "Sources and licenses", "Citation")
#: What the blind card says of the rows that share clips: paired (every row kept) or unpaired.
BLIND_PAIRING_NOTE = {
    False: "A dialogue's S1, S2 and S3 rows (and its discrimination row) share every clip but the "
    "altered one, so rows can be regrouped by their audio and compared; this copy keeps them "
    "all (paired accuracy can be scored). A leaderboard that must not leak the altered turn "
    "publishes the `--unpaired` copy.",
    True: "This copy is unpaired: it keeps one test instance per dialogue, and no two of its test "
    "rows share a dialogue or hold the same audio, so rows cannot be regrouped to find the "
    "altered turn. Paired accuracy needs a dialogue's three scenarios and is not scored on it.",
}


def blind_features(config: str) -> Features:
    """The features of a config's test split in a blind copy: the config's without ``BLIND_COLUMNS``."""
    return Features({k: v for k, v in get_config(config).features.items() if k not in BLIND_COLUMNS})


def is_blind(root: str | os.PathLike, split: str = "test") -> bool:
    """Whether ``root`` is a blind copy: its first config with ``split`` shards has no gold column."""
    for spec in CONFIGS.values():
        paths = shard_paths(root, spec.name, split)
        if paths:
            return not set(BLIND_COLUMNS) & set(pq.read_schema(paths[0]).names)
    return False


def public_id(secret: bytes, instance_id: str) -> str:
    """The blind id of an instance: HMAC-SHA256 of its id under ``secret`` (128 bits, hex)."""
    return hmac.new(secret, instance_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def instance_groups(folder: str | os.PathLike, split: str = "test") -> dict[str, int]:
    """Instance id -> group: two instances are in one group when they come from one dialogue (where
    the folder has ``dialogue_id``) or any of their clips hold the same samples (decoded, so a
    re-encoding does not hide them), directly or through a chain of others.

    A dialogue's S1, S2 and S3 share every clip but one, its discrimination row holds the same
    turns, and the variants of a dialogue share its text (a backend that resynthesises the
    original turns changes their samples, not their words): comparing the rows of a group shows
    which turn differs, and so the gold. Detection and localization rows of an instance share
    its id and count once.
    """
    parent: dict[str, str] = {}

    def root(rid: str) -> str:
        while parent[rid] != rid:
            parent[rid] = parent[parent[rid]]
            rid = parent[rid]
        return rid

    owner: dict[bytes | str, str] = {}  # samples digest or dialogue -> the first instance holding it
    digests: dict[bytes, bytes] = {}  # encoded bytes digest -> samples digest (decode each clip once)
    for spec in CONFIGS.values():
        for path in shard_paths(folder, spec.name, split):
            columns = ["id", *spec.audio_columns] + (
                ["dialogue_id"] if "dialogue_id" in pq.read_schema(path).names else []
            )
            for row in pq.read_table(path, columns=columns).to_pylist():
                rid = row["id"]
                parent.setdefault(rid, rid)
                if "dialogue_id" in row:
                    parent[root(rid)] = root(owner.setdefault(row["dialogue_id"], rid))
                for column in spec.audio_columns:
                    clips = row[column] if isinstance(spec.features[column], List) else [row[column]]
                    for clip in clips or []:
                        encoded = hashlib.sha256(clip["bytes"]).digest()
                        if encoded not in digests:
                            samples, rate = sf.read(io.BytesIO(clip["bytes"]), dtype="int16")
                            digests[encoded] = hashlib.sha256(samples.tobytes() + str(rate).encode()).digest()
                        first = owner.setdefault(digests[encoded], rid)
                        parent[root(rid)] = root(first)
    roots = {rid: root(rid) for rid in parent}
    number = {r: i for i, r in enumerate(dict.fromkeys(roots.values()))}
    return {rid: number[r] for rid, r in roots.items()}


def unpaired_instances(folder: str | os.PathLike, rng) -> set[str]:
    """One test instance per ``instance_groups`` group: no two kept instances share a dialogue or a clip.

    Groups are visited in ``rng``'s order and each keeps the instance whose slot (variant and
    scenario, or discrimination) has kept the fewest so far, ties drawn by ``rng``: the slots
    stay balanced, and which of a dialogue's rows survives depends only on ``rng``.
    """
    slot: dict[str, tuple[str, str]] = {}
    for variant in variants_present(folder):
        for task, rows in read_gold(folder, variant).items():
            for row in rows:
                slot[row["id"]] = (variant, row.get("scenario") or "discrimination")
    members: dict[int, list[str]] = {}
    for rid, group in instance_groups(folder).items():
        members.setdefault(group, []).append(rid)
    kept, filled = set(), Counter()
    groups = sorted(members.values())
    rng.shuffle(groups)
    for ids in groups:
        rng.shuffle(ids)
        choice = min(ids, key=lambda rid: filled[slot[rid]])
        filled[slot[choice]] += 1
        kept.add(choice)
    return kept


#: Seeds below this are guessable: the altered turn and the candidate order of an instance follow
#: from the seed and its dialogue (public text), so a leaderboard build needs a secret, random seed.
GUESSABLE_SEEDS = 2**48
SECRET_SEED_HINT = "build it with a secret seed: --seed $(python -c 'import secrets; print(secrets.randbits(63))')"


def _check_blind_paths(folder: Path, public: Path, gold: Path) -> None:
    if not folder.exists():
        raise FileNotFoundError(f"{folder}: no such folder")
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder; blind reads a built dataset folder")
    for path in (public, gold):
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(f"{path}: exists and is not an empty folder; blind writes a new one")
    paths = [p.resolve() for p in (folder, public, gold)]
    if any(a == b or a in b.parents for a in paths for b in paths if a is not b):
        raise ValueError(
            "the build, the public copy and the gold folder must be three separate folders, none inside another"
        )
    cwd = Path.cwd().resolve()
    for path in (public, gold):
        if path.resolve() == cwd or path.resolve() in cwd.parents:
            raise ValueError(
                f"{path}: the current folder or one above it; blind writes a new folder (e.g. {path / 'public'})"
            )
    if is_blind(folder):
        raise ValueError(f"{folder}: already a blind copy; blind a full build")
    test = [p for spec in CONFIGS.values() for p in shard_paths(folder, spec.name, "test")]
    if not test:
        raise ValueError(f"{folder}: no test shards under <variant>/<task>/; blind a built dataset folder")
    if "source_id" in pq.read_schema(test[0]).names:
        raise ValueError(f"{folder}: the gold folder of a blind copy; blind a full build")


def build_seed_known(header: Mapping[str, Any]) -> bool:
    """Whether a build card's seed is known: not recorded, or below ``GUESSABLE_SEEDS`` (a blind
    copy's cards record it as ``SEED_KNOWN_KEY``)."""
    seed = header.get("build_seed")
    return not isinstance(seed, int) or seed < GUESSABLE_SEEDS


#: The key of a blind copy's public card and gold card that records ``build_seed_known``.
SEED_KNOWN_KEY = "seed_known"


def _check_build_seed(folder: Path, header: Mapping[str, Any]) -> None:
    """Refuse a build whose seed is unknown or guessable (``GUESSABLE_SEEDS``)."""
    seed = header.get("build_seed")
    if not isinstance(seed, int):
        raise ValueError(
            f"{folder}/README.md: the card does not record the build's seed (build_seed), so it may be "
            f"guessable; {SECRET_SEED_HINT}, or pass --allow-known-seed"
        )
    if seed < GUESSABLE_SEEDS:
        raise ValueError(
            f"{folder}: built with seed {seed}, which anyone can try: the altered turns and candidate "
            f"orders would follow from it and the public text; {SECRET_SEED_HINT}, or pass --allow-known-seed"
        )


def _read_card(folder: Path) -> tuple[dict[str, Any], str]:
    """The build card's YAML header and markdown body (empty when there is no card)."""
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").is_file() else ""
    if not text.startswith("---\n"):
        return {}, text
    _, head, body = text.split("---\n", 2)
    return yaml.safe_load(head) or {}, body


def write_blind(
    folder: str | os.PathLike,
    public: str | os.PathLike,
    gold: str | os.PathLike,
    *,
    unpaired: bool = False,
    allow_known_seed: bool = False,
) -> dict[str, int]:
    """Write the blind copy of the built ``folder`` to ``public`` and its test gold to ``gold``
    (see the module docstring); returns ``{config/split: rows}``. Both are written beside their
    place and moved there when complete (or neither is); the secret of the ids is drawn here and
    kept nowhere. ``unpaired`` keeps one test instance per group of instances that share a
    dialogue or a clip (``unpaired_instances``), chosen from the build's seed, so that every
    blind copy of a build keeps the same instances and copies cannot be pooled to pair them up;
    ``allow_known_seed`` blinds a build whose seed is guessable (a demo: its gold can be recomputed)."""
    folder, public, gold = Path(folder), Path(public).absolute(), Path(gold).absolute()
    _check_blind_paths(folder, public, gold)
    header, body = _read_card(folder)
    if not allow_known_seed:
        _check_build_seed(folder, header)
    secret = secrets.token_bytes(32)
    keep = unpaired_instances(folder, random.Random(f"unpaired/{header.get('build_seed')}")) if unpaired else None
    staging: dict[Path, Path] = {}
    placed: list[Path] = []
    try:
        for path in (public, gold):
            staging[path] = _staging_folder(path)
        os.chmod(staging[public], 0o777 & ~_umask())  # the public copy is for everyone; the gold stays 0700
        counts = {}
        for spec in CONFIGS.values():
            for split in SPLITS:
                paths = shard_paths(folder, spec.name, split)
                if paths and split != "test":  # the labelled validation split, as built
                    (staging[public] / spec.data_dir).mkdir(parents=True, exist_ok=True)
                    for path in paths:
                        shutil.copy2(path, staging[public] / spec.data_dir / path.name)
                    counts[f"{spec.name}/{split}"] = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
            if shard_paths(folder, spec.name, "test"):
                counts[f"{spec.name}/test"] = _blind_config(folder, spec, secret, staging[public], staging[gold], keep)
        _write_blind_cards(header, body, staging[public], staging[gold], unpaired)
        for path in (gold, public):  # a public copy without its gold could never be scored
            if path.exists():
                path.rmdir()
            os.replace(staging[path], path)  # the staging folder is gone; the cleanup below skips it
            placed.append(path)
    except BaseException:
        for path in placed:  # new folders (or empty ones) that this call filled
            shutil.rmtree(path, ignore_errors=True)
        raise
    finally:
        for temporary in staging.values():
            shutil.rmtree(temporary, ignore_errors=True)
    return counts


def _staging_folder(path: Path) -> Path:
    """A new hidden folder beside ``path`` to write it in; an error names ``path`` if there is no such place."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    except OSError as err:
        raise OSError(err.errno, f"{path}: cannot write a folder here ({err.strerror})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _blind_config(
    folder: Path, spec: ConfigSpec, secret: bytes, public: Path, gold: Path, keep: set[str] | None
) -> int:
    """One config's test split: the public shards (blind columns out, ids hashed, rows in id order)
    and the gold table (every column but audio, under the public id, with the build's ``source_id``);
    only the instances in ``keep`` when given. Returns the rows written: none, and no test split,
    when ``keep`` holds none of the config's (an empty shard is not a split ``datasets`` can load)."""
    table = pa.concat_tables([pq.read_table(p) for p in shard_paths(folder, spec.name, "test")])
    if keep is not None:
        table = table.filter(pc.is_in(table.column("id"), pa.array(sorted(keep), pa.string())))
    if not table.num_rows:
        return 0
    source_ids = table.column("id").to_pylist()
    ids = [public_id(secret, rid) for rid in source_ids]
    table = table.set_column(table.schema.get_field_index("id"), "id", pa.array(ids, pa.string()))
    table = table.append_column("source_id", pa.array(source_ids, pa.string())).take(np.argsort(ids, kind="stable"))
    (gold / spec.data_dir).mkdir(parents=True)
    keep = [c for c in table.column_names if c not in spec.audio_columns]
    pq.write_table(table.select(keep), gold / spec.data_dir / "test-00000-of-00001.parquet")
    features = blind_features(spec.name)
    visible = _clips_named_by_id(table.select(list(features)), spec).cast(features.arrow_schema)
    n = max(1, -(-visible.nbytes // MAX_SHARD_BYTES))
    (public / spec.data_dir).mkdir(parents=True, exist_ok=True)  # the validation shards may be there
    for i, rows in enumerate(np.array_split(np.arange(visible.num_rows), n)):
        pq.write_table(
            visible.take(rows), public / spec.data_dir / f"test-{i:05d}-of-{n:05d}.parquet", row_group_size=32
        )
    return table.num_rows


def _clips_named_by_id(table: pa.Table, spec: ConfigSpec) -> pa.Table:
    """The clips' file names (``path``) made from the row's public id: the build's names carry its ids."""
    ids = table.column("id").to_pylist()
    for column in spec.audio_columns:
        values = table.column(column).combine_chunks()
        if pa.types.is_list(values.type):
            lengths = values.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
            names = [f"{rid}-{column}-{i}.flac" for rid, n in zip(ids, lengths) for i in range(n)]
            clips = pa.StructArray.from_arrays(
                [values.flatten().field("bytes"), pa.array(names, pa.string())], ["bytes", "path"]
            )
            values = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32()), clips)
        else:
            names = [f"{rid}-{column}.flac" for rid in ids]
            values = pa.StructArray.from_arrays(
                [values.field("bytes"), pa.array(names, pa.string())], ["bytes", "path"]
            )
        table = table.set_column(table.schema.get_field_index(column), column, values)
    return table


def blind_card_configs(public: str | os.PathLike) -> list[dict[str, Any]]:
    """The card's ``configs:`` of a blind copy: a config's labelled validation split has other
    columns than its blind test split, and a ``datasets`` config has one set of features, so the
    validation split is its own config, ``<config>-validation``.

    >>> blind_card_configs("/nowhere")[0]["config_name"]
    Traceback (most recent call last):
    ...
    ValueError: /nowhere: no config has shards; nothing to describe
    """
    configs = []
    for entry in card_yaml(public)["configs"]:
        for files in entry["data_files"]:
            name = entry["config_name"] + ("" if files["split"] == "test" else f"-{files['split']}")
            configs.append({**entry, "config_name": name, "data_files": [files]})
            if files["split"] != "test":
                configs[-1].pop("default", None)
    return configs


def blind_card_body(body: str, counts: Mapping[str, int], unpaired: bool, data_fields: str = "") -> str:
    r"""The public card's body, from the build card's ``body``: its introduction without the
    paragraphs on gold columns and on the test split, ``BLIND_NOTE`` and ``BLIND_PAIRING_NOTE``,
    the public row ``counts``, the build's data-fields section with its tables replaced by
    ``data_fields`` (the copy's configs; none when empty), its training-loop section and its sources
    and citation. The build's statistics,
    conversion, verification and audit sections are left out: they describe the full build (its
    seed, its row counts).

    >>> print(blind_card_body("# T\n\nTasks.\n\nJudge each instance on its own: ...\n\n## Statistics\n\nx\n\n## Citation\n\nc",
    ...                       {"detection/test": 3}, True))  # doctest: +ELLIPSIS
    # T
    <BLANKLINE>
    Tasks.
    <BLANKLINE>
    ## Blind test split
    ...
    | detection | test | 3 |
    <BLANKLINE>
    ## Citation
    <BLANKLINE>
    c
    """
    intro, *sections = re.split(r"(?m)^(?=## )", body.strip())
    kept_intro = [p for p in intro.strip().split("\n\n") if not p.startswith(BUILD_CARD_TEST_PARAGRAPHS)]
    table = "\n".join(
        ["| config | split | rows |", "|---|---|---|"]
        + [f"| {k.split('/')[0]} | {k.split('/')[1]} | {n} |" for k, n in counts.items()]
    )
    kept = [s.strip() for s in sections if s.split("\n", 1)[0][3:].strip() in BUILD_CARD_PUBLIC_SECTIONS]
    kept = [_with_field_tables(s, data_fields) if s.startswith("## Data fields") else s for s in kept]
    return "\n\n".join([*kept_intro, BLIND_NOTE, BLIND_PAIRING_NOTE[unpaired], "## Rows\n\n" + table, *kept])


def _with_field_tables(section: str, tables: str) -> str:
    """A card's data-fields ``section`` with its tables (the ``###`` headings and ``|`` rows) replaced by ``tables``."""
    heading, *paragraphs = section.split("\n\n")
    prose = [p for p in paragraphs if not p.startswith(("### ", "|"))]
    return "\n\n".join([heading, *filter(None, [tables]), *prose])


def _write_blind_cards(header: Mapping[str, Any], body: str, public: Path, gold: Path, unpaired: bool) -> None:
    """The public card (``blind_card_body``; configs as ``blind_card_configs``, no ``build_seed``)
    and the gold folder's README, which says it must stay private."""
    counts = {
        f"{spec.name}/{split}": sum(pq.ParquetFile(p).metadata.num_rows for p in shard_paths(public, spec.name, split))
        for spec in CONFIGS.values()
        for split in SPLITS
        if shard_paths(public, spec.name, split)
    }
    known = build_seed_known(header)
    header = {k: v for k, v in header.items() if k not in ("build_seed", DIGESTS_KEY)} | {
        "configs": blind_card_configs(public),
        SEED_KNOWN_KEY: known,
    }
    names = [entry["config_name"] for entry in header["configs"]]
    fields = data_fields_section(
        names,
        lambda name: (
            get_config(name.removesuffix("-validation")).features
            if name.endswith("-validation")
            else blind_features(name)
        ),
    )
    write_card(public, blind_card_body(body, counts, unpaired, fields), **header)
    write_text_atomic(
        gold / "README.md",
        (
            f"---\n{SEED_KNOWN_KEY}: {'true' if known else 'false'}\n---\n"
            "# SpeakerSleuth test gold (private)\n\n"
            + (
                "The build's seed is known (a demo): this gold can be recomputed from the seed and the public text. "
                if known
                else ""
            )
            + "The gold of a blind copy's test split, under its public ids "
            "(`source_id` is the build's id). Keep this folder private: score with "
            "`python -m metrics.score --predictions predictions.jsonl --dataset <public copy> --gold <this folder>` or give it to the Space "
            "(`--gold` / `SPEAKERSLEUTH_GOLD`).\n"
        ),
    )


# ----------------------------------------------------------------------------------- validator


class DatasetValidationError(ValueError):
    """A dataset folder that breaks the schema; ``errors`` lists every problem found."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__(f"{len(errors)} problem(s):\n" + "\n".join(f"- {e}" for e in errors))


def validate_folder(root: str | os.PathLike, *, check_audio: bool = True, max_errors: int = 200) -> dict[str, int]:
    """Check a built folder; returns ``{config/split: rows}`` or raises ``DatasetValidationError``.

    Checks: the card parses and its configs point at existing shards; every shard's schema equals
    the config's features; ids are unique; detection and localization hold the same ids; labels
    agree with provenance (S1 <=> consistent <=> no inconsistent turn; S2/S3 <=> exactly the
    converted turn); turn lists agree with target positions; discrimination candidates, answer and
    gold ranking agree, and no candidate is in the context; with ``check_audio`` every clip decodes
    through ``datasets``' own decoder (torchcodec on FFmpeg), 16 kHz mono and not empty; every
    shard has the SHA-256 the card records (``check_digests``). A problem is named by config,
    split, row (its index in ``load_dataset``'s split), id, shard and column.
    """
    root = Path(root)
    if not root.is_dir():
        raise DatasetValidationError([f"{root}: no such folder"])
    if check_audio and importlib.util.find_spec("torchcodec") is None:
        raise DatasetValidationError(
            [
                f"{root}: decoding every clip as datasets does needs torchcodec: "
                f"pip install 'speakersleuth[audio]', or check the rest with --skip-audio (check_audio=False)"
            ]
        )
    blind = is_blind(root)
    errors = _check_card(root, blind) + check_digests(root)
    ids_by_split: dict[str, list[str]] = {}
    for spec in CONFIGS.values():
        for split in SPLITS:
            paths = shard_paths(root, spec.name, split)
            if paths and len(errors) <= max_errors:
                ids, split_errors = _check_split(root, spec, split, paths, check_audio, blind and split == "test")
                ids_by_split[f"{spec.name}/{split}"] = ids
                errors += split_errors
    errors += _check_shared_ids(ids_by_split)
    if not ids_by_split:
        errors.append(f"{root}: no parquet shards found under <variant>/<task>/")
    if len(errors) > max_errors:
        errors = errors[:max_errors] + [f"... and {len(errors) - max_errors} more"]
    if errors:
        raise DatasetValidationError(errors)
    return {key: len(ids) for key, ids in ids_by_split.items()}


def check_digests(root: str | os.PathLike) -> list[str]:
    """One line per shard that does not match the card's ``DIGESTS_KEY``: another SHA-256, listed
    but missing, or on disk but not listed. Empty when all match, or when the card records no
    digests (a build made before they were recorded: ``card_digests`` is then None)."""
    expected = card_digests(root)
    if expected is None:
        return []
    actual = shard_digests(root)
    errors = []
    for path in sorted(set(expected) | set(actual)):
        if path not in actual:
            errors.append(f"{path}: listed in the card's {DIGESTS_KEY} but missing")
        elif path not in expected:
            errors.append(f"{path}: a shard the card's {DIGESTS_KEY} does not list")
        elif actual[path] != expected[path]:
            errors.append(
                f"{path}: SHA-256 {actual[path]} differs from the card's {expected[path]} "
                "(changed since the card was written, or a rebuild that differs)"
            )
    return errors


def card_digests(root: str | os.PathLike) -> dict[str, str] | None:
    """The card's shard digests (``DIGESTS_KEY``), or None when it records none."""
    digests = _read_card(Path(root))[0].get(DIGESTS_KEY)
    return None if digests is None else {str(k): str(v) for k, v in digests.items()}


def _check_split(
    root: Path, spec: ConfigSpec, split: str, paths: list[Path], check_audio: bool, blind: bool
) -> tuple[list[str], list[str]]:
    """The ids and the problems of one config's split, row by row over its shards; a ``blind``
    split (a blind copy's test split) has ``blind_features`` and no gold to check."""
    features = blind_features(spec.name) if blind else spec.features
    ids: list[str] = []
    errors: list[str] = []
    for path in paths:
        rel = path.relative_to(root)
        try:
            schema = pq.read_schema(path)
        except Exception as err:
            errors.append(f"{rel}: not a readable parquet file ({err})")
            continue
        if not schema.remove_metadata().equals(features.arrow_schema.remove_metadata()):
            errors.append(f"{rel}: schema differs from the {spec.name} features: {_schema_diff(schema, features)}")
            continue
        for i, row in enumerate(pq.read_table(path).to_pylist()):
            where = f"config {spec.name} split {split} row {len(ids)} (id {row['id']!r}, {rel} row {i})"
            errors += _check_row(spec, row, where, check_audio, gold=not blind)
            ids.append(row["id"])
    seen: set[str] = set()
    for rid in ids:
        if rid in seen:
            errors.append(f"{spec.data_dir}/{split}: duplicate id {rid!r}")
        seen.add(rid)
    return ids, errors


def _check_shared_ids(ids_by_split: dict[str, list[str]]) -> list[str]:
    """Detection and localization of a variant and split must hold the same instances."""
    errors = []
    for variant in VARIANTS:
        for split in SPLITS:
            det = ids_by_split.get(f"{config_name('detection', variant)}/{split}")
            loc = ids_by_split.get(f"{config_name('localization', variant)}/{split}")
            if det is not None and loc is not None and set(det) != set(loc):
                only_d, only_l = sorted(set(det) - set(loc)), sorted(set(loc) - set(det))
                errors.append(
                    f"{variant}/{split}: detection and localization ids differ "
                    f"(only in detection: {only_d[:5]}, only in localization: {only_l[:5]})"
                )
    return errors


def _schema_diff(schema: pa.Schema, features: Features) -> str:
    expected = features.arrow_schema
    missing = [n for n in expected.names if n not in schema.names]
    extra = [n for n in schema.names if n not in expected.names]
    wrong = [
        f"{n}: {schema.field(n).type} instead of {expected.field(n).type}"
        for n in expected.names
        if n in schema.names and not schema.field(n).type.equals(expected.field(n).type)
    ]
    return (
        "; ".join(
            p
            for p in (
                f"missing {missing}" if missing else "",
                f"unexpected {extra}" if extra else "",
                ", ".join(wrong),
            )
            if p
        )
        or "column order differs"
    )


def _check_card(root: Path, blind: bool) -> list[str]:
    """The card's configs and their files; a blind copy's labelled validation splits are the
    configs ``<config>-validation`` (``blind_card_configs``)."""
    from huggingface_hub import DatasetCard

    readme = root / "README.md"
    if not readme.is_file():
        return [f"{root}: README.md (the dataset card) is missing"]
    try:
        card = DatasetCard.load(readme)
    except Exception as err:
        return [f"README.md: dataset card does not parse ({err})"]
    configs = card.data.to_dict().get("configs") or []
    if not configs:
        return ["README.md: the card has no `configs:` block"]
    errors = []
    for entry in configs:
        name = entry.get("config_name")
        if name not in CONFIGS and not (blind and str(name).removesuffix("-validation") in CONFIGS):
            errors.append(f"README.md: unknown config {name!r}")
            continue
        for files in entry.get("data_files", []):
            if not list(root.glob(files["path"])):
                errors.append(
                    f"README.md: config {name!r} split {files['split']!r}: no file matches {files['path']!r}"
                )
    if not errors:
        errors += _check_shard_metadata(root, card.data.to_dict(), configs)
    return errors


def _check_shard_metadata(root: Path, header: dict, configs: list[dict]) -> list[str]:
    """The card's ``dataset_info`` and ``size_categories`` against the shards (``shard_metadata``)."""
    actual = shard_metadata(root, configs)
    if header.get("size_categories") != actual["size_categories"]:
        return [
            f"README.md: size_categories is {header.get('size_categories')}, the shards make {actual['size_categories']}"
        ]
    card_infos = {i.get("config_name"): i for i in _as_list(header.get("dataset_info"))}
    errors = []
    for info in _as_list(actual["dataset_info"]):
        name = info["config_name"]
        if card_infos.get(name) != info:
            errors.append(
                f"README.md: dataset_info of config {name!r} does not describe its shards "
                f"(card: {_split_counts(card_infos.get(name))}, shards: {_split_counts(info)})"
            )
    return errors


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _split_counts(info: dict | None) -> str:
    return (
        "missing"
        if info is None
        else ", ".join(f"{s['name']} {s['num_examples']} rows" for s in info.get("splits", []))
    )


def _check_row(spec: ConfigSpec, row: dict, where: str, check_audio: bool, *, gold: bool = True) -> list[str]:
    """A row's problems; without ``gold`` (a blind test row) the labels and answers are not there to check."""
    errs = []
    n = spec.num_target_turns
    if row["variant"] != spec.variant:
        errs.append(f"{where}: variant {row['variant']!r} in a {spec.variant} config")
    if row["target_gender"] not in GENDERS:
        errs.append(f"{where}: target_gender {row['target_gender']!r} is not one of {GENDERS}")
    turns, positions = row["turns"] or [], row["target_turn_positions"] or []
    window_cap = VARIANT_SPECS[spec.variant].max_window_turns
    if len(turns) > window_cap:
        errs.append(f"{where}: {len(turns)} turns, more than {window_cap}")
    if len(positions) != n:
        errs.append(f"{where}: {len(positions)} target turn positions, expected {n}")
    flagged = [i for i, t in enumerate(turns) if t["is_target"]]
    if flagged != list(positions):
        errs.append(f"{where}: target_turn_positions {positions} differ from turns marked is_target {flagged}")
    if any(turns[i]["speaker"] != row["target_speaker"] for i in flagged if i < len(turns)):
        errs.append(f"{where}: a turn marked is_target is not spoken by {row['target_speaker']!r}")
    if gold and spec.task == "discrimination":
        errs += _check_discrimination(row, where, n)
    elif gold:
        errs += _check_turn_row(row, where, n)
    if check_audio:
        for column in spec.audio_columns:
            if isinstance(spec.features[column], List):
                for i, value in enumerate(row[column] or []):
                    errs += _check_clip(value, f"{where} column {column}[{i}]")
            else:
                errs += _check_clip(row[column], f"{where} column {column}")
    return errs


def _check_turn_row(row: dict, where: str, n: int) -> list[str]:
    errs = []
    scenario, label, bad = row["scenario"], row["label"], row["inconsistent_turns"] or []
    if scenario not in SCENARIOS:
        return [f"{where}: scenario {scenario!r} is not one of {SCENARIOS}"]
    if label not in LABELS:
        errs.append(f"{where}: label {label!r} is not one of {LABELS}")
    if len(row["target_audio"] or []) != n:
        errs.append(f"{where}: {len(row['target_audio'] or [])} target audio clips, expected {n}")
    if scenario == "S1":
        if label != "consistent" or bad:
            errs.append(f"{where}: S1 must be consistent with no inconsistent turns, got {label!r} {bad}")
        if any(row[c] is not None for c in ("converted_turn", "substitute_speaker", "vc_model")):
            errs.append(f"{where}: S1 has conversion provenance (converted_turn/substitute_speaker/vc_model)")
    else:
        k = row["converted_turn"]
        if label != "inconsistent":
            errs.append(f"{where}: {scenario} must be labelled inconsistent, got {label!r}")
        if k is None or not 1 <= k <= n:
            errs.append(f"{where}: converted_turn {k!r} is not a position 1..{n}")
        elif bad != [k]:
            errs.append(f"{where}: inconsistent_turns {bad} must be exactly the converted turn [{k}]")
        if not row["substitute_speaker"] or not row["vc_model"]:
            errs.append(f"{where}: {scenario} lacks substitute_speaker or vc_model")
        if row["substitute_speaker"] == row["target_speaker"]:
            errs.append(f"{where}: substitute speaker is the target speaker")
        gender = row["substitute_gender"]
        if scenario == "S2" and gender == row["target_gender"]:
            errs.append(f"{where}: S2 substitute has the target's gender {gender!r}")
    return errs


def _check_discrimination(row: dict, where: str, n: int) -> list[str]:
    errs = []
    labels, scenarios = row["candidate_labels"] or [], row["candidate_scenarios"] or []
    if list(labels) != list(CANDIDATE_LABELS):
        errs.append(f"{where}: candidate_labels {labels} must be {list(CANDIDATE_LABELS)}")
    if sorted(scenarios) != sorted(SCENARIOS):
        return errs + [f"{where}: candidate_scenarios {scenarios} is not a permutation of {list(SCENARIOS)}"]
    if len(row["candidates"] or []) != len(labels):
        errs.append(f"{where}: {len(row['candidates'] or [])} candidate clips for {len(labels)} labels")
    by_scenario = dict(zip(scenarios, labels))
    if row["answer"] != by_scenario.get("S1"):
        errs.append(f"{where}: answer {row['answer']!r} is not the original (S1) candidate {by_scenario.get('S1')!r}")
    gold = [by_scenario.get(s) for s in GOLD_SCENARIO_ORDER]
    if list(row["gold_ranking"] or []) != gold:
        errs.append(f"{where}: gold_ranking {row['gold_ranking']} must be {gold} (S1 > S3 > S2)")
    if not 1 <= (row["masked_position"] or 0) <= n:
        errs.append(f"{where}: masked_position {row['masked_position']!r} is not a position 1..{n}")
    if len(row["context_audio"] or []) != n - 1:
        errs.append(f"{where}: {len(row['context_audio'] or [])} context clips, expected {n - 1}")
    context = {clip["bytes"] for clip in row["context_audio"] or [] if clip}
    shown = [label for label, clip in zip(labels, row["candidates"] or []) if clip and clip["bytes"] in context]
    if shown:
        errs.append(
            f"{where}: context_audio holds candidate {shown} (the masked turn "
            f"{row['masked_position']} or a version of it); the context must leave that turn out"
        )
    return errs


def _check_clip(value: dict | None, where: str) -> list[str]:
    """Decode one stored clip as ``datasets`` does (torchcodec on FFmpeg) and check its format."""
    if not value or not value.get("bytes"):
        return [f"{where}: no audio bytes embedded"]
    try:
        decoder = stock_decoder(value)
        samples = decoder.get_all_samples()
    except (RuntimeError, ValueError) as err:  # what torchcodec raises for a stream FFmpeg rejects
        return [f"{where}: audio does not decode with datasets' decoder (torchcodec/FFmpeg): {err}"]
    rate, channels = decoder.metadata.sample_rate, decoder.metadata.num_channels
    if rate != SAMPLING_RATE or channels != 1:
        return [f"{where}: {rate} Hz, {channels} channel(s); expected {SAMPLING_RATE} Hz mono"]
    if samples.data.shape[-1] == 0:
        return [f"{where}: empty clip"]
    return []


# ----------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "configs":
        return _configs()
    try:
        folder = local_folder(args.dataset)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "blind":
        return _blind(args, folder)
    return _validate(args, folder)


def _parser() -> argparse.ArgumentParser:
    """The command line: ``validate``, ``configs`` and ``blind``."""
    parser = argparse.ArgumentParser(prog="python -m speakersleuth_dataset", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    val = sub.add_parser("validate", help="check a built dataset folder against the schema")
    val.add_argument("--dataset", required=True, help="the dataset: a built folder or a Hub dataset id")
    val.add_argument("--skip-audio", action="store_true", help="do not decode every clip")
    sub.add_parser("configs", help="list the configs and their folders")
    blind = sub.add_parser("blind", help="write a public copy without test gold, and the gold apart")
    blind.add_argument("--dataset", required=True, help="the build to blind: a built folder or a Hub dataset id")
    blind.add_argument(
        "--public-out", required=True, metavar="DIR", help="new folder for the public copy (to publish)"
    )
    blind.add_argument(
        "--gold-out", required=True, metavar="DIR", help="new folder for the test gold (keep it private)"
    )
    blind.add_argument(
        "--unpaired",
        action="store_true",
        help="keep one test instance per dialogue (rows cannot be regrouped to find the altered turn)",
    )
    blind.add_argument(
        "--allow-known-seed",
        action="store_true",
        help="blind a build made with a guessable seed (a demo: its gold can be recomputed)",
    )
    return parser


def _configs() -> int:
    """``configs``: each config's name, folder and number of target turns."""
    for spec in CONFIGS.values():
        print(f"{spec.name:<22} {spec.data_dir:<24} N={spec.num_target_turns}")
    return 0


def _blind(args: argparse.Namespace, folder: Path) -> int:
    """``blind``: the public copy and the gold written, the rows of each printed."""
    try:
        counts = write_blind(
            folder, args.public_out, args.gold_out, unpaired=args.unpaired, allow_known_seed=args.allow_known_seed
        )
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        "\n".join(
            f"{key:<30} {n:>6} rows"
            + (
                "  (no test split: every dialogue's one instance went to another config; build more dialogues)"
                if not n
                else ""
            )
            for key, n in counts.items()
        )
    )
    print(f"public copy: {args.public_out}\ngold (keep private): {args.gold_out}")
    if not args.unpaired:
        print(
            "note: paired copy: a dialogue's test rows share clips, so they can be regrouped to find the altered "
            "turn; a leaderboard publishes the --unpaired copy",
            file=sys.stderr,
        )
    return 0


def _validate(args: argparse.Namespace, folder: Path) -> int:
    """``validate``: the folder checked against the schema and the card's shard digests."""
    try:
        counts = validate_folder(folder, check_audio=not args.skip_audio)
    except DatasetValidationError as err:
        print(f"{args.dataset}: INVALID, {err}", file=sys.stderr)
        return 1
    for key, n in counts.items():
        print(f"{key:<30} {n:>6} rows  ok")
    digests = card_digests(folder)
    print(
        f"{len(digests)} shards match the card's SHA-256 digests"
        if digests is not None
        else f"the card records no shard digests ({DIGESTS_KEY}): nothing to check the shards against"
    )
    print(f"{args.dataset}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
