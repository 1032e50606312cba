"""The embedded default source: real human chats from ``chitchat-dataset``, voiced with TTS.

The BYU PCC Chit-Chat Challenge corpus (7,168 typed conversations, MIT) ships inside the
``chitchat-dataset`` package as ``dataset.json``: ``{conversation id: {"messages": [[{"text",
"sender", "timestamp"}, ...], ...], "prompt", "ratings", "start"}}``. Here:

- messages are normalised for speech (``builder_scripts.tts.text``); those with nothing
  sayable left (emoticons, "?", typo corrections like "*their") are dropped;
- consecutive messages of one sender form one turn;
- conversations with two senders and at least ``min_turns`` turns are kept;
- each participant is cast one participant voice of the bank (``builder_scripts.tts.voice_bank``)
  for the whole dialogue, deterministically from ``seed`` and the conversation id: a gender per
  participant, then a voice of that gender; the two participants never share a voice. Every
  voice of the bank, pool-only ones included, is in the speaker pool.

``Turn.speaker`` is the voice id (the audible speaker; the chat sender id is in
``Dialogue.meta["senders"]``). ``dialogues()`` only computes where each turn's wav will live
(a content hash of voice recipe, text and settings in ``output_dir``); ``ensure_audio`` voices
the turns a segment needs.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tqdm.auto import tqdm

from speakersleuth.speech.files import write_text_atomic

from ..tts import text as text_module
from ..tts.postprocess import PAD_SECONDS
from ..tts.text import normalize_chat
from ..tts.voice_bank import ENGINE_SECONDS_PER_SECOND, GENDERS, VOICES, Voice, Voicer, voices_of
from .base import AudioSpan, Dialogue, DialogueSource, Turn

#: Words per second of the bank's speech, set so that estimates err short (median estimate /
#: voiced length ~0.8-0.95 in benchmarks/bench_voicing.py): a segment planned on them rarely turns
#: out too short once voiced, which would waste the voicing.
SPEECH_WORDS_PER_SECOND = 3.5
#: Shortest and longest (estimated) text of a speaker-pool clip: three clips of 2.5-4 s give the
#: conversion targets and the substitute embeddings about 10 s of a voice and keep the pool cheap
#: to voice. Shorter clips blur the speakers: with 1.5-4 s clips (median 2.5 s) the EER among the
#: 32 voices was 5.4 % under Resemblyzer (2.3 % under CAM++), with 2.5-4 s 2.0 % (1.3 %).
POOL_MIN_SECONDS, POOL_MAX_SECONDS = 2.5, 4.0


def estimate_duration(text: str) -> float:
    """Seconds a bank voice takes to say ``text``, pads included (errs short; see above)."""
    return 2 * PAD_SECONDS + len(text.split()) / SPEECH_WORDS_PER_SECOND


@dataclass(frozen=True)
class VoicedTurn(Turn):
    """A turn of this source; its duration, before and after voicing alike, is ``estimate_duration``
    (so segment planning does not depend on what happens to be cached)."""

    @property
    def duration(self) -> float:
        return estimate_duration(self.text)


def _rng(*parts: object) -> random.Random:
    """A generator seeded by a stable hash of ``parts`` (independent of PYTHONHASHSEED)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def cast_voices(senders: list[str], seed: int, dialogue_id: str) -> dict[str, Voice]:
    """One voice per sender: a gender drawn per participant, then an unused participant voice of
    that gender (pool-only voices are never cast)."""
    rng = _rng("cast", seed, dialogue_id)
    cast: dict[str, Voice] = {}
    for sender in senders:
        gender = rng.choice(GENDERS)
        free = [v for v in voices_of(gender) if v.participant and v not in cast.values()]
        cast[sender] = rng.choice(free)
    return cast


