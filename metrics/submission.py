"""Reading and validating a SpeakerSleuth predictions file: one implementation for the scorer CLI,
the judges and the Space.

The format (ARCHITECTURE.md, "Predictions") is JSON Lines in UTF-8, one object
per line, one file per variant::

    {"task": "detection", "id": "...", "prediction": "inconsistent", "score": 0.93}
    {"task": "localization", "id": "...", "prediction": [3]}
    {"task": "discrimination", "id": "...", "prediction": "B", "ranking": ["B", "C", "A"]}

Rules:

- keys are exactly ``task``, ``id``, ``prediction``, plus an optional ``ranking`` on discrimination
  lines and an optional ``score`` on detection lines; ``prediction: null`` (or ``ranking: null``)
  means "no answer" and scores like a missing line (an unparseable judge answer can be written so);
- a detection ``score`` is a finite number, higher = more likely inconsistent (a probability, a
  distance: only its order counts); it gives the threshold-free AUROC and EER. Either every
  detection line carries one or none does (a file mixing them is refused), so a judge's AUROC is
  never computed over the instances it chose to score. A score may come with ``prediction: null``;
- detection predictions are ``"consistent"`` or ``"inconsistent"``; localization predictions are a
  list of distinct target-turn positions 1..N of that instance (``[]`` = none inconsistent);
  discrimination predictions are one of the instance's candidate labels and a ranking is a
  permutation of them, best first;
- every ``(task, id)`` at most once; ids must be gold ids of that task in the chosen variant and
  split;
- blank lines are ignored, a leading UTF-8 byte-order mark is tolerated, line numbers count
  physical lines from 1.

A file with any invalid line is refused as a whole: ``SubmissionError.errors`` names every problem
by line number. Parsing only reads; nothing is written anywhere.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import speakersleuth.speakersleuth_dataset as ssd

MAX_BYTES = 20_000_000
MAX_LINES = 200_000
ERRORS_SHOWN = 50
_BOM = b"\xef\xbb\xbf"
#: The keys a line of a task may carry besides ``task``, ``id`` and ``prediction``.
OPTIONAL_KEYS = {"discrimination": ("ranking",), "detection": ("score",)}


class SubmissionError(ValueError):
    """A refused predictions file; ``errors`` lists every problem, each ``"line N: ..."``
    (or a file-level problem); ``str()`` shows the first 50 and how many more there are."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        shown = self.errors[:ERRORS_SHOWN]
        more = len(self.errors) - len(shown)
        lines = [f"submission refused: {len(self.errors)} error(s)", *shown]
        if more:
            lines.append(f"... and {more} more")
        super().__init__("\n".join(lines))


@dataclass
class Gold:
    """The gold answers of one variant and split: ``tasks[task][id]`` is a row of
    ``speakersleuth_dataset.read_gold`` (audio-free). ``cache`` holds arrays the scorer derives
    from the rows, so a Gold loaded once scores many submissions fast."""

    variant: str
    split: str
    tasks: dict[str, dict[str, dict]]
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def load_gold(dataset: str | os.PathLike, variant: str = "main", split: str = "test") -> Gold:
    """Gold of a built dataset folder (reads only the label columns of its shards)."""
    rows = ssd.read_gold(dataset, variant, split)
    return Gold(variant, split, {task: {row["id"]: row for row in task_rows} for task, task_rows in rows.items()})


class IdMismatch(ValueError):
    """A predictions file whose ids belong to another variant, or to another copy of the dataset
    than the gold it is scored against; the message is one line that says what to do."""


