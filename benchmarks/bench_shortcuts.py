"""The shortcut audit of a built dataset folder, by the card's classifier and an independent one (issue 26).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_shortcuts.py DATASET [--models logistic,boosting] [--variants main,4vc,10turn]
        [--beyond-voice] [--voice-yardstick CACHE [--swap same-words|other-turn]]

Reads the detection rows of every variant (test and validation splits: the S1 row's target turns,
the S2 and S3 rows' converted turn) as published, and prints, per variant and model, the audit's
table (``builder_scripts.shortcuts.ShortcutAudit``: all non-speaker features, dialogue-grouped
5-fold cross-validation, 95 % dialogue-bootstrap intervals, the random-gold control): ``logistic``
is the card's classifier (logistic regression on standardised features), ``boosting`` scikit-
learn's histogram gradient boosting over the same features (its control pools 5 random golds, the
card's 20: boosting is slower). Ends with the cells whose interval lies above chance.

The features carry the voice too (a clip's FLAC rate follows its F0, the spectrum's shape is
timbre), so two readings separate what they know of the voice from what is left:

``--beyond-voice`` fits the same models on what the voice does not explain: each clip's features
minus their linear prediction from F0 and MFCC timbre (``voice_descriptors``; a ridge fit over the
variant's clips, blind to the labels). The subtraction can also remove processing that moves the
timbre, and put voice back in where a feature does not follow the fit, so it is a reading, not a
proof.

``--voice-yardstick CACHE`` (the build's ``--cache``) fits each model on *natural swaps* of the same
dialogues, where no conversion happened, and prints per task the converted turn's score, the
swap's, and converted minus swap with a paired dialogue-bootstrap interval:

- ``same-words`` (default; TTS sources): turn k said by the S2/S3 substitute itself, the same words
  in its own bank voice at the rate that gives the turn's length, through the path the original
  turns took (voicing wav, the backend's resynthesis, loudness, the cache's 16 bits, final stage;
  the bench first checks that the target's own voice through it gives the published turn, sample
  for sample). What a perfect conversion would publish; the header gives the share of substitutes
  from another TTS engine than the target's;
- ``other-turn``: the original turn of another dialogue from the unit cache (same backend, another
  target speaker of the substitute's gender, from the target's TTS engine and source where there
  is one, the nearest in length, cut or padded), finished like every clip: other words and timing
  too, so an upper mark.
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
from builder_scripts.scenarios import Unit, _float, _pcm, normalise_loudness  # _pcm/_float: the unit cache's 16 bits
from builder_scripts.shortcuts import CONTROL_DRAWS, TASK_LABELS, ShortcutAudit, cell_text, feature_vector
from builder_scripts.tts.postprocess import PAD_SECONDS
from builder_scripts.tts.voice_bank import BANK, Voicer
from builder_scripts.units import UNIT_CODE
from builder_scripts.vc import get_converter


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


def cached_units(items: list[SimpleNamespace], cache: Path, variant: str) -> dict[str, Unit]:
    """The build's unit cache entry of each published dialogue (by its published id), where the
    finished converted-turn original equals the published one (the cache made this dataset)."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    made = {}
    for path in sorted(Path(cache).glob(f"units/*/code-{UNIT_CODE}/{variant}/*/*.npz")):
        unit = Unit.load(path)
        dialogue = f"{unit.segment.source}/{unit.segment.dialogue_id}"  # as published
        k = unit.converted_turn - 1
        if unit.dropped is None and dialogue in published and np.array_equal(finish(unit.targets[k]), published[dialogue].targets[k]):
            made[dialogue] = unit
    return made


def other_turn_swaps(items: list[SimpleNamespace], made: dict[str, Unit], cache: Path) -> tuple[list[SimpleNamespace], float]:
    """Each published unit with its S2/S3 turns replaced by another unit's original turn as the
    cache holds it (same backend, another target speaker of the substitute's gender, from the
    target's TTS engine and source where there is one, the nearest in length, cut or padded to the
    turn's length), finished like every published clip; and the share of swapped turns that had to
    come from another TTS engine or source than the target's."""
    published = {unit.segment.dialogue_id: unit for unit in items}
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


def _at_length(voicer: Voicer, voice: str, text: str, length: int) -> np.ndarray:
    """``text`` in ``voice`` at the speaking rate that gives ``length`` samples (one re-render at
    the rate scaled by the first render's speech length against the wanted one), the rest padded
    or cut at the end, where the trim's pad lies."""
    pads = 2 * round(PAD_SECONDS * ssd.SAMPLING_RATE)
    speed = Voicer.voice(voice).speed
    clip = voicer.render(voice, text)
    ratio = (clip.size - pads) / max(1, length - pads)
    if abs(ratio - 1) > 0.02:
        clip = voicer.render(voice, text, speed=speed * ratio)
    return np.pad(clip, (0, max(0, length - clip.size)))[:length]


