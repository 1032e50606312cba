"""Every prompt the LALM judges send, in one place (written for this project).

A prompt is a system text plus the user turn: labels and clips interleaved in listening order,
then the question, the voice-focus guidance and the answer format. Target turns are numbered
1..N among the target speaker's turns (the positions that localization answers use).

Settings (``SETTINGS``):

============  =====================================================================================
main          reference clip + the target's turns as audio (discrimination: the N-1 context turns,
              the masked turn marked, then candidates A/B/C)
context       as main, plus the other speakers' turns as text between the target's audio turns, in
              dialogue order (from the ``turns`` column)
no_reference  as main without the reference clip; the target speaker is the one who speaks most
              of the turns (discrimination: the one who speaks the context turns)
per_turn      one query per target turn: the reference and that turn only, "same person?";
              detection = any turn judged different, localization = those turns (detection and
              localization only; the same per-turn queries serve both tasks)
============  =====================================================================================

Queries (``Query.kind``) and the JSON each asks for:

============  ================================  ===============================================
detection     {"answer": "consistent"}           or "inconsistent"
localization  {"inconsistent_turns": [...]}      turn numbers 1..N, [] when none
choice        {"answer": "B"}                    discrimination classification
ranking       {"ranking": ["B", "C", "A"]}       discrimination ranking, best first
same_speaker  {"same_speaker": true}             per-turn comparison with the reference
============  ================================  ===============================================

Format lines show placeholders, not example values, so no turn number or label is suggested.
Every prompt asks the model to judge the main speaker's timbre and to ignore echo, noise, recording
quality, short interjections by others and the words spoken. ``PROMPT_VERSION`` changes whenever
any wording here changes; the harness records it with every raw answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from speakersleuth.judges.lalm.backends.base import Audio, Prompt, Text

PROMPT_VERSION = "1"
SETTINGS = ("main", "context", "no_reference", "per_turn")
#: Settings that show the reference clip.
WITH_REFERENCE = ("main", "context", "per_turn")

SYSTEM = (
    "You are an expert listener who compares voices. You decide whether recordings were spoken by "
    "the same person, and you answer in exactly the JSON format that is asked for."
)

VOICE_FOCUS = (
    "Judge only the voice of the main speaker in each clip: its timbre, pitch range, resonance, voice "
    "quality and accent. Ignore echo, reverberation, background noise, loudness and recording quality, "
    'ignore short interjections by other people (such as "mm-hm" or "yeah"), and ignore the words '
    "being said: the same person can say anything."
)

REFERENCE_INTRO = "Reference recording of the target speaker:"
TURNS_INTRO = {
    "with_reference": "The target speaker's {n} turns from one dialogue, in order:",
    "no_reference": "{n} turns from one dialogue, in order, all attributed to one speaker (the target speaker):",
}
CONTEXT_INTRO = (
    "A dialogue, in order. The target speaker's turns are audio clips labelled Turn 1 to Turn {n}; the "
    "other speakers' turns are given as text, for context only."
)
TURN_LABEL = "Turn {k}:"
OTHER_SPEAKER_LINE = "{speaker} (text): {text}"
MASKED_TURN = "Turn {k}: [missing; three candidate recordings for it follow the dialogue]"
CANDIDATES_INTRO = "Candidate recordings for the missing Turn {k}:"
CANDIDATE_LABEL = "Candidate {label}:"
PER_TURN_CLIP = "A clip from a dialogue:"

QUESTIONS = {
    ("detection", True): (
        "Question: are all {n} turns spoken by the same person as the reference recording? Answer "
        '"consistent" if they are, or "inconsistent" if at least one turn is spoken by someone else.'
    ),
    ("detection", False): (
        'Question: are all {n} turns spoken by the same person? Answer "consistent" if they are, or '
        '"inconsistent" if at least one turn is spoken by someone else.'
    ),
    ("localization", True): (
        "Question: which turns are not spoken by the person in the reference recording? Give their "
        "turn numbers (1 to {n}); give an empty list if every turn is spoken by that person."
    ),
    ("localization", False): (
        "Question: the target speaker is the person who speaks most of these turns. Which turns are "
        "spoken by someone else? Give their turn numbers (1 to {n}); give an empty list if every turn "
        "is spoken by the same person."
    ),
    ("choice", True): (
        "Question: exactly one candidate is the target speaker's own recording of the missing turn. "
        "Which candidate is spoken by the target speaker, the person in the reference recording and in "
        "the other turns?"
    ),
    ("choice", False): (
        "Question: exactly one candidate is the target speaker's own recording of the missing turn. "
        "Which candidate is spoken by the target speaker, the person who speaks the other turns?"
    ),
    ("ranking", True): (
        "Question: rank all three candidates from the most to the least likely to be spoken by the "
        "target speaker, the person in the reference recording and in the other turns."
    ),
    ("ranking", False): (
        "Question: rank all three candidates from the most to the least likely to be spoken by the "
        "target speaker, the person who speaks the other turns."
    ),
    ("same_speaker", True): "Question: is this clip spoken by the same person as the reference recording?",
}

ANSWER_FORMATS = {
    "detection": 'Reply with only a JSON object: {"answer": "consistent"} or {"answer": "inconsistent"}.',
    "localization": (
        'Reply with only a JSON object: {"inconsistent_turns": [<turn numbers>]}, '
        'or {"inconsistent_turns": []} if there are none.'
    ),
    "choice": 'Reply with only a JSON object: {"answer": "<one of A, B, C>"}.',
    "ranking": (
        "Reply with only a JSON object that lists each of A, B and C once, most likely first: "
        '{"ranking": ["<first>", "<second>", "<third>"]}.'
    ),
    "same_speaker": 'Reply with only a JSON object: {"same_speaker": true} or {"same_speaker": false}.',
}

#: The two answers of each yes/no query, the one meaning "inconsistent" first (``Prompt.answers``).
BINARY_ANSWERS = {
    "detection": ('{"answer": "inconsistent"}', '{"answer": "consistent"}'),
    "same_speaker": ('{"same_speaker": false}', '{"same_speaker": true}'),
}


# ----------------------------------------------------------------------------------- instances


@dataclass(frozen=True, eq=False)
class TurnInstance:
    """What a detection/localization prompt shows: the target's N clips, the reference, the turns."""

    id: str
    target_audio: list[np.ndarray]
    reference: np.ndarray
    turns: list[dict]
    target_positions: list[int]


