"""Content-keyed speaker-embedding cache: each unique clip is decoded and encoded once.

A clip's key is the sha256 of its stored (FLAC) bytes; the cache belongs to one encoder, whose
``name`` is part of the on-disk location, so embeddings of two encoders never mix. The scenarios
S1/S2/S3 of a dialogue share all but one clip byte for byte, and the discrimination context and
candidates are those same clips, so a variant holds far fewer unique clips than clip slots.

On disk (optional): ``<cache_dir>/<encoder-slug>-<hash of encoder name>/<key[:2]>/<key>.npy``,
written atomically, so concurrent runs and killed runs leave only whole files.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from speakersleuth.speakersleuth_dataset import load_waveform
from speakersleuth.speech.files import atomic_path


def clip_key(data: bytes) -> str:
    """The cache key of one stored clip: sha256 of its encoded bytes."""
    return hashlib.sha256(data).hexdigest()


def encoder_dir_name(encoder_name: str) -> str:
    """A file-system-safe folder name for an encoder (slug + short hash of the full name)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", encoder_name).strip("_")[-48:] or "encoder"
    return f"{slug}-{hashlib.sha256(encoder_name.encode()).hexdigest()[:10]}"


class EmbeddingCache:
    """Embeddings of clips for one ``SpeakerEncoder``, encoded once per unique clip, in batches.

    ``encoded`` counts the clips sent to the encoder, ``hits`` the lookups answered from memory or
    disk, ``disk_hits`` those read from ``cache_dir``.
    """

    def __init__(self, encoder, cache_dir: str | os.PathLike | None = None, *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.encoder = encoder
        self.batch_size = batch_size
        self.dir = Path(cache_dir) / encoder_dir_name(encoder.name) if cache_dir is not None else None
        self._memory: dict[str, np.ndarray] = {}
        self.encoded = 0
        self.hits = 0
        self.disk_hits = 0

    @property
    def unique_clips(self) -> int:
        """Number of distinct clips this cache holds in memory."""
        return len(self._memory)

    def embed(self, clips: Sequence[bytes], names: Sequence[str] | None = None) -> np.ndarray:
        """Embeddings ``(len(clips), D)`` of encoded clips (bytes), in order.

        Clips not seen before are decoded (16 kHz mono) and sent to the encoder in batches of at
        most ``batch_size``; ``names`` (parallel to ``clips``) name them in decoding errors.
        """
        if not clips:
            raise ValueError("embed() needs at least one clip")
        names = list(names) if names is not None else [f"clip {i}" for i in range(len(clips))]
        return self.embed_keyed([clip_key(c) for c in clips], lambda i: load_waveform(clips[i], where=names[i]))

    def embed_keyed(
        self,
        keys: Sequence[str],
        load: Callable[[int], np.ndarray],
        on_batch: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Embeddings ``(len(keys), D)`` of clips named by content keys, in order (``embed`` with
        the keys and the decoding given by the caller: ``judges.check`` keys a file by its bytes).

        ``load(i)`` returns clip ``i`` as a 16 kHz mono waveform; it is called only for clips whose
        key is neither in memory nor on disk, once per key, in order of first appearance; those
        clips go to the encoder in batches of at most ``batch_size``. ``on_batch(done, total)``,
        when given, is called once the first batch is decoded (``done`` 0) and after each batch,
        with the clips encoded so far and to encode in all; not at all when every clip is cached.
        """
        if not keys:
            raise ValueError("embed_keyed() needs at least one clip")
        missing: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key in self._memory or key in missing:
                self.hits += 1
            elif (vector := self._read_disk(key)) is not None:
                self._memory[key] = vector
                self.hits += 1
                self.disk_hits += 1
            else:
                missing[key] = i
        pending = list(missing.items())
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start : start + self.batch_size]
            waves = [load(i) for _, i in chunk]
            if on_batch is not None and start == 0:  # once the first clips decode: a bad file speaks first
                on_batch(0, len(pending))
            vectors = np.asarray(self.encoder.encode(waves, batch_size=self.batch_size), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(chunk):
                raise ValueError(
                    f"encoder {self.encoder.name!r} returned shape {vectors.shape} for {len(chunk)} clips"
                )
            self.encoded += len(chunk)
            for (key, _), vector in zip(chunk, vectors):
                self._memory[key] = vector
                self._write_disk(key, vector)
            if on_batch is not None:
                on_batch(start + len(chunk), len(pending))
        return np.stack([self._memory[k] for k in keys])

    def _path(self, key: str) -> Path:
        assert self.dir is not None
        return self.dir / key[:2] / f"{key}.npy"

    def _read_disk(self, key: str) -> np.ndarray | None:
        if self.dir is None:
            return None
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            return np.load(path).astype(np.float32)
        except (OSError, ValueError):  # a foreign or damaged file: re-encode and overwrite it
            return None

    def _write_disk(self, key: str, vector: np.ndarray) -> None:
        if self.dir is None:
            return
        with atomic_path(self._path(key)) as tmp, open(tmp, "wb") as handle:
            np.save(handle, vector)
