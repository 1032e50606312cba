"""The shortcut bench's own logic (``benchmarks/bench_shortcuts.py``): what a floor draw finishes
again, and how the converted turns are judged against natural swaps over the draws. The bench as a
user types it runs in tests/product/test_outside_in.py."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from speakersleuth.builder_scripts.final_stage import finish

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_shortcuts as bench  # noqa: E402


def _clip(seed: int) -> np.ndarray:
    t = np.arange(8000) / 16000
    return (0.1 * np.sin(2 * np.pi * (150 + 40 * seed) * t) * (t > 0.1) * (t < 0.4)).astype(np.float32)


def test_a_floor_draw_finishes_a_swaps_own_turns_again_and_the_cache_for_the_rest():
    """A natural swap's other floor draw is its own unfinished turns through ``finish(clip, draw)``
    (not the converted turns the cache holds for that dialogue), its targets the cache's; the
    published draw of a swap is ``finish`` of its turns."""
    cached = {"tts/d1": SimpleNamespace(targets=[_clip(0), _clip(1)], converted={"S2": _clip(2), "S3": _clip(3)})}
    published = SimpleNamespace(
        segment=SimpleNamespace(dialogue_id="tts/d1"),
        converted_turn=2,
        targets=[finish(c) for c in cached["tts/d1"].targets],
        converted={s: finish(c) for s, c in cached["tts/d1"].converted.items()},
    )
    own = {"S2": _clip(4), "S3": _clip(5)}
    swap = bench._swapped(published, own)
    assert all(np.array_equal(swap.converted[s], finish(own[s])) for s in own)
    (redrawn,) = bench.floor_draw([swap], cached, 2)
    for s in own:
        assert np.array_equal(redrawn.converted[s], finish(own[s], 2))
        assert not np.array_equal(redrawn.converted[s], finish(own[s]))
    assert all(np.array_equal(a, finish(c, 2)) for a, c in zip(redrawn.targets, cached["tts/d1"].targets))
    (unit,) = bench.floor_draw([published], cached, 2)  # a published unit: the cache's converted turns
    assert all(np.array_equal(unit.converted[s], finish(cached["tts/d1"].converted[s], 2)) for s in own)


class _Cells:
    """Stands for a ``ShortcutAudit``: given cells (score, low) and, against its ``partner`` (the
    swaps' audit of the same draw) only, given differences (score, low, high)."""

    tasks = ("detection", "discrimination", "localization_S3", "localization_S2", "localization")

    def __init__(self, cells: dict, differences: dict | None = None, partner=None):
        self.cells, self.differences, self.partner = cells, differences, partner

    def chance(self, task):
        return {"detection": 50.0, "discrimination": 100 / 3}.get(task, 20.0)

    def scores(self):
        return {t: {"score": s, "low": low, "high": s + 10} for t, (s, low) in self.cells.items()}

    def difference(self, other):
        assert other is self.partner, "converted minus the swaps of the same draw"
        return {t: dict(zip(("score", "low", "high"), d)) for t, d in self.differences.items()}


def test_the_draws_table_names_a_cell_only_where_every_draw_is_above_chance_and_above_the_swap():
    """discrimination: above chance and above the swap in both draws (named); detection: above the
    swap in both but at chance in one (1 of 2); localization S3: above chance in both, its
    difference's interval reaching 0 in one (1 of 2); localization S2 with its interval's low end
    on chance, S2 + S3 with its difference's on 0 (neither is above). The swaps' own cells are at
    chance: the * marks the converted cell."""
    at_chance = {
        "detection": (50.0, 45.0),
        "discrimination": (33.0, 25.0),
        "localization_S3": (20.0, 12.0),
        "localization_S2": (20.0, 12.0),
        "localization": (20.0, 12.0),
    }
    swaps = [_Cells(at_chance), _Cells(at_chance)]
    # per task and draw: the converted cell (score, low) and its difference to the swap (score, low, high)
    by_task = {
        "detection": [((56.0, 51.0), (5.0, 1.0, 9.0)), ((53.0, 49.0), (4.0, 0.5, 8.0))],
        "discrimination": [((50.0, 40.0), (12.0, 2.0, 22.0)), ((47.0, 36.0), (9.0, 0.5, 18.0))],
        "localization_S3": [((30.0, 21.0), (8.0, 1.0, 15.0)), ((31.0, 22.0), (6.0, -2.0, 14.0))],
        "localization_S2": [((30.0, 20.0), (9.0, 5.0, 13.0)), ((31.0, 20.0), (9.0, 5.0, 13.0))],
        "localization": [((30.0, 21.0), (6.0, 0.0, 12.0)), ((31.0, 22.0), (6.0, 0.0, 12.0))],
    }
    draws = [
        _Cells({t: d[i][0] for t, d in by_task.items()}, {t: d[i][1] for t, d in by_task.items()}, swap)
        for i, swap in enumerate(swaps)
    ]
    table, lines = bench.swap_draws_table(draws, swaps)
    rows = {row.split(" | ")[0].lstrip("| "): row for row in table.splitlines()[2:]}
    assert rows["discrimination (pick the original)"].endswith("| 2 of 2 |")
    assert rows["detection (balanced accuracy)"].endswith("| 1 of 2 |")
    assert rows["localization, S3"].endswith("| 1 of 2 |")
    assert rows["localization, S2"].endswith("| 0 of 2 |") and "*" not in rows["localization, S2"]
    assert rows["localization, S2 + S3"].endswith("| 0 of 2 |")
    assert "+12.0 [+2.0 to +22.0] *" in rows["discrimination (pick the original)"]
    assert "| +4.0 [+0.5 to +8.0] |" in rows["detection (balanced accuracy)"]  # at chance in that draw: no *
    assert "| +6.0 [-2.0 to +14.0] * |" in rows["localization, S3"]  # above chance, not above the swap: * all the same
    assert lines == ["discrimination (pick the original): +12.0, +9.0 points over the swap"]


def test_print_swaps_sets_each_draw_of_the_converted_turns_beside_the_same_draw_of_the_swaps(monkeypatch):
    """Draw d of the swaps is their own turns through ``finish(clip, d)``, set beside draw d of the
    converted turns: the bench's audits of every draw where every dialogue has a swap, and the
    swapped dialogues' units of that draw where only some have one."""
    cached = {
        d: SimpleNamespace(targets=[_clip(0), _clip(i)], converted={"S2": _clip(i + 2), "S3": _clip(i + 3)})
        for i, d in enumerate(("tts/d1", "tts/d2"), start=1)
    }
    published = [
        SimpleNamespace(
            segment=SimpleNamespace(dialogue_id=d),
            converted_turn=2,
            targets=[finish(c) for c in u.targets],
            converted={s: finish(c) for s, c in u.converted.items()},
        )
        for d, u in cached.items()
    ]
    own = {"S2": _clip(6), "S3": _clip(7)}
    swap = bench._swapped(published[0], own)
    monkeypatch.setattr(
        bench, "audit", lambda items, models, desc: {m: [u.converted["S2"].tobytes() for u in items] for m in models}
    )
    compared = []
    monkeypatch.setattr(bench, "swap_comparison", lambda c, s: (compared.append((c, s)), ("", []))[1])
    monkeypatch.setattr(bench, "swap_draws_table", lambda cs, ss: (compared.append((cs, ss)), ("", []))[1])
    draws = range(3)
    for items in ([published[0]], published):
        fitted = [
            {"logistic": [finish(cached[u.segment.dialogue_id].converted["S2"], d).tobytes() for u in items]}
            for d in draws
        ]
        compared.clear()
        bench.print_swaps(Path("dataset"), "main", items, cached, [swap], "note", fitted)
        (first, first_swaps), (every, every_swaps) = compared
        assert first_swaps == [finish(own["S2"]).tobytes()] and first == [
            finish(cached["tts/d1"].converted["S2"]).tobytes()
        ]
        assert every_swaps == [[finish(own["S2"], d).tobytes()] for d in draws]
        assert every == [
            [finish(cached["tts/d1"].converted["S2"], d).tobytes()] for d in draws
        ]  # the swapped dialogue only


def test_the_swap_comparison_reads_discrimination_on_each_part_of_the_rows():
    """Under the tasks, one row per reading of discrimination: the converted turns' reading, the
    swaps', and their paired difference, each as the audits give them."""
    from speakersleuth.builder_scripts.shortcuts import ShortcutAudit
    from tests.support.audit_units import LEAK, unit

    rng = np.random.default_rng(6)
    converted, swapped = ShortcutAudit(tasks=("discrimination",)), ShortcutAudit(tasks=("discrimination",))
    for i in range(20):
        converted.add(unit(i, rng, leak=LEAK), artifacts=False)
        swapped.add(unit(i, rng), artifacts=False)
    table, _ = bench.swap_comparison(converted, swapped)
    difference = converted.readings_difference(swapped)
    for name in ("against the context", "among the candidates"):
        d = difference[name]
        row = (
            f"| discrimination, {name} | 33.3 % | {bench.cell_text(converted.readings()[name])} | "
            f"{bench.cell_text(swapped.readings()[name])} | - | {d['score']:+.1f} [{d['low']:+.1f} to {d['high']:+.1f}] |"
        )
        assert row in table.splitlines(), (row, table)
    assert difference["among the candidates"]["low"] > 0  # the planted residue, both converted candidates
