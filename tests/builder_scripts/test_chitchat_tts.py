"""The embedded ``chitchat_tts`` source: chat parsing and normalisation, voice casting, voicing,
and the voice bank (distinct speakers under Resemblyzer, gender labels that agree with F0)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speakersleuth.builder_scripts.sources import get_source_class
from speakersleuth.builder_scripts.sources.chitchat_tts import (
    POOL_MAX_SECONDS,
    POOL_MIN_SECONDS,
    ChitchatTTS,
    cast_voices,
    estimate_duration,
    speaking_turns,
)
from speakersleuth.builder_scripts.tts.text import is_speakable, normalize_chat
from speakersleuth.builder_scripts.tts.voice_bank import VOICES, Voicer, median_f0, voices_of
from tests.support.tts_voices import same_voice_failures

DIALOGUES = 250  # of the real corpus, for the parsing and casting tests
#: Two turns every voice reads in the bank test (about 3.5 s each: shorter clips make
#: Resemblyzer's same-speaker similarity too noisy to compare one pair per voice).
BANK_TEXTS = (
    "I grew up in a small town, so I really love the mountains.",
    "What kind of music do you usually listen to when you study?",
)
F0_BOUNDARY = 165.0  # Hz: the bank's female voices lie above, its male voices below
#: The voices the real-audio tests render: every voice of the cheap engines (Piper, hibari) and one or
#: two Kokoro voices per family (rendering all of them with Kokoro takes minutes; the whole bank is
#: measured by benchmarks/bench_voice_bank.py).
KOKORO_SAMPLE = ("kf_alpha", "kf_gongitsune_high", "kf_nezumi_prosody_tebukuro_low", "km_kumo", "km_gongitsune_male")
SAMPLE = tuple(v for v in VOICES if v.engine != "kokoro" or v.id in KOKORO_SAMPLE)


def _one_thread(fn, *args):
    """Run ``fn`` with one torch thread: on a busy 2-core machine OpenMP's spinning threads make
    Resemblyzer's LSTM over ten times slower than one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(threads)


def _message(sender: str, text: str) -> dict:
    return {"text": text, "sender": sender, "timestamp": "2018-05-02T19:38:15Z"}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> ChitchatTTS:
    return ChitchatTTS(tmp_path_factory.mktemp("chitchat"), seed=0, max_dialogues=DIALOGUES)


@pytest.fixture(scope="module")
def dialogues(source):
    return list(source.dialogues())


# ------------------------------------------------------------------------------ normalisation


@pytest.mark.parametrize(
    "chat, spoken",
    [
        ("lol that's hilarious", "Haha that's hilarious."),
        ("idk tbh", "I don't know to be honest."),
        ("WHAT?!?! no way!!!", "What? No way!"),
        ("sooo coooool", "So cool."),
        ("HAHAHAHA ok", "Haha okay."),
        ("I love BYU &amp; the NBA", "I love BYU and the NBA."),
        ("check https://www.youtube.com/watch?v=QMVQ_htobAg haha", "Check this link haha."),
        ("that's so nice \U0001f60a\U0001f44d see you", "That's so nice see you."),
        ("Awesome :) Well I gotta go", "Awesome. Well I gotta go."),
        ("wait.... what", "Wait\u2026 What."),
        ("It's never too early <em>I</em> think", "It's never too early I think."),
        ("so you still feel tired huh?", "So you still feel tired huh?"),
        ("i'm  happy", "I'm happy."),
    ],
)
def test_normalize_chat(chat, spoken):
    assert normalize_chat(chat) == spoken


@pytest.mark.parametrize(
    "chat", [":)", "?", "!!!", "*their", "there*", "<3 <3", "\U0001f602\U0001f602", "  ", ":-D ;)"]
)
def test_unspeakable_messages_are_dropped(chat):
    assert normalize_chat(chat) == ""
    assert not is_speakable(normalize_chat(chat))


# ------------------------------------------------------------------------------ parsing


def test_consecutive_messages_of_one_sender_form_one_turn():
    messages = [
        [_message("a", "hi there"), _message("a", "how are you?")],
        [_message("b", ":)")],  # nothing to say: dropped, so a's next message joins a's turn
        [_message("a", "long day lol")],
        [_message("b", "same here")],
        [_message("b", "*hear")],  # a typo fix: dropped
    ]
    assert speaking_turns(messages) == [
        ("a", "Hi there. How are you? Long day haha."),
        ("b", "Same here."),
    ]


