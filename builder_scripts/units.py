"""Stage 3 of the build, the units: one file per (variant, dialogue) with its converted,
resynthesised and checked clips, cached.

``units/pool-<bank key>/code-<UNIT_CODE>-<generation key>/<variant>/<source>/<dialogue>.npz`` (another
substitute pool, e.g. one more source, makes new units, and so do other generation methods and a
change to the code that makes them: a warm cache never mixes units of old code into a build); a unit dropped before
conversion leaves a small ``.dropped.json`` marker instead. A unit depends only on the seed and
its dialogue, so whichever process or machine makes it, the file is the same, and a killed build
resumes here.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.encoders import get_encoder
from speakersleuth.speech.files import write_text_atomic

from .audio import load_span
from .plan import MISSING, UnitJob, backend_for
from .scenarios import Unit, build_unit, choose
from .segments import Segment, check_durations, widen_reference
from .speaker_bank import SpeakerBank, one_thread, pool_name
from .vc import get_converter
from .vc.respeak import voice_engine
from .verification import audio_checks

#: Digest of the code that turns a segment into a unit (conversion, scenarios, checks, audio I/O).
UNIT_CODE = hashlib.sha256(
    b"".join(
        path.read_bytes()
        for path in sorted(
            [
                *Path(__file__).parent.joinpath("vc").glob("*.py"),
                *(
                    Path(__file__).with_name(name)
                    for name in ("units.py", "scenarios.py", "verification.py", "audio.py", "speaker_bank.py")
                ),
                Path(__file__).parents[1] / "speech" / "audio.py",
            ]
        )
    )
).hexdigest()[:12]


class Clock:
    """Seconds spent inside the model calls (TTS, voice conversion, speaker encoder)."""

    def __init__(self) -> None:
        self.seconds: Counter = Counter()

    @contextmanager
    def __call__(self, what: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[what] += time.perf_counter() - start


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def generation_key(opts) -> str:
    """A short digest of the options that choose a unit's generation method (``plan.backend_for``)."""
    return hashlib.sha256(json.dumps([opts.vc, list(opts.vc_4vc), opts.vc_recorded]).encode()).hexdigest()[:8]


class UnitStore:
    """The unit files of one substitute pool, and their verdicts (review decisions included)."""

    def __init__(
        self, cache: Path, bank_key: str, review: dict[tuple[str, str], str] | None = None, methods: str = ""
    ):
        """``methods``: the build's generation methods (``generation_key``), so that units made by
        other methods are never taken for this build's."""
        self.root = Path(cache) / "units" / f"pool-{bank_key}" / f"code-{UNIT_CODE}{'-' + methods if methods else ''}"
        self.review = review or {}

    def path(self, variant: str, segment: Segment) -> Path:
        return self.root / variant / segment.source / f"{_safe(segment.dialogue_id)}.npz"

    def marker(self, variant: str, segment: Segment) -> Path:
        return self.path(variant, segment).with_suffix(".dropped.json")

    def done(self, variant: str, segment: Segment) -> bool:
        return self.path(variant, segment).is_file() or self.marker(variant, segment).is_file()

    def verdict(self, variant: str, segment: Segment) -> str | None | object:
        """Why the unit is dropped (verification, or the review), None when it is kept, or
        ``MISSING`` when it is not made yet."""
        marker = self.marker(variant, segment)
        if marker.is_file():
            return json.loads(marker.read_text())["dropped"]
        path = self.path(variant, segment)
        if not path.is_file():
            return MISSING
        return Unit.read_dropped(path) or self.review.get((variant, f"{segment.source}/{segment.dialogue_id}"))

    def load(self, variant: str, segment: Segment) -> Unit:
        return Unit.load(self.path(variant, segment))

    def save_dropped(self, variant: str, segment: Segment, reason: str) -> None:
        """A unit dropped before conversion leaves a small marker instead of audio."""
        write_text_atomic(
            self.marker(variant, segment),
            json.dumps({"variant": variant, "segment": segment.to_json(), "dropped": reason}),
        )


