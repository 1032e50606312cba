"""The shortcut audit: a feature that marks the converted turn scores 100 %, one that does not, chance."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from builder_scripts.shortcuts import ShortcutAudit


def unit(k: int, rng: np.random.Generator) -> SimpleNamespace:
    """Five 1 s noise turns; raw: the converted clips are 6 dB louder; published: one level, up to 16-bit rounding."""
    turns = [rng.standard_normal(16000).astype(np.float32) * 0.05 for _ in range(5)]
    raw_converted = {s: turns[k - 1] * 2.0 for s in ("S2", "S3")}

    def level(clip):  # RMS to 0.05, then int16 rounding as in the unit cache
        return np.round(clip * (0.05 / np.sqrt(np.mean(clip.astype(np.float64) ** 2))) * 32767) / 32767

    return SimpleNamespace(
        converted_turn=k, raw_targets=turns, raw_converted=raw_converted, segment=SimpleNamespace(target_gender="female"),
        s2=SimpleNamespace(gender="male"), s3=SimpleNamespace(gender="female"),
        targets=[level(t) for t in turns], converted={s: level(c) for s, c in raw_converted.items()},
    )


def test_loud_conversions_are_caught_raw_and_equal_levels_score_chance():
    rng = np.random.default_rng(0)
    audit = ShortcutAudit()
    for i in range(20):
        audit.add(unit(1 + i % 5, rng))
    raw, published = audit.result("raw"), audit.result("published")
    assert raw["converted_turn"]["loudness"] == 100.0 and raw["original_candidate"]["loudness"] == 100.0
    assert published["converted_turn"]["loudness"] == published["chance_turn"] == 20.0
    assert published["original_candidate"]["loudness"] == published["chance_candidate"]
    assert published["converted_turn"]["duration"] == 20.0  # equal lengths: a tie everywhere
    assert published["converted_turn_S2"]["loudness"] == published["converted_turn_S3"]["loudness"] == 20.0
    assert "| loudness | 100.0 | 20.0 | 20.0 / 20.0 | 100.0 | 33.3 |" in audit.table()


def test_artifact_rates_per_scenario_find_the_clicking_conversion():
    """S1 a clean tone, S2 converted into a click train, S3 a tone with a 10 ms gap of exact zeros:
    impulses 0 / 100 / 0 %, exact-zero runs 0 / 100 / 100 % (the pads around every clip never count)."""
    t = np.arange(16000) / 16000
    pad = np.zeros(1600, dtype=np.float32)
    clean = np.concatenate([pad, (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), pad])
    clicks = np.zeros_like(clean)
    clicks[1600:-1600:256] = 0.5
    gapped = clean.copy()
    gapped[8000:8160] = 0.0
    audit = ShortcutAudit()
    for k in (1, 2, 3):
        turns = [clean.copy() for _ in range(3)]
        conversions = {"S2": clicks, "S3": gapped}
        audit.add(SimpleNamespace(
            converted_turn=k, raw_targets=turns, raw_converted=conversions, targets=turns, converted=conversions,
            segment=SimpleNamespace(target_gender="female"), s2=SimpleNamespace(gender="male"), s3=SimpleNamespace(gender="female"),
        ))
    rates = audit.result("published")["artifacts"]
    assert [rates[s]["impulse_pct"] for s in ("S1", "S2", "S3")] == [0.0, 100.0, 0.0]
    assert [rates[s]["zero_run_pct"] for s in ("S1", "S2", "S3")] == [0.0, 100.0, 100.0]
    assert rates["S1"]["clips"] == 3 and rates["S1"]["hnr_db_female"] > 25.0 and np.isnan(rates["S1"]["hnr_db_male"])
    assert np.isnan(rates["S2"]["hnr_db_female"])  # S2 is heard as the other gender
    assert "| published | S2 | 3 | 100.0 % | - | 100.0 % | nan / " in audit.artifacts.table()
