"""The speaker pool that voice conversion draws substitutes from (scenarios S2 and S3).

Per speaker: gender, clips, the embedding of every clip and the speaker's mean embedding (the
L2-normalised mean of its clip embeddings) under one ``SpeakerEncoder``. Queries: the most
similar other speaker (S3) and a random opposite-gender speaker (S2).

A build has one bank over the speakers of all its sources (and of any extra pool source); a
speaker's name there is ``<source>/<speaker id>`` (``pool_name``), so two corpora's speaker "A"
stay two speakers. A dataset row names a substitute by its own id when it comes from the row's
source and by its pool name otherwise (``row_name``).

``SpeakerBank.build`` caches each speaker's clip embeddings in ``cache_dir`` under a key made of
the encoder name and the content of the clips (file bytes, span, channel), so a rerun embeds only
speakers whose clips changed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from speakersleuth.builder_scripts.audio import load_span
from speakersleuth.builder_scripts.sources.base import AudioSpan
from speakersleuth.speech.encoders import SpeakerEncoder
from speakersleuth.speech.files import atomic_path
from speakersleuth.speech.verification import equal_error_rate

GENDERS = ("female", "male")


def pool_name(source: str, speaker: str) -> str:
    """A speaker's name in the build's pool, unique across sources: ``dailytalk/dailytalk_spk0``."""
    return f"{source}/{speaker}"


def row_name(name: str, source: str) -> str:
    """How a row of ``source`` names the pool speaker ``name``: its plain id when the speaker is
    one of ``source``'s (comparable with ``target_speaker``), else its pool name."""
    prefix = f"{source}/"
    return name[len(prefix) :] if name.startswith(prefix) else name


def row_pool_name(name: str, source: str) -> str:
    """The pool name of a speaker as a row of ``source`` names it (the inverse of ``row_name``).

    >>> row_pool_name("spk3", "ami"), row_pool_name("dailytalk/spk0", "ami")
    ('ami/spk3', 'dailytalk/spk0')
    """
    return name if "/" in name else pool_name(source, name)


@contextmanager
def one_thread():
    """Speaker encoders made and run on one thread (torch's, and the d-vector's onnxruntime
    session, which takes torch's count when made): their kernels add up in another order on
    another number of threads (measured 1 vs 2 threads: CAM++ and ERes2Net embeddings 1e-7 apart,
    the d-vector's 2e-3), which would move S3's choice, ``substitute_similarity`` and the card's
    figures with ``--jobs``. The pool is small (3 clips a speaker), so this costs little."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise ValueError("cannot normalise a zero embedding")
    return x / norm


def _as_span(clip: AudioSpan | str | Path) -> AudioSpan:
    return clip if isinstance(clip, AudioSpan) else AudioSpan(Path(clip))


@dataclass(frozen=True)
class BankSpeaker:
    name: str
    gender: str
    embedding: np.ndarray  # (D,), L2-normalised mean of the clip embeddings
    clips: tuple[AudioSpan, ...] = ()
    clip_embeddings: np.ndarray | None = None  # (len(clips), D), L2-normalised
    key: str = ""  # content key of the clips under the encoder ("" when made from ready embeddings)


@dataclass(frozen=True)
class VerificationStats:
    """``SpeakerBank.verification_stats``: how well the bank's speakers are told apart."""

    eer: float  # percent, over clip-pair trials (``speech.verification``: the leaderboard's EER definition)
    same_trials: int
    different_trials: int
    nearest: dict[str, tuple[str, float]]  # speaker -> (most similar other speaker, cosine of mean embeddings)


