"""The check itself: a dialogue's clips heard for their speech, embedded through the judges'
content-keyed cache and scored by the embedding judges' own functions (``judges.embedding``:
``turn_scores``, ``flagged_turns``, ``detection_score``, ``candidate_scores``, ``ranking``), so a
turn is judged here exactly as a benchmark instance is judged there.

First every clip is decoded (a file cut short is refused here, before any model loads) and, for
people's audio, cut to its speech (``judges.check.speech``): silence and padding are not voice, and
a turn with less than ``MIN_SPEECH_SECONDS`` of speech is reported as too short to judge, not
scored. Per speaker of each dialogue, the turns with enough speech are that speaker's instance: each
gets its per-turn score, and the flagged ones are those that cross τ. A turn with candidates (its
regenerations) has them ranked against the speaker's other turns, its current take (when it has
one) among them, as the benchmark's discrimination ranks a masked turn's candidates. A speaker with
a single such turn is judged against its reference clip (the reference method, at that method's
calibrated τ); with neither a second turn nor a reference, it is reported as not judged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.check.calibration import (
    CAVEAT,
    Calibration,
    JudgeSettings,
    Recalibration,
    parse_label,
    recalibrate,
    resolve_settings,
)
from speakersleuth.judges.check.dialogue import Clip, Dialogue, Turn, validate
from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.judges.check.inputs import add_candidates, add_references, read_manifest, read_rttm
from speakersleuth.judges.check.listening import Heard, hear
from speakersleuth.judges.check.results import CandidateResult, CheckReport, SpeakerResult, TurnResult
from speakersleuth.judges.check.speech import MIN_SPEECH_SECONDS
from speakersleuth.judges.embedding import candidate_scores, detection_score, flagged_turns, ranking, turn_scores


@dataclass
class _Plan:
    """How one speaker of one dialogue is judged: the method, τ, its judged turns (audio with enough
    speech), its reference clip (embedded only for the reference method) and, when it cannot be
    judged, why (``unjudged``)."""

    dialogue: Dialogue
    speaker: str
    method: str
    threshold: float
    voiced: list[Turn]
    reference: Clip | None
    unjudged: str = ""


def check_dialogues(
    dialogues: Dialogue | Sequence[Dialogue],
    *,
    encoder: str | None = None,
    method: str | None = None,
    threshold: float | None = None,
    calibration: Calibration | None = None,
    cache: EmbeddingCache | None = None,
    cache_dir: str | os.PathLike | None = None,
    batch_size: int = 32,
    progress: bool = False,
    validate_inputs: bool = True,
    cut_to_speech: bool = True,
) -> CheckReport:
    """Judge, per speaker, how consistent each turn's voice is; flag the turns past τ; rank candidates.

    Arguments
    ---------
    dialogues : Dialogue or sequence of Dialogue
        What to check (``judges.check.inputs`` reads them from a manifest or an RTTM file).
    encoder : str, optional
        The encoder spec (``campplus``, ``dvector``, ``eres2net``, ``resemblyzer``, ``ecapa:<folder>``);
        default: the shipped calibration's default (or ``cache``'s encoder).
    method : str, optional
        ``core``, ``pairwise``, ``centroid`` or ``reference`` (every speaker then needs a reference
        clip); default: the calibration's choice for the encoder.
    threshold : float, optional
        τ; default: the calibrated τ of the encoder and method (``resolve_settings``).
    calibration : Calibration, optional
        Default: the file shipped with the package.
    cache : EmbeddingCache, optional
        A cache (and its loaded encoder) to reuse across checks; default: a new one.
    cache_dir : str or os.PathLike, optional
        With a new cache: a folder that keeps embeddings on disk, keyed by file content and
        encoder (default None: memory only).
    batch_size : int
        With a new cache: the most clips per encoder call (default 32).
    progress : bool
        Show progress bars while reading and embedding (default False).
    validate_inputs : bool
        Check files, lengths and speakers first (default True; ``CheckInputError`` on a problem).
    cut_to_speech : bool
        Embed only each clip's speech, and report turns with less than ``MIN_SPEECH_SECONDS`` of
        it as too short to judge (default True; False embeds whole clips, as the benchmark's
        judges embed its rows).

    Returns
    -------
    CheckReport
        Per speaker and turn: the score, the flag at τ, the seconds and speech seconds, and the
        ranked candidates.

    Example
    -------
    Three turns of one hum and a fourth of hiss, in memory (``Clip.from_file`` reads files); hums
    are not speech, so they are embedded whole:

    >>> import numpy as np
    >>> from speakersleuth.judges.check.dialogue import Clip, Dialogue, Turn
    >>> t = np.arange(16000) / 16000
    >>> hum = lambda f0: Clip(samples=sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 6)) * 0.1)
    >>> hiss = Clip(samples=np.random.default_rng(0).normal(0, 0.1, 16000))
    >>> turns = [Turn(1, "A", hum(120)), Turn(2, "A", hum(125)), Turn(3, "A", hum(118)), Turn(4, "A", hiss)]
    >>> report = check_dialogues(
    ...     Dialogue(turns), encoder="campplus", method="pairwise", threshold=0.9, cut_to_speech=False
    ... )
    >>> [round(t.score, 2) for t in report.speaker("A").turns]
    [0.93, 0.92, 0.91, 0.85]
    >>> [t.turn for t in report.flagged], report.speaker("A").consistent
    (['4'], False)
    """
    dialogues = [dialogues] if isinstance(dialogues, Dialogue) else list(dialogues)
    if cache is not None:
        if encoder is not None and encoder != cache.encoder.name:
            raise ValueError(f"encoder {encoder!r} differs from the cache's encoder {cache.encoder.name!r}")
        encoder = cache.encoder.name
    settings = resolve_settings(encoder, method, threshold, calibration)
    if validate_inputs:
        for dialogue in dialogues:
            validate(dialogue, needs_reference=settings.method == "reference")
    heard = hear(_every_clip(dialogues), cut_to_speech=cut_to_speech, progress=progress)
    plans = [_plan(d, s, settings, heard) for d in dialogues for s in d.speakers]
    if cache is None:
        from speakersleuth.speech.encoders import get_encoder

        cache = EmbeddingCache(get_encoder(settings.encoder), cache_dir, batch_size=batch_size)
    vectors = _embed(plans, cache, heard, progress)
    speakers = [_judge(plan, vectors, heard) for plan in plans]
    notes = [CAVEAT] if settings.source.startswith("calibrated on") else []
    notes += [_unused_reference(plan) for plan in plans if plan.method != "reference" and _has_reference(plan)]
    notes += [plan.unjudged for plan in plans if plan.unjudged]
    notes += [f"{d.source or d.name}: {note}" for d in dialogues for note in d.notes]
    seconds = sum(heard[id(t.audio)].seconds for d in dialogues for t in d.turns if t.audio is not None)
    return CheckReport(
        cache.encoder.name, settings.method, settings.threshold, settings.source, speakers, notes, seconds
    )


def _has_reference(plan: _Plan) -> bool:
    return plan.speaker in plan.dialogue.references


def _unused_reference(plan: _Plan) -> str:
    """The note for a reference clip the speaker's method does not read (it compares turns)."""
    clip = plan.dialogue.references[plan.speaker].describe()
    return (
        f"{plan.speaker}'s reference clip {clip} is not used: the {plan.method} method compares the speaker's "
        "turns with each other (--method reference judges every turn against the reference clip)"
    )


