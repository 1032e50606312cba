"""Reading a dataset: ``load`` (``datasets.load_dataset`` on a folder, offline), ``collate`` (rows as
a torch batch; torch is imported only when it is called), ``local_folder`` (a folder or a Hub id as
a local folder), and the fast pyarrow readers that skip audio or read one instance (``shard_paths``,
``read_rows``, ``read_gold``, ``tasks_present``, ``variants_present``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from speakersleuth.speakersleuth_format.audio import stock_decoder
from speakersleuth.speakersleuth_format.schema import CONFIGS, DEFAULT_CONFIG, TASKS, VARIANTS, config_name, get_config


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
                "folder; its gold is the folder that `blind --gold-out` wrote (python -m speakersleuth.metrics.score --gold <gold_dir>)"
            )
        rows = read_rows(root, name, split, columns=GOLD_COLUMNS[task]).to_pylist()
        for row in rows:
            if "target_turn_positions" in row:
                row["num_target_turns"] = len(row.pop("target_turn_positions"))
        gold[task] = rows
    if not gold:
        raise FileNotFoundError(f"{root}: no {split} shards for variant {variant!r}")
    return gold