def speaking_turns(messages: list[list[dict]]) -> list[tuple[str, str]]:
    """``(sender, text)`` turns of one conversation: messages normalised for speech, unsayable ones
    dropped, consecutive messages of one sender joined into one turn."""
    turns: list[tuple[str, list[str]]] = []
    for group in messages:
        for message in group:
            text = normalize_chat(message.get("text") or "")
            if not text:
                continue
            if turns and turns[-1][0] == message["sender"]:
                turns[-1][1].append(text)
            else:
                turns.append((message["sender"], [text]))
    return [(sender, " ".join(texts)) for sender, texts in turns]


def _normalise_conversation(item: tuple[str, dict]) -> tuple[str, str | None, list[tuple[str, str]]]:
    """``(conversation id, prompt, speaking_turns)`` of one ``dataset.json`` entry."""
    cid, conversation = item
    return cid, conversation.get("prompt"), speaking_turns(conversation.get("messages", []))


def _is_conversation(conversation: object) -> bool:
    """Whether a ``dataset.json`` entry has the shape ``speaking_turns`` reads."""
    if not isinstance(conversation, dict) or not isinstance(messages := conversation.get("messages", []), list):
        return False
    return all(
        isinstance(group, list)
        and all(
            isinstance(m, dict) and isinstance(m.get("sender"), str) and isinstance(m.get("text"), (str, type(None)))
            for m in group
        )
        for group in messages
    )


