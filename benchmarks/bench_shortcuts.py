"""The shortcut audit of a built dataset folder, by the card's classifier and an independent one (issue 26).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_shortcuts.py DATASET [--models logistic,boosting] [--variants main,4vc,10turn]
        [--voice-yardstick CACHE]

Reads the detection rows of every variant (test and validation splits: the S1 row's target turns,
the S2 and S3 rows' converted turn) as published, and prints, per variant and model, the audit's
table (``builder_scripts.shortcuts.ShortcutAudit``: all non-speaker features, dialogue-grouped
5-fold cross-validation, 95 % dialogue-bootstrap intervals, the random-gold control): ``logistic``
is the card's classifier (logistic regression on standardised features), ``boosting`` scikit-
learn's histogram gradient boosting over the same features (its control pools 5 random golds, the
card's 20: boosting is slower). Ends with the cells whose interval
lies above chance (none: nothing but the voice tells the converted turn).

``--voice-yardstick CACHE`` (the build's ``--cache``) also fits each model on a *natural swap* of
every unit: its converted turns replaced by a real other voice that went through the same path
(the original turn of another dialogue as the unit cache holds it, same conversion backend,
another target speaker of the same gender for S3 and of the other gender for S2, the one nearest
in length, cut or padded to the turn's length, then the final stage). How often the features
find that turn is what they know of a change of voice; a swap also changes the words and their
timing, so it is an upper mark, not a bound.
"""

from __future__ import annotations

import argparse
import io
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import soundfile as sf
from tqdm.auto import tqdm

import speakersleuth_dataset as ssd
from builder_scripts.final_stage import finish
from builder_scripts.scenarios import Unit
from builder_scripts.shortcuts import CONTROL_DRAWS, ShortcutAudit


def _clip(value: dict):
    return sf.read(io.BytesIO(value["bytes"]), dtype="float32")[0]


def units(root: Path, variant: str) -> list[SimpleNamespace]:
    """The variant's units as the audit reads them, rebuilt from its detection rows (both splits)."""
    rows = defaultdict(dict)
    columns = ["dialogue_id", "source_dataset", "scenario", "target_speaker", "target_gender", "vc_model", "substitute_gender",
               "converted_turn", "target_audio"]
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
            raw_targets=[], raw_converted={}, vc_model=s1["vc_model"],
            segment=SimpleNamespace(source=s1["source_dataset"], dialogue_id=dialogue, target_speaker=s1["target_speaker"],
                                    target_gender=s1["target_gender"]),
            s2=SimpleNamespace(gender=scenarios["S2"]["substitute_gender"]), s3=SimpleNamespace(gender=scenarios["S3"]["substitute_gender"]),
        ))
    return out


def natural_swaps(items: list[SimpleNamespace], cache: Path, variant: str) -> list[SimpleNamespace]:
    """Each published unit with its S2/S3 turns replaced by another unit's original turn as the
    build's unit cache holds it (before the final stage), cut or padded to the turn's length and
    then finished like every published clip (see ``--voice-yardstick``)."""
    made = [Unit.load(path) for path in sorted(Path(cache).glob(f"units/*/*/{variant}/*/*.npz"))]
    made = {f"{u.segment.source}/{u.segment.dialogue_id}": u for u in made if u.dropped is None}  # the published dialogue_id
    out = []
    for unit in items:
        own = made.get(unit.segment.dialogue_id)
        if own is None:
            continue
        length = unit.targets[unit.converted_turn - 1].size
        swapped = {}
        for scenario, same_gender in (("S3", True), ("S2", False)):
            turns = [c for other in made.values() if other.vc_model == own.vc_model and other.segment.target_speaker != own.segment.target_speaker
                     and (other.segment.target_gender == own.segment.target_gender) == same_gender for c in other.targets]
            if turns:
                nearest = min(turns, key=lambda c: abs(c.size - length))
                swapped[scenario] = finish(np.pad(nearest, (0, max(0, length - nearest.size)))[:length])
        if len(swapped) == 2:
            out.append(SimpleNamespace(**(vars(unit) | {"converted": swapped})))
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
    parser.add_argument("--voice-yardstick", type=Path, metavar="CACHE",
                        help="the build's unit cache: also fit each model on natural swaps (a real other voice)")
    args = parser.parse_args()
    flagged = []
    for variant in args.variants.split(","):
        items = units(args.dataset, variant)
        if not items:
            continue
        swaps = natural_swaps(items, args.voice_yardstick, variant) if args.voice_yardstick else []
        if args.voice_yardstick and not swaps:
            parser.error(f"--voice-yardstick {args.voice_yardstick}: no unit of {variant}'s published dialogues there; give the build's --cache")
        for model, a in audit(items, args.models.split(","), f"features {variant}").items():
            start = time.perf_counter()
            table = a.table()
            print(f"\n{args.dataset} · {variant} · {model} ({len(items)} units; fitted in {time.perf_counter() - start:.1f} s)\n\n{table}")
            flagged += a.warnings(f"{variant} {model}")
        for model, a in (audit(swaps, args.models.split(","), f"natural swaps {variant}") if swaps else {}).items():
            print(f"\n{args.dataset} · {variant} · {model} · natural swaps, a real other voice ({len(swaps)} units)\n\n{a.table()}")
    print("\nabove chance:" if flagged else "\nno cell above chance", *flagged, sep="\n")


if __name__ == "__main__":
    main()
