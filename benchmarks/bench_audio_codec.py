"""Cost of publishing only clips that ``datasets``' decoder (torchcodec on FFmpeg) reads back exactly.

Compares the writer's old encoding (soundfile's default FLAC level, no check) with the current one
(``speakersleuth_dataset.FLAC_LEVELS``, each clip decoded by ``stock_decoder`` and compared sample
for sample) on a few hundred speech-like clips: crops of the FFmpeg-rejected fixture (a real TTS
clip) at several gains, with and without trailing digital silence, formant-filtered pulse trains
with noise bursts (band-limited to 6.4 kHz and RMS-normalised like the published clips), and
shaped noise. Prints encode and verify time per clip and per clip-second, the FLAC and parquet size
ratio new/old, how many old encodings FFmpeg rejects, and the validator's decode time per clip.

    PYTHONPATH=. python benchmarks/bench_audio_codec.py [--clips 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf
from scipy.signal import butter, lfilter, sosfilt

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.audio as ssd_audio

SR = ssd.SAMPLING_RATE
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "support" / "fixtures" / "ffmpeg51-invalid-residual.flac"
LOWPASS = butter(8, 6400, fs=SR, output="sos")
FORMANTS = ((700, 130), (1220, 70), (2600, 160))


def _normalise(wave: np.ndarray, rms: float = 0.05) -> np.ndarray:
    wave = sosfilt(LOWPASS, wave)
    return np.clip(wave * rms / max(np.sqrt(np.mean(wave**2)), 1e-9), -1, 1).astype(np.float32)


def speech_like(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Pulse train with an F0 contour through three formants, syllable envelope, noise bursts."""
    n = int(seconds * SR)
    f0 = rng.uniform(90, 240) * (1 + 0.15 * np.sin(2 * np.pi * rng.uniform(0.3, 1.5) * np.arange(n) / SR))
    pulses = (np.diff(np.floor(np.cumsum(f0 / SR)), prepend=0) > 0).astype(float)
    voiced = pulses
    for freq, bandwidth in FORMANTS:
        freq *= rng.uniform(0.8, 1.25)
        r = np.exp(-np.pi * bandwidth / SR)
        voiced = lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * freq / SR), r * r], voiced)
    syllables = np.clip(np.sin(2 * np.pi * rng.uniform(3, 5) * np.arange(n) / SR + rng.uniform(0, 6)), 0, None) ** 0.5
    noise = rng.standard_normal(n) * (rng.random(n // 800 + 1).repeat(800)[:n] < 0.2) * 0.3
    return _normalise(voiced * syllables + noise)


def shaped_noise(rng: np.random.Generator, seconds: float) -> np.ndarray:
    n = int(seconds * SR)
    envelope = np.interp(np.arange(n), np.linspace(0, n, 12), rng.random(12))
    return _normalise(lfilter([1], [1, -rng.uniform(0.5, 0.98)], rng.standard_normal(n)) * envelope)


def fixture_crop(rng: np.random.Generator, fixture: np.ndarray) -> np.ndarray:
    parts = []
    while sum(p.size for p in parts) < rng.uniform(1, 6) * SR:
        start = rng.integers(0, fixture.size - SR)
        parts.append(fixture[start : rng.integers(start + SR // 2, fixture.size)] * rng.uniform(0.3, 2.0))
    if rng.random() < 0.5:
        parts.append(np.zeros(rng.integers(200, 4000), np.float32))
    return np.clip(np.concatenate(parts), -1, 1).astype(np.float32)


def realistic_clips(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    fixture = sf.read(FIXTURE, dtype="float32")[0]
    clips = [fixture]
    while len(clips) < count:
        kind = len(clips) % 3
        seconds = rng.uniform(1, 6)
        clips.append(
            fixture_crop(rng, fixture)
            if kind == 0
            else speech_like(rng, seconds)
            if kind == 1
            else shaped_noise(rng, seconds)
        )
    return clips


def _flac(pcm: np.ndarray, level: float | None) -> bytes:
    buffer = io.BytesIO()
    kwargs = {} if level is None else {"compression_level": level}
    sf.write(buffer, pcm, SR, format="FLAC", subtype="PCM_16", **kwargs)
    return buffer.getvalue()


def _reads_back(data: bytes, pcm: np.ndarray) -> bool:
    """The writer's check: torchcodec decodes the bytes to exactly ``pcm``."""
    try:
        decoded = ssd.stock_decoder({"bytes": data}).get_all_samples().data.numpy()
    except RuntimeError:
        return False
    return decoded.shape == (1, pcm.size) and np.array_equal(np.rint(decoded[0] * 32768.0), pcm)


def _timed(fn, items) -> tuple[list, float]:
    start = time.perf_counter()
    out = [fn(*item) for item in items]
    return out, time.perf_counter() - start


def _parquet_bytes(clips: list[bytes], folder: Path, name: str) -> int:
    """Size of a parquet file holding the clips as the writer stores them (audio structs, 8 a row)."""
    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    rows = [
        [{"bytes": b, "path": f"c{i + j}.flac"} for j, b in enumerate(clips[i : i + 8])]
        for i in range(0, len(clips), 8)
    ]
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table({"clips": pa.array(rows, pa.list_(audio))}), path)
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    clips = [ssd.pcm16(c) for c in realistic_clips(args.clips, args.seed)]
    n, seconds = len(clips), sum(c.size for c in clips) / SR
    _reads_back(_flac(clips[1], None), clips[1])  # import torchcodec before timing
    print(f"{n} clips, {seconds:.0f} s of audio ({seconds / n:.2f} s a clip); writer levels {ssd.FLAC_LEVELS}")
    old, old_time = _timed(_flac, [(c, None) for c in clips])
    old_bytes = sum(map(len, old))
    print("level (soundfile)   encode ms/clip  ms/clip-s  bytes vs default  FFmpeg rejects")
    for level in (None, 0.0, 0.5, 0.75, 1.0):
        encoded, took = (old, old_time) if level is None else _timed(_flac, [(c, level) for c in clips])
        rejects = sum(not _reads_back(b, c) for b, c in zip(encoded, clips))
        name = "default (0.6)" if level is None else f"{level}"
        print(
            f"{name:<19} {1000 * took / n:>14.2f} {1000 * took / seconds:>10.2f} {sum(map(len, encoded)) / old_bytes:>17.4f} {rejects:>15}"
        )
    first, _ = _timed(_flac, [(c, ssd.FLAC_LEVELS[0]) for c in clips])
    _, verify_time = _timed(_reads_back, list(zip(first, clips)))
    ssd_audio._RECENT_FLAC.clear()
    published, writer_time = _timed(
        lambda i, c: ssd.encode_audio(c / np.float32(32768), f"c{i}")["bytes"], list(enumerate(clips))
    )
    problems, validate_time = _timed(
        lambda i, b: ssd._check_clip({"bytes": b}, f"clip {i}"), list(enumerate(published))
    )
    with tempfile.TemporaryDirectory() as tmp:
        parquet_old, parquet_new = _parquet_bytes(old, Path(tmp), "old"), _parquet_bytes(published, Path(tmp), "new")
    print(
        f"verify (torchcodec decode + exact compare): {1000 * verify_time / n:.2f} ms/clip, {1000 * verify_time / seconds:.2f} ms per clip-second"
    )
    print(
        f"encode_audio (waveform -> verified FLAC, cache cleared): {1000 * writer_time / n:.2f} ms/clip "
        f"(old encode {1000 * old_time / n:.2f}); {sum(a != b for a, b in zip(first, published))} clips took a fallback level"
    )
    print(
        f"parquet bytes published/old: {parquet_new / parquet_old:.4f} ({parquet_old / 1e6:.2f} -> {parquet_new / 1e6:.2f} MB)"
    )
    print(
        f"validator decode (_check_clip): {1000 * validate_time / n:.2f} ms/clip, {1000 * validate_time / seconds:.2f} ms per clip-second; "
        f"problems {sum(map(len, problems))}"
    )


if __name__ == "__main__":
    main()
