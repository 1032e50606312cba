"""The blind copy of a build (``write_blind``): a public copy whose test split has no gold or
provenance (``BLIND_COLUMNS``), ids keyed under a secret that is kept nowhere, and its own card;
the test gold under the public ids in a private folder. ``instance_groups`` and
``unpaired_instances`` make the ``--unpaired`` copy; a guessable build seed is refused
(``GUESSABLE_SEEDS``)."""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import random
import re
import secrets
import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import soundfile as sf
from datasets import Features, List

from speakersleuth.speakersleuth_format.card import DIGESTS_KEY, card_yaml, data_fields_section, read_card, write_card
from speakersleuth.speakersleuth_format.readers import read_gold, shard_paths, variants_present
from speakersleuth.speakersleuth_format.schema import CONFIGS, MAX_SHARD_BYTES, SPLITS, ConfigSpec, get_config
from speakersleuth.speech.files import write_text_atomic

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
`python -m speakersleuth.metrics.score --predictions predictions.jsonl --dataset <public copy> --gold <gold_dir>`). A
leaderboard round is built with its own secret seed and retires its test split when it closes: the
gold is then published with the standings. The validation split keeps its labels,
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
    header, body = read_card(folder)
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
            "`python -m speakersleuth.metrics.score --predictions predictions.jsonl --dataset <public copy> --gold <this folder>` or give it to the Space "
            "(`--gold` / `SPEAKERSLEUTH_GOLD`).\n"
        ),
    )