def _through_the_path(converter, spoken: np.ndarray) -> np.ndarray:
    """A voiced clip the way a source's turn reaches the dataset: the voicing's 16-bit wav, the
    backend's resynthesis, the loudness, the unit cache's 16 bits, the final stage."""
    wav = io.BytesIO()
    sf.write(wav, spoken, ssd.SAMPLING_RATE, subtype="PCM_16", format="WAV")
    voiced = sf.read(io.BytesIO(wav.getvalue()), dtype="float32")[0]
    return finish(_float(_pcm(normalise_loudness(converter.resynthesize(voiced)))))


def same_words_swaps(items: list[SimpleNamespace], made: dict[str, Unit], cache: Path) -> tuple[list[SimpleNamespace], float]:
    """Each published unit of a TTS source with its S2/S3 turn k spoken by the S2/S3 substitute
    itself: the same words in the substitute's own bank voice (at the rate that gives the turn's
    length), through the path the original turns took (checked: the target's own voice through it
    gives the published turn, sample for sample); and the share of substitutes whose engine is not
    the target's."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    voicer, converters, out, crossed = Voicer(Path(cache) / "tts", threads=1), {}, [], 0
    tts = {d: u for d, u in made.items() if u.segment.source == "chitchat_tts"}
    for dialogue, own in tqdm(tts.items(), desc="voicing the same words", unit="unit"):
        k = own.converted_turn - 1
        text = [t["text"] for t in own.turns if t["is_target"]][k]
        converter = converters.setdefault(own.vc_model, get_converter(own.vc_model))
        length = own.raw_targets[k].size
        if not np.array_equal(_through_the_path(converter, voicer.render(own.segment.target_speaker, text)), published[dialogue].targets[k]):
            raise SystemExit(f"{dialogue}: the target's own voice through the swap's path is not the published turn {k + 1}; "
                             "the swap would not be a like-for-like yardstick")
        swapped = {}
        for scenario, substitute in (("S2", own.s2), ("S3", own.s3)):
            voice = substitute.speaker.split("/", 1)[1]  # "<source>/<bank voice>"
            crossed += BANK[voice].engine != _engine(own)
            swapped[scenario] = _through_the_path(converter, _at_length(voicer, voice, text, length))
        out.append(SimpleNamespace(**(vars(published[dialogue]) | {"converted": swapped})))
    return out, crossed / max(1, 2 * len(tts))


SWAPS = {"same-words": same_words_swaps, "other-turn": other_turn_swaps}


def voice_descriptors(clip: np.ndarray) -> np.ndarray:
    """What the voice itself sets in a clip: the median and the 10-90 % range of log2 F0 (Praat,
    60-500 Hz), and the mean and spread of MFCCs 1-12 (below 5.2 kHz) over the frames within 20 dB
    of the loudest (timbre)."""
    import parselmouth
    import torch
    import torchaudio

    x = np.asarray(clip, dtype=np.float64)
    f0 = parselmouth.Sound(x, sampling_frequency=ssd.SAMPLING_RATE).to_pitch(pitch_floor=60, pitch_ceiling=500).selected_array["frequency"]
    octaves = np.log2(f0[f0 > 0]) if np.count_nonzero(f0) >= 3 else np.full(3, np.log2(150.0))
    mfcc = torchaudio.transforms.MFCC(ssd.SAMPLING_RATE, n_mfcc=13, melkwargs={"n_fft": 512, "hop_length": 160, "n_mels": 40, "f_max": 5200})
    coefficients = mfcc(torch.from_numpy(x.astype(np.float32))).numpy()
    loud = coefficients[0] > coefficients[0].max() - 20
    timbre = coefficients[1:, loud]
    return np.concatenate([[np.median(octaves), np.percentile(octaves, 90) - np.percentile(octaves, 10)], timbre.mean(axis=1), timbre.std(axis=1)])


def beyond_the_voice(items: list[SimpleNamespace], models: list[str], desc: str) -> dict[str, ShortcutAudit]:
    """The audit on what the voice does not explain: every clip's non-speaker features minus their
    linear prediction from its ``voice_descriptors`` (a ridge fit over all the variant's clips,
    which knows no label), then the same tasks and models."""
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    measured = []
    for unit in tqdm(items, desc=desc, unit="unit"):
        clips = [*unit.targets, unit.converted["S2"], unit.converted["S3"]]
        measured.append((np.stack([feature_vector(c) for c in clips]), np.stack([voice_descriptors(c) for c in clips])))
    features, voices = np.vstack([f for f, _ in measured]), np.vstack([v for _, v in measured])
    residue = features - make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(voices, features).predict(voices)
    collected, start = ShortcutAudit(), 0
    for unit, (f, _) in zip(items, measured):
        rows, n, start = residue[start:start + len(f)], len(unit.targets), start + len(f)
        collected.add_features("published", rows[:n], unit.converted_turn - 1, {"S2": rows[n], "S3": rows[n + 1]},
                               f"{unit.segment.source}/{unit.segment.dialogue_id}")
    return {m: collected.with_model(m, families=False, control_draws=CONTROL_DRAWS if m == "logistic" else 5) for m in models}


def audit(items: list, models: list[str], desc: str) -> dict[str, ShortcutAudit]:
    """One audit per model over the same measured units (the breakdown by family for the card's model only)."""
    collected = ShortcutAudit()
    for unit in tqdm(items, desc=desc, unit="unit"):
        collected.add(unit)
    return {m: collected.with_model(m, families=m == "logistic", control_draws=CONTROL_DRAWS if m == "logistic" else 5) for m in models}


def compared(converted: ShortcutAudit, swapped: ShortcutAudit) -> tuple[str, list[str]]:
    """Markdown: per task, the converted turns and the natural swaps of the same dialogues, and the
    paired difference; and a line for each task where the converted turn is found more often."""
    difference = converted.difference(swapped)
    lines = ["| task | chance | converted turn | natural swap | swap's random-gold control | converted minus swap (points) |",
             "|---|---|---|---|---|---|"]
    for task, cell in converted.result("published").items():
        swap, d = swapped.result("published")[task], difference[task]
        lines.append(f"| {TASK_LABELS[task]} | {cell['chance']:.1f} % | {cell_text(cell['all'])} | {cell_text(swap['all'])} "
                     f"| {cell_text(swap['control'])} | {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}] |")
    above = [f"{TASK_LABELS[task]}: {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}]" for task, d in difference.items() if d["low"] > 0]
    return "\n".join(lines), above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--models", default="logistic,boosting")
    parser.add_argument("--variants", default=",".join(ssd.VARIANTS))
    parser.add_argument("--voice-yardstick", type=Path, metavar="CACHE",
                        help="the build's unit cache: also fit each model on natural swaps (a real other voice)")
    parser.add_argument("--beyond-voice", action="store_true",
                        help="also fit each model on the features with what F0 and MFCC timbre explain subtracted")
    parser.add_argument("--swap", choices=sorted(SWAPS), default="same-words",
                        help="same-words: the substitute's own TTS voice says the turn (TTS sources); other-turn: another dialogue's turn")
    args = parser.parse_args()
    models = args.models.split(",")
    flagged, above_swap, beyond_voice = [], [], []
    for variant in args.variants.split(","):
        items = units(args.dataset, variant)
        if not items:
            continue
        swaps, crossed = [], 0.0
        if args.voice_yardstick:
            made = cached_units(items, args.voice_yardstick, variant)
            if not made:
                parser.error(f"--voice-yardstick {args.voice_yardstick}: no unit of {variant}'s published dialogues there; give the build's --cache")
            swaps, crossed = SWAPS[args.swap](items, made, args.voice_yardstick)
        fitted = audit(items, models, f"features {variant}")
        for model, a in fitted.items():
            start = time.perf_counter()
            table = a.table()
            print(f"\n{args.dataset} · {variant} · {model} ({len(items)} units; fitted in {time.perf_counter() - start:.1f} s)\n\n{table}")
            flagged += a.warnings(f"{variant} {model}")
        for model, a in (beyond_the_voice(items, models, f"voice {variant}") if args.beyond_voice else {}).items():
            print(f"\n{args.dataset} · {variant} · {model} · beyond the voice (features minus what F0 and timbre predict)\n\n{a.table()}")
            beyond_voice += a.warnings(f"{variant} {model} beyond the voice")
        if not swaps:
            continue
        kept = {unit.segment.dialogue_id for unit in swaps}
        paired = fitted if len(kept) == len(items) else audit([u for u in items if u.segment.dialogue_id in kept], models, f"features {variant}, swapped dialogues")
        for model, a in audit(swaps, models, f"natural swaps {variant}").items():
            table, above = compared(paired[model], a)
            print(f"\n{args.dataset} · {variant} · {model} · against natural swaps, a real other voice ({len(swaps)} units; "
                  f"{args.swap}; {100 * crossed:.0f} % of the swapped turns from another TTS engine or source)\n\n{table}")
            above_swap += [f"{variant} {model}, {line}" for line in above]
    print("\nabove chance:" if flagged else "\nno cell above chance", *flagged, sep="\n")
    if args.beyond_voice:
        print("\nabove chance beyond the voice:" if beyond_voice else "\nno cell above chance beyond the voice", *beyond_voice, sep="\n")
    if args.voice_yardstick:
        print("\nconverted turn found more often than a natural swap:" if above_swap else "\nno cell finds the converted turn more often than a natural swap", *above_swap, sep="\n")


if __name__ == "__main__":
    main()