@dataclass(frozen=True, eq=False)
class DiscriminationInstance:
    """What a discrimination prompt shows: N-1 context clips, the masked position, candidates."""

    id: str
    context_audio: list[np.ndarray]
    masked_position: int
    candidates: list[np.ndarray]
    labels: list[str]
    reference: np.ndarray
    turns: list[dict]
    target_positions: list[int]


@dataclass(frozen=True, eq=False)
class Query:
    """One model call: its kind (what answer it asks for), the prompt, and for per-turn queries
    the 1-based target turn it compares."""

    kind: str
    prompt: Prompt
    turn: int | None = None


def check_setting(setting: str, task: str | None = None) -> None:
    if setting not in SETTINGS:
        raise ValueError(f"unknown prompt setting {setting!r}; known: {', '.join(SETTINGS)}")
    if setting == "per_turn" and task == "discrimination":
        raise ValueError(
            "the per_turn setting covers detection and localization only; "
            "judge discrimination with the main, context or no_reference setting"
        )


# ------------------------------------------------------------------------------------ builders


def _dialogue_parts(
    turns: list[dict], positions: list[int], clip_at: dict[int, Audio | None], with_context: bool
) -> list[Text | Audio]:
    """Target turns in order as ``Turn k:`` + clip (``None`` marks the masked turn); with context,
    the other speakers' turns as text lines between them. Other speakers are named Speaker 2, 3...
    in order of appearance (their ids are not shown)."""
    parts: list[Text | Audio] = []
    number = {p: k for k, p in enumerate(positions, start=1)}
    names: dict[str, str] = {}
    order = range(len(turns)) if with_context else positions
    for i in order:
        if i in number:
            k = number[i]
            clip = clip_at[k]
            if clip is None:
                parts.append(Text("\n" + MASKED_TURN.format(k=k)))
            else:
                parts += [Text("\n" + TURN_LABEL.format(k=k) + " "), clip]
        else:
            speaker = names.setdefault(turns[i]["speaker"], f"Speaker {len(names) + 2}")
            parts.append(
                Text("\n" + OTHER_SPEAKER_LINE.format(speaker=speaker, text=(turns[i]["text"] or "").strip()))
            )
    return parts


