"""How many CPU threads the embedding judges should use: each offline encoder embeds the same
real clips on 1 thread and on 2 (``judges --threads``; 1 is the default).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_judge_threads.py [FOLDER] [--clips 200] [--threads 1,2]

FOLDER is a built dataset (default ./speakersleuth); the clips are the first ``--clips`` unique
clips of its main detection test split, decoded once. Per encoder and thread count: load time,
embedding wall time (after one warm-up batch), clips per second. Run it on an idle machine:
another busy process makes two threads look worse than they are.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import speakersleuth.speakersleuth_dataset as ssd  # noqa: E402
from speakersleuth.speech.encoders import get_encoder, offline_encoders  # noqa: E402


def unique_clips(folder: str, limit: int) -> list:
    """Up to ``limit`` distinct decoded clips (reference and target turns) of main detection."""
    seen, clips = set(), []
    for path in ssd.shard_paths(folder, ssd.config_name("detection", "main")):
        for row in pq.read_table(path, columns=["reference_audio", "target_audio"]).to_pylist():
            for value in [row["reference_audio"], *row["target_audio"]]:
                digest = hashlib.sha256(value["bytes"]).hexdigest()
                if digest not in seen and len(clips) < limit:
                    seen.add(digest)
                    clips.append(ssd.load_waveform(value))
    return clips


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default="speakersleuth")
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument(
        "--encoder",
        default=",".join(offline_encoders()),
        help="comma-separated encoders (default: every wheel encoder)",
    )
    args = parser.parse_args()
    import torch

    clips = unique_clips(args.folder, args.clips)
    seconds = sum(len(c) for c in clips) / ssd.SAMPLING_RATE
    print(
        f"{len(clips)} clips, {seconds:.0f} s of audio from {args.folder}; CPUs {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'encoder':>12} {'threads':>7} {'load s':>7} {'embed s':>8} {'clips/s':>8}")
    for name in args.encoder.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            torch.set_num_threads(threads)
            start = time.perf_counter()
            encoder = get_encoder(name)
            encoder.encode(clips[:4])  # warm-up
            loaded = time.perf_counter() - start
            start = time.perf_counter()
            encoder.encode(clips, batch_size=32)
            took = time.perf_counter() - start
            print(f"{name:>12} {threads:>7} {loaded:7.1f} {took:8.1f} {len(clips) / took:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