def submission_variant(
    source: bytes | str | os.PathLike, root: str | os.PathLike, split: str = "test", variant: str | None = None
) -> str:
    """The variant of the gold folder ``root`` (a build, or a blind copy's gold) that a predictions
    file's ids belong to: the one holding them when ``variant`` is None, else ``variant`` after
    checking. Raises ``IdMismatch`` when the ids are another variant's, mix variants, are the ids of
    the build a blind copy was made from (judge the public copy), are a blind copy's scored against
    a build (give its gold), or are in no variant of ``root``. Lines whose ids are partly unknown
    are left to ``parse_submission`` to name."""
    data = _read(source, MAX_BYTES)
    ids = {
        obj["id"]
        for raw in data.split(b"\n")
        if raw.strip()
        for obj in [_decode(raw)[0]]
        if isinstance(obj, dict) and isinstance(obj.get("id"), str)
    }
    present = ssd.variants_present(root, split)
    if not ids or not present or (variant is not None and variant not in present):
        return variant or (
            present[0] if len(present) == 1 else "main"
        )  # parse_submission / read_gold say what is wrong
    known = {v: _gold_ids(root, v, split) for v in present}
    holds = {v: len(ids & rows) for v, rows in known.items() if ids & rows}
    if not holds:
        raise IdMismatch(_no_variant_holds(ids, root, split, present))
    if len(holds) > 1:
        counts = ", ".join(f"{v} ({n} ids)" for v, n in holds.items())
        raise IdMismatch(f"the file mixes ids of several variants: {counts}; write one predictions file per variant")
    (found,) = holds
    if variant is not None and variant != found:
        raise IdMismatch(
            f"the ids are {found} ids (e.g. {_show(min(ids & known[found]))}), not {variant}'s: "
            f"score with --variant {found}, or leave --variant out"
        )
    return found


def _gold_ids(root, variant: str, split: str, column: str = "id") -> set[str]:
    ids: set[str] = set()
    for task in ssd.tasks_present(root, variant, split):
        config = ssd.config_name(task, variant)
        if column in pq.read_schema(ssd.shard_paths(root, config, split)[0]).names:
            ids.update(ssd.read_rows(root, config, split, columns=[column]).column(column).to_pylist())
    return ids


def _no_variant_holds(ids: set[str], root, split: str, present: list[str]) -> str:
    """Why no variant of ``root`` holds any of ``ids``, in one line."""
    example = _show(min(ids))
    if ids & set().union(*(_gold_ids(root, v, split, "source_id") for v in present)):
        return (
            f"the ids (e.g. {example}) are those of the build that {root}'s blind copy was made from, not of the "
            "public copy: judge the public copy (--dataset <public copy>) and score that file against this gold"
        )
    if all(len(i) == 32 and all(c in "0123456789abcdef" for c in i) for i in ids):
        return (
            f"the ids (e.g. {example}) are a blind copy's, not {root}'s: score them against the copy's private "
            "gold (--gold <gold folder>)"
        )
    for other in (s for s in ssd.SPLITS if s != split):
        if ids & set().union(*(_gold_ids(root, v, other) for v in ssd.variants_present(root, other))):
            return (
                f"the ids (e.g. {example}) are in the {other} split of {root}, not in its {split} split: score them "
                f'with --split {other} (in Python, split="{other}")'
            )
    return f"none of the file's {len(ids)} ids (e.g. {example}) is in the {split} split of {root} (variants {', '.join(present)})"


@dataclass
class Submission:
    """A validated predictions file: ``predictions[task][id]`` is ``{"prediction": ...}`` plus
    ``"ranking"`` where a discrimination line has one and ``"score"`` (a float) where a detection
    line has one (``None`` values mean "no answer");
    ``num_lines`` counts the non-blank lines; ``sha256`` is the hash of the raw bytes."""

    predictions: dict[str, dict[str, dict]]
    num_lines: int
    sha256: str

    def canonical(self) -> bytes:
        """The predictions in one normal form: a compact JSON line per instance, sorted by task and
        id, localization positions sorted, a ``null`` ranking left out, UTF-8 without BOM. Files
        that differ only in encoding, spacing, line endings or line order have the same form.

        >>> gold = Gold("main", "test", {"detection": {"d1": {"id": "d1"}, "d2": {"id": "d2"}}})
        >>> a = b'{"task":"detection","id":"d2","prediction":null}\\n{"task":"detection","id":"d1","prediction":"consistent"}'
        >>> b = b'\\xef\\xbb\\xbf{ "id": "d1", "task": "detection", "prediction": "consistent" }\\r\\n\\r\\n{"prediction": null, "task": "detection", "id": "d2"}   \\n'
        >>> parse_submission(a, gold).canonical() == parse_submission(b, gold).canonical()
        True
        >>> print(parse_submission(a, gold).canonical().decode(), end="")
        {"task":"detection","id":"d1","prediction":"consistent"}
        {"task":"detection","id":"d2","prediction":null}
        """
        lines = []
        for task in sorted(self.predictions):
            for rid in sorted(self.predictions[task]):
                entry = self.predictions[task][rid]
                prediction = entry["prediction"]
                line = {
                    "task": task,
                    "id": rid,
                    "prediction": sorted(prediction) if task == "localization" and prediction else prediction,
                }
                if entry.get("ranking") is not None:
                    line["ranking"] = entry["ranking"]
                if "score" in entry:  # a float (1, 1e0 and 1.0 are one); + 0.0 makes -0.0 the 0.0 it equals
                    line["score"] = float(entry["score"]) + 0.0
                lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        return "".join(lines).encode("utf-8")


