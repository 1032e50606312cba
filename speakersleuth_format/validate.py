"""The validator: ``validate_folder`` checks a built folder (or a blind copy) against the schema,
row by row, clip by clip (decoded as ``datasets`` decodes them) and shard by shard against the
card's SHA-256 digests (``check_digests``); it raises ``DatasetValidationError`` listing every problem."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features, List

from speakersleuth.speakersleuth_format.audio import stock_decoder
from speakersleuth.speakersleuth_format.blind import blind_features, is_blind
from speakersleuth.speakersleuth_format.card import DIGESTS_KEY, read_card, shard_digests, shard_metadata
from speakersleuth.speakersleuth_format.readers import shard_paths
from speakersleuth.speakersleuth_format.schema import (
    CANDIDATE_LABELS,
    CONFIGS,
    GENDERS,
    GOLD_SCENARIO_ORDER,
    LABELS,
    SCENARIOS,
    SPLITS,
    VARIANT_SPECS,
    VARIANTS,
    ConfigSpec,
    config_name,
)
from speakersleuth.speech.audio import SAMPLING_RATE


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
    digests = read_card(Path(root))[0].get(DIGESTS_KEY)
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
