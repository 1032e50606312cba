"""Speaker-encoder throughput: embeddings per second and x real time, per batch size.

    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_encoders.py
    ... --encoder ecapa:/models/spkrec-ecapa-voxceleb --encoder wavlm:/models/wavlm-base-plus-sv
    ... --random-size ecapa wavlm   # full-size architectures with random weights: speed only

Clips are synthetic voiced utterances (``tests.support.encoder_clips.voice``), so Resemblyzer's VAD keeps
them whole. Random-weight models are timed for speed alone, never for what they output. The batch
size changes only encoders with ``pad_batches`` (the d-vector, ECAPA with ``pad_batches=True``, a
WavLM without group norm); the others, Resemblyzer among them, embed each clip alone.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from speakersleuth.speech.encoders import SpeakerEncoder, get_encoder
from speakersleuth.speech.encoders.ecapa import EcapaEncoder
from speakersleuth.speech.encoders.wavlm import WavLMEncoder
from tests.support.encoder_clips import voice


def random_full_size(kind: str, device: str) -> SpeakerEncoder:
    """spkrec-ecapa-voxceleb's or wavlm-base-plus-sv's architecture with random weights."""
    if kind == "ecapa":
        from speechbrain.lobes.features import Fbank
        from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
        from speechbrain.processing.features import InputNormalization

        model = ECAPA_TDNN(80, channels=[1024, 1024, 1024, 1024, 3072], lin_neurons=192)
        norm = InputNormalization(norm_type="sentence", std_norm=False)
        return EcapaEncoder.from_modules(Fbank(n_mels=80), norm, model, name="ecapa (random weights)", device=device)
    from transformers import Wav2Vec2FeatureExtractor, WavLMConfig, WavLMForXVector

    extractor = Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, do_normalize=False, return_attention_mask=True
    )
    return WavLMEncoder.from_model(
        WavLMForXVector(WavLMConfig()), extractor, name="wavlm-base-plus (random weights)", device=device
    )


def bench(encoder: SpeakerEncoder, clips: list[np.ndarray], batch_sizes: list[int], seconds: float) -> None:
    encoder.encode(clips[:2])  # warm-up
    for bs in batch_sizes:
        start, cpu = time.perf_counter(), time.process_time()
        emb = encoder.encode(clips, batch_size=bs)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert emb.shape == (len(clips), encoder.dim)
        rate = len(clips) / elapsed
        print(
            f"{encoder.name:<36} batch {bs:>3}: {rate:8.1f} embeddings/s  {rate * seconds:8.1f}x real time  "
            f"({len(clips)} clips in {elapsed:.2f} s wall, {cpu:.2f} s CPU)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--encoder", action="append", default=None, help="an encoder spec (default: resemblyzer); repeatable"
    )
    parser.add_argument(
        "--random-size",
        nargs="*",
        default=[],
        choices=["ecapa", "wavlm"],
        help="also time these architectures with random weights",
    )
    parser.add_argument("--clips", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    clips = [voice(100 + 3 * (i % 40), 1.0 + 0.005 * (i % 40), args.seconds, i) for i in range(args.clips)]
    load = os.getloadavg()[0]
    print(
        f"{args.clips} synthetic clips of {args.seconds} s at 16 kHz; device {args.device}; torch threads {torch.get_num_threads()}; load {load:.1f} on {os.cpu_count()} CPUs"
    )
    encoders = [get_encoder(spec, device=args.device) for spec in args.encoder or ["resemblyzer"]]
    encoders += [random_full_size(kind, args.device) for kind in args.random_size]
    for encoder in encoders:
        bench(encoder, clips, args.batch_sizes, args.seconds)


if __name__ == "__main__":
    main()
