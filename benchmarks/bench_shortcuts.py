"""The shortcut audit of a built dataset folder, by the card's classifier and an independent one (issue 26).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_shortcuts.py DATASET [--models logistic,boosting] [--variants main,4vc,10turn]
        [--beyond-voice] [--voice-yardstick CACHE [--swap same-words|other-turn]] [--floor-draws N --cache CACHE]

Reads the detection rows of every variant (test and validation splits: the S1 row's target turns,
the S2 and S3 rows' converted turn) as published, and prints, per variant and model, the audit's
table (``builder_scripts.shortcuts.ShortcutAudit``: all non-speaker features, dialogue-grouped
5-fold cross-validation, 95 % dialogue-bootstrap intervals, the random-gold control): ``logistic``
is the card's classifier (logistic regression on standardised features), ``boosting`` scikit-
learn's histogram gradient boosting over the same features (its control pools 5 random golds, the
card's 20: boosting is slower); a discrimination above chance is also fitted on each part of the
candidates' rows alone (``ShortcutAudit.readings``): *against the context* (a candidate's features
and their deviation from the context turns) and *among the candidates* (their deviation from the
three candidates' mean: the three say the same words, which cancel, so a shift the two converted
candidates share and the original lacks can be learnt there). Ends with the cells whose interval
lies above chance.

The features carry the voice too (a clip's FLAC rate follows its F0, the spectrum's shape is
timbre), so two readings separate what they know of the voice from what is left:

``--beyond-voice`` fits the same models on what the voice does not explain: each clip's features
minus their linear prediction from F0 and MFCC timbre (``voice_descriptors``; a ridge fit over the
variant's clips, blind to the labels). The subtraction can also remove processing that moves the
timbre, and put voice back in where a feature does not follow the fit, so it is a reading, not a
proof.

``--voice-yardstick CACHE`` (the build's ``--cache``) fits each model on *natural swaps* of the same
dialogues, where no conversion happened, and prints per task (and per reading of discrimination)
the converted turn's score, the swap's, and converted minus swap with a paired dialogue-bootstrap
interval:

- ``same-words`` (default; TTS sources with TTS substitutes): turn k said by the S2/S3 substitute
  itself, the same words in its own bank voice at the rate that gives the turn's length (up to
  ``MAX_RENDERS`` renders, the rest padded or cut at the end), through the path the original turns
  took (voicing wav, the backend's resynthesis, loudness, the cache's 16 bits, final stage; the
  bench first checks on every unit that the target's own voice through it gives the published
  turn, sample for sample). The nearest a real other voice comes to a conversion: the words and
  the path are the target's, the prosody and the timing within the turn the substitute's (and
  hibari's rate moves its pitch a little). The header counts the substitutes another TTS engine
  voices and the turns cut into speech;
- ``other-turn``: the original turn of another dialogue from the unit cache (same backend, another
  target speaker of the substitute's gender, from the target's TTS engine and source where there
  is one, the nearest in length, cut or padded), finished like every clip: other words and timing
  too, so an upper mark.

``--floor-draws N --cache CACHE`` (the build's ``--cache``) fits each model again on the build's
units finished with N other draws of the final stage's noise floor and dither
(``final_stage.finish(clip, draw)``), everything else as published, and prints per task every
draw's cell, their range and in how many draws the interval lies above chance. The dialogue
bootstrap resamples one fit's guesses, so it leaves out how much the fit itself moves with an
irrelevant change; a cell above chance in one draw only is that draw's luck, one above chance in
every draw is not. With ``--voice-yardstick`` too, the natural swaps are finished with the same
draws and compared with the converted turns draw by draw: the last lines name every cell where the
converted turn is found above chance *and* more often than a real other voice (paired interval
above 0) in every draw, not one draw's luck. A cell at or under the swap is not thereby the voice:
a real voice and a conversion can be found by different cues (compare discrimination's readings).
"""

from __future__ import annotations

import argparse
import io
import time
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import soundfile as sf
from tqdm.auto import tqdm

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.audit_features import feature_vector
from speakersleuth.builder_scripts.final_stage import finish
from speakersleuth.builder_scripts.scenarios import Unit, _float, _pcm, normalise_loudness  # _pcm/_float: the unit cache's 16 bits
from speakersleuth.builder_scripts.shortcuts import CONTROL_DRAWS, TASK_LABELS, ShortcutAudit, cell_text
from speakersleuth.builder_scripts.tts.postprocess import PAD_SECONDS
from speakersleuth.builder_scripts.tts.voice_bank import BANK, Voicer
from speakersleuth.builder_scripts.units import UNIT_CODE
from speakersleuth.builder_scripts.vc import get_converter


