"""The build's plan (builder_scripts/plan.py): the order in which each source's dialogues are taken,
and which units it keeps, drops and still needs."""

from __future__ import annotations

from types import SimpleNamespace

from speakersleuth.builder_scripts.plan import seeded_order
from tests.support.unit_fixtures import make_unit


def _source(ids: list[str]):
    """A source whose ``dialogues()`` lists ``ids`` in that order (the order only reads the ids)."""
    return SimpleNamespace(dialogues=lambda: [SimpleNamespace(source="synthetic", dialogue_id=i) for i in ids])


def test_the_dialogue_order_depends_on_the_builds_seed_and_nothing_else():
    """Thirty dialogues: the same seed gives the same order however the source lists them; another
    seed another order (two seeds agreeing on 30 dialogues by chance: 1 in 30!)."""
    ids = [f"{i:02d}" for i in range(30)]

    def order(seed, listed=ids):
        return [d.dialogue_id for d in seeded_order(_source(listed), seed)]

    first = order(2**62 + 1)
    assert sorted(first) == ids and first != ids
    assert order(2**62 + 1, ids[::-1]) == first
    assert order(2**62 + 2) != first


def test_the_first_units_include_spares_so_that_drops_need_no_replacement_round():
    """``unit_jobs`` makes the first ``wanted`` candidates and 15 % more (rounded down): 20 wanted
    make 23, and three drops among them leave nothing missing; one wanted makes no spare."""
    from speakersleuth.builder_scripts.plan import MISSING, Plan

    plan = Plan()
    for variant, wanted in (("10turn", 20), ("main", 1)):
        plan.candidates[(variant, "test")] = [
            (SimpleNamespace(source="s", dialogue_id=f"{variant}{i}"), None) for i in range(30)
        ]
        plan.wanted[(variant, "test", "s")] = wanted
    made = {job.segment.dialogue_id for job in plan.unit_jobs()}
    assert made == {f"10turn{i}" for i in range(23)} | {"main0"}
    dropped = {"10turn0", "10turn5", "10turn9"}

    def verdict(variant, segment):
        if segment.dialogue_id not in made:
            return MISSING
        return "dropped" if segment.dialogue_id in dropped else None

    assert plan.missing_units(verdict) == []
    assert len(plan.select(("10turn", "test"), verdict).kept) == 20


def test_a_unit_not_made_yet_is_counted_as_kept_and_made_not_replaced(tmp_path):
    """Three dialogues wanted from six candidates, verdicts read from a unit store: c0 made and
    kept, c1 not made, c2 dropped by verification (its marker), c3 made and kept. By hand: c0, c1
    and c3 fill the three places (c1 counted as if kept, not as a drop), c2's reason is the one
    drop, c4 and c5 are never reached; the units still needed are c1 alone, not c4 in its place."""
    from speakersleuth.builder_scripts.plan import Plan
    from speakersleuth.builder_scripts.units import UnitStore

    store = UnitStore(tmp_path, "pool")
    units = [make_unit(str(i), seconds=0.05) for i in range(6)]
    for i in (0, 3):
        store.path("main", units[i].segment).parent.mkdir(parents=True, exist_ok=True)
        units[i].save(store.path("main", units[i].segment))
    store.save_dropped("main", units[2].segment, "too quiet")
    plan = Plan()
    plan.candidates[("main", "test")] = [(unit.segment, None) for unit in units]
    plan.wanted[("main", "test", "synthetic")] = 3

    selection = plan.select(("main", "test"), store.verdict)
    assert [s.dialogue_id for s, _ in selection.kept] == ["0", "3"]
    assert [s.dialogue_id for s, _ in selection.missing] == ["1"]
    assert selection.dropped == ["too quiet"]
    assert [job.segment.dialogue_id for job in plan.missing_units(store.verdict)] == ["1"]
