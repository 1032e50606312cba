"""The shortcut audit of a built dataset folder, by the card's classifier and an independent one (issue 26).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_shortcuts.py DATASET [--models logistic,boosting] [--variants main,4vc,10turn]

Reads the detection rows of every variant (test and validation splits: the S1 row's target turns,
the S2 and S3 rows' converted turn) as published, and prints, per variant and model, the audit's
table (``builder_scripts.shortcuts.ShortcutAudit``: all non-speaker features, dialogue-grouped
5-fold cross-validation, 95 % dialogue-bootstrap intervals, the random-gold control): ``logistic``
is the card's classifier (logistic regression on standardised features), ``boosting`` scikit-
learn's histogram gradient boosting over the same features (its control pools 5 random golds, the
card's 20: boosting is slower). Ends with the cells whose interval
lies above chance (none: nothing but the voice tells the converted turn).
"""

from __future__ import annotations

import argparse
import io
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import soundfile as sf
from tqdm.auto import tqdm

import speakersleuth_dataset as ssd
from builder_scripts.shortcuts import CONTROL_DRAWS, ShortcutAudit


def _clip(value: dict):
    return sf.read(io.BytesIO(value["bytes"]), dtype="float32")[0]


def units(root: Path, variant: str) -> list[SimpleNamespace]:
    """The variant's units as the audit reads them, rebuilt from its detection rows (both splits)."""
    rows = defaultdict(dict)
    columns = ["dialogue_id", "source_dataset", "scenario", "target_gender", "substitute_gender", "converted_turn", "target_audio"]
    name = ssd.config_name("detection", variant)
    for split in ssd.SPLITS:
        if ssd.shard_paths(root, name, split):
            for row in ssd.read_rows(root, name, split, columns=columns).to_pylist():
                rows[(split, row["dialogue_id"])][row["scenario"]] = row
    out = []
    for (_, dialogue), scenarios in rows.items():
        s1 = scenarios["S1"]
        k = scenarios["S2"]["converted_turn"]
        out.append(SimpleNamespace(
            converted_turn=k, targets=[_clip(c) for c in s1["target_audio"]],
            converted={s: _clip(scenarios[s]["target_audio"][k - 1]) for s in ("S2", "S3")},
            raw_targets=[], raw_converted={},
            segment=SimpleNamespace(source=s1["source_dataset"], dialogue_id=dialogue, target_gender=s1["target_gender"]),
            s2=SimpleNamespace(gender=scenarios["S2"]["substitute_gender"]), s3=SimpleNamespace(gender=scenarios["S3"]["substitute_gender"]),
        ))
    return out


def audit(items: list, models: list[str], desc: str) -> dict[str, ShortcutAudit]:
    """One audit per model over the same measured units (the breakdown by family for the card's model only)."""
    collected = ShortcutAudit()
    for unit in tqdm(items, desc=desc, unit="unit"):
        collected.add(unit)
    return {m: collected.with_model(m, families=m == "logistic", control_draws=CONTROL_DRAWS if m == "logistic" else 5) for m in models}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--models", default="logistic,boosting")
    parser.add_argument("--variants", default=",".join(ssd.VARIANTS))
    args = parser.parse_args()
    flagged = []
    for variant in args.variants.split(","):
        items = units(args.dataset, variant)
        if not items:
            continue
        for model, a in audit(items, args.models.split(","), f"features {variant}").items():
            start = time.perf_counter()
            table = a.table()
            print(f"\n{args.dataset} · {variant} · {model} ({len(items)} units; fitted in {time.perf_counter() - start:.1f} s)\n\n{table}")
            flagged += a.warnings(f"{variant} {model}")
    print("\nabove chance:" if flagged else "\nno cell above chance", *flagged, sep="\n")


if __name__ == "__main__":
    main()
