"""Whether a blind round ranks: honest judges' files, each sent by its own identity to an open
round, ranked by what the round shows (the Ladder's public values) against their true values.

Give the round's blind copy (``python -m speakersleuth.space.round open``), its gold and a folder of
judges' predictions files of one variant (e.g. ``python -m speakersleuth.judges baselines
--results-out DIR`` on the round's build: ``<judge>.<variant>.jsonl``). Each file is submitted by
its own identity through ``space.submitter.Submitter`` (its first file, so always released); the
script prints each released metric's public step η, the Spearman correlation of the shown
public values with the files' true values on the whole test split and on the private part (the
standings'), and how many shown values tie; then each judge's shown, true and private values.

    PYTHONPATH=. python benchmarks/bench_round.py --public public --gold gold --predictions DIR [--build-ids]

``--build-ids``: the files answer the round's build (``judges baselines`` scores against its gold),
whose instance ids the blind copy renames; each line's id is translated by the gold's ``source_id``
(the copy keeps every row's candidates and their letters, so the answers stand as they are).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from scipy.stats import spearmanr

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import RELEASED, BlindRound, headline
from speakersleuth.space.store import SqliteStore
from speakersleuth.space.submitter import Submitter


def copy_ids(data: bytes, gold_dir: Path, variant: str) -> bytes:
    """A predictions file of the round's build with each line's id renamed to the blind copy's."""
    renamed = {
        row["source_id"]: row["id"]
        for task in ssd.TASKS
        for shard in ssd.shard_paths(gold_dir, ssd.config_name(task, variant), "test")
        for row in pq.read_table(shard, columns=["id", "source_id"]).to_pylist()
    }
    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    unknown = sorted({line["id"] for line in lines} - set(renamed))
    if unknown:
        raise SystemExit(f"--build-ids: {len(unknown)} ids are no build id of {gold_dir} (e.g. {unknown[0]})")
    return "".join(json.dumps({**line, "id": renamed[line["id"]]}) + "\n" for line in lines).encode()


def ranked(
    public: Path, gold_dir: Path, files: list[Path], variant: str, build_ids: bool = False
) -> dict[str, dict[str, list[float]]]:
    """Per released metric: each file's shown public value, true value (whole test split) and private value."""
    gold = load_gold(gold_dir, variant)
    private = BlindRound.parts(gold).private
    values = {key: {"judge": [], "shown": [], "true": [], "private": []} for key in RELEASED}
    with tempfile.TemporaryDirectory() as data:
        config = SpaceConfig.from_env({}, dataset=str(public), gold=str(gold_dir), data_dir=data)
        submitter = Submitter(config, SqliteStore(data), public, variants=[variant], gold=gold_dir, n_bootstrap=0)
        for n, path in enumerate(files):
            data_bytes = copy_ids(path.read_bytes(), gold_dir, variant) if build_ids else path.read_bytes()
            form = {"model_name": path.stem, "organisation": f"bench {n}", "model_type": "other", "access": "open"}
            result = submitter.submit(data_bytes, variant, form, address=f"10.52.{n // 250}.{n % 250}")
            if result.status != "accepted":
                raise SystemExit(f"{path}: {result.status}: {result.message} {result.errors[:2]}")
            sub = parse_submission(data_bytes, gold)
            true, kept = (
                headline(score_submission(sub, gold, n_bootstrap=0)),
                headline(score_submission(sub, private, n_bootstrap=0)),
            )
            for key, shown in result.record.scores["released"].items():
                values[key]["judge"].append(path.name.removesuffix(f".{variant}.jsonl"))
                values[key]["shown"].append(shown)
                values[key]["true"].append(true[key])
                values[key]["private"].append(kept[key])
        steps = submitter.policy.parts(gold).step
    return {key: {**v, "step": steps[key]} for key, v in values.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--public", type=Path, required=True, help="the round's blind copy")
    parser.add_argument("--gold", type=Path, required=True, help="its gold folder")
    parser.add_argument("--predictions", type=Path, required=True, help="a folder of judges' predictions files")
    parser.add_argument("--variant", default="main")
    parser.add_argument("--build-ids", action="store_true", help="the files answer the round's build: translate ids")
    args = parser.parse_args()
    files = sorted(args.predictions.glob(f"*.{args.variant}.jsonl")) or sorted(args.predictions.glob("*.jsonl"))
    print(f"{len(files)} judges as {len(files)} identities on {args.public} ({args.variant})")
    print("| metric | public step η | Spearman (shown, whole test) | Spearman (shown, private) | distinct shown |")
    print("|---|---|---|---|---|")
    values = ranked(args.public, args.gold, files, args.variant, args.build_ids)
    for key, v in values.items():
        if len(v["shown"]) < 2:
            continue
        whole, kept = spearmanr(v["shown"], v["true"])[0], spearmanr(v["shown"], v["private"])[0]
        print(f"| {key} | {v['step']:.1f} | {whole:.3f} | {kept:.3f} | {len(set(v['shown']))} of {len(v['shown'])} |")
    print("\n| judge | " + " | ".join(f"{key} shown / true / private" for key in values) + " |")
    print("|---|" + "---|" * len(values))
    for i, judge in enumerate(next(iter(values.values()))["judge"]):
        cells = [f"{v['shown'][i]:.1f} / {v['true'][i]:.1f} / {v['private'][i]:.1f}" for v in values.values()]
        print(f"| {judge} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