def _every_clip(dialogues: list[Dialogue]) -> list[Clip]:
    """Every clip of the dialogues: per dialogue, each turn's audio then its candidates, then the
    reference clips (the order the benchmark's judges embed a row)."""
    clips: list[Clip] = []
    for dialogue in dialogues:
        for turn in dialogue.turns:
            clips += ([turn.audio] if turn.audio is not None else []) + list(turn.candidates.values())
        clips += list(dialogue.references.values())
    return clips


def _plan(dialogue: Dialogue, speaker: str, settings: JudgeSettings, heard: dict[int, Heard]) -> _Plan:
    """The method and τ of one speaker: the check's, or the reference method's for a speaker with
    one judged turn and a reference clip; a speaker with neither is not judged (``unjudged``)."""
    voiced = [t for t in dialogue.turns_of(speaker) if t.audio is not None and _enough_speech(heard[id(t.audio)])]
    method, threshold, unjudged = settings.method, settings.threshold, ""
    has_reference = speaker in dialogue.references
    if len(voiced) < 2 and method != "reference":
        if has_reference:
            method, threshold = "reference", settings.reference_threshold
        else:
            unjudged = (
                f"{dialogue.source or dialogue.name}: speaker {speaker!r} is not judged: "
                f"{len(voiced)} of its turns hold at least {MIN_SPEECH_SECONDS:.1f} s of speech, and "
                f"consistency needs two (or a reference clip: --reference {speaker}=FILE)"
            )
            voiced = []
    reference = dialogue.references.get(speaker) if method == "reference" else None
    if reference is not None and not _enough_speech(heard[id(reference)]):
        raise CheckInputError(_too_little_speech(reference, heard[id(reference)], f"the reference of {speaker!r}"))
    for turn in dialogue.turns_of(speaker):
        for label, clip in turn.candidates.items():
            if not _enough_speech(heard[id(clip)]):
                raise CheckInputError(_too_little_speech(clip, heard[id(clip)], f"candidate {label!r}"))
    return _Plan(dialogue, speaker, method, threshold, voiced, reference, unjudged)