def parse_submission(
    source: bytes | str | os.PathLike,
    gold: Gold,
    *,
    max_bytes: int = MAX_BYTES,
    max_lines: int = MAX_LINES,
) -> Submission:
    """Parse and validate a predictions file against ``gold``; raises ``SubmissionError``.

    ``source`` is the file content as ``bytes``, or a path (``str`` or ``os.PathLike``). A ``str``
    is always a path: pass JSONL text as ``text.encode()``.

    >>> gold = Gold("main", "test", {"detection": {"d1": {"id": "d1"}}})
    >>> parse_submission(b'{"task": "detection", "id": "d1", "prediction": "consistent"}\\n', gold).predictions
    {'detection': {'d1': {'prediction': 'consistent'}}}
    >>> parse_submission(b'{"task": "detection", "id": "d1", "prediction": "yes"}', gold)
    Traceback (most recent call last):
    ...
    speakersleuth.metrics.submission.SubmissionError: submission refused: 1 error(s)
    line 1: detection prediction must be "consistent" or "inconsistent", got "yes"
    """
    data = _read(source, max_bytes)
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > max_bytes:
        raise SubmissionError([f"file is {len(data):,} bytes, more than the limit of {max_bytes:,}"])
    physical = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if physical > max_lines:
        raise SubmissionError([f"file has {physical:,} lines, more than the limit of {max_lines:,}"])
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    errors: list[str] = []
    predictions: dict[str, dict[str, dict]] = {}
    first_line: dict[tuple[str, str], int] = {}
    scored_lines: dict[bool, int] = {}  # whether a detection line has a score -> the first such line
    num_lines = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        num_lines += 1
        obj, problem = _decode(raw)
        problems = [problem] if problem is not None else _check_line(obj, gold, number, first_line)
        if problems:
            errors += [f"line {number}: {p}" for p in problems]
            continue
        entry = {key: obj[key] for key in ("prediction", "ranking") if key in obj}
        if "score" in obj:
            entry["score"] = float(obj["score"])
        predictions.setdefault(obj["task"], {})[obj["id"]] = entry
        if obj["task"] == "detection":
            scored_lines.setdefault("score" in obj, number)
    if len(scored_lines) == 2:
        errors.append(
            f'line {scored_lines[False]}: detection line without "score" while line {scored_lines[True]} has one; '
            "either every detection line carries a score or none does"
        )
    if not num_lines and not errors:
        errors.append("the file holds no predictions")
    if errors:
        raise SubmissionError(errors)
    return Submission(predictions, num_lines, digest)


def _read(source: bytes | str | os.PathLike, max_bytes: int) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        raise TypeError("parse_submission reads a str as a path; pass JSONL text as bytes (text.encode())")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"parse_submission takes bytes or a path, got {type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise SubmissionError([f"{path}: no such file"])
    size = path.stat().st_size
    if size > max_bytes:
        raise SubmissionError([f"file is {size:,} bytes, more than the limit of {max_bytes:,}"])
    with path.open("rb") as f:
        return f.read(max_bytes + 1)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {_show(repeated)} appears more than once")
    return obj


#: One decoder for every line (``json.loads`` with hooks builds a new one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)


