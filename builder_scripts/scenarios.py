"""Scenarios of one segment: S1 original, S2 gender switch, S3 similar speaker, and discrimination.

One *unit* is one segment of one variant after voice conversion: the N target clips (every one
passed through the backend's analysis-resynthesis path), the reference, and the converted versions
of turn k for S2 and S3. A unit is what the stage cache stores (``Unit.save``/``Unit.load``) and
what ``records`` turns into the dataset rows of the detection, localization and discrimination
configs. Every choice is drawn from a generator seeded by (seed, source, dialogue id), so a unit
does not depend on which other units were built, in which order, or on which machine.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.files import atomic_path

from .segments import Segment
from .sources.base import Dialogue
from .speaker_bank import GENDERS, SpeakerBank, row_name
from .vc.base import VoiceConverter

#: RMS level every published clip is normalised to (dBFS), so loudness tells nothing.
TARGET_RMS_DBFS = -26.0
#: Silence between the turns that make up a multi-turn reference clip.
REFERENCE_GAP_SECONDS = 0.15


def unit_rng(seed: int, *parts: str) -> random.Random:
    """A generator determined by the seed and the unit's identity only."""
    digest = hashlib.sha256("/".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def instance_id(variant: str, segment: Segment, kind: str, seed: int) -> str:
    """The id of an instance: the variant and a hash of the seed, the dialogue and ``kind`` (the
    scenario, or discrimination). Opaque only without the seed: with a seed anyone can try (the
    default 0) the scenario of a row follows from its id and ``dialogue_id``."""
    digest = hashlib.sha256(f"{seed}/{segment.source}/{segment.dialogue_id}/{kind}".encode()).hexdigest()
    return f"{variant}-{digest[:12]}"


def normalise_loudness(clip: np.ndarray, dbfs: float = TARGET_RMS_DBFS) -> np.ndarray:
    level = float(np.sqrt(np.mean(np.square(clip, dtype=np.float64))))
    if level == 0.0:
        return clip.astype(np.float32)
    out = clip * (10 ** (dbfs / 20) / level)
    peak = float(np.abs(out).max())
    return (out * (0.99 / peak) if peak > 0.99 else out).astype(np.float32)


@dataclass
class Substitute:
    speaker: str
    gender: str
    similarity: float  # cosine of the substitute's and the target's mean embeddings


@dataclass
class Unit:
    """One converted segment of one variant; ``dropped`` names why verification rejected it."""

    variant: str
    segment: Segment
    turns: list[dict]  # the window: speaker, text, is_target
    vc_model: str
    converted_turn: int  # k, 1-based among the target turns
    s2: Substitute
    s3: Substitute
    targets: list[np.ndarray]  # N published clips (resynthesised originals)
    reference: np.ndarray
    converted: dict[str, np.ndarray]  # "S2"/"S3" -> published clip of turn k
    raw_targets: list[np.ndarray] = field(default_factory=list)  # originals as recorded/voiced (audit)
    raw_converted: dict[str, np.ndarray] = field(default_factory=dict)  # VC output before normalisation (audit)
    checks: dict = field(default_factory=dict)
    dropped: str | None = None

    # ------------------------------------------------------------------ cache (int16 like FLAC)

    def save(self, path: Path) -> None:
        arrays = {f"t{i}": _pcm(c) for i, c in enumerate(self.targets)}
        arrays |= {f"r{i}": _pcm(c) for i, c in enumerate(self.raw_targets)}
        arrays |= {
            "reference": _pcm(self.reference),
            "S2": _pcm(self.converted["S2"]),
            "S3": _pcm(self.converted["S3"]),
        }
        arrays |= {f"raw{s}": _pcm(c) for s, c in self.raw_converted.items()}
        meta = {
            "variant": self.variant,
            "segment": self.segment.to_json(),
            "turns": self.turns,
            "vc_model": self.vc_model,
            "converted_turn": self.converted_turn,
            "s2": asdict(self.s2),
            "s3": asdict(self.s3),
            "checks": self.checks,
            "dropped": self.dropped,
            "num_targets": len(self.targets),
            "num_raw": len(self.raw_targets),
        }
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)

    @classmethod
    def load(cls, path: Path) -> Unit:
        with np.load(path) as data:
            meta = json.loads(data["meta"].tobytes())
            return cls(
                variant=meta["variant"],
                segment=Segment.from_json(meta["segment"]),
                turns=meta["turns"],
                vc_model=meta["vc_model"],
                converted_turn=meta["converted_turn"],
                s2=Substitute(**meta["s2"]),
                s3=Substitute(**meta["s3"]),
                targets=[_float(data[f"t{i}"]) for i in range(meta["num_targets"])],
                raw_targets=[_float(data[f"r{i}"]) for i in range(meta["num_raw"])],
                reference=_float(data["reference"]),
                converted={"S2": _float(data["S2"]), "S3": _float(data["S3"])},
                raw_converted={s: _float(data[f"raw{s}"]) for s in ("S2", "S3") if f"raw{s}" in data},
                checks=meta["checks"],
                dropped=meta["dropped"],
            )

    @staticmethod
    def read_dropped(path: Path) -> str | None:
        """Why the unit saved at ``path`` was dropped (None when it was not), reading no audio."""
        with np.load(path) as data:
            return json.loads(data["meta"].tobytes())["dropped"]

    # ------------------------------------------------------------------------------ records

    def records(self, seed: int) -> tuple[list[dict], dict]:
        """The S1/S2/S3 rows of the turn tasks and the discrimination row of this unit."""
        seg, k = self.segment, self.converted_turn
        positions = [i for i, t in enumerate(self.turns) if t["is_target"]]
        common = {
            "dialogue_id": f"{seg.source}/{seg.dialogue_id}",
            "source_dataset": seg.source,
            "variant": self.variant,
            "target_speaker": seg.target_speaker,
            "target_gender": seg.target_gender,
            "turns": self.turns,
            "target_turn_positions": positions,
            "reference_audio": self.reference,
        }
        versions = {"S1": self.targets[k - 1], **self.converted}
        subs = {"S1": None, "S2": self.s2, "S3": self.s3}
        rows = []
        for scenario in ssd.SCENARIOS:
            sub = subs[scenario]
            audio = list(self.targets)
            audio[k - 1] = versions[scenario]
            rows.append(
                {
                    **common,
                    "id": instance_id(self.variant, seg, scenario, seed),
                    "scenario": scenario,
                    "target_audio": audio,
                    "label": "inconsistent" if sub else "consistent",
                    "inconsistent_turns": [k] if sub else [],
                    "converted_turn": k if sub else None,
                    "vc_model": self.vc_model if sub else None,
                    "substitute_speaker": row_name(sub.speaker, seg.source) if sub else None,
                    "substitute_gender": sub.gender if sub else None,
                    "substitute_similarity": sub.similarity if sub else None,
                }
            )
        order = list(ssd.SCENARIOS)
        unit_rng(seed, "candidates", self.variant, seg.source, seg.dialogue_id).shuffle(order)
        label_of = dict(zip(order, ssd.CANDIDATE_LABELS))
        discrimination = {
            **common,
            "id": instance_id(self.variant, seg, "discrimination", seed),
            "vc_model": self.vc_model,
            "context_audio": [c for i, c in enumerate(self.targets) if i != k - 1],
            "masked_position": k,
            "candidates": [versions[s] for s in order],
            "candidate_labels": list(ssd.CANDIDATE_LABELS),
            "candidate_scenarios": order,
            "candidate_substitute_speakers": [
                row_name(subs[s].speaker, seg.source) if subs[s] else None for s in order
            ],
            "candidate_similarities": [subs[s].similarity if subs[s] else 1.0 for s in order],
            "answer": label_of["S1"],
            "gold_ranking": [label_of[s] for s in ssd.GOLD_SCENARIO_ORDER],
        }
        return rows, discrimination