def _enough_speech(heard: Heard) -> bool:
    return heard.speech_seconds is None or heard.speech_seconds >= MIN_SPEECH_SECONDS


def _too_little_speech(clip: Clip, heard: Heard, what: str) -> str:
    return (
        f"{clip.describe()}: {what} holds {heard.speech_seconds:.2f} s of speech in {heard.seconds:.2f} s; "
        f"the check needs at least {MIN_SPEECH_SECONDS:.1f} s of speech"
    )


def _plan_clips(plans: list[_Plan]) -> list[Clip]:
    """Every clip the plans embed: per dialogue, each judged turn's audio and every candidate, then
    the reference clips the reference method reads."""
    clips: list[Clip] = []
    for dialogue in dict.fromkeys(p.dialogue for p in plans):
        voiced = {id(t) for p in plans if p.dialogue is dialogue for t in p.voiced}
        for turn in dialogue.turns:
            clips += [turn.audio] if id(turn) in voiced else []
            clips += list(turn.candidates.values())
        clips += [p.reference for p in plans if p.dialogue is dialogue and p.reference is not None]
    return clips


def _embed(
    plans: list[_Plan], cache: EmbeddingCache, heard: dict[int, Heard], progress: bool
) -> dict[int, np.ndarray]:
    """Embeddings by clip identity, through the cache (each distinct content encoded once)."""
    clips = _plan_clips(plans)
    if not clips:
        return {}
    bar = None

    def advance(done: int, total: int) -> None:  # a bar only when something is encoded
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=f"embed [{cache.encoder.name}]", unit="clip", disable=not progress)
        bar.update(done - bar.n)

    vectors = cache.embed_keyed([heard[id(c)].key for c in clips], lambda i: heard[id(clips[i])].samples, advance)
    if bar is not None:
        bar.close()
    return {id(clip): vector for clip, vector in zip(clips, vectors)}


def _judge(plan: _Plan, vectors: dict[int, np.ndarray], heard: dict[int, Heard]) -> SpeakerResult:
    """One speaker's scores, flags and rankings, from the judges' functions."""
    method, tau = plan.method, plan.threshold
    reference = vectors[id(plan.reference)] if plan.reference is not None else None
    embedded = np.stack([vectors[id(t.audio)] for t in plan.voiced]) if plan.voiced else None
    scores = turn_scores(method, embedded, reference) if plan.voiced else np.array([])
    flagged = set(flagged_turns(method, scores, tau)) if plan.voiced else set()
    typical = float(np.median(scores)) if len(scores) else None
    position = {t.id: i for i, t in enumerate(plan.voiced)}
    results = []
    for turn in plan.dialogue.turns_of(plan.speaker):
        i = position.get(turn.id)
        sound = heard[id(turn.audio)] if turn.audio is not None else None
        results.append(
            TurnResult(
                turn.id,
                turn.speaker,
                None if i is None else i + 1,
                None if i is None else float(scores[i]),
                i is not None and i + 1 in flagged,
                None if turn.audio is None else turn.audio.describe(),
                turn.text,
                _rank(plan, turn, vectors, reference) if turn.candidates and not plan.unjudged else [],
                seconds=None if sound is None else sound.seconds,
                speech_seconds=None if sound is None else sound.speech_seconds,
                relative=None if i is None else round(float(scores[i]) - typical, 4),
                status=_status(plan, sound, i),
            )
        )
    return SpeakerResult(
        plan.dialogue.name,
        plan.speaker,
        method,
        tau,
        results,
        detection_score(method, scores) if len(scores) else None,
        None if plan.reference is None else plan.reference.describe(),
    )


def _status(plan: _Plan, sound: Heard | None, position: int | None) -> str:
    """Why a turn with audio has no score: too little speech, or its speaker not judged."""
    if position is not None or sound is None:
        return ""
    if not _enough_speech(sound):
        return "too short to judge"
    return "speaker not judged"


