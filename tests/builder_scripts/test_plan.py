"""The build's plan (builder_scripts/plan.py): the order in which each source's dialogues are taken."""

from __future__ import annotations

from types import SimpleNamespace

from speakersleuth.builder_scripts.plan import seeded_order


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
