"""The dataset card: its YAML header (``configs:`` from ``CONFIGS``, the shards' SHA-256 under
``DIGESTS_KEY``, ``dataset_info`` and ``size_categories`` from the shards' parquet metadata), its
data-fields tables (``data_fields_section``), written by ``write_card`` and read back by ``read_card``."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from datasets import Audio, Features, List

from speakersleuth.speakersleuth_format.schema import COLUMN_DESCRIPTIONS, CONFIGS, DEFAULT_CONFIG, SPLITS, get_config
from speakersleuth.speech.files import write_text_atomic

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

    >>> from speakersleuth.speakersleuth_format.schema import TURN_FEATURES
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


def read_card(folder: Path) -> tuple[dict[str, Any], str]:
    """The build card's YAML header and markdown body (empty when there is no card)."""
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").is_file() else ""
    if not text.startswith("---\n"):
        return {}, text
    _, head, body = text.split("---\n", 2)
    return yaml.safe_load(head) or {}, body
