"""Voicing benchmark for the embedded ``chitchat_tts`` source: TTS speed and the voice bank's spread.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_voicing.py [--clips 3] [--threads 2]

Prints
1. real-time factor (seconds of compute per second of audio; wall clock and process CPU) of each
   engine alone (Kokoro-82M int8 ONNX, Piper joe), and of the full pipeline of a voice with a
   pitch/formant change (engine, resampling to 16 kHz, PSOLA, trimming, loudness);
2. per voice: median F0 against its gender label, same-speaker cosine, the most similar other
   voice and the margin between the two (Resemblyzer, shipped weights);
3. the distributions (mean, min, percentiles, max) of same-speaker and different-speaker cosine
   and of each voice's most-similar-other-voice cosine;
4. how the planning estimate of a turn's duration compares with the voiced clip.
Every voice reads the same ``--clips`` real chat turns; only pairs of *different* texts are
compared, for same- and different-speaker pairs alike, so text overlap favours neither.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from speakersleuth.builder_scripts.sources.chitchat_tts import ChitchatTTS, estimate_duration
from speakersleuth.builder_scripts.tts.voice_bank import VOICES, median_f0
from speakersleuth.speakersleuth_dataset import SAMPLING_RATE

#: Median F0 (Hz) boundary between the bank's male and female voices.
F0_BOUNDARY = 165.0


def chat_texts(source: ChitchatTTS, n: int, seed: int, min_words: int = 9, max_words: int = 18) -> list[str]:
    """``n`` distinct real turns of ``min_words``-``max_words`` words, drawn with ``seed``."""
    texts = sorted(
        {t.text for d in source.dialogues() for t in d.turns if min_words <= len(t.text.split()) <= max_words}
    )
    return random.Random(seed).sample(texts, n)


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def engine_rtf(source: ChitchatTTS, texts: list[str], voiced: list) -> None:
    print(f"\n## Real-time factor ({len(texts)} chat turns each; compute seconds per audio second)")
    voicer = source.voicer
    kokoro, piper = voicer.engine("kokoro"), voicer.engine("piper")
    style = kokoro.style({"jf_alpha": 1.0})
    runs = (
        ("kokoro engine", kokoro.sample_rate, lambda t: kokoro.synthesize(t, style)),
        ("piper engine", piper.sample_rate, lambda t: piper.synthesize(t)),
        ("kokoro voice kf_gongitsune_low", SAMPLING_RATE, lambda t: voicer.render("kf_gongitsune_low", t)),
        ("piper voice pm_joe_deep", SAMPLING_RATE, lambda t: voicer.render("pm_joe_deep", t)),
    )
    for name, rate, call in runs:
        call("Warm up.")  # first run: graph optimisation, lazy imports
        audio_s = wall_s = cpu_s = 0.0
        for text in tqdm(texts, desc=name, leave=False):
            audio, wall, cpu = timed(call, text)
            if rate == SAMPLING_RATE:  # a finished clip: keep it for the duration check
                voiced.append((text, audio))
            audio_s += audio.size / rate
            wall_s += wall
            cpu_s += cpu
        print(f"{name:32s} audio {audio_s:6.1f} s  wall RTF {wall_s / audio_s:.3f}  CPU RTF {cpu_s / audio_s:.3f}")


def describe(name: str, values: np.ndarray) -> str:
    p5, p50, p95 = np.percentile(values, [5, 50, 95])
    return (
        f"{name:34s} n={len(values):4d} mean {values.mean():.3f} min {values.min():.3f} "
        f"p5 {p5:.3f} p50 {p50:.3f} p95 {p95:.3f} max {values.max():.3f}"
    )


def bank_spread(source: ChitchatTTS, texts: list[str], voiced: list) -> None:
    import torch

    from speakersleuth.speech.encoders import get_encoder

    encoder = get_encoder("resemblyzer")  # shipped weights; batched over Resemblyzer's partials
    torch.set_num_threads(1)  # a small LSTM: OpenMP threads only spin against the TTS on 2 cores
    emb, f0 = {}, {}
    for voice in tqdm(VOICES, desc="voicing bank", unit="voice"):
        clips = [source.voicer.render(voice.id, text) for text in texts]
        voiced += zip(texts, clips)
        emb[voice.id] = encoder.encode(clips)
        f0[voice.id] = median_f0(np.concatenate(clips))

    k = len(texts)
    off_diag = ~np.eye(k, dtype=bool)  # pairs of different texts
    upper = np.triu(off_diag)
    same, different, nearest = [], [], []
    print(f"\n## Voices (Resemblyzer cosine over {k} clips each; margin = same - most similar other)")
    print(
        f"{'voice':34s} {'gender':6s} {'F0':>5s} {'same':>6s}  {'most similar other':34s} {'cos':>6s} {'margin':>7s}"
    )
    for voice in VOICES:
        e = emb[voice.id]
        s = (e @ e.T)[upper]
        same.extend(s)
        others = {}
        for other in VOICES:
            if other.id != voice.id:
                cross = (e @ emb[other.id].T)[off_diag]
                others[other.id] = cross.mean()
                if other.id > voice.id:
                    different.extend(cross)
        top = max(others, key=others.get)
        nearest.append(others[top])
        ok_f0 = (f0[voice.id] > F0_BOUNDARY) == (voice.gender == "female")
        print(
            f"{voice.id:34s} {voice.gender:6s} {f0[voice.id]:5.0f}{'' if ok_f0 else '!'} {s.mean():6.3f}  "
            f"{top:34s} {others[top]:6.3f} {s.mean() - others[top]:+7.3f}"
        )
    print("\n## Distributions")
    print(describe("same speaker (pairs of clips)", np.array(same)))
    print(describe("different speakers (pairs of clips)", np.array(different)))
    print(describe("most similar other speaker (per voice)", np.array(nearest)))
    female = [f0[v.id] for v in VOICES if v.gender == "female"]
    male = [f0[v.id] for v in VOICES if v.gender == "male"]
    print(
        f"median F0: female voices {min(female):.0f}-{max(female):.0f} Hz, male voices {min(male):.0f}-{max(male):.0f} Hz"
    )


def duration_estimates(voiced: list) -> None:
    """How the planning estimate of a turn's length compares with the voiced clip."""
    ratios = np.array([estimate_duration(text) / (clip.size / SAMPLING_RATE) for text, clip in voiced])
    print(describe("duration estimate / voiced length", ratios))
    print(f"estimate shorter than the clip for {100 * (ratios < 1).mean():.0f} % of {len(ratios)} clips")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=3, help="chat turns every voice reads (default 3)")
    parser.add_argument("--rtf-texts", type=int, default=8, help="chat turns per engine for the RTF (default 8)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: all cores)")
    parser.add_argument("--cache", type=Path, default=None, help="chitchat cache folder (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = ChitchatTTS(args.cache or Path(tmp), seed=args.seed, threads=args.threads)
        texts = chat_texts(source, args.clips + args.rtf_texts, args.seed)
        print(f"threads: {args.threads or 'all cores'}; bank: {len(VOICES)} voices")
        voiced: list = []
        engine_rtf(source, texts[args.clips :], voiced)
        bank_spread(source, texts[: args.clips], voiced)
        duration_estimates(voiced)


if __name__ == "__main__":
    main()