def test_real_corpus_turns(dialogues, source):
    assert len(dialogues) == DIALOGUES
    first = dialogues[0]  # the package's first conversation, read from its dataset.json
    assert first.dialogue_id == "a07edb12-6b91-4138-b11e-02421888d699"
    assert first.source == "chitchat_tts"
    assert [t.text for t in first.turns[:4]] == [
        "Hello. How are you doing today?",
        "What's up MD. I'm doing good. How are you doing?",
        "I'm alright, I just took a nap. But it was one of those naps that doesn't help anything. "
        "It just makes everything worse and you question all your life choices.",
        "Oh wow haha. So you still feel tired huh?",
    ]
    for d in dialogues:
        assert len(d.speakers) == 2 and len(d.turns) >= source.min_turns
        assert all(a.speaker != b.speaker for a, b in itertools.pairwise(d.turns)), "consecutive turns not merged"
        assert all(is_speakable(t.text) and ":)" not in t.text and "http" not in t.text for t in d.turns)
        assert all(Path(t.audio.path).parent.parent == source.output_dir and t.audio.start is None for t in d.turns)


def test_module_examples():
    import doctest

    from speakersleuth.builder_scripts.tts import espeak, kokoro, text

    for module in (text, espeak, kokoro):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_registry_builds_the_source(tmp_path):
    cls = get_source_class("chitchat_tts")
    assert cls is ChitchatTTS and cls(tmp_path).name == "chitchat_tts"


# ------------------------------------------------------------------------------ casting


def test_each_participant_keeps_one_voice_of_its_gender(dialogues):
    bank = {v.id: v for v in VOICES}
    for d in dialogues:
        voices = {t.speaker for t in d.turns}
        assert voices == set(d.meta["senders"]) and len(voices) == 2, "the two participants share a voice"
        assert all(t.gender == bank[t.speaker].gender for t in d.turns)


def _spoken(dialogue):
    return dialogue.dialogue_id, [(t.speaker, t.text, Path(t.audio.path).name) for t in dialogue.turns]


def test_prepare_in_processes_caches_what_reading_the_file_gives(tmp_path, capsys):
    import chitchat_dataset

    corpus = json.loads(Path(chitchat_dataset.__file__).with_name("dataset.json").read_text())
    small = tmp_path / "dataset.json"
    small.write_text(json.dumps(dict(list(corpus.items())[:300])))
    limited = ChitchatTTS(tmp_path / "streamed", corpus_dir=tmp_path, max_dialogues=10_000)
    limited.prepare(workers=2)  # a limited source reads its first conversations as they come
    streamed = list(limited.dialogues())
    assert not list((tmp_path / "streamed").glob("chitchat_turns-*.json")), (
        "a pass with max_dialogues cached something"
    )
    for workers in (2, 1):
        prepared = ChitchatTTS(tmp_path / f"w{workers}", corpus_dir=tmp_path)
        capsys.readouterr()
        prepared.prepare(workers=workers, progress=workers == 1)  # --no-progress: no bar
        assert ("normalising chitchat" in capsys.readouterr().err) == (workers == 1)
        assert len(list((tmp_path / f"w{workers}").glob("chitchat_turns-*.json"))) == 1
        assert [_spoken(d) for d in prepared.dialogues()] == [_spoken(d) for d in streamed]
    caches = [next((tmp_path / f"w{w}").glob("chitchat_turns-*.json")).read_bytes() for w in (1, 2)]
    assert caches[0] == caches[1] and len(streamed) > 100


def test_a_missing_dataset_file_is_named(tmp_path):
    (tmp_path / "nowhere").mkdir()
    with pytest.raises(ValueError, match="missing .*nowhere/dataset.json"):  # CorpusLayoutError
        ChitchatTTS(tmp_path / "cache", corpus_dir=tmp_path / "nowhere")


def test_casting_is_deterministic_per_seed(dialogues, tmp_path):
    n = 100
    again = list(ChitchatTTS(tmp_path / "a", seed=0, max_dialogues=n).dialogues())
    other = list(ChitchatTTS(tmp_path / "b", seed=1, max_dialogues=n).dialogues())
    cast = [tuple(d.meta["senders"].items()) for d in dialogues[:n]]
    assert cast == [tuple(d.meta["senders"].items()) for d in again]
    assert [[t.audio.path.name for t in d.turns] for d in dialogues[:n]] == [
        [t.audio.path.name for t in d.turns] for d in again
    ]
    changed = sum(a != tuple(d.meta["senders"].items()) for a, d in zip(cast, other))
    assert changed > 0.8 * n, f"seed 1 recast only {changed} of {n} dialogues"