def _clip(value: dict):
    return sf.read(io.BytesIO(value["bytes"]), dtype="float32")[0]


def units(root: Path, variant: str) -> list[SimpleNamespace]:
    """The variant's units as the audit reads them, rebuilt from its detection rows (both splits)."""
    rows = defaultdict(dict)
    columns = [
        "dialogue_id",
        "source_dataset",
        "scenario",
        "target_gender",
        "substitute_gender",
        "converted_turn",
        "vc_model",
        "target_audio",
    ]
    name = ssd.config_name("detection", variant)
    for split in ssd.SPLITS:
        if ssd.shard_paths(root, name, split):
            for row in ssd.read_rows(root, name, split, columns=columns).to_pylist():
                rows[(split, row["dialogue_id"])][row["scenario"]] = row
    out = []
    for (_, dialogue), scenarios in rows.items():
        s1 = scenarios["S1"]
        k = scenarios["S2"]["converted_turn"]
        out.append(
            SimpleNamespace(
                converted_turn=k,
                vc_model=scenarios["S2"]["vc_model"],
                targets=[_clip(c) for c in s1["target_audio"]],
                converted={s: _clip(scenarios[s]["target_audio"][k - 1]) for s in ("S2", "S3")},
                raw_targets=[],
                raw_converted={},
                segment=SimpleNamespace(
                    source=s1["source_dataset"], dialogue_id=dialogue, target_gender=s1["target_gender"]
                ),
                s2=SimpleNamespace(gender=scenarios["S2"]["substitute_gender"]),
                s3=SimpleNamespace(gender=scenarios["S3"]["substitute_gender"]),
            )
        )
    return out


def _engine(unit: Unit) -> str | None:
    """The TTS engine that voiced the unit's target speaker (None for a recorded corpus)."""
    voice = BANK.get(unit.segment.target_speaker) if unit.segment.source == "chitchat_tts" else None
    return voice.engine if voice else None


