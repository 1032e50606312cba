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
        converted_turn=k, raw_targets=turns, raw_converted=raw_converted,
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