def test_casting_never_gives_two_participants_one_voice_and_uses_every_participant_voice():
    used, genders = Counter(), Counter()
    for i in range(3000):
        cast = cast_voices(["a", "b"], seed=7, dialogue_id=f"d{i}")
        assert cast["a"].id != cast["b"].id
        used.update(v.id for v in cast.values())
        genders.update(v.gender for v in cast.values())
    pool_only = {v.id for v in VOICES if not v.participant}
    assert pool_only and {v.id for v in voices_of("male") if v.participant}, (
        "the bank lost its pool-only or male participant voices"
    )
    assert set(used) == {v.id for v in VOICES} - pool_only
    assert abs(genders["female"] - genders["male"]) < 0.1 * sum(genders.values())


# ------------------------------------------------------------------------------ voicing


def test_ensure_audio_voices_exactly_the_requested_turns(source, dialogues):
    dialogue = next(d for d in dialogues if len(d.turns) >= 4 and all(len(t.text) < 60 for t in d.turns[:3]))
    paths = [Path(t.audio.path) for t in dialogue.turns]
    source.ensure_audio(dialogue, [0, 2])
    assert [p.is_file() for p in paths[:4]] == [True, False, True, False]
    audio, sr = sf.read(paths[0], dtype="float32")
    assert sr == 16000 and audio.ndim == 1 and 0.5 < audio.size / sr < 15
    pad = int(0.1 * sr)
    assert not audio[: pad // 2].any() and not audio[-pad // 2 :].any(), "silence is not trimmed to the pad"
    assert np.abs(audio).max() > 0.05
    stamp = paths[0].stat().st_mtime_ns
    source.ensure_audio(dialogue, [0])  # cached: not voiced again
    assert paths[0].stat().st_mtime_ns == stamp
    assert not list(source.output_dir.rglob("*.tmp")), "a temporary file was left behind"


@pytest.fixture
def written(monkeypatch):
    """Voicing replaced by a short silent clip (the plumbing only; real voicing is tested below):
    the ``(voice, text)`` pairs voiced, in order. Like the real one, it skips a clip on disk."""
    voiced = []

    def fake_synthesize(self, voice_id, text):
        path = self.path(voice_id, text)
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(path, np.zeros(1600, dtype=np.float32), 16000)
            voiced.append((voice_id, text))
        return path

    monkeypatch.setattr("speakersleuth.builder_scripts.tts.voice_bank.Voicer.synthesize", fake_synthesize)
    return voiced


def test_speaker_pool_is_the_bank_with_seeded_clips(dialogues, tmp_path, written):
    pool = ChitchatTTS(tmp_path / "a", seed=0).speaker_pool(dialogues[:50], clips_per_speaker=3)
    assert set(pool) == {v.id for v in VOICES} and len(written) == 3 * len(VOICES)
    # clips of 2.5-4 s: shorter ones blur the voices (the pool's EER under Resemblyzer: 5.4 % against 2.0 %)
    assert all(POOL_MIN_SECONDS <= estimate_duration(text) <= POOL_MAX_SECONDS for _, text in written)
    for voice in VOICES:
        gender, clips = pool[voice.id]
        assert gender == voice.gender and len(clips) == 3 and all(Path(c.path).is_file() for c in clips)
    assert ChitchatTTS(tmp_path / "a", seed=0).speaker_pool(dialogues[:50], clips_per_speaker=3) == pool
    assert len(written) == 3 * len(VOICES), "cached clips were voiced again"
    other = ChitchatTTS(tmp_path / "b", seed=1).speaker_pool(dialogues[:50], clips_per_speaker=3)
    assert [c.path.name for v in VOICES for c in other[v.id][1]] != [
        c.path.name for v in VOICES for c in pool[v.id][1]
    ]


def test_pool_workers_start_with_their_share_and_finish_the_rest(dialogues, tmp_path, written):
    alone = ChitchatTTS(tmp_path / "alone", seed=0).speaker_pool(dialogues[:50], clips_per_speaker=3)
    everything, written[:] = list(written), []
    second = ChitchatTTS(tmp_path / "shared", seed=0).speaker_pool(dialogues[:50], clips_per_speaker=3, share=(1, 2))
    assert written == everything[1::2] + everything[0::2], "worker 1 of 2 voices the odd clips first"
    assert [c.path.name for v in VOICES for c in second[v.id][1]] == [
        c.path.name for v in VOICES for c in alone[v.id][1]
    ]
    written[:] = []
    ChitchatTTS(tmp_path / "shared", seed=0).speaker_pool(dialogues[:50], clips_per_speaker=3, share=(0, 2))
    assert written == [], "a clip another worker voiced was voiced again"


def test_a_clip_once_written_is_never_replaced(tmp_path, monkeypatch):
    voicer = Voicer(tmp_path)
    path = voicer.path("pm_joe", "Hello there.")
    first = np.full(1600, 0.25, dtype=np.float32)

    def render_while_another_process_finishes_first(voice_id, text):
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(path, first, 16000, subtype="PCM_16")
        return np.full(3200, -0.5, dtype=np.float32)

    monkeypatch.setattr(voicer, "render", render_while_another_process_finishes_first)
    assert voicer.synthesize("pm_joe", "Hello there.") == path
    audio, _ = sf.read(path, dtype="float32")
    assert audio.size == 1600 and np.allclose(audio, 0.25, atol=1e-4)
    assert [p.name for p in path.parent.iterdir()] == [path.name], "the losing clip was left behind"


@pytest.fixture(scope="module")
def bank_clips(source):
    """The ``SAMPLE`` voices reading the two texts, as written to the cache (16 kHz wav)."""
    return {v.id: [sf.read(source.synthesize(v.id, t), dtype="float32")[0] for t in BANK_TEXTS] for v in SAMPLE}


def test_every_voice_is_closer_to_itself_than_to_any_other_voice(bank_clips):
    from speakersleuth.speech.encoders import get_encoder  # Resemblyzer with its shipped weights, batched

    ids = list(bank_clips)
    emb = _one_thread(get_encoder("resemblyzer").encode, [c for v in ids for c in bank_clips[v]]).reshape(
        len(ids), 2, -1
    )
    assert same_voice_failures(emb, ids) == []


def test_duration_estimate_matches_the_voiced_length(bank_clips, dialogues):
    assert all(t.duration == estimate_duration(t.text) for t in dialogues[0].turns)
    ratios = [
        estimate_duration(BANK_TEXTS[i]) / (clips[i].size / 16000) for clips in bank_clips.values() for i in range(2)
    ]
    assert 0.8 < np.mean(ratios) < 1.2 and 0.6 < min(ratios) and max(ratios) < 1.5, ratios


def test_gender_labels_agree_with_f0(bank_clips):
    f0 = {v.id: median_f0(np.concatenate(bank_clips[v.id])) for v in SAMPLE}
    wrong = {v.id: round(f0[v.id]) for v in SAMPLE if (f0[v.id] > F0_BOUNDARY) != (v.gender == "female")}
    assert not wrong, f"median F0 disagrees with the gender label: {wrong}"


def test_world_keeps_every_bank_voice_pitch_and_reaches_the_other_gender(bank_clips):
    """WORLD is the default conversion and the resynthesis every published turn goes through: a
    bank voice must keep its pitch through it (DIO once tracked the Piper voice an octave high),
    and a conversion to a voice of the other gender must land in that gender's F0 range."""
    from speakersleuth.builder_scripts.vc.world import WorldConverter
    from speakersleuth.builder_scripts.verification import GENDER_F0_BOUNDARY

    world = WorldConverter()
    shifted = {}
    for v in SAMPLE:
        for clip in bank_clips[v.id]:
            before, after = median_f0(clip), median_f0(world.resynthesize(clip))
            if abs(12 * np.log2(after / before)) > 1.0:
                shifted[v.id] = (round(before), round(after))
    assert not shifted, f"resynthesis moved the median F0 by over a semitone: {shifted}"
    wrong = {}
    women, men = ([v for v in SAMPLE if v.gender == g] for g in ("female", "male"))
    for source, target in [(women[0], m) for m in men] + [(men[0], f) for f in women]:
        f0 = median_f0(world.convert(bank_clips[source.id][0], bank_clips[target.id], bank_clips[source.id]))
        if (f0 > GENDER_F0_BOUNDARY) != (target.gender == "female"):
            wrong[f"{source.id}->{target.id}"] = round(f0)
    assert not wrong, f"converted turns outside the target gender's F0 range: {wrong}"
