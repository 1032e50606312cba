"""What ``python -m speakersleuth.judges check`` costs per minute of audio, on this machine: cold (nothing in
the embedding cache) and warm (every clip in ``--cache``), in-process (``judges.check.check``) and
as the command a user types (a new process: Python, imports and the model's load included).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_check.py [FOLDER] [--minutes 2] [--format wav|flac|mp3] [--rate 44100]

The dialogue is made of FOLDER's main detection test turns (default ./speakersleuth), two speakers
taking turns, written as files of ``--format`` at ``--rate`` Hz (decoding and resampling count),
with a manifest; the encoder and method are the shipped default (``--encoder`` another). Torch on
one thread, as the command's default.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import speakersleuth.speakersleuth_dataset as ssd  # noqa: E402
from speakersleuth.speech.audio import resample  # noqa: E402
from tests.support.check_inputs import write_samples  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def write_dialogue(folder: str, out: Path, minutes: float, fmt: str, rate: int) -> float:
    """Turns of the build's S1 rows as files, speakers ``A`` and ``B`` alternating row by row;
    returns the seconds of audio written."""
    rows, total = [], 0.0
    for path in ssd.shard_paths(folder, ssd.config_name("detection", "main")):
        for row in pq.read_table(path, columns=["scenario", "target_audio"]).to_pylist():
            if row["scenario"] != "S1":
                continue
            speaker = "AB"[len(rows) % 2]
            for clip in row["target_audio"]:
                wave, _ = sf.read(io.BytesIO(clip["bytes"]), dtype="float32")
                name = f"t{len(rows):04d}.{fmt}"
                write_samples(out / name, resample(wave, ssd.SAMPLING_RATE, rate), rate)
                rows.append((str(len(rows) + 1), speaker, name))
                total += len(wave) / ssd.SAMPLING_RATE
                if total >= 60 * minutes:
                    break
            if total >= 60 * minutes:
                break
        if total >= 60 * minutes:
            break
    with (out / "manifest.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([("turn", "speaker", "path"), *rows])
    return total


def in_process(manifest: Path, encoder: str | None, cache_dir: Path) -> dict[str, float]:
    """Seconds: the encoder's load, a cold check, a warm check from disk (files hashed again), a
    warm check in memory (the files' digests remembered)."""
    from speakersleuth.judges.cache import EmbeddingCache
    from speakersleuth.judges.check import audio, check, resolve_settings
    from speakersleuth.speech.encoders import get_encoder

    start = time.perf_counter()
    model = get_encoder(resolve_settings(encoder).encoder)
    times = {"load": time.perf_counter() - start}
    for name, cache in (
        ("cold", EmbeddingCache(model, cache_dir)),
        ("warm (disk)", EmbeddingCache(model, cache_dir)),
    ):
        audio._file_digest.cache_clear()  # each run hashes and reads the files again, as a new process would
        audio._audio_info.cache_clear()
        start = time.perf_counter()
        check(manifest, cache=cache)
        times[name] = time.perf_counter() - start
        if name == "warm (disk)":
            start = time.perf_counter()
            check(manifest, cache=cache)
            times["warm (memory)"] = time.perf_counter() - start
    return times


def command(manifest: Path, encoder: str | None, cache_dir: Path) -> float:
    args = [
        sys.executable,
        "-m",
        "speakersleuth.judges",
        "check",
        "--manifest",
        str(manifest),
        "--no-progress",
        "--cache",
        str(cache_dir),
    ]
    args += ["--encoder", encoder] if encoder else []
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default="speakersleuth")
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--format", default="wav", choices=["wav", "flac", "mp3"])
    parser.add_argument("--rate", type=int, default=44100)
    parser.add_argument("--encoder", default=None, help="an encoder spec (default: the shipped default)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        seconds = write_dialogue(args.folder, tmp, args.minutes, args.format, args.rate)
        per_minute = 60 / seconds
        print(
            f"{seconds:.0f} s of audio ({args.format}, {args.rate} Hz) from {args.folder}; CPUs {os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        for name, value in in_process(tmp / "manifest.csv", args.encoder, tmp / "cache-api").items():
            scale = "" if name == "load" else f" = {value * per_minute:.2f} s per minute of audio"
            print(f"in process, {name}: {value:.2f} s{scale}")
        for name in ("cold", "warm"):
            value = command(tmp / "manifest.csv", args.encoder, tmp / "cache-cli")
            print(
                f"python -m speakersleuth.judges check, {name}: {value:.2f} s = {value * per_minute:.2f} s per minute of audio"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
