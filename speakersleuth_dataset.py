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
- ``validate_folder`` / ``python -m speakersleuth.speakersleuth_dataset validate --dataset <folder or Hub id>``: schema, ids, labels
  against provenance, discrimination answers, every clip decoded as ``datasets`` decodes it, and
  every shard against the card's digest.
- ``load``: ``load_dataset`` on a folder by absolute path, offline.
- ``collate``: rows of any config as one batch for a torch ``DataLoader`` (audio decoded and
  zero-padded, with lengths and masks); ``COLUMN_DESCRIPTIONS``: what each column means (the card's
  data-fields section); ``shard_metadata``: the card's ``dataset_info`` and ``size_categories``.
- ``read_gold`` and ``read_rows``: fast pyarrow readers that skip audio (for the scorer) or read one
  instance (for the Space viewer) without decoding the whole dataset.
- ``write_blind`` / ``python -m speakersleuth.speakersleuth_dataset blind --dataset <build> --public-out <dir> --gold-out <dir>``:
  a public copy whose test split carries no gold or provenance (``BLIND_COLUMNS``), with ids that
  are a keyed hash under a random secret (not recomputable) and rows in the order of those ids (a
  dialogue's S1/S2/S3 scattered); the gold, under the public ids, goes to a private folder that
  ``read_gold`` (and so ``python -m speakersleuth.metrics.score --gold``) reads. The validation split stays
  labelled (for calibration). A dialogue's rows share clips (S1/S2/S3 differ in one turn), so a
  submitter who groups rows by their audio can find the altered turn; ``--unpaired`` keeps one
  instance per group of rows that share a dialogue or any clip (``instance_groups``), which closes
  that leak. The altered turn and the candidate order follow from the build's seed and the
  dialogue, whose text is public: ``blind`` refuses a build whose seed anyone could try
  (``GUESSABLE_SEEDS``; the card records it as ``build_seed``).

Where the parts live: this module is the public face and the command line; each part is a module of
the ``speakersleuth_format`` package, and every name above is re-exported here (``ssd.X`` keeps
working). ``schema`` (constants, variants, ``CONFIGS`` and their features), ``audio`` (decoding and
the FLAC encoding, ``stock_decoder``), ``writer`` (``DatasetWriter``), ``card`` (``write_card`` and
the card's YAML), ``readers`` (``load``, ``collate``, ``read_gold``, ``read_rows``,
``local_folder``), ``blind`` (``write_blind``) and ``validate`` (``validate_folder``); each imports
only those before it. A test that patches a module global patches it in the part that reads it
(``speakersleuth_format.audio.FLAC_LEVELS``), not here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from speakersleuth.speakersleuth_format.audio import FLAC_LEVELS, encode_audio, load_waveform, pcm16, stock_decoder
from speakersleuth.speakersleuth_format.blind import (
    BLIND_COLUMNS,
    BLIND_NOTE,
    BLIND_PAIRING_NOTE,
    BUILD_CARD_PUBLIC_SECTIONS,
    BUILD_CARD_TEST_PARAGRAPHS,
    GUESSABLE_SEEDS,
    SECRET_SEED_HINT,
    SEED_KNOWN_KEY,
    _umask,
    blind_card_body,
    blind_card_configs,
    blind_features,
    build_seed_known,
    instance_groups,
    is_blind,
    public_id,
    unpaired_instances,
    write_blind,
)
from speakersleuth.speakersleuth_format.card import (
    DIGESTS_KEY,
    card_yaml,
    data_fields_section,
    feature_type,
    read_card,
    shard_digests,
    shard_metadata,
    size_category,
    write_card,
)
from speakersleuth.speakersleuth_format.readers import (
    AUDIO_COLUMNS,
    GOLD_COLUMNS,
    HUB_ID,
    collate,
    load,
    local_folder,
    read_gold,
    read_rows,
    shard_paths,
    tasks_present,
    variants_present,
)
from speakersleuth.speakersleuth_format.schema import (
    AUDIO_FORMAT,
    CANDIDATE_LABELS,
    CITATION,
    COLUMN_DESCRIPTIONS,
    CONFIGS,
    DEFAULT_CONFIG,
    DISCRIMINATION_FEATURES,
    GENDERS,
    GOLD_SCENARIO_ORDER,
    LABELS,
    MAX_SEGMENT_TURNS,
    MAX_SHARD_BYTES,
    PAPER_URL,
    REVIEW_FIELDS,
    SCENARIOS,
    SPLITS,
    TASKS,
    TURN_FEATURES,
    VARIANT_SPECS,
    VARIANTS,
    ConfigSpec,
    VariantSpec,
    config_name,
    get_config,
    segment_sharing,
)
from speakersleuth.speakersleuth_format.validate import (
    DatasetValidationError,
    _check_clip,
    card_digests,
    check_digests,
    validate_folder,
)
from speakersleuth.speakersleuth_format.writer import DatasetWriter
from speakersleuth.speech.audio import SAMPLING_RATE

#: The names this module offers: every public name of the parts, the sampling rate, the command
#: line; and the private helpers that benchmarks and tests call (``_check_clip``, ``_umask``).
__all__ = [
    "SAMPLING_RATE",
    "TASKS",
    "SPLITS",
    "SCENARIOS",
    "LABELS",
    "GENDERS",
    "CANDIDATE_LABELS",
    "GOLD_SCENARIO_ORDER",
    "MAX_SEGMENT_TURNS",
    "PAPER_URL",
    "CITATION",
    "VariantSpec",
    "VARIANT_SPECS",
    "VARIANTS",
    "REVIEW_FIELDS",
    "segment_sharing",
    "MAX_SHARD_BYTES",
    "AUDIO_FORMAT",
    "TURN_FEATURES",
    "DISCRIMINATION_FEATURES",
    "COLUMN_DESCRIPTIONS",
    "ConfigSpec",
    "config_name",
    "CONFIGS",
    "DEFAULT_CONFIG",
    "get_config",
    "load_waveform",
    "FLAC_LEVELS",
    "encode_audio",
    "pcm16",
    "stock_decoder",
    "DatasetWriter",
    "DIGESTS_KEY",
    "shard_digests",
    "read_card",
    "card_yaml",
    "feature_type",
    "data_fields_section",
    "size_category",
    "shard_metadata",
    "write_card",
    "load",
    "AUDIO_COLUMNS",
    "collate",
    "HUB_ID",
    "local_folder",
    "shard_paths",
    "tasks_present",
    "variants_present",
    "read_rows",
    "GOLD_COLUMNS",
    "read_gold",
    "BLIND_COLUMNS",
    "BLIND_NOTE",
    "BUILD_CARD_TEST_PARAGRAPHS",
    "BUILD_CARD_PUBLIC_SECTIONS",
    "BLIND_PAIRING_NOTE",
    "blind_features",
    "is_blind",
    "public_id",
    "instance_groups",
    "unpaired_instances",
    "GUESSABLE_SEEDS",
    "SECRET_SEED_HINT",
    "build_seed_known",
    "SEED_KNOWN_KEY",
    "write_blind",
    "blind_card_configs",
    "blind_card_body",
    "DatasetValidationError",
    "validate_folder",
    "check_digests",
    "card_digests",
    "main",
    "_check_clip",
    "_umask",
]


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
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.speakersleuth_dataset", description=__doc__.split("\n")[0]
    )
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
