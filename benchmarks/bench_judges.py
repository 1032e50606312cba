"""Benchmark of the embedding judges: throughput, and the content-keyed cache against a naive run.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_judges.py [FOLDER] [--variant main]
        [--method reference] [--encoder resemblyzer] [--dialogues 6] [--batch-size 32]

FOLDER defaults to ./speakersleuth when it holds a build, else a synthetic folder (tests/support/synthetic.py,
``--dialogues`` dialogues; synthetic tones, so only the speed figures mean anything).

Side by side in one process, on the same warmed-up encoder, one judge over all tasks of a variant:

- cached: ``EmbeddingJudge`` as shipped: one embedding per unique clip (sha256 of the FLAC bytes);
- naive: the same judge with a cache that decodes and encodes every clip slot of every instance and
  task again (what a per-instance loop does).

Prints instances, clip slots, unique clips, encoder calls of each run (cached must equal the unique
clips), wall times, throughput and the speed-up; then the three methods sharing one embedding pass.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import speakersleuth.speakersleuth_dataset as ssd  # noqa: E402
from speakersleuth.judges.cache import EmbeddingCache  # noqa: E402
from speakersleuth.judges.embedding import (  # noqa: E402
    DEFAULT_THRESHOLDS,
    DISCRIMINATION_COLUMNS,
    METHODS,
    TURN_COLUMNS,
    EmbeddingJudge,
    embed_variant,
    predictions,
    score_variant,
)
from speakersleuth.speech.encoders import get_encoder  # noqa: E402


class NaiveCache(EmbeddingCache):
    """The baseline: no memory at all; every requested clip is decoded and encoded, in batches."""

    def embed(self, clips, names=None):
        out = []
        for start in range(0, len(clips), self.batch_size):
            waves = [ssd.load_waveform(c) for c in clips[start : start + self.batch_size]]
            out.append(self.encoder.encode(waves, batch_size=self.batch_size))
            self.encoded += len(waves)
        return np.concatenate(out)


def clip_census(folder, variant: str, tasks: list[str], with_reference: bool) -> tuple[int, int, int]:
    """(instances, clip slots, unique clips) the judge reads, counted from the parquet bytes."""
    instances = slots = 0
    unique: set[str] = set()
    for task in tasks:
        columns = [
            c
            for c in (DISCRIMINATION_COLUMNS if task == "discrimination" else TURN_COLUMNS)
            if c.endswith("audio") or c == "candidates"
        ]
        columns = [c for c in columns if with_reference or c != "reference_audio"]
        for path in ssd.shard_paths(folder, ssd.config_name(task, variant)):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=64, columns=columns):
                for row in batch.to_pylist():
                    instances += 1
                    for column in columns:
                        for value in row[column] if isinstance(row[column], list) else [row[column]]:
                            slots += 1
                            unique.add(hashlib.sha256(value["bytes"]).hexdigest())
    return instances, slots, len(unique)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=None)
    parser.add_argument("--variant", default="main")
    parser.add_argument(
        "--method", default="reference", choices=METHODS, help="reference reads every clip, incl. the reference"
    )
    parser.add_argument("--encoder", default="resemblyzer")
    parser.add_argument("--dialogues", type=int, default=6, help="dialogues of the synthetic folder (default: 6)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()

    folder = args.folder
    if folder is None and (Path("speakersleuth") / "README.md").is_file():
        folder = "speakersleuth"
    if folder is None:
        from tests.support.synthetic import build_synthetic_dataset

        folder = build_synthetic_dataset(
            Path(tempfile.mkdtemp(prefix="bench-judges-")) / "speakersleuth",
            dialogues=args.dialogues,
            variants=(args.variant,),
        )
        print(f"folder: synthetic, {args.dialogues} dialogues ({folder})")
    else:
        print(f"folder: {folder}")
    tasks = [t for t in ssd.TASKS if ssd.shard_paths(folder, ssd.config_name(t, args.variant))]
    if not tasks:
        print(f"error: {folder} has no test shards for variant {args.variant!r}", file=sys.stderr)
        return 2

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    encoder = get_encoder(args.encoder)
    encoder.encode([np.zeros(ssd.SAMPLING_RATE, np.float32) + 1e-3])  # first forward pass is slow: warm up
    print(
        f"encoder {encoder.name}: loaded and warmed up in {time.perf_counter() - start:.1f} s; "
        f"torch threads {torch.get_num_threads()}, CPUs {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}"
    )
    instances, slots, unique = clip_census(folder, args.variant, tasks, args.method == "reference")
    print(
        f"variant {args.variant}, tasks {', '.join(tasks)}: {instances} instances, {slots} clip slots, {unique} unique clips"
    )

    out = Path(tempfile.mkdtemp(prefix="bench-judges-out-"))
    results = {}
    for label, cache in (
        ("cached", EmbeddingCache(encoder, batch_size=args.batch_size)),
        ("naive", NaiveCache(encoder, batch_size=args.batch_size)),
    ):
        judge = EmbeddingJudge(args.method, cache=cache, progress=False)
        start, cpu = time.perf_counter(), time.process_time()
        judge.run(folder, args.variant, tasks, out / f"{label}.jsonl")
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        results[label] = (seconds, cpu, cache.encoded)
        print(
            f"{label:>6}: {seconds:7.2f} s wall {cpu:7.2f} s CPU  encoder calls {cache.encoded:5d}  "
            f"{instances / seconds:7.2f} instances/s  {slots / seconds:7.2f} clip slots/s"
        )
    (cached_s, cached_cpu, cached_calls), (naive_s, naive_cpu, naive_calls) = results["cached"], results["naive"]
    same = (out / "cached.jsonl").read_text() == (out / "naive.jsonl").read_text()
    print(
        f"encoder calls == unique clips: {cached_calls == unique} ({cached_calls} == {unique}); "
        f"naive encoder calls == clip slots: {naive_calls == slots} ({naive_calls} == {slots})"
    )
    print(
        f"speed-up cached vs naive: {naive_s / cached_s:.1f}x wall, {naive_cpu / cached_cpu:.1f}x CPU time "
        f"(target >= 3x); identical predictions: {same}"
    )

    cache = EmbeddingCache(encoder, batch_size=args.batch_size)
    start = time.perf_counter()
    embeddings = embed_variant(folder, args.variant, tasks, cache, progress=False)
    embedded = time.perf_counter() - start
    lines = [predictions(score_variant(m, embeddings), DEFAULT_THRESHOLDS[m]) for m in METHODS]
    total = time.perf_counter() - start
    print(
        f"all three methods sharing one embedding pass: {total:.2f} s ({embedded:.2f} s embedding, "
        f"{total - embedded:.3f} s scoring {sum(map(len, lines))} predictions); encoder calls {cache.encoded}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