class UnitMaker:
    """Makes units: voicing (TTS sources), conversion to the chosen substitutes, the audio checks."""

    def __init__(
        self, opts, sources: dict, bank: SpeakerBank, pool: dict[str, tuple[str, list]], store: UnitStore, clock: Clock
    ):
        self.opts, self.sources, self.bank, self.pool, self.store, self.clock = opts, sources, bank, pool, store, clock
        self._converters: dict = {}
        self._clips: dict[str, list[np.ndarray]] = {}
        self._threshold: float | None = None  # the bank's EER threshold, once a re-spoken turn is verified

    def make_all(self, jobs: list[UnitJob], desc: str = "units") -> None:
        for job in tqdm(jobs, desc=desc, unit="dialogue", disable=not (self.opts.progress and jobs)):
            self.make(job)

    def make(self, job: UnitJob) -> None:
        """Voice, convert, resynthesise and check the job's segment for each of its variants."""
        segment, audio, reason = self._voiced(job.segment, job.dialogue)
        choice = (
            None
            if reason
            else choose(
                segment,
                self.bank,
                self.opts.seed,
                target=pool_name(segment.source, segment.target_speaker),
                exclude=tuple(pool_name(segment.source, s) for s in job.dialogue.speakers),
                engine=voice_engine,
            )
        )
        for variant in job.variants:
            if self.store.done(variant, segment):
                continue
            if reason is not None:
                self.store.save_dropped(variant, segment, f"segment: {reason} (after voicing)")
                continue
            clips = {s.speaker: self._substitute_clips(s.speaker) for s in (choice.s2, choice.s3)}
            converter = self._converter(backend_for(variant, segment, self.opts), segment.source)
            with self.clock("tts" if converter.respeaks else "vc"):
                unit = build_unit(
                    variant,
                    segment,
                    job.dialogue,
                    [audio[i] for i in segment.target_turns],
                    [audio[i] for i in segment.reference_turns],
                    choice,
                    clips,
                    converter,
                )
            unit.dropped, unit.checks = audio_checks(unit)
            if converter.respeaks:
                self._verify_voices(unit)
            unit.save(self.store.path(variant, segment))

    def _voiced(self, segment: Segment, dialogue) -> tuple[Segment, dict[int, np.ndarray], str | None]:
        """The segment's turns voiced and read; a reference voiced shorter than planned grows by a
        turn instead of being dropped. Returns the (possibly wider) segment, its audio and the
        duration rule it breaks (None when none)."""
        source = self.sources[segment.source]
        audio: dict[int, np.ndarray] = {}
        while True:
            needed = sorted((set(segment.target_turns) | set(segment.reference_turns)) - set(audio))
            with self.clock("tts"):
                source.ensure_audio(dialogue, needed)
            audio |= {i: load_span(dialogue.turns[i].audio) for i in needed}
            reason = check_durations(segment, {i: a.size / ssd.SAMPLING_RATE for i, a in audio.items()})
            wider = widen_reference(segment, dialogue) if reason == "reference_too_short" else None
            if wider is None:
                return segment, audio, reason
            segment = wider

    def _converter(self, name: str, source: str):
        """Backend ``name``; re-speaking voices with the voicer of ``source`` (its wav cache)."""
        if name not in self._converters:
            self._converters[name] = (
                get_converter(name, voicer=self.sources[source].voicer) if name == "respeak" else get_converter(name)
            )
        return self._converters[name]

    def _verify_voices(self, unit: Unit) -> None:
        """HEAR's check of a re-spoken turn: its similarity to the voice it was meant to have (the
        cosine of its embedding under the bank's encoder to that voice's mean bank embedding) must
        reach the bank's EER threshold (``SpeakerBank.centroid_threshold``); else the unit is
        dropped (a bank voice speaks a text the same way every time, so there is nothing to draw
        again) and a replacement is made."""
        with self.clock("encoder"), one_thread():
            if self._threshold is None:
                self._threshold = self.bank.centroid_threshold()
                self._encoder = get_encoder(self.opts.encoder)  # the bank's (it chose S3)
            embeddings = self._encoder.encode([unit.raw_converted[s] for s in ("S2", "S3")])
        for scenario, substitute, embedding in zip(("S2", "S3"), (unit.s2, unit.s3), embeddings):
            cosine = round(float(embedding @ self.bank.embedding(substitute.speaker) / np.linalg.norm(embedding)), 4)
            unit.checks[f"{scenario.lower()}_voice_similarity"] = cosine
            if unit.dropped is None and cosine < self._threshold:
                unit.dropped = (
                    f"voice: a re-spoken {scenario} turn under the bank's EER threshold of similarity to its voice"
                )
        unit.checks["voice_threshold"] = round(self._threshold, 4)

    def _substitute_clips(self, name: str) -> list[np.ndarray]:
        """The clips of the pool speaker ``name`` (``<source>/<speaker>``), read once."""
        if name not in self._clips:
            self._clips[name] = [load_span(c) for c in self.pool[name][1]]
        return self._clips[name]
