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
another target speaker of the substitute's gender, from the same TTS engine and source where
there is one, the one nearest in length, cut or padded to the turn's length, then the final
stage). How often the features find that turn is what they know of a change of voice; a swap
also changes the words and their timing (and, where no voice of that gender shares the target's
engine, the engine: the header says how often), so it is an upper mark, not a bound.
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
from builder_scripts.tts.voice_bank import BANK
from builder_scripts.units import UNIT_CODE


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


def _engine(unit: Unit) -> str | None:
    """The TTS engine that voiced the unit's target speaker (None for a recorded corpus)."""
    voice = BANK.get(unit.segment.target_speaker) if unit.segment.source == "chitchat_tts" else None
    return voice.engine if voice else None


def natural_swaps(items: list[SimpleNamespace], cache: Path, variant: str) -> tuple[list[SimpleNamespace], float]:
    """Each published unit with its S2/S3 turns replaced by another unit's original turn as the
    build's unit cache holds it (before the final stage), cut or padded to the turn's length and
    then finished like every published clip (see ``--voice-yardstick``); and the share of swapped
    turns that had to come from another TTS engine or source than the target's."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    made = {}
    for path in sorted(Path(cache).glob(f"units/*/code-{UNIT_CODE}/{variant}/*/*.npz")):
        unit = Unit.load(path)
        dialogue = f"{unit.segment.source}/{unit.segment.dialogue_id}"  # as published
        k = unit.converted_turn - 1
        if unit.dropped is None and dialogue in published and np.array_equal(finish(unit.targets[k]), published[dialogue].targets[k]):
            made[dialogue] = unit
    out, crossed = [], 0
    for dialogue, own in made.items():
        unit = published[dialogue]
        length = unit.targets[unit.converted_turn - 1].size
        swapped = {}
        for scenario, gender in (("S3", unit.s3.gender), ("S2", unit.s2.gender)):
            others = [o for o in made.values() if o.vc_model == own.vc_model and o.segment.target_gender == gender
                      and o.segment.target_speaker != own.segment.target_speaker]
            alike = [o for o in others if o.segment.source == own.segment.source and _engine(o) == _engine(own)]
            crossed += not alike
            turns = [c for o in alike or others for c in o.targets]
            if turns:
                nearest = min(turns, key=lambda c: abs(c.size - length))
                swapped[scenario] = finish(np.pad(nearest, (0, max(0, length - nearest.size)))[:length])
        if len(swapped) == 2:
            out.append(SimpleNamespace(**(vars(unit) | {"converted": swapped})))
    return out, crossed / max(1, 2 * len(made))


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
        swaps, crossed = natural_swaps(items, args.voice_yardstick, variant) if args.voice_yardstick else ([], 0.0)
        if args.voice_yardstick and not swaps:
            parser.error(f"--voice-yardstick {args.voice_yardstick}: no unit of {variant}'s published dialogues there; give the build's --cache")
        for model, a in audit(items, args.models.split(","), f"features {variant}").items():
            start = time.perf_counter()
            table = a.table()
            print(f"\n{args.dataset} · {variant} · {model} ({len(items)} units; fitted in {time.perf_counter() - start:.1f} s)\n\n{table}")
            flagged += a.warnings(f"{variant} {model}")
        for model, a in (audit(swaps, args.models.split(","), f"natural swaps {variant}") if swaps else {}).items():
            print(f"\n{args.dataset} · {variant} · {model} · natural swaps, a real other voice ({len(swaps)} units; {100 * crossed:.0f} % of the swapped turns from another TTS engine or source)\n\n{a.table()}")
    print("\nabove chance:" if flagged else "\nno cell above chance", *flagged, sep="\n")


if __name__ == "__main__":
    main()
