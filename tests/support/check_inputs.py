"""Dialogues on disk as a user of ``python -m speakersleuth.judges check`` has them, for its tests: turns of a
small build exported as audio files in several formats, rates and channel counts with a manifest;
a long recording made of turns with its RTTM. Test data only."""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import soundfile as sf
from scipy.signal import resample_poly

import speakersleuth.speakersleuth_dataset as ssd

#: (suffix, sampling rate, channels) of the exported turns, in turn order, cycling
FORMATS = [("wav", 8000, 1), ("flac", 22050, 1), ("mp3", 44100, 2), ("wav", 48000, 2), ("flac", 16000, 1)]


def build_rows(folder: Path, config: str, split: str = "test") -> list[dict]:
    """The rows of one config of a built folder, audio as stored (FLAC bytes)."""
    return [r for p in ssd.shard_paths(folder, config, split) for r in pq.read_table(p).to_pylist()]


def decode_16k(data: bytes) -> np.ndarray:
    wave, sr = sf.read(io.BytesIO(data), dtype="float32")
    assert sr == ssd.SAMPLING_RATE
    return wave


def write_audio(path: Path, wave16k: np.ndarray, rate: int, channels: int) -> Path:
    """``wave16k`` written at ``rate`` with ``channels`` (channel c scaled by 1 - 0.2 c, so a
    downmix is their mean); mp3 through the ffmpeg command line, the rest with soundfile."""
    from math import gcd

    g = gcd(rate, ssd.SAMPLING_RATE)
    wave = resample_poly(wave16k.astype(np.float64), rate // g, ssd.SAMPLING_RATE // g)
    data = np.stack([wave * (1 - 0.2 * c) for c in range(channels)], axis=1) if channels > 1 else wave
    return write_samples(path, data, rate)


def write_samples(path: Path, data: np.ndarray, rate: int) -> Path:
    """``data`` (samples, or samples x channels) as a 16-bit file at ``rate``, in the format its
    suffix names: mp3 through the ffmpeg command line (192 kb/s), the rest with soundfile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".mp3":
        raw = path.with_suffix(".tmp.wav")
        sf.write(raw, data, rate, subtype="PCM_16")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", raw, "-b:a", "192k", path], check=True)
        raw.unlink()
    else:
        sf.write(path, data, rate, subtype="PCM_16")
    return path


def export_row(row: dict, out: Path, *, other: dict | None = None, formats=FORMATS) -> Path:
    """A detection row's target turns as files (formats cycling through ``formats``) with
    ``manifest.csv`` (turn, speaker, path, text), the speaker ``target``; with ``other``, that
    row's target turns interleaved as the speaker ``other``. Returns the manifest."""
    rows = []
    for speaker, source in (("target", row), ("other", other)):
        if source is None:
            continue
        for i, clip in enumerate(source["target_audio"]):
            suffix, rate, channels = formats[i % len(formats)]
            name = f"{speaker}_{i + 1}.{suffix}"
            write_audio(out / "turns" / name, decode_16k(clip["bytes"]), rate, channels)
            rows.append((2 * i + (speaker == "other"), speaker, f"turns/{name}"))
    rows.sort()
    with (out / "manifest.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["turn", "speaker", "path", "text"])
        for n, (_, speaker, path) in enumerate(rows, 1):
            writer.writerow([str(n), speaker, path, f"words of turn {n}"])
    return out / "manifest.csv"


def write_recording(
    turns: list[tuple[str, np.ndarray]],
    out: Path,
    file_id: str,
    gap: float = 0.4,
    *,
    leading_gap: bool = True,
    suffix: str = ".flac",
) -> tuple[Path, Path]:
    """One recording (``<file_id><suffix>``, 16-bit) of ``(speaker, 16 kHz clip)`` turns with ``gap`` s
    of silence after each (and before the first, with ``leading_gap``), and its RTTM as pyannote
    writes it (``SPEAKER <id> 1 <start> <duration> <NA> <NA> <speaker> <NA> <NA>``)."""
    silence = np.zeros(int(gap * ssd.SAMPLING_RATE), np.float32)
    pieces, lines, at = ([silence], [], gap) if leading_gap else ([], [], 0.0)
    for speaker, clip in turns:
        seconds = len(clip) / ssd.SAMPLING_RATE
        lines.append(f"SPEAKER {file_id} 1 {at:.3f} {seconds:.3f} <NA> <NA> {speaker} <NA> <NA>")
        pieces += [clip.astype(np.float32), silence]
        at += seconds + gap
    out.mkdir(parents=True, exist_ok=True)
    recording = out / f"{file_id}{suffix}"
    sf.write(recording, np.concatenate(pieces), ssd.SAMPLING_RATE, subtype="PCM_16")
    (out / f"{file_id}.rttm").write_text("\n".join(lines) + "\n")
    return recording, out / f"{file_id}.rttm"