def cached_units(items: list[SimpleNamespace], cache: Path, variant: str) -> dict[str, Unit]:
    """The build's unit cache entry of each published dialogue (by its published id), where the
    finished converted-turn original equals the published one (the cache made this dataset)."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    cached = {}
    for path in sorted(Path(cache).glob(f"units/*/code-{UNIT_CODE}*/{variant}/*/*.npz")):
        unit = Unit.load(path)
        dialogue = f"{unit.segment.source}/{unit.segment.dialogue_id}"  # as published
        k = unit.converted_turn - 1
        if (
            unit.dropped is None
            and dialogue in published
            and np.array_equal(finish(unit.targets[k]), published[dialogue].targets[k])
        ):
            cached[dialogue] = unit
    return cached


def other_turn_swaps(items: list[SimpleNamespace], cached: dict[str, Unit]) -> tuple[list[SimpleNamespace], str]:
    """Each published unit with its S2/S3 turns replaced by another unit's original turn as the
    cache holds it (same backend, another target speaker of the substitute's gender, from the
    target's TTS engine and source where there is one, the nearest in length, cut or padded to the
    turn's length), finished like every published clip; and a line on how many swapped turns had to
    come from another TTS engine or source than the target's."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    out, crossed = [], {"S2": 0, "S3": 0}
    for dialogue, own in cached.items():
        unit = published[dialogue]
        length = unit.targets[unit.converted_turn - 1].size
        swapped = {}
        for scenario, gender in (("S3", unit.s3.gender), ("S2", unit.s2.gender)):
            others = [
                o
                for o in cached.values()
                if o.vc_model == own.vc_model
                and o.segment.target_gender == gender
                and o.segment.target_speaker != own.segment.target_speaker
            ]
            alike = [o for o in others if o.segment.source == own.segment.source and _engine(o) == _engine(own)]
            crossed[scenario] += not alike
            turns = [c for o in alike or others for c in o.targets]
            if turns:
                nearest = min(turns, key=lambda c: abs(c.size - length))
                swapped[scenario] = np.pad(nearest, (0, max(0, length - nearest.size)))[:length]
        if len(swapped) == 2:
            out.append(_swapped(unit, swapped))
    return (
        out,
        f"another turn; from another TTS engine or source: S2 {crossed['S2']}, S3 {crossed['S3']} of {len(cached)}",
    )


#: A render whose speech is within this share of the wanted length is kept as it is
RATE_TOLERANCE = 0.02
#: At most this many renders per swapped turn to reach the turn's length
MAX_RENDERS = 3


def _at_length(voicer: Voicer, voice: str, text: str, length: int) -> tuple[np.ndarray, bool]:
    """``text`` in ``voice`` at the speaking rate that gives ``length`` samples (re-rendered at the
    rate scaled by the speech's length against the wanted one, up to ``MAX_RENDERS`` times), the
    rest padded or cut at the end; and whether that cut reached past the trailing pad into speech."""
    pad = round(PAD_SECONDS * ssd.SAMPLING_RATE)
    speed = Voicer.voice(voice).speed
    clip = voicer.render(voice, text)
    for _ in range(MAX_RENDERS - 1):
        ratio = (clip.size - 2 * pad) / max(1, length - 2 * pad)
        if abs(ratio - 1) <= RATE_TOLERANCE:
            break
        speed *= ratio
        clip = voicer.render(voice, text, speed=speed)
    return np.pad(clip, (0, max(0, length - clip.size)))[:length], clip.size - length > pad


def _swapped(unit: SimpleNamespace, unfinished: dict[str, np.ndarray]) -> SimpleNamespace:
    """``unit`` with its S2/S3 turns replaced by ``unfinished``'s clips (as the unit cache would hold
    them) through the final stage; ``unfinished`` is kept for the other floor draws."""
    return SimpleNamespace(
        **(vars(unit) | {"converted": {s: finish(c) for s, c in unfinished.items()}, "unfinished": unfinished})
    )


def _to_the_final_stage(converter, spoken: np.ndarray) -> np.ndarray:
    """A voiced clip the way a source's turn reaches the final stage: the voicing's 16-bit wav, the
    backend's resynthesis, the loudness, the unit cache's 16 bits."""
    wav = io.BytesIO()
    sf.write(wav, spoken, ssd.SAMPLING_RATE, subtype="PCM_16", format="WAV")
    voiced = sf.read(io.BytesIO(wav.getvalue()), dtype="float32")[0]
    return _float(_pcm(normalise_loudness(converter.resynthesize(voiced))))


def _bank_voice(speaker: str) -> str | None:
    """The bank voice of a pool speaker id ``<source>/<id>`` (None for a recorded corpus' speaker)."""
    source, _, voice = speaker.partition("/")
    return voice if source == "chitchat_tts" and voice in BANK else None


def same_words_swaps(
    items: list[SimpleNamespace], cached: dict[str, Unit], voicer: Voicer
) -> tuple[list[SimpleNamespace], str]:
    """Each published unit of a TTS source (with TTS substitutes) with its S2/S3 turn k said by the
    S2/S3 substitute itself: the same words in the substitute's own bank voice (at the rate that
    gives the turn's length), through the path the original turns took (checked on every unit: the
    target's own voice through it gives the published turn, sample for sample); and a line on how
    many substitutes another TTS engine voices, and how many swapped turns were cut into speech."""
    published = {unit.segment.dialogue_id: unit for unit in items}
    converters, out, crossed, cut = {}, [], {"S2": 0, "S3": 0}, 0
    voiced = {
        d: u
        for d, u in cached.items()
        if u.segment.source == "chitchat_tts" and _bank_voice(u.s2.speaker) and _bank_voice(u.s3.speaker)
    }
    for dialogue, own in tqdm(voiced.items(), desc="voicing the same words", unit="unit"):
        k = own.converted_turn - 1
        text = [t["text"] for t in own.turns if t["is_target"]][k]
        converter = converters.setdefault(own.vc_model, get_converter(own.vc_model))
        if not np.array_equal(
            finish(_to_the_final_stage(converter, voicer.render(own.segment.target_speaker, text))),
            published[dialogue].targets[k],
        ):
            raise SystemExit(
                f"{dialogue}: the target's own voice through the swap's path is not the published turn {k + 1}; "
                "the swap would not be a like-for-like yardstick"
            )
        swapped = {}
        for scenario, substitute in (("S2", own.s2), ("S3", own.s3)):
            voice = _bank_voice(substitute.speaker)
            crossed[scenario] += BANK[voice].engine != _engine(own)
            spoken, into_speech = _at_length(voicer, voice, text, own.raw_targets[k].size)
            cut += into_speech
            swapped[scenario] = _to_the_final_stage(converter, spoken)
        out.append(_swapped(published[dialogue], swapped))
    return out, (
        f"same words, each unit's path checked on the target's own voice; substitutes voiced by another TTS engine: "
        f"S2 {crossed['S2']}, S3 {crossed['S3']} of {len(voiced)}; turns cut into speech: {cut}"
    )


@lru_cache(maxsize=1)
def _mfcc():
    import torchaudio

    return torchaudio.transforms.MFCC(
        ssd.SAMPLING_RATE, n_mfcc=13, melkwargs={"n_fft": 512, "hop_length": 160, "n_mels": MELS, "f_max": 5200}
    )


#: mel bands of the MFCCs (their c0 is sqrt(MELS) x the frame's mean log-mel level in dB: orthonormal DCT)
MELS = 40


def voice_descriptors(clip: np.ndarray) -> np.ndarray:
    """What the voice itself sets in a clip: the median and the 10-90 % range of log2 F0 (Praat,
    60-500 Hz), and the mean and spread of MFCCs 1-12 (below 5.2 kHz) over the frames whose mean
    log-mel level is within 20 dB of the loudest frame's (timbre)."""
    import parselmouth
    import torch

    x = np.asarray(clip, dtype=np.float64)
    f0 = (
        parselmouth.Sound(x, sampling_frequency=ssd.SAMPLING_RATE)
        .to_pitch(pitch_floor=60, pitch_ceiling=500)
        .selected_array["frequency"]
    )
    octaves = np.log2(f0[f0 > 0]) if np.count_nonzero(f0) >= 3 else np.full(3, np.log2(150.0))
    coefficients = _mfcc()(torch.from_numpy(x.astype(np.float32))).numpy()
    level = coefficients[0] / np.sqrt(MELS)
    timbre = coefficients[1:, level > level.max() - 20]
    return np.concatenate(
        [
            [np.median(octaves), np.percentile(octaves, 90) - np.percentile(octaves, 10)],
            timbre.mean(axis=1),
            timbre.std(axis=1),
        ]
    )


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
        measured.append(
            (np.stack([feature_vector(c) for c in clips]), np.stack([voice_descriptors(c) for c in clips]))
        )
    features, voices = np.vstack([f for f, _ in measured]), np.vstack([v for _, v in measured])
    residue = features - make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(voices, features).predict(voices)
    collected, start = ShortcutAudit(), 0
    for unit, (f, _) in zip(items, measured):
        rows, n, start = residue[start : start + len(f)], len(unit.targets), start + len(f)
        collected.add_features(
            "published",
            rows[:n],
            unit.converted_turn - 1,
            {"S2": rows[n], "S3": rows[n + 1]},
            f"{unit.segment.source}/{unit.segment.dialogue_id}",
            unit.vc_model,
        )
    return {
        m: collected.with_model(m, families=False, control_draws=CONTROL_DRAWS if m == "logistic" else 5)
        for m in models
    }


def audit(items: list, models: list[str], desc: str) -> dict[str, ShortcutAudit]:
    """One audit per model over the same measured units (the breakdown by family for the card's model
    only; no artefact counts: the bench does not show them)."""
    collected = ShortcutAudit()
    for unit in tqdm(items, desc=desc, unit="unit"):
        collected.add(unit, artifacts=False)
    return {
        m: collected.with_model(m, families=m == "logistic", control_draws=CONTROL_DRAWS if m == "logistic" else 5)
        for m in models
    }


def floor_draw(items: list[SimpleNamespace], cached: dict[str, Unit], draw: int) -> list[SimpleNamespace]:
    """The units again with draw ``draw`` of the final stage's noise floor and dither (the cache's
    clips, or a natural swap's ``unfinished`` turns, through ``finish(clip, draw)``)."""
    return [
        SimpleNamespace(
            **(
                vars(unit)
                | {
                    "targets": [finish(c, draw) for c in cached[unit.segment.dialogue_id].targets],
                    "converted": {
                        s: finish(c, draw)
                        for s, c in getattr(unit, "unfinished", cached[unit.segment.dialogue_id].converted).items()
                    },
                }
            )
        )
        for unit in items
    ]


def print_floor_draws(
    dataset: Path, variant: str, items, cached, fitted: dict[str, ShortcutAudit], draws: int
) -> tuple[list[str], list]:
    """Refit every model on ``draws`` other floor draws, print each model's ``draws_table``, and
    return the lines of the cells above chance in every draw, and the draws' audits (one
    model -> audit dict per draw)."""
    redrawn = [
        audit(floor_draw(items, cached, d), list(fitted), f"floor draw {d} {variant}") for d in range(1, draws + 1)
    ]
    every = []
    for model, a in fitted.items():
        table, lines = draws_table(a, [r[model] for r in redrawn])
        print(f"\n{dataset} · {variant} · {model} · {draws} other draws of the noise floor and dither\n\n{table}")
        every += [f"{variant} {model}, {line}" for line in lines]
    return every, redrawn


def print_swaps(
    dataset: Path,
    variant: str,
    items,
    cached,
    swaps: list[SimpleNamespace],
    note: str,
    fitted: list[dict[str, ShortcutAudit]],
) -> tuple[list[str], list[str]]:
    """Fit every model on the natural swaps, in the published draw and in each other floor draw
    (``fitted``: one model -> audit dict of the converted turns per draw, the published one first;
    where only some dialogues have a swap, the converted turns of those are audited again in each
    draw), print the paired tables, and return the lines of the cells found above chance and more
    often than the swap: in the published draw, and in every draw."""
    kept = {unit.segment.dialogue_id for unit in swaps}
    subset = [unit for unit in items if unit.segment.dialogue_id in kept]
    converted = (
        fitted
        if len(subset) == len(items)
        else [
            audit(
                floor_draw(subset, cached, d) if d else subset,
                list(fitted[0]),
                f"features {variant}, swapped dialogues, draw {d}",
            )
            for d in range(len(fitted))
        ]
    )
    swapped = [
        audit(floor_draw(swaps, cached, d) if d else swaps, list(fitted[0]), f"natural swaps {variant}, draw {d}")
        for d in range(len(fitted))
    ]
    above, every = [], []
    for model in fitted[0]:
        table, lines = swap_comparison(converted[0][model], swapped[0][model])
        print(
            f"\n{dataset} · {variant} · {model} · against natural swaps, a real other voice ({len(swaps)} units; {note})\n\n{table}"
        )
        above += [f"{variant} {model}, {line}" for line in lines]
        if len(fitted) > 1:
            table, lines = swap_draws_table([c[model] for c in converted], [s[model] for s in swapped])
            print(
                f"\n{dataset} · {variant} · {model} · converted minus natural swap (points) in {len(fitted) - 1} other floor draws\n\n{table}"
            )
            every += [f"{variant} {model}, {line}" for line in lines]
    return above, every


def _checked_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path | None:
    """The build's unit cache the options name (``--voice-yardstick``, ``--cache``), once the options
    are checked: a built folder with rows of the variants, a cache where ``--floor-draws`` needs one."""
    variants = args.variants.split(",")
    if set(variants) - set(ssd.VARIANTS):
        parser.error(f"--variants {args.variants}: the variants are {', '.join(ssd.VARIANTS)}")
    if not any(
        ssd.shard_paths(args.dataset, ssd.config_name("detection", v), split) for v in variants for split in ssd.SPLITS
    ):
        parser.error(
            f"{args.dataset}: no detection shards of {', '.join(variants)} there; give a built dataset folder"
        )
    if args.floor_draws < 0:
        parser.error(f"--floor-draws {args.floor_draws}: give a number of draws, 0 or more")
    if args.cache and not args.floor_draws:
        parser.error("--cache is the unit cache of --floor-draws N; give both")
    if args.cache and args.voice_yardstick and args.cache.resolve() != args.voice_yardstick.resolve():
        parser.error(
            f"--cache {args.cache} and --voice-yardstick {args.voice_yardstick}: one build has one unit cache"
        )
    if args.floor_draws and not (args.cache or args.voice_yardstick):
        parser.error("--floor-draws needs the build's unit cache: --cache CACHE")
    return args.cache or args.voice_yardstick


def draws_table(published: ShortcutAudit, redrawn: list[ShortcutAudit]) -> tuple[str, list[str]]:
    """Markdown: per task, the published draw's cell and each other floor draw's, the range of the
    scores, and in how many draws the interval lies above chance; and a line for each task above
    chance in every draw (what one draw's luck does not explain)."""
    cells = [published.scores(), *(a.scores() for a in redrawn)]
    lines = [
        "| task | chance | published draw | "
        + " | ".join(f"draw {d}" for d in range(1, len(redrawn) + 1))
        + " | range (points) | above chance in |",
        "|---|---|---|" + "---|" * len(redrawn) + "---|---|",
    ]
    every = []
    for task in published.tasks:
        chance, row = published.chance(task), [c[task] for c in cells]
        scores, above = [c["score"] for c in row], sum(c["low"] > chance for c in row)
        lines.append(
            f"| {TASK_LABELS[task]} | {chance:.1f} % | "
            + " | ".join(cell_text(c) for c in row)
            + f" | {max(scores) - min(scores):.1f} | {above} of {len(row)} |"
        )
        if above == len(row):
            every.append(f"{TASK_LABELS[task]}: {min(scores):.1f}-{max(scores):.1f} %")
    return "\n".join(lines), every


def _above_the_swap(converted: dict, difference: dict, chance: float) -> bool:
    """A converted turn's cell above chance *and* its paired difference over the swap above 0 (a
    swap scored below chance, as small cross-validated cells now and then are, makes no shortcut of
    a converted cell at chance)."""
    return converted["low"] > chance and difference["low"] > 0


def swap_draws_table(converted: list[ShortcutAudit], swapped: list[ShortcutAudit]) -> tuple[str, list[str]]:
    """Markdown: per task, converted minus swap with its paired interval in each floor draw (the
    published one first; * where the converted cell is above chance too), and in how many draws
    the converted turn is found above chance and more often than the swap; and a line for each
    task where it is in every draw."""
    differences = [c.difference(s) for c, s in zip(converted, swapped)]
    cells = [c.scores() for c in converted]
    lines = [
        "| task | chance | published draw | "
        + " | ".join(f"draw {d}" for d in range(1, len(converted)))
        + " | above chance and above the swap in |",
        "|---|---|---|" + "---|" * (len(converted) - 1) + "---|",
    ]
    every = []
    for task in converted[0].tasks:
        chance = converted[0].chance(task)
        beyond = [_above_the_swap(c[task], d[task], chance) for c, d in zip(cells, differences)]
        lines.append(
            f"| {TASK_LABELS[task]} | {chance:.1f} % | "
            + " | ".join(
                f"{d[task]['score']:+.1f} [{d[task]['low']:+.1f} to {d[task]['high']:+.1f}]{' *' * (c[task]['low'] > chance)}"
                for c, d in zip(cells, differences)
            )
            + f" | {sum(beyond)} of {len(beyond)} |"
        )
        if all(beyond):
            every.append(
                f"{TASK_LABELS[task]}: "
                + ", ".join(f"{d[task]['score']:+.1f}" for d in differences)
                + " points over the swap"
            )
    return "\n".join(lines), every


def swap_comparison(converted: ShortcutAudit, swapped: ShortcutAudit) -> tuple[str, list[str]]:
    """Markdown: per task (and per reading of discrimination, ``ShortcutAudit.readings``), the
    converted turns and the natural swaps of the same dialogues, and the paired difference; and a
    line for each task where the converted turn is found above chance *and* more often than the
    swap (``_above_the_swap``)."""
    difference = converted.difference(swapped)
    lines = [
        "| task | chance | converted turn | natural swap | swap's random-gold control | converted minus swap (points) |",
        "|---|---|---|---|---|---|",
    ]
    for task, cell in converted.result("published").items():
        swap, d = swapped.result("published")[task], difference[task]
        lines.append(
            f"| {TASK_LABELS[task]} | {cell['chance']:.1f} % | {cell_text(cell['all'])} | {cell_text(swap['all'])} "
            f"| {cell_text(swap['control'])} | {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}] |"
        )
    readings, swap_readings = converted.readings(), swapped.readings()
    for name, d in converted.readings_difference(swapped).items():
        lines.append(
            f"| discrimination, {name} | {converted.chance('discrimination'):.1f} % | {cell_text(readings[name])} | {cell_text(swap_readings[name])} "
            f"| - | {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}] |"
        )
    published = converted.result("published")
    above = [
        f"{TASK_LABELS[task]}: {cell_text(published[task]['all'])}, {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}] over the swap"
        for task, d in difference.items()
        if _above_the_swap(published[task]["all"], d, published[task]["chance"])
    ]
    return "\n".join(lines), above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--models", default="logistic,boosting")
    parser.add_argument("--variants", default=",".join(ssd.VARIANTS))
    parser.add_argument(
        "--voice-yardstick",
        type=Path,
        metavar="CACHE",
        help="the build's unit cache: also fit each model on natural swaps (a real other voice)",
    )
    parser.add_argument(
        "--beyond-voice",
        action="store_true",
        help="also fit each model on the features with what F0 and MFCC timbre explain subtracted",
    )
    parser.add_argument(
        "--swap",
        choices=["same-words", "other-turn"],
        default="same-words",
        help="same-words: the substitute's own TTS voice says the turn (TTS sources); other-turn: another dialogue's turn",
    )
    parser.add_argument(
        "--floor-draws",
        type=int,
        default=0,
        metavar="N",
        help="also fit each model on the build's units finished with N other draws of the noise floor and dither "
        "(needs the build's unit cache: --cache, or the one --voice-yardstick names; "
        "with --voice-yardstick, the natural swaps are finished with the same draws)",
    )
    parser.add_argument("--cache", type=Path, help="the build's unit cache (for --floor-draws)")
    args = parser.parse_args()
    models, cache = args.models.split(","), _checked_options(parser, args)
    flagged, above_swap, beyond_voice, every_draw, every_swap_draw = [], [], [], [], []
    for variant in args.variants.split(","):
        items = units(args.dataset, variant)
        if not items:
            continue
        swaps, swap_note = [], ""
        cached = cached_units(items, cache, variant) if cache else {}
        if cache and not cached:
            parser.error(
                f"{cache}: no unit of {variant}'s published dialogues there (the build's --cache, by this final stage?)"
            )
        if args.floor_draws and len(cached) < len(items):
            parser.error(
                f"--floor-draws: {len(items) - len(cached)} of {variant}'s {len(items)} published dialogues are not in {cache} as published"
            )
        if args.voice_yardstick:
            swaps, swap_note = (
                same_words_swaps(items, cached, Voicer(args.voice_yardstick / "tts", threads=1))
                if args.swap == "same-words"
                else other_turn_swaps(items, cached)
            )
            if not swaps:
                parser.error(
                    f"--swap {args.swap}: no natural swap for {variant} (same-words needs a TTS source and TTS substitutes)"
                )
        fitted = audit(items, models, f"features {variant}")
        for model, a in fitted.items():
            start = time.perf_counter()
            table = a.table()
            print(
                f"\n{args.dataset} · {variant} · {model} ({len(items)} units; fitted in {time.perf_counter() - start:.1f} s)\n\n{table}"
            )
            flagged += a.warnings(f"{variant} {model}")
        lines, redrawn = (
            print_floor_draws(args.dataset, variant, items, cached, fitted, args.floor_draws)
            if args.floor_draws
            else ([], [])
        )
        every_draw += lines
        for model, a in (beyond_the_voice(items, models, f"voice {variant}") if args.beyond_voice else {}).items():
            print(
                f"\n{args.dataset} · {variant} · {model} · beyond the voice (features minus what F0 and timbre predict)\n\n{a.table()}"
            )
            beyond_voice += a.warnings(f"{variant} {model} beyond the voice")
        if swaps:
            above, every = print_swaps(args.dataset, variant, items, cached, swaps, swap_note, [fitted, *redrawn])
            above_swap, every_swap_draw = above_swap + above, every_swap_draw + every
    print("\nabove chance:" if flagged else "\nno cell above chance", *flagged, sep="\n")
    if args.floor_draws:
        print(
            "\nabove chance in every floor draw:" if every_draw else "\nno cell above chance in every floor draw",
            *every_draw,
            sep="\n",
        )
    if args.beyond_voice:
        print(
            "\nabove chance beyond the voice:" if beyond_voice else "\nno cell above chance beyond the voice",
            *beyond_voice,
            sep="\n",
        )
    if args.voice_yardstick:
        print(
            "\nconverted turn found above chance and more often than a natural swap:"
            if above_swap
            else "\nno cell finds the converted turn above chance and more often than a natural swap",
            *above_swap,
            sep="\n",
        )
    if args.voice_yardstick and args.floor_draws:
        print(
            "\nconverted turn found above chance and more often than a natural swap in every floor draw:"
            if every_swap_draw
            else "\nno cell finds the converted turn above chance and more often than a natural swap in every floor draw",
            *every_swap_draw,
            sep="\n",
        )


if __name__ == "__main__":
    main()