def _decode(raw: bytes) -> tuple[Any, str | None]:
    """The JSON value of one line, or an error message."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, f"not valid UTF-8 (byte {err.start + 1} of the line); the file must be UTF-8"
    try:
        return _DECODER.decode(text), None
    except json.JSONDecodeError as err:
        return (
            None,
            f"not valid JSON ({err.msg.removesuffix(' at')} at column {err.colno})",
        )  # some messages end in "at"
    except ValueError as err:
        return None, f"not valid JSON ({err})"
    except RecursionError:
        return None, "not valid JSON here (nested too deeply)"


def _check_line(obj: Any, gold: Gold, number: int, first_line: dict[tuple[str, str], int]) -> list[str]:
    """Every problem of one decoded line (checking stops where the rest cannot be judged);
    records the line of each (task, id)."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {_kind(obj)}"]
    if "task" not in obj:
        return ['missing key "task"']
    task = obj["task"]
    if not isinstance(task, str):
        return [f"task must be a string, got {_show(task)}"]
    if task not in ssd.TASKS:
        return [f"unknown task {_show(task)}; tasks are {_options(ssd.TASKS)}"]
    if task not in gold.tasks:
        return [
            f"task {_show(task)} has no gold in this dataset (variant {gold.variant}, split {gold.split}); "
            f"it has {_options(gold.tasks)}"
        ]
    problems = []
    allowed = ("task", "id", "prediction", *OPTIONAL_KEYS.get(task, ()))
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        problems.append(f"unknown key(s) {_options(unknown)} on a {task} line; allowed: {_options(allowed)}")
    missing = [k for k in ("id", "prediction") if k not in obj]
    if missing:
        problems.append(f"missing key(s) {_options(missing)}")
    if "id" not in obj:
        return problems
    rid = obj["id"]
    if not isinstance(rid, str):
        return problems + [f"id must be a string, got {_show(rid)}"]
    row = gold.tasks[task].get(rid)
    if row is None:
        elsewhere = [t for t in gold.tasks if rid in gold.tasks[t]]
        hint = f" (it is a {' and '.join(elsewhere)} id)" if elsewhere else ""
        return problems + [f"unknown {task} id {_show(rid)} for variant {gold.variant}, split {gold.split}{hint}"]
    key = (task, rid)
    if key in first_line:
        problems.append(f"duplicate {task} id {_show(rid)} (first given on line {first_line[key]})")
    else:
        first_line[key] = number
    if "prediction" in obj:
        problems += _check_prediction(task, obj, row)
    return problems


def _check_prediction(task: str, obj: dict, row: dict) -> list[str]:
    """The problems of the prediction (and ranking or score) of one line against its gold row."""
    value = obj["prediction"]
    if task == "detection":
        problems = []
        if value is not None and value not in ssd.LABELS:
            problems.append(f"detection prediction must be {' or '.join(map(_show, ssd.LABELS))}, got {_show(value)}")
        if "score" in obj and not _is_finite_number(obj["score"]):
            problems.append(
                f"detection score must be a finite number (higher = more likely inconsistent), got {_show(obj['score'])}"
            )
        return problems
    elif task == "localization":
        n = row["num_target_turns"]
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in value):
            return [f"localization prediction must be a list of turn positions 1..{n}, got {_show(value)}"]
        outside = [p for p in value if not 1 <= p <= n]
        if outside:
            return [
                f"localization prediction has position(s) {_options(outside)} outside 1..{n} (this instance has {n} target turns)"
            ]
        if len(set(value)) != len(value):
            repeated = sorted(p for p, count in Counter(value).items() if count > 1)
            return [f"localization prediction repeats position(s) {_options(repeated)}"]
    else:
        labels = list(row["candidate_labels"])
        problems = []
        if value is not None and value not in labels:
            problems.append(f"discrimination prediction must be one of {_options(labels)}, got {_show(value)}")
        ranking = obj.get("ranking")
        if ranking is None:
            return problems
        expected = f"ranking must be a permutation of {_options(labels)} (each label once, best first)"
        is_labels = isinstance(ranking, list) and all(isinstance(c, str) for c in ranking)
        repeated = [c for c, count in Counter(ranking).items() if count > 1] if is_labels else []
        if repeated:
            problems.append(f"ranking repeats label(s) {_options(repeated)}; {expected}")
        elif not is_labels or sorted(ranking) != sorted(labels):
            problems.append(f"{expected}, got {_show(ranking)}")
        return problems
    return []


def _is_finite_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number that is a finite float (``1e400`` parses as infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond the float range
        return False


def _show(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _options(values) -> str:
    return ", ".join(_show(v) for v in values)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
