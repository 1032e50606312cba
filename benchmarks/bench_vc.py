"""Voice-conversion speed and memory for the offline backends (WORLD, Praat).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_vc.py [--conversions 40] [--workers 2]

Each configuration runs in a fresh process on speech-like synthetic clips of 2-3 s
(``tests/support/vc_fixtures.py``; four voices, every ordered pair of different voices, three 2.5 s
reference clips per speaker). Printed per configuration, in CPU seconds of one core (so that
other load on the machine does not inflate them): the cold cost of a speaker profile (3
reference clips; cached afterwards), conversions per CPU second and real-time factor (CPU
seconds per audio second) with warm profiles, the same for ``resynthesize``, and the
process's peak RSS. Then the default configurations run with ``--workers`` processes, timed by the wall clock (the
throughput a build gets from this machine as loaded now), with the projected time of 600
conversions. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

CONFIGS = {  # label: (registry name, constructor kwargs)
    "world praat-f0 5 ms (default)": ("world", {}),
    "world praat-f0 10 ms": ("world", {"frame_period": 10.0}),
    "world dio 5 ms": ("world", {"f0_estimator": "dio"}),
    "world harvest 5 ms": ("world", {"f0_estimator": "harvest"}),
    "praat (default)": ("praat", {}),
}
DEFAULTS = ("world", "praat")


def workload(conversions: int, seed: int):
    """Source turns of 2-3 s with their (source refs, target refs)."""
    from tests.support.vc_fixtures import VOICES, clips, speech_like

    rng = np.random.default_rng(seed)
    refs = {name: clips(voice, 3, 2.5, seed=seed + i) for i, (name, voice) in enumerate(VOICES.items())}
    pairs = itertools.cycle(itertools.permutations(VOICES, 2))
    jobs = []
    for i in range(conversions):
        s, t = next(pairs)
        jobs.append((speech_like(VOICES[s], rng.uniform(2.0, 3.0), seed=seed * 7919 + i), refs[s], refs[t]))
    return jobs


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, kwargs: dict, conversions: int) -> dict:
    """Runs in a fresh process: profile, convert and resynthesize timings, peak RSS."""
    from speakersleuth.builder_scripts.vc import get_converter
    from speakersleuth.builder_scripts.vc.world import speaker_profile
    from tests.support.vc_fixtures import VOICES, clips

    converter = get_converter(name, **kwargs)
    jobs = workload(conversions, seed=1)
    converter.convert(*jobs[0])  # imports, first-call setup
    fresh = [clips(voice, 3, 2.5, seed=500 + i) for i, voice in enumerate(VOICES.values())]
    start = time.process_time()
    for refs in fresh:
        speaker_profile(refs)
    profile_s = (time.process_time() - start) / len(fresh)
    for _, source_refs, target_refs in jobs:  # warm the profile cache: time conversions alone
        speaker_profile(source_refs), speaker_profile(target_refs)
    audio_s = sum(job[0].size for job in jobs) / 16000
    start = time.process_time()
    for job in jobs:
        converter.convert(*job)
    convert_s = time.process_time() - start
    start = time.process_time()
    for job in jobs:
        converter.resynthesize(job[0])
    resynth_s = time.process_time() - start
    return {
        "profile_s": profile_s,
        "conv_per_s": len(jobs) / convert_s,
        "conv_rtf": convert_s / audio_s,
        "resynth_per_s": len(jobs) / resynth_s,
        "resynth_rtf": resynth_s / audio_s,
        "peak_rss_mb": peak_rss_mb(),
    }


def _convert_chunk(args) -> float:
    name, jobs = args
    from speakersleuth.builder_scripts.vc import get_converter

    converter = get_converter(name)
    for job in jobs:
        converter.convert(*job)
    return peak_rss_mb()


def parallel(name: str, conversions: int, workers: int) -> tuple[float, float, float]:
    """Wall seconds for ``conversions`` cold conversions split over ``workers`` processes."""
    jobs = workload(conversions, seed=2)
    chunks = [(name, jobs[i::workers]) for i in range(workers)]
    audio_s = sum(job[0].size for job in jobs) / 16000
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        peaks = list(pool.map(_convert_chunk, chunks))
    return time.perf_counter() - start, audio_s, max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversions", type=int, default=40, help="conversions per configuration")
    parser.add_argument("--workers", type=int, default=2, help="processes for the parallel run")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.conversions} clips of 2-3 s")
    print("per configuration, CPU time of one core:")
    print(
        f"{'configuration':28s} {'profile s':>9s} {'conv/s':>7s} {'conv RTF':>8s} {'resyn/s':>8s} {'resyn RTF':>9s} {'peak MB':>8s}"
    )
    ctx = get_context("spawn")
    for label, (name, kwargs) in CONFIGS.items():
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            r = pool.submit(measure, name, kwargs, args.conversions).result()
        print(
            f"{label:28s} {r['profile_s']:9.3f} {r['conv_per_s']:7.2f} {r['conv_rtf']:8.3f} "
            f"{r['resynth_per_s']:8.2f} {r['resynth_rtf']:9.3f} {r['peak_rss_mb']:8.0f}"
        )
    for name in DEFAULTS:
        wall, audio_s, peak = parallel(name, 2 * args.conversions, args.workers)
        per_conv = wall / (2 * args.conversions)
        print(
            f"{name}: {2 * args.conversions} cold conversions ({audio_s:.0f} s of audio, profiles included) on "
            f"{args.workers} processes: {wall:.1f} s wall, {1 / per_conv:.2f} conv/s, RTF {wall / audio_s:.3f}, "
            f"peak {peak:.0f} MB per process; 600 conversions ~ {600 * per_conv / 60:.1f} min"
        )


if __name__ == "__main__":
    main()
