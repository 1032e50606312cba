"""What a check found, as data: per speaker, each turn's score and flag and each candidate's rank
(``CheckReport``); ``to_dict`` is the JSON that ``--json`` prints and ``--report-out`` writes.

Scores are the embedding judges' own (``judges.embedding``): for ``pairwise`` and ``reference`` a
cosine similarity (a turn is flagged below τ, the best candidate is the highest), for ``centroid``
a distance, 1 - cosine to the speaker's centroid (flagged above τ, the best candidate the lowest).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from speakersleuth.judges.embedding import HIGHER_IS_CONSISTENT

#: What each method's per-turn score is, in words.
SCORE_NAMES = {
    "core": "mean cosine similarity to the speaker's core turns (the majority that agree most), itself left out",
    "pairwise": "mean cosine similarity to the speaker's other turns",
    "centroid": "cosine distance to the speaker's mean embedding",
    "reference": "cosine similarity to the speaker's reference clip",
}


def flag_rule(method: str, threshold: float) -> str:
    """``score < 0.55`` or ``score > 0.3``: when a turn of ``method`` is flagged at τ."""
    return f"score {'<' if HIGHER_IS_CONSISTENT[method] else '>'} {threshold:g}"


@dataclass
class CandidateResult:
    """One candidate of a turn: its ``label``, ``score`` (the method's candidate score), ``rank``
    (1 = best), its ``audio`` and whether it is the turn's ``current`` take."""

    label: str
    score: float
    rank: int
    audio: str
    current: bool = False


@dataclass
class TurnResult:
    """One turn: its id, speaker, ``position`` among the speaker's judged turns (1-based; None for
    a turn not judged), ``score`` and ``flagged`` at τ, its audio and text, its candidates ranked
    best first, its length in ``seconds`` and ``speech_seconds`` (None when not measured), its score
    ``relative`` to the speaker's typical one (the median of the speaker's scores: how far it falls
    below or above what the speaker's turns usually reach) and, for a turn with audio but no score,
    its ``status`` (``too short to judge``, ``speaker not judged``)."""

    turn: str
    speaker: str
    position: int | None
    score: float | None
    flagged: bool
    audio: str | None
    text: str = ""
    candidates: list[CandidateResult] = field(default_factory=list)
    seconds: float | None = None
    speech_seconds: float | None = None
    relative: float | None = None
    status: str = ""


@dataclass
class SpeakerResult:
    """One speaker of one dialogue, judged with ``method`` at ``threshold``: its turns, its
    ``detection_score`` (the largest inconsistency of any turn, as the benchmark's detection
    ``score``: higher = more likely inconsistent; None without scored turns) and whether it kept
    one voice (``consistent``: no turn flagged)."""

    dialogue: str
    speaker: str
    method: str
    threshold: float
    turns: list[TurnResult]
    detection_score: float | None
    reference: str | None = None

    @property
    def consistent(self) -> bool:
        return not any(t.flagged for t in self.turns)

    @property
    def flagged(self) -> list[TurnResult]:
        return [t for t in self.turns if t.flagged]


@dataclass
class CheckReport:
    """A check's findings: the encoder, the main method and τ (``threshold_source`` says where τ
    comes from), every speaker's result, notes (the calibration's caveat, turns left out) and,
    after ``--calibrate``, the recalibration (a dict)."""

    encoder: str
    method: str
    threshold: float
    threshold_source: str
    speakers: list[SpeakerResult]
    notes: list[str] = field(default_factory=list)
    audio_seconds: float = 0.0
    recalibration: dict | None = None

    @property
    def flagged(self) -> list[TurnResult]:
        """Every flagged turn, speaker by speaker."""
        return [t for s in self.speakers for t in s.flagged]

    def speaker(self, name: str, dialogue: str | None = None) -> SpeakerResult:
        """The result of speaker ``name`` (of ``dialogue`` when the check had several)."""
        for result in self.speakers:
            if result.speaker == name and dialogue in (None, result.dialogue):
                return result
        raise KeyError(f"no speaker {name!r}" + (f" in dialogue {dialogue!r}" if dialogue else ""))

    def to_dict(self) -> dict:
        """The report as JSON-ready data (``--json``, ``--report-out``)."""
        return {
            "encoder": self.encoder,
            "method": self.method,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            "score": SCORE_NAMES[self.method],
            "flag_rule": flag_rule(self.method, self.threshold),
            "audio_seconds": round(self.audio_seconds, 3),
            "speakers": [
                {**asdict(s), "consistent": s.consistent, "flagged_turns": [t.turn for t in s.flagged]}
                for s in self.speakers
            ],
            "notes": list(self.notes),
            "recalibration": self.recalibration,
        }