class SpeakerBank:
    """Speakers with gender and mean embedding; similarity queries over them."""

    def __init__(self, speakers: Iterable[BankSpeaker], encoder_name: str = ""):
        self.encoder_name = encoder_name
        self._speakers = {s.name: s for s in sorted(speakers, key=lambda s: s.name)}
        if not self._speakers:
            raise ValueError("a speaker bank needs at least one speaker")
        for s in self._speakers.values():
            if s.gender not in GENDERS:
                raise ValueError(f"speaker {s.name!r}: gender {s.gender!r} is not one of {GENDERS}")
        self.names = list(self._speakers)
        self._matrix = _unit(np.stack([self._speakers[n].embedding for n in self.names]))
        self._index = {n: i for i, n in enumerate(self.names)}
        self.key = self._digest()

    def _digest(self) -> str:
        """Who is in the bank and how they sound: the encoder, names, genders and each speaker's
        clip content key (its embedding when made from ready embeddings). Whatever draws on the
        bank (a unit's S2 and S3) is stale when this changes."""
        h = hashlib.sha256(self.encoder_name.encode())
        for name, s in self._speakers.items():
            h.update(json.dumps([name, s.gender, s.key]).encode())
            if not s.key:
                h.update(self.embedding(name).tobytes())
        return h.hexdigest()[:16]

    @classmethod
    def from_embeddings(cls, speakers: Mapping[str, tuple[str, np.ndarray]], encoder_name: str = "") -> SpeakerBank:
        """A bank from ready embeddings: ``{name: (gender, embedding)}``."""
        return cls([BankSpeaker(n, g, _unit(e)) for n, (g, e) in speakers.items()], encoder_name)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: str) -> bool:
        return name in self._speakers

    def __getitem__(self, name: str) -> BankSpeaker:
        return self._speakers[self.names[self._row(name)]]

    def _row(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"speaker {name!r} is not in the bank ({len(self)} speakers)") from None

    def gender(self, name: str) -> str:
        return self[name].gender

    def embedding(self, name: str) -> np.ndarray:
        return self._matrix[self._row(name)]

    def cosine(self, a: str, b: str) -> float:
        return float(self.embedding(a) @ self.embedding(b))

    def cosine_matrix(self) -> np.ndarray:
        """(len, len) cosines of the mean embeddings, rows and columns in ``names`` order."""
        return self._matrix @ self._matrix.T

    def nearest(
        self, embedding: np.ndarray, exclude: Iterable[str] = (), gender: str | None = None
    ) -> tuple[str, float]:
        """The bank speaker whose mean embedding is most cosine-similar to ``embedding``."""
        excluded = set(exclude)
        sims = self._matrix @ _unit(embedding)
        best = None
        for i in np.argsort(-sims, kind="stable"):
            name = self.names[i]
            if name not in excluded and (gender is None or self._speakers[name].gender == gender):
                best = (name, float(sims[i]))
                break
        if best is None:
            raise ValueError(f"no bank speaker left to choose (excluded {sorted(excluded)}, gender {gender})")
        return best

    def most_similar(self, speaker: str, exclude: Iterable[str] = (), same_gender: bool = False) -> tuple[str, float]:
        """The other speaker with the highest cosine to ``speaker`` (the target is always excluded)."""
        gender = self.gender(speaker) if same_gender else None
        return self.nearest(self.embedding(speaker), exclude={speaker, *exclude}, gender=gender)

    def random_opposite_gender(self, speaker: str, rng: random.Random | int) -> str:
        """A speaker of the other gender, drawn uniformly with ``rng`` (or ``random.Random(rng)``)."""
        rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        gender = self.gender(speaker)
        pool = [n for n in self.names if self._speakers[n].gender != gender]
        if not pool:
            raise ValueError(f"the bank has no speaker of the opposite gender to {speaker!r} ({gender})")
        return rng.choice(pool)

    def verification_stats(self) -> VerificationStats:
        """How distinct the bank's speakers are: the EER of clip-pair trials (every pair of two
        clips, same speaker against different speakers) and each speaker's most similar other
        speaker by the cosine of mean embeddings. Needs clip embeddings (a bank from ``build``)."""
        lacking = [n for n, s in self._speakers.items() if s.clip_embeddings is None or len(s.clip_embeddings) < 2]
        if lacking or len(self) < 2:
            raise ValueError(
                f"verification stats need two or more speakers with two or more clip embeddings each; "
                f"{len(self)} speakers, without: {', '.join(lacking[:5]) or 'none'}"
            )
        embs = _unit(np.concatenate([self._speakers[n].clip_embeddings for n in self.names]))
        owner = np.repeat(np.arange(len(self)), [len(self._speakers[n].clip_embeddings) for n in self.names])
        i, j = np.triu_indices(len(embs), k=1)
        scores = np.einsum("nd,nd->n", embs[i], embs[j])
        same = owner[i] == owner[j]
        sims = self.cosine_matrix()
        np.fill_diagonal(sims, -np.inf)
        best = np.argmax(sims, axis=1)
        nearest = {n: (self.names[best[r]], float(sims[r, best[r]])) for r, n in enumerate(self.names)}
        return VerificationStats(
            equal_error_rate(scores[same], scores[~same]), int(same.sum()), int((~same).sum()), nearest
        )

    def centroid_trials(self) -> tuple[np.ndarray, np.ndarray]:
        """Cosines of every bank clip to a speaker's mean embedding: to its own speaker's mean of
        the other clips (same), and to every other speaker's mean (different). The trials of a
        re-spoken turn's check, which compares a clip with a voice's mean embedding."""
        same, different = [], []
        for name in self.names:
            clips = _unit(self[name].clip_embeddings)
            for i, clip in enumerate(clips):
                same.append(float(clip @ _unit(np.delete(clips, i, axis=0).mean(axis=0))))
            others = self._matrix[[self._index[n] for n in self.names if n != name]]
            different.extend((clips @ others.T).ravel().tolist())
        return np.array(same), np.array(different)

    def centroid_threshold(self) -> float:
        """The cosine at which a clip is as often wrongly refused by its own voice's mean embedding
        as wrongly accepted by another's (``centroid_trials``' equal error rate): the lowest
        similarity of a re-spoken turn to the voice it was meant to have. Needs clip embeddings.

        >>> bank = SpeakerBank([BankSpeaker(n, "female", np.array(e, dtype=np.float32), clip_embeddings=np.array(c, dtype=np.float32))
        ...     for n, e, c in (("a", [1, 0], [[1, 0.1], [1, -0.1]]), ("b", [0, 1], [[0.1, 1], [-0.1, 1]]))])
        >>> round(bank.centroid_threshold(), 3)  # separable: between 0.99 / 1.01 (same) and 0.1 / 1.005 (different)
        0.54
        """
        same, different = (np.sort(t) for t in self.centroid_trials())
        if same[0] > different[-1]:  # separable: the middle of the gap
            return float((same[0] + different[-1]) / 2)
        candidates = np.unique(np.concatenate([same, different]))
        false_reject = np.searchsorted(same, candidates, side="left") / same.size  # own voice under the line
        false_accept = (
            1 - np.searchsorted(different, candidates, side="left") / different.size
        )  # another's at or over it
        return float(candidates[int(np.argmin(np.abs(false_reject - false_accept)))])

    # ---------------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        speakers: Mapping[str, tuple[str, Sequence[AudioSpan | str | Path]]],
        encoder: SpeakerEncoder,
        cache_dir: str | Path | None = None,
        batch_size: int = 16,
        progress: bool = True,
    ) -> SpeakerBank:
        """Embed every speaker's clips (``{name: (gender, clips)}``) with ``encoder``."""
        cache = None if cache_dir is None else Path(cache_dir) / "speaker_bank"
        digests: dict[Path, str] = {}
        entries, reused = [], 0
        bar = tqdm(sorted(speakers), desc=f"speaker bank ({encoder.name})", unit="speaker", disable=not progress)
        for name in bar:
            gender, raw_clips = speakers[name]
            clips = tuple(_as_span(c) for c in raw_clips)
            if not clips:
                raise ValueError(f"speaker {name!r} has no clips")
            key = _clips_key(clips, encoder.name, digests)
            path = None if cache is None else cache / f"{key}.npy"
            if path is not None and path.is_file():
                embs, reused = np.load(path), reused + 1
            else:
                embs = encoder.encode([load_span(c) for c in clips], batch_size=batch_size)
                if path is not None:
                    with atomic_path(path) as tmp, open(tmp, "wb") as handle:  # processes may build one bank at once
                        np.save(handle, embs)
            bar.set_postfix(cached=reused)
            entries.append(BankSpeaker(name, gender, _unit(embs.mean(axis=0)), clips, embs, key))
        return cls(entries, encoder.name)

    def save(self, path: str | Path) -> Path:
        """One ``.npz``: mean and clip embeddings, genders, clips and the encoder name."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "encoder": self.encoder_name,
            "speakers": [
                {
                    "name": n,
                    "gender": s.gender,
                    "clips": [_span_json(c) for c in s.clips],
                    "has_clip_embeddings": s.clip_embeddings is not None,
                    "key": s.key,
                }
                for n, s in self._speakers.items()
            ],
        }
        clip_embs = [s.clip_embeddings for s in self._speakers.values() if s.clip_embeddings is not None]
        dim = self._matrix.shape[1]
        with open(path, "wb") as f:
            np.savez(
                f,
                meta=np.array(json.dumps(meta)),
                embeddings=self._matrix,
                clip_embeddings=np.concatenate(clip_embs) if clip_embs else np.zeros((0, dim), np.float32),
            )
        return path

    @classmethod
    def load(cls, path: str | Path) -> SpeakerBank:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            matrix, clip_embs = data["embeddings"], data["clip_embeddings"]
        entries, offset = [], 0
        for row, s in enumerate(meta["speakers"]):
            clips = tuple(AudioSpan(Path(c["path"]), c["start"], c["end"], c["channel"]) for c in s["clips"])
            embs = None
            if s["has_clip_embeddings"]:
                embs, offset = clip_embs[offset : offset + len(clips)], offset + len(clips)
            entries.append(BankSpeaker(s["name"], s["gender"], matrix[row], clips, embs, s["key"]))
        return cls(entries, meta["encoder"])


def _span_json(span: AudioSpan) -> dict:
    return {"path": str(span.path), "start": span.start, "end": span.end, "channel": span.channel}


def _file_digest(path: Path, digests: dict[Path, str]) -> str:
    path = Path(path).resolve()
    if path not in digests:
        if not path.is_file():
            raise FileNotFoundError(f"speaker bank clip {path} does not exist")
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digests[path] = h.hexdigest()
    return digests[path]


def _clips_key(clips: Sequence[AudioSpan], encoder_name: str, digests: dict[Path, str]) -> str:
    h = hashlib.sha256(encoder_name.encode())
    for c in clips:
        h.update(json.dumps([_file_digest(c.path, digests), c.start, c.end, c.channel]).encode())
    return h.hexdigest()[:32]