def _pcm(clip: np.ndarray) -> np.ndarray:
    return np.round(np.clip(clip, -1.0, 1.0) * 32767).astype(np.int16)


def _float(pcm: np.ndarray) -> np.ndarray:
    return (pcm.astype(np.float32) / 32767).astype(np.float32)


@dataclass(frozen=True)
class Choice:
    """What a segment's scenarios are made of; shared by every variant built on the segment."""

    converted_turn: int
    s2: Substitute
    s3: Substitute


def choose(
    segment: Segment,
    bank: SpeakerBank,
    seed: int,
    target: str | None = None,
    exclude: tuple[str, ...] = (),
    engine: Callable[[str], str | None] = lambda name: None,
) -> Choice:
    """Turn k and the two substitutes: the most similar speaker by embedding cosine (S3) and a
    random speaker of the other gender (S2), not S3's while there is another (S3 must be the more
    similar of the two), the target always excluded. ``target`` is the target's name in ``bank``
    (default: its speaker id); the other speakers of the dialogue (``exclude``, bank names) are
    avoided while the pool has an alternative.

    ``engine`` names the TTS engine of a bank voice (None for a recorded speaker). Where the target
    has one, S3 is the most similar voice of the target's engine and gender and S2 is drawn among
    the target's engine's voices of the other gender, each wherever the engine has such a voice
    (``same_engine``), so that an engine's signature does not tell the altered turn; else among the
    pool's other bank voices (a recorded speaker cannot re-speak the turn), else the whole pool."""
    rng = unit_rng(seed, "choice", segment.source, segment.dialogue_id)
    k = rng.randrange(len(segment.target_turns)) + 1
    target = target or segment.target_speaker
    others = [n for n in bank.names if n != target]
    avoided = set(exclude) - {target}
    similar = [n for n in others if n not in avoided] or others
    similar = (
        same_engine(similar, engine, target, bank.gender(target), bank) or voiced(similar, engine, target) or similar
    )
    s3, s3_cos = bank.most_similar(target, exclude=[n for n in others if n not in similar])
    opposite = [n for n in others if bank.gender(n) != bank.gender(target)]
    if not opposite:
        raise ValueError(f"the speaker pool has no speaker of the opposite gender to {target!r}")
    opposite = (
        same_engine(opposite, engine, target, bank.gender(opposite[0]), bank)
        or voiced(opposite, engine, target)
        or opposite
    )
    preferred = ([n for n in opposite if n != s3 and n not in avoided], [n for n in opposite if n != s3], opposite)
    s2 = rng.choice(next(names for names in preferred if names))
    return Choice(
        k,
        Substitute(s2, bank.gender(s2), round(bank.cosine(target, s2), 4)),
        Substitute(s3, bank.gender(s3), round(float(s3_cos), 4)),
    )