def _rank(plan: _Plan, turn: Turn, vectors: dict[int, np.ndarray], reference) -> list[CandidateResult]:
    """A turn's candidates (its current take first, when it is judged) ranked against the
    speaker's other judged turns, as the benchmark's discrimination ranks a masked turn's candidates."""
    current = {turn.id: turn.audio} if any(t is turn for t in plan.voiced) else {}
    takes = current | turn.candidates
    context = [vectors[id(t.audio)] for t in plan.voiced if t is not turn]
    labels = list(takes)
    scores = candidate_scores(
        plan.method,
        np.stack(context) if context else np.empty((0, 1)),
        np.stack([vectors[id(c)] for c in takes.values()]),
        reference,
    )
    by_label = dict(zip(labels, scores))
    return [
        CandidateResult(label, float(by_label[label]), rank, takes[label].describe(), label == turn.id)
        for rank, label in enumerate(ranking(plan.method, labels, scores), 1)
    ]


def check(
    manifest: str | os.PathLike | None = None,
    *,
    rttm: str | os.PathLike | None = None,
    recording: str | os.PathLike | None = None,
    references: dict[str, str | os.PathLike] | None = None,
    candidates: dict[str, Sequence[str | os.PathLike]] | None = None,
    recording_id: str | None = None,
    **options,
) -> CheckReport:
    """Check a dialogue as people have it: a manifest of turn files, or a recording and its RTTM.

    Arguments
    ---------
    manifest : str or os.PathLike, optional
        A CSV/TSV/JSONL manifest (``judges.check.inputs``: columns turn, speaker, path, and
        optionally text, reference, candidate_for, label, dialogue). Give it, or ``rttm`` and
        ``recording``.
    rttm, recording : str or os.PathLike, optional
        An RTTM file (each segment a turn) and the recording it describes.
    recording_id : str, optional
        With ``rttm``: the file id of the recording's segments (default: its file name without
        extension), for an RTTM of several recordings.
    references : dict, optional
        Speaker -> a reference clip of that speaker (``--reference``).
    candidates : dict, optional
        Turn id -> candidate files for that turn, ranked with its current take (``--candidates``).
    **options
        ``check_dialogues``' keyword arguments: ``encoder``, ``method``, ``threshold``, ``cache``,
        ``cache_dir``, ``progress``, ...

    Returns
    -------
    CheckReport
        Per speaker and turn: the score, the flag at τ, the ranked candidates.

    Example
    -------
    >>> report = check("dialogue/manifest.csv")  # doctest: +SKIP
    >>> [(t.speaker, t.turn) for t in report.flagged]  # doctest: +SKIP
    [('host', '7')]
    """
    return check_dialogues(read_dialogues(manifest, rttm, recording, references, candidates, recording_id), **options)


def read_dialogues(
    manifest=None, rttm=None, recording=None, references=None, candidates=None, recording_id=None
) -> list[Dialogue]:
    """The dialogues of a manifest, or of an RTTM and its recording (its segments of
    ``recording_id``, default the recording's name), with the references and candidates given apart
    (``check``'s inputs)."""
    if (manifest is None) == (rttm is None) or (rttm is None) != (recording is None):
        raise ValueError("give a manifest, or an RTTM file and its recording")
    dialogues = read_manifest(manifest) if manifest is not None else [read_rttm(rttm, recording, recording_id)]
    add_references(dialogues, references or {})
    add_candidates(dialogues, candidates or {})
    return dialogues


def recalibrate_on(
    dialogues: Dialogue | Sequence[Dialogue], *, source: str = "the labelled turns", **options
) -> tuple[Recalibration, CheckReport]:
    """τ recalibrated on labelled turns (``Turn.label``: consistent / inconsistent, or 0 / 1):
    the best per-turn balanced accuracy over a grid, as ``judges.check.calibration.recalibrate``.

    Arguments
    ---------
    dialogues : Dialogue or sequence of Dialogue
        Dialogues whose turns carry labels (an unlabelled turn still counts as context).
    source : str
        The labelled file, for messages.
    **options
        ``check_dialogues``' keyword arguments (the encoder and method to calibrate, the cache).

    Returns
    -------
    tuple
        The ``Recalibration`` and the report of the labelled dialogues at the previous τ. Turns of
        a speaker judged against a reference clip by fallback (one-turn speakers) do not count.
    """
    dialogues = [dialogues] if isinstance(dialogues, Dialogue) else list(dialogues)
    report = check_dialogues(dialogues, **options)
    labels = {(d.name, t.id): parse_label(t.label, f"{source} turn {t.id!r}") for d in dialogues for t in d.turns}
    pairs = [
        (t.score, labels[(s.dialogue, t.turn)])
        for s in report.speakers
        if s.method == report.method
        for t in s.turns
        if t.score is not None and labels[(s.dialogue, t.turn)] is not None
    ]
    if not pairs:
        raise CheckInputError(f"{source}: no labelled turn (a 'label' column: consistent or inconsistent)")
    scores, flags = zip(*pairs)
    return recalibrate(report.method, scores, flags, previous=report.threshold, source=source), report
