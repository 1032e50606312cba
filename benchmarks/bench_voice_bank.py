"""How distinct and how natural the voices of the TTS bank are, under CAM++ and Resemblyzer.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_voice_bank.py --cache /tmp/vb [--sentences 4]

Every voice reads ``--sentences`` real chat turns of about 3 s, drawn per voice (seeded) from a
set of ``--texts`` turns, the way the build's speaker pool draws them; clips are cached under
``--cache``. Both encoders embed every clip (one torch thread). Prints per encoder: the EER of
clip-pair trials (``SpeakerBank.verification_stats``), the most similar pairs of voices and the
distribution of each voice's nearest-other cosine; per voice: median F0, Praat HNR and the
impulse rate (see ``impulse_rate``) as naturalness proxies, and its nearest other voice under each
encoder. Writes the two similarity matrices as a heatmap PNG (``--png``).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
from bench_voicing import chat_texts
from tqdm.auto import tqdm

from speakersleuth.builder_scripts.sources.chitchat_tts import ChitchatTTS
from speakersleuth.builder_scripts.speaker_bank import BankSpeaker, SpeakerBank, VerificationStats
from speakersleuth.builder_scripts.tts.voice_bank import VOICES, Voice, median_f0
from speakersleuth.speakersleuth_dataset import SAMPLING_RATE

ENCODERS = ("campplus", "resemblyzer")
#: A 10 ms window holds an impulse when its largest sample-to-sample jump exceeds this many times
#: the window's median jump (issue 16's click detector for resynthesis artifacts).
IMPULSE_RATIO = 60.0


def impulse_rate(audio: np.ndarray, sr: int = SAMPLING_RATE) -> float:
    """Windows of 10 ms holding an impulse, per second of audio (silent windows never count)."""
    hop = sr // 100
    n = (len(audio) - 1) // hop
    jumps = np.abs(np.diff(audio.astype(np.float64)))[: n * hop].reshape(n, hop)
    median = np.median(jumps, axis=1)
    clicks = (median > 0) & (jumps.max(axis=1) > IMPULSE_RATIO * median)
    return float(clicks.sum() / (len(audio) / sr))


def harmonicity(audio: np.ndarray, sr: int = SAMPLING_RATE) -> float:
    """Mean harmonics-to-noise ratio (dB) over voiced frames, Praat's cross-correlation method."""
    import parselmouth

    hnr = (
        parselmouth.Sound(audio.astype(np.float64), sampling_frequency=sr).to_harmonicity_cc(0.01, 75, 0.1, 1.0).values
    )
    voiced = hnr[hnr > -100]
    return float(voiced.mean()) if voiced.size else float("nan")


def voice_clips(
    source: ChitchatTTS, voices: list[Voice], texts: list[str], n: int, seed: int
) -> dict[str, list[np.ndarray]]:
    """``n`` of ``texts`` per voice, drawn with a generator seeded by ``seed`` and the voice id."""
    clips = {}
    for voice in tqdm(voices, desc="voicing", unit="voice"):
        chosen = random.Random(f"{seed}/{voice.id}").sample(texts, n)
        clips[voice.id] = [sf.read(source.synthesize(voice.id, t), dtype="float32")[0] for t in chosen]
    return clips


def embed_banks(voices: list[Voice], clips: dict[str, list[np.ndarray]]) -> dict[str, SpeakerBank]:
    """One ``SpeakerBank`` per encoder, from every clip's embedding (one torch thread)."""
    import torch

    from speakersleuth.speech.encoders import get_encoder

    torch.set_num_threads(1)
    banks = {}
    for name in ENCODERS:
        encoder = get_encoder(name)
        speakers = []
        for v in tqdm(voices, desc=name, unit="voice"):
            embs = encoder.encode(clips[v.id])
            mean = embs.mean(axis=0)
            speakers.append(BankSpeaker(v.id, v.gender, mean / np.linalg.norm(mean), (), embs))
        banks[name] = SpeakerBank(speakers, name)
    return banks