def same_engine(
    names: list[str], engine: Callable[[str], str | None], target: str, gender: str, bank: SpeakerBank
) -> list[str]:
    """The voices among ``names`` of ``gender`` that the target's TTS engine voices (empty when the
    target has no engine or the engine has no such voice)."""
    wanted = engine(target)
    return [n for n in names if wanted is not None and engine(n) == wanted and bank.gender(n) == gender]


def voiced(names: list[str], engine: Callable[[str], str | None], target: str) -> list[str]:
    """For a target voiced by a TTS engine, the voices among ``names`` that an engine voices (a
    re-spoken turn needs one; a recorded speaker cannot say it); empty for a recorded target."""
    return [n for n in names if engine(target) is not None and engine(n) is not None]


#: Besides the target, S2 needs a speaker of the other gender and S3 a second one (S3 must be more
#: similar to the target than S2, so another speaker): a pool of three speakers of both genders
#: serves every target, a smaller or one-gender pool none.
MIN_POOL_SPEAKERS = 3


class SubstitutePoolError(ValueError):
    """The build's substitute pool cannot serve S2 and S3."""


def check_pool(genders: Mapping[str, str]) -> None:
    """Refuse a substitute pool (``{pool name: gender}``, names ``<source>/<id>``) that cannot serve
    S2 and S3, naming what each source brings and how to grow it."""
    counts = Counter(genders.values())
    if len(genders) >= MIN_POOL_SPEAKERS and all(counts[g] for g in GENDERS):
        return
    by_source: dict[str, Counter] = {}
    for name, gender in genders.items():
        by_source.setdefault(name.partition("/")[0], Counter())[gender] += 1
    brought = "; ".join(
        f"{source}: {sum(c.values())} speaker{'s' * (sum(c.values()) != 1)} ({', '.join(f'{c[g]} {g}' for g in GENDERS)})"
        for source, c in by_source.items()
    )
    raise SubstitutePoolError(
        f"the substitute speaker pool is too small ({brought or 'no speakers'}): S2 needs a speaker of the target's "
        f"other gender and S3 a second speaker besides the target, so the pool needs at least {MIN_POOL_SPEAKERS} "
        f"speakers of both genders; add another --source, or --substitute-pool embedded (the embedded TTS voices)"
    )


def build_unit(
    variant: str,
    segment: Segment,
    dialogue: Dialogue,
    targets: list[np.ndarray],
    reference_parts: list[np.ndarray],
    choice: Choice,
    substitute_clips: dict[str, list[np.ndarray]],
    converter: VoiceConverter,
) -> Unit:
    """Convert (or re-speak) turn k for S2 and S3 and pass every other clip through the same
    resynthesis path (none for re-speaking)."""
    k = choice.converted_turn
    gap = np.zeros(int(REFERENCE_GAP_SECONDS * ssd.SAMPLING_RATE), dtype=np.float32)
    reference = np.concatenate([p for part in reference_parts for p in (part, gap)][:-1])
    text = dialogue.turns[segment.target_turns[k - 1]].text
    raw_converted = {
        scenario: converter.convert(
            targets[k - 1], substitute_clips[sub.speaker], source_clips=targets, text=text, speaker=sub.speaker
        )
        for scenario, sub in (("S2", choice.s2), ("S3", choice.s3))
    }
    published = [normalise_loudness(converter.resynthesize(c)) for c in targets]
    turns = [
        {"speaker": dialogue.turns[i].speaker, "text": dialogue.turns[i].text, "is_target": i in segment.target_turns}
        for i in segment.window
    ]
    return Unit(
        variant=variant,
        segment=segment,
        turns=turns,
        vc_model=converter.name,
        converted_turn=k,
        s2=choice.s2,
        s3=choice.s3,
        targets=published,
        reference=normalise_loudness(converter.resynthesize(reference)),
        converted={s: normalise_loudness(c) for s, c in raw_converted.items()},
        raw_targets=list(targets),
        raw_converted=raw_converted,
    )
