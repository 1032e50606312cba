"""The build's audits (``builder_scripts.card_audit.BuildAudit``) on any built dataset folder.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_card_audit.py DATASET [--jobs 2]

Reads every variant's published units from its detection rows (both splits, as
``bench_shortcuts.units`` rebuilds them) and prints what the card of a build made today would
show: the voice-free family per variant and generation method under logistic regression and
gradient boosting, converted minus re-spoken for each DSP method, the non-speaker tables, then the
warnings. On a folder built before re-speaking it measures the old build by today's audit.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_shortcuts import units
from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.card_audit import BuildAudit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="processes fitting the voice-free cells (default 2)")
    args = parser.parse_args()
    audit, start = BuildAudit(jobs=args.jobs), time.perf_counter()
    for variant in ssd.VARIANTS:
        for unit in tqdm(units(args.dataset, variant), desc=f"measuring {variant}", unit="unit"):
            audit.add(variant, unit, artifacts=False)
    if not audit.non_speaker:
        parser.error(f"{args.dataset}: no built variant there")
    print(f"\n{args.dataset}\n\n{audit.tables()}\n")
    print("warnings:" if audit.warnings() else "no warning", *audit.warnings(), sep="\n")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