def report_encoder(name: str, stats: VerificationStats, worst: int) -> None:
    cos = np.array([c for _, c in stats.nearest.values()])
    print(
        f"\n## {name}: EER {stats.eer:.2f} % over {stats.same_trials} same-voice and {stats.different_trials} "
        f"different-voice clip pairs"
    )
    print(f"nearest-other cosine per voice: min {cos.min():.3f}  median {np.median(cos):.3f}  max {cos.max():.3f}")
    pairs = sorted({tuple(sorted((a, b))): c for a, (b, c) in stats.nearest.items()}.items(), key=lambda kv: -kv[1])
    for (a, b), c in pairs[:worst]:
        print(f"  {c:.3f}  {a} ~ {b}")


def report_voices(
    voices: list[Voice], clips: dict[str, list[np.ndarray]], stats: dict[str, VerificationStats]
) -> None:
    print(
        f"\n## Voices ({sum(v.gender == 'female' for v in voices)} female, {sum(v.gender == 'male' for v in voices)} male)"
    )
    head = "".join(f"  {'nearest (' + e + ')':34s} {'cos':>5s}" for e in stats)
    print(f"{'voice':34s} {'g':1s} {'engine':6s} {'part':4s} {'F0':>4s} {'HNR':>5s} {'imp/s':>5s}{head}")
    for v in voices:
        audio = np.concatenate(clips[v.id])
        row = "".join(f"  {s.nearest[v.id][0]:34s} {s.nearest[v.id][1]:5.3f}" for s in stats.values())
        print(
            f"{v.id:34s} {v.gender[0]:1s} {v.engine:6s} {'yes' if v.participant else 'pool':4s} {median_f0(audio):4.0f} "
            f"{harmonicity(audio):5.1f} {impulse_rate(audio):5.2f}{row}"
        )


def heatmap(banks: dict[str, SpeakerBank], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(banks), figsize=(11 * len(banks), 10))
    for ax, (name, bank) in zip(np.atleast_1d(axes), banks.items()):
        image = ax.imshow(bank.cosine_matrix(), cmap="viridis", vmin=-0.2, vmax=1.0)
        ax.set_xticks(range(len(bank)), bank.names, rotation=90, fontsize=6)
        ax.set_yticks(range(len(bank)), bank.names, fontsize=6)
        ax.set_title(f"{name}: cosine of mean embeddings")
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"\nheatmap: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None, help="clip cache folder (default: a temporary one)")
    parser.add_argument("--sentences", type=int, default=4, help="chat turns each voice reads (default 4)")
    parser.add_argument("--texts", type=int, default=40, help="chat turns the voices draw theirs from (default 40)")
    parser.add_argument("--voices", default="", help="comma-separated voice ids (default: the whole bank)")
    parser.add_argument("--worst", type=int, default=8, help="most similar pairs to list per encoder (default 8)")
    parser.add_argument("--png", type=Path, default=Path("voice_bank_similarity.png"), help="heatmap path")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    wanted = [w for w in args.voices.split(",") if w]
    unknown = set(wanted) - {v.id for v in VOICES}
    if unknown:
        parser.error(f"--voices: unknown voice ids {sorted(unknown)}")
    voices = [v for v in VOICES if not wanted or v.id in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        source = ChitchatTTS(args.cache or Path(tmp), seed=args.seed, threads=1)
        texts = chat_texts(source, args.texts, args.seed, min_words=8, max_words=12)  # about 3 s each
        clips = voice_clips(source, voices, texts, args.sentences, args.seed)
        banks = embed_banks(voices, clips)
        stats = {name: bank.verification_stats() for name, bank in banks.items()}
        for name in ENCODERS:
            report_encoder(name, stats[name], args.worst)
        report_voices(voices, clips, stats)
        heatmap(banks, args.png)


if __name__ == "__main__":
    main()