class ChitchatTTS(DialogueSource):
    """Chit-Chat Challenge conversations voiced by the TTS voice bank; audio cached in ``output_dir``."""

    name = "chitchat_tts"
    license = (
        "dialogues: MIT (chitchat-dataset); voices: Kokoro-82M weights and styles Apache-2.0 "
        "(ONNX export MIT), Piper en_US-joe-medium (training data CC0), hibari-tts heart (Apache-2.0)"
    )
    hub_license = "mit"  # the dialogues' license; the voices' licenses cover the models, not their output
    citation = (
        "@misc{chitchat_dataset,\n  title = {Chit-Chat Challenge dataset},\n"
        "  author = {{BYU Perception, Control and Cognition Lab}},\n"
        "  howpublished = {\\url{https://github.com/BYU-PCCL/chitchat-dataset}},\n  year = {2018}\n}\n"
        "@misc{kokoro82m,\n  title = {Kokoro-82M},\n  author = {hexgrad},\n"
        "  howpublished = {\\url{https://huggingface.co/hexgrad/Kokoro-82M}},\n  year = {2025}\n}"
    )
    homepage = "https://github.com/BYU-PCCL/chitchat-dataset"
    #: ``estimate_duration`` / voiced length reaches ~1.2 for 5 % of turns (bench_voicing.py)
    duration_slack = 1.3

    layout = (
        "<corpus_dir>/dataset.json, the Chit-Chat Challenge file (default: the one in the chitchat-dataset package)"
    )
    corpus_required = False

    def __init__(
        self,
        output_dir: Path | str,
        corpus_dir: Path | str | None = None,
        seed: int = 0,
        min_turns: int = 2,
        max_dialogues: int | None = None,
        threads: int | None = None,
    ):
        """``output_dir`` caches the voiced turns and the normalised text; ``corpus_dir`` holds
        ``dataset.json`` (default: the installed ``chitchat-dataset`` package's folder)."""
        import chitchat_dataset

        super().__init__(corpus_dir if corpus_dir is not None else Path(chitchat_dataset.__file__).parent, output_dir)
        self.dataset_file = self.corpus_dir / "dataset.json"
        if not self.dataset_file.is_file():
            raise self.layout_error(f"missing {self.dataset_file}")
        self.seed = seed
        self.min_turns = min_turns
        self.max_dialogues = max_dialogues
        self.voicer = Voicer(self.output_dir, threads=threads)
        self._parsed: list[Dialogue] | None = None

    @property
    def voices(self) -> tuple[Voice, ...]:
        return VOICES

    @cached_property
    def _corpus(self) -> tuple[Path, Path]:
        """The dataset file and where its normalised turns are cached: under a hash of the file and
        of the normaliser's source, so either changing makes a new cache (hashed once per source)."""
        data = self.dataset_file
        key = hashlib.sha256(data.read_bytes() + Path(text_module.__file__).read_bytes()).hexdigest()[:16]
        return data, self.output_dir / f"chitchat_turns-{key}.json"

    def prepare(self, workers: int = 1, progress: bool = True) -> None:
        """Normalise every conversation (258k messages, ~25 s on one core) into the cache, in
        ``workers`` processes; nothing to do when the cache exists or when ``max_dialogues``
        limits the source to the first conversations (they are normalised as they are read)."""
        data, cache = self._corpus
        if cache.is_file() or self.max_dialogues is not None:
            return
        conversations = self._conversations()
        bar = dict(
            total=len(conversations), desc="normalising chitchat", unit="conv", leave=False, disable=not progress
        )
        if workers > 1:
            with ProcessPoolExecutor(workers) as pool:
                done = list(tqdm(pool.map(_normalise_conversation, conversations, chunksize=256), **bar))
        else:
            done = [_normalise_conversation(item) for item in tqdm(conversations, **bar)]
        if not any(self._usable(turns) for _, _, turns in done):
            raise self._no_dialogues()
        write_text_atomic(cache, json.dumps(done, ensure_ascii=False))

    def _speaking_turns(self) -> Iterator[tuple[str, str | None, list[tuple[str, str]]]]:
        """``(conversation id, prompt, speaking_turns)`` for every conversation, in file order:
        from the cache (made by ``prepare`` first), or, when ``max_dialogues`` stops the pass
        early, normalised as they are read, caching nothing."""
        data, cache = self._corpus
        if not cache.is_file() and self.max_dialogues is not None:
            for item in self._conversations():
                yield _normalise_conversation(item)
            return
        self.prepare()
        for cid, prompt, turns in json.loads(cache.read_text(encoding="utf-8")):
            yield cid, prompt, [tuple(t) for t in turns]

    def dialogues(self) -> Iterator[Dialogue]:
        """Two-party conversations in the file's order; parsed once per instance, then from memory."""
        if self._parsed is None:
            parsed = []
            for conversation_id, prompt, turns in self._speaking_turns():
                if self.max_dialogues is not None and len(parsed) >= self.max_dialogues:
                    break
                dialogue = self.make_dialogue(conversation_id, turns, prompt)
                if dialogue is not None:
                    parsed.append(dialogue)
            if not parsed:
                raise self._no_dialogues()
            self._parsed = parsed
        yield from self._parsed

    def make_dialogue(
        self, conversation_id: str, turns: list[tuple[str, str]], prompt: str | None = None
    ) -> Dialogue | None:
        """Cast voices and place each turn's wav; None unless two participants and ``min_turns`` turns."""
        if not self._usable(turns):
            return None
        senders = list(dict.fromkeys(sender for sender, _ in turns))
        cast = cast_voices(senders, self.seed, conversation_id)
        voiced = tuple(
            VoicedTurn(cast[sender].id, cast[sender].gender, text, AudioSpan(self.voicer.path(cast[sender].id, text)))
            for sender, text in turns
        )
        meta = {"senders": {cast[s].id: s for s in senders}, "prompt": prompt}
        return Dialogue(conversation_id, self.name, voiced, meta)

    def _usable(self, turns: list[tuple[str, str]]) -> bool:
        """Whether a conversation's speaking turns make a dialogue: two senders, ``min_turns`` turns."""
        return len({sender for sender, _ in turns}) == 2 and len(turns) >= self.min_turns

    def _no_dialogues(self):
        return self.layout_error(
            f"{self.dataset_file} holds no conversation of two senders with at least {self.min_turns} speakable turns"
        )

    def _conversations(self) -> list[tuple[str, dict]]:
        """The ``(conversation id, conversation)`` items of ``dataset.json``, after checking that it is
        a JSON object of conversations whose messages all have a sender and a text."""
        try:
            corpus = json.loads(self.dataset_file.read_bytes())
        except ValueError as e:  # not UTF-8, or not JSON
            raise self.layout_error(f"{self.dataset_file} is not JSON ({e})") from e
        if not isinstance(corpus, dict):
            raise self.layout_error(f"{self.dataset_file} is not a JSON object of conversations by id")
        if not corpus:
            raise self.layout_error(f"{self.dataset_file} holds no conversations")
        for cid, conversation in corpus.items():
            if not _is_conversation(conversation):
                raise self.layout_error(
                    f"{self.dataset_file}: conversation {cid!r} is not "
                    '{"messages": [[{"sender": str, "text": str}, ...], ...], ...}'
                )
        return list(corpus.items())

    def voicing_seconds(self, turn: Turn) -> float:
        return turn.duration * ENGINE_SECONDS_PER_SECOND[Voicer.voice(turn.speaker).engine]

    def ensure_audio(self, dialogue: Dialogue, turn_indices: list[int]) -> None:
        """Voice exactly these turns into the cache (cached ones are skipped; writes are atomic), with a bar unless ``self.progress`` is false."""
        missing = [i for i in dict.fromkeys(turn_indices) if not Path(dialogue.turns[i].audio.path).is_file()]
        for i in tqdm(
            missing,
            desc=f"voicing {dialogue.dialogue_id[:8]}",
            unit="turn",
            leave=False,
            disable=not (self.progress and missing),
        ):
            turn = dialogue.turns[i]
            path = self.voicer.synthesize(turn.speaker, turn.text)
            if path != Path(turn.audio.path):
                raise RuntimeError(
                    f"{self.name} dialogue {dialogue.dialogue_id} turn {i}: voiced into {path}, but the turn points at "
                    f"{turn.audio.path}; the dialogue was made with other synthesis settings"
                )

    def synthesize(self, voice_id: str, text: str) -> Path:
        """The cached 16 kHz wav of arbitrary ``text`` (already speakable) in a bank voice."""
        return self.voicer.synthesize(voice_id, text)

    def speaker_pool(
        self,
        dialogues: list[Dialogue],
        clips_per_speaker: int = 4,
        min_seconds: float = POOL_MIN_SECONDS,
        share: tuple[int, int] = (0, 1),
    ) -> dict[str, tuple[str, list[AudioSpan]]]:
        """Every bank voice with ``clips_per_speaker`` voiced sentences drawn from ``dialogues``' text.

        The texts are turns of about ``min_seconds`` to ``POOL_MAX_SECONDS`` (estimated), chosen
        per voice from a seeded generator; the clips are voiced here (cached). Worker ``i`` of
        ``n`` processes building at once (``share=(i, n)``) voices every n-th missing clip first,
        then whatever the others have not finished, so the pool costs each about 1/n of it.
        """
        texts = sorted({t.text for d in dialogues for t in d.turns if min_seconds <= t.duration <= POOL_MAX_SECONDS})
        if len(texts) < clips_per_speaker:
            raise self.layout_error(
                f"{self.dataset_file}: only {len(texts)} turns of {min_seconds}-{POOL_MAX_SECONDS} s in its {len(dialogues)} dialogues; "
                f"need {clips_per_speaker} for the speaker pool"
            )
        plan = {v.id: _rng("pool", self.seed, v.id).sample(texts, clips_per_speaker) for v in VOICES}
        todo = [(v, t) for v, ts in plan.items() for t in ts if not self.voicer.path(v, t).is_file()]
        worker, workers = share
        todo = todo[worker::workers] + [clip for k, clip in enumerate(todo) if k % workers != worker]
        for voice_id, text in tqdm(
            todo, desc="voicing speaker pool", unit="clip", disable=not (self.progress and todo)
        ):
            self.voicer.synthesize(voice_id, text)  # a clip another worker has written is not voiced again
        return {v.id: (v.gender, [AudioSpan(self.voicer.path(v.id, t)) for t in plan[v.id]]) for v in VOICES}