def _closing(kind: str, with_reference: bool, n: int) -> Text:
    question = QUESTIONS[(kind, with_reference)].format(n=n)
    return Text(f"\n\n{question}\n{VOICE_FOCUS}\n{ANSWER_FORMATS[kind]}")


def _opening(reference: np.ndarray, with_reference: bool) -> list[Text | Audio]:
    return [Text(REFERENCE_INTRO + " "), Audio(reference, "reference"), Text("\n\n")] if with_reference else []


def turn_queries(task: str, setting: str, inst: TurnInstance) -> list[Query]:
    """The queries of a detection or localization instance in ``setting``."""
    check_setting(setting, task)
    n = len(inst.target_audio)
    if setting == "per_turn":
        return [
            Query(
                "same_speaker",
                Prompt(
                    SYSTEM,
                    (
                        *_opening(inst.reference, True),
                        Text(PER_TURN_CLIP + " "),
                        Audio(clip, f"turn {k}"),
                        _closing("same_speaker", True, n),
                    ),
                    BINARY_ANSWERS["same_speaker"],
                ),
                turn=k,
            )
            for k, clip in enumerate(inst.target_audio, start=1)
        ]
    with_reference = setting in WITH_REFERENCE
    clips = {k: Audio(c, f"turn {k}") for k, c in enumerate(inst.target_audio, start=1)}
    intro = (
        CONTEXT_INTRO if setting == "context" else TURNS_INTRO["with_reference" if with_reference else "no_reference"]
    )
    parts = [
        *_opening(inst.reference, with_reference),
        Text(intro.format(n=n)),
        *_dialogue_parts(inst.turns, inst.target_positions, clips, setting == "context"),
        _closing(task, with_reference, n),
    ]
    return [Query(task, Prompt(SYSTEM, tuple(parts), BINARY_ANSWERS.get(task, ())))]


def discrimination_queries(setting: str, inst: DiscriminationInstance, *, ranking: bool = True) -> list[Query]:
    """The classification query (and, with ``ranking``, the ranking query) of one instance."""
    check_setting(setting, "discrimination")
    if list(inst.labels) != ["A", "B", "C"]:
        raise ValueError(f"{inst.id}: candidate labels {inst.labels} are not A, B, C, which the prompts name")
    n = len(inst.context_audio) + 1
    m = inst.masked_position
    if not 1 <= m <= n:
        raise ValueError(f"{inst.id}: masked_position {m} is not a turn 1..{n}")
    context = iter(inst.context_audio)
    clips = {k: None if k == m else Audio(next(context), f"turn {k}") for k in range(1, n + 1)}
    with_reference = setting in WITH_REFERENCE
    intro = (
        CONTEXT_INTRO if setting == "context" else TURNS_INTRO["with_reference" if with_reference else "no_reference"]
    )
    body = [
        *_opening(inst.reference, with_reference),
        Text(intro.format(n=n)),
        *_dialogue_parts(inst.turns, inst.target_positions, clips, setting == "context"),
        Text("\n\n" + CANDIDATES_INTRO.format(k=m)),
    ]
    for label, clip in zip(inst.labels, inst.candidates, strict=True):
        body += [Text("\n" + CANDIDATE_LABEL.format(label=label) + " "), Audio(clip, f"candidate {label}")]
    kinds = ("choice", "ranking") if ranking else ("choice",)
    return [Query(kind, Prompt(SYSTEM, (*body, _closing(kind, with_reference, n)))) for kind in kinds]
