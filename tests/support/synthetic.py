"""A small, schema-valid SpeakerSleuth folder made of synthetic voiced tones, for tests.

Every "speaker" is a harmonic tone at its own F0 with a vowel-like spectral tilt; a converted turn
takes the substitute speaker's F0. This is test data for the writer, loaders, metrics and the Space,
never a benchmark result.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import speakersleuth.speakersleuth_dataset as ssd

SPEAKERS = {  # name: (gender, F0 in Hz)
    "f1": ("female", 220.0),
    "f2": ("female", 250.0),
    "m1": ("male", 110.0),
    "m2": ("male", 130.0),
}


def tone(f0: float, seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * ssd.SAMPLING_RATE)) / ssd.SAMPLING_RATE
    vibrato = 1 + 0.01 * np.sin(2 * np.pi * 5 * t)
    wave = sum(np.sin(2 * np.pi * f0 * h * vibrato * t) / h**1.5 for h in range(1, 8))
    wave = wave * (0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6)) ** 2)
    return (0.2 * wave / np.abs(wave).max() + 0.002 * rng.standard_normal(t.size)).astype(np.float32)


def dialogue_records(variant: str, index: int, rng: random.Random) -> tuple[list[dict], dict]:
    """The S1/S2/S3 turn-task records and the discrimination record of one synthetic dialogue."""
    n = ssd.VARIANT_SPECS[variant].target_turns
    target = rng.choice(sorted(SPEAKERS))
    gender, f0 = SPEAKERS[target]
    other = rng.choice([s for s in SPEAKERS if s != target])
    opposite = rng.choice([s for s, (g, _) in SPEAKERS.items() if g != gender])
    similar = next(s for s, (g, _) in SPEAKERS.items() if g == gender and s != target)
    turns, positions = [], []
    for i in range(2 * n):
        is_target = i % 2 == 0
        turns.append(
            {
                "speaker": target if is_target else other,
                "text": f"turn {i} of dialogue {index}",
                "is_target": is_target,
            }
        )
        if is_target:
            positions.append(i)
    seed = 1000 * index
    clips = [tone(f0, 1.0 + 0.1 * j, seed + j) for j in range(n)]
    k = rng.randrange(1, n + 1)
    dialogue_id = f"synthetic/{index:04d}"
    common = {
        "dialogue_id": dialogue_id,
        "source_dataset": "synthetic",
        "variant": variant,
        "target_speaker": target,
        "target_gender": gender,
        "turns": turns,
        "target_turn_positions": positions,
        "reference_audio": tone(f0, 3.0, seed + 99),
    }
    versions = {"S1": clips[k - 1]}
    records = []
    for scenario, substitute in (("S1", None), ("S2", opposite), ("S3", similar)):
        audio = list(clips)
        if substitute:
            audio[k - 1] = versions[scenario] = tone(
                SPEAKERS[substitute][1], len(clips[k - 1]) / ssd.SAMPLING_RATE, seed + k
            )
        records.append(
            {
                **common,
                "id": f"{variant}-synthetic-{index:04d}-{scenario}",
                "scenario": scenario,
                "target_audio": audio,
                "label": "inconsistent" if substitute else "consistent",
                "inconsistent_turns": [k] if substitute else [],
                "converted_turn": k if substitute else None,
                "vc_model": "tone-shift" if substitute else None,
                "substitute_speaker": substitute,
                "substitute_gender": SPEAKERS[substitute][0] if substitute else None,
                "substitute_similarity": 0.5 if substitute else None,
            }
        )
    order = list(ssd.SCENARIOS)
    rng.shuffle(order)
    label_of = dict(zip(order, ssd.CANDIDATE_LABELS))
    discrimination = {
        **common,
        "id": f"{variant}-synthetic-{index:04d}-D",
        "vc_model": "tone-shift",
        "context_audio": [c for j, c in enumerate(clips) if j != k - 1],
        "masked_position": k,
        "candidates": [versions[s] for s in order],
        "candidate_labels": list(ssd.CANDIDATE_LABELS),
        "candidate_scenarios": order,
        "candidate_substitute_speakers": [{"S1": None, "S2": opposite, "S3": similar}[s] for s in order],
        "candidate_similarities": [{"S1": 1.0, "S2": 0.2, "S3": 0.5}[s] for s in order],
        "answer": label_of["S1"],
        "gold_ranking": [label_of[s] for s in ssd.GOLD_SCENARIO_ORDER],
    }
    return records, discrimination


def build_synthetic_dataset(out: str | Path, dialogues: int = 3, variants=ssd.VARIANTS, seed: int = 0) -> Path:
    """Write every config of ``variants`` with ``dialogues`` dialogues each, plus the card."""
    out = Path(out)
    rng = random.Random(seed)
    for variant in variants:
        made = [dialogue_records(variant, i, rng) for i in range(dialogues)]
        turn_records = [r for recs, _ in made for r in recs]
        for task in ("detection", "localization"):
            with ssd.DatasetWriter(out, ssd.config_name(task, variant)) as writer:
                writer.write_all(turn_records)
        with ssd.DatasetWriter(out, ssd.config_name("discrimination", variant)) as writer:
            writer.write_all(d for _, d in made)
    ssd.write_card(out, "# SpeakerSleuth (synthetic test folder)\n\nSynthetic tones; for tests only.")
    return out
