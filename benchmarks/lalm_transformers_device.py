"""Device check of the transformers LALM backend: processor + generate on an accelerator.

Builds the tiny random Qwen2.5-Omni and Qwen2-Audio checkpoints of ``tests/support/lalm_tiny_models.py``
and runs the backend's real path (load with ``local_files_only``, chat template, processor, greedy
``generate``) on ``--device`` in each ``--dtypes``, on a detection prompt and a discrimination
prompt made of synthetic tones. Prints one JSON line per (model, dtype, prompt): where the model
and the inputs live, whether two greedy runs agree, and the wall time per query. The models are
random, so the figures are the harness's fixed costs on the device, not a real model's speed, and
the answers are garbage (shown parsed, to confirm they count as unparseable).

    PYTHONPATH=. python benchmarks/lalm_transformers_device.py --device cuda --dtypes bfloat16,float32
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def tone(f0: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.2 * np.sin(2 * np.pi * f0 * t) + 0.05 * np.sin(4 * np.pi * f0 * t)).astype(np.float32)


def prompts():
    from speakersleuth.judges.lalm.prompts import DiscriminationInstance, TurnInstance, discrimination_queries, turn_queries

    turns = [{"speaker": "a" if i % 2 == 0 else "b", "text": f"line {i}", "is_target": i % 2 == 0} for i in range(10)]
    positions = [0, 2, 4, 6, 8]
    turn = TurnInstance("t", [tone(200 + 5 * k, 1.0 + 0.2 * k) for k in range(5)], tone(200, 3.0), turns, positions)
    disc = DiscriminationInstance(
        "d",
        [tone(200 + 5 * k, 1.2) for k in range(4)],
        3,
        [tone(f, 1.2) for f in (200, 120, 230)],
        ["A", "B", "C"],
        tone(200, 3.0),
        turns,
        positions,
    )
    return {
        "detection": turn_queries("detection", "main", turn)[0],
        "discrimination": discrimination_queries("main", disc, ranking=False)[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import torch

    from speakersleuth.judges.lalm.backends import make_backend
    from speakersleuth.judges.lalm.parsing import parse_answer
    from tests.support.lalm_tiny_models import TINY_BUILDERS

    queries = prompts()
    with tempfile.TemporaryDirectory() as tmp:
        for family, build in TINY_BUILDERS.items():
            folder = Path(tmp) / family
            build(folder)
            for dtype in args.dtypes.split(","):
                backend = make_backend(f"transformers:{folder}", device=args.device, dtype=dtype, max_new_tokens=16)
                weights = next(backend.lm.parameters())
                for name, query in queries.items():
                    batch = backend.inputs(query.prompt)
                    first = backend.generate(query.prompt)
                    if args.device.startswith("cuda"):
                        torch.cuda.synchronize()
                    start = time.perf_counter()
                    texts = [backend.generate(query.prompt).text for _ in range(args.repeats)]
                    seconds = (time.perf_counter() - start) / args.repeats
                    print(
                        json.dumps(
                            {
                                "model": family,
                                "dtype": dtype,
                                "prompt": name,
                                "weights": f"{weights.device}/{weights.dtype}".replace("torch.", ""),
                                "input_features": f"{batch['input_features'].device}/{batch['input_features'].dtype}".replace(
                                    "torch.", ""
                                ),
                                "clips": len(query.prompt.clips),
                                "input_tokens": first.meta["input_tokens"],
                                "new_tokens": first.meta["new_tokens"],
                                "greedy_repeatable": all(t == first.text for t in texts),
                                "seconds_per_query": round(seconds, 4),
                                "parsed": parse_answer(query.kind, first.text, num_turns=5).how,
                                "max_memory_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)
                                if args.device.startswith("cuda")
                                else None,
                            }
                        ),
                        flush=True,
                    )
                backend.close()


if __name__ == "__main__":
    main()
