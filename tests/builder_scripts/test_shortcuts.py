"""The shortcut audit: a planted non-speaker cue is found and named by its family, the random-gold
control stays at chance, clips that differ in the voice only score chance; and the artefact rates."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from speakersleuth.builder_scripts.audit_features import FAMILIES, FEATURES
from speakersleuth.builder_scripts.shortcut_fits import paired_difference, permuted, score_cell
from speakersleuth.builder_scripts.shortcuts import TASKS, ShortcutAudit
from tests.support.audit_units import LEAK, unit


def contains_chance(cell: dict, chance: float) -> bool:
    return cell["low"] <= chance <= cell["high"]


def near_chance(cell: dict, chance: float) -> bool:
    """The control pools 20 random golds: its mean lies within a few points of chance, while its
    narrow interval, like any 95 % interval, misses chance now and then."""
    return abs(cell["score"] - chance) < 6.0


@pytest.fixture(scope="module")
def leaking():
    rng = np.random.default_rng(0)
    audit = ShortcutAudit()
    for i in range(30):
        audit.add(unit(i, rng, leak=LEAK))
    return audit


def test_a_planted_band_edge_residue_is_found_and_named(leaking):
    result = leaking.result("published")
    for task in ("localization_S2", "localization_S3", "localization", "discrimination", "detection"):
        assert result[task]["all"]["low"] > result[task]["chance"], task
    warnings = leaking.warnings("main")
    assert len(warnings) == len(TASKS)
    assert all("strongest family: band edge (" in line and "above chance alone" in line for line in warnings), warnings
    table = leaking.table()
    assert "| band edge | " in table and "| localization, S3 | 20.0 % | " in table


def test_the_random_gold_control_stays_at_chance(leaking):
    for task, r in leaking.result("published").items():
        assert near_chance(r["control"], r["chance"]), (task, r["control"])


def test_clips_that_differ_in_the_voice_only_score_chance_and_raise_no_warning():
    rng = np.random.default_rng(1)
    audit = ShortcutAudit()
    for i in range(30):
        audit.add(unit(i, rng, raw=True))
    published, raw = audit.result("published"), audit.result("raw")
    for task, r in published.items():
        assert contains_chance(r["all"], r["chance"]) and near_chance(r["control"], r["chance"]), task
    assert audit.warnings() == [] and "| family alone (published)" not in audit.table()
    assert raw["discrimination"]["all"]["score"] == 100.0  # raw: the conversions are 6 dB louder
    assert raw["localization_S3"]["all"]["low"] > 90.0


def test_the_independent_model_finds_the_same_residue(leaking):
    boosting = leaking.with_model(
        "boosting", families=False, tasks=("localization_S3", "discrimination"), control_draws=5
    )
    assert list(boosting.result("published")) == ["localization_S3", "discrimination"]
    for task in ("localization_S3", "discrimination"):
        r = boosting.result("published")[task]
        assert r["all"]["low"] > r["chance"] and abs(r["control"]["score"] - r["chance"]) < 12.0, task  # 5 draws
    with pytest.raises(ValueError, match="unknown shortcut-audit model 'forest'"):
        ShortcutAudit(model="forest")
    with pytest.raises(ValueError, match=r"unknown shortcut-audit tasks \['speaker'\]"):
        ShortcutAudit(tasks=("speaker",))


def test_every_family_is_listed_with_its_features():
    assert list(FAMILIES) == [
        "band edge",
        "spectrum",
        "compressibility",
        "activity",
        "quantisation",
        "clicks",
        "noise floor",
        "level",
        "duration",
        "DC",
    ]
    assert "edge_drop_6.4_khz_db" in FAMILIES["band edge"] and "flac_bytes_per_second" in FAMILIES["compressibility"]


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
        audit.add(
            SimpleNamespace(
                converted_turn=k,
                raw_targets=turns,
                raw_converted=conversions,
                targets=turns,
                converted=conversions,
                segment=SimpleNamespace(source="s", dialogue_id=str(k), target_gender="female"),
                s2=SimpleNamespace(gender="male"),
                s3=SimpleNamespace(gender="female"),
            )
        )
    rates = audit.artifacts.result("published")
    assert [rates[s]["impulse_pct"] for s in ("S1", "S2", "S3")] == [0.0, 100.0, 0.0]
    assert [rates[s]["zero_run_pct"] for s in ("S1", "S2", "S3")] == [0.0, 100.0, 100.0]
    assert rates["S1"]["clips"] == 3 and rates["S1"]["hnr_db_female"] > 25.0 and np.isnan(rates["S1"]["hnr_db_male"])
    assert np.isnan(rates["S2"]["hnr_db_female"])  # S2 is heard as the other gender
    assert "| published | S2 | 3 | 100.0 % | - | 100.0 % | nan / " in audit.artifacts.table()


def test_the_paired_difference_finds_the_planted_residue_against_the_same_dialogues_without_it(leaking):
    rng = np.random.default_rng(2)
    clean = ShortcutAudit()
    for i in range(30):  # the leaking fixture's dialogues (two units each), no residue
        clean.add(unit(i, rng))
    difference = leaking.difference(clean)
    for task in TASKS:
        d, a, b = difference[task], leaking.result("published")[task]["all"], clean.result("published")[task]["all"]
        assert d["score"] == pytest.approx(a["score"] - b["score"], abs=0.11), task  # each side rounded to 0.1
        assert d["low"] > 0 and d["low"] <= d["score"] <= d["high"], (task, d)
    assert all(
        d == {"score": 0.0, "low": 0.0, "high": 0.0} for d in clean.difference(clean).values()
    )  # paired: the same draws


def test_the_detection_control_shuffles_the_labels_within_each_unit():
    """300 units of three detection instances (S1, S2, S3: truth 0, 1, 1). A random gold that keeps
    each unit's labels keeps one 0 and two 1 in every unit, and puts the 0 on each of the three
    about a third of the time (100 expected; 60..140 is over six standard deviations); the rows
    stay in place."""
    instances = [(np.array([[float(3 * u + i)]]), int(i != 0)) for u in range(300) for i in range(3)]
    control = permuted("detection", instances, np.random.default_rng(0))
    assert [rows for rows, _ in control] == [rows for rows, _ in instances]
    units = np.array([truth for _, truth in control]).reshape(-1, 3)
    assert all(sorted(unit) == [0, 1, 1] for unit in units)
    where_the_0_lands = np.bincount(np.argmin(units, axis=1), minlength=3)
    assert all(60 <= n <= 140 for n in where_the_0_lands), where_the_0_lands


def test_the_paired_difference_by_hand():
    """Ten dialogues of two instances: one side right on all, the other on the first instance of
    each: 100 against 50 points, and the same 50 points in every bootstrap draw (each dialogue
    holds one right and one wrong instance); the sides swapped, the sign too; two equal sides whose
    dialogues differ: 0 in every draw, since both are resampled by the same draws."""
    groups = np.repeat([f"d{i}" for i in range(10)], 2)
    truth = np.zeros(20, dtype=int)
    right, half = (np.ones(20), truth), (np.tile([1.0, 0.0], 10), truth)
    assert paired_difference("localization_S3", (*right, groups), (*half, groups)) == {
        "score": 50.0,
        "low": 50.0,
        "high": 50.0,
    }
    assert paired_difference("localization_S3", (*half, groups), (*right, groups)) == {
        "score": -50.0,
        "low": -50.0,
        "high": -50.0,
    }
    assert score_cell("localization_S3", *half, groups) == {"score": 50.0, "low": 50.0, "high": 50.0}
    mixed = (
        np.random.default_rng(3).integers(0, 2, 20).astype(float),
        truth,
    )  # dialogues that differ: unpaired draws would spread
    assert paired_difference("localization_S3", (*mixed, groups), (*mixed, groups)) == {
        "score": 0.0,
        "low": 0.0,
        "high": 0.0,
    }
    with pytest.raises(ValueError, match="the same dialogues on both sides"):
        paired_difference("localization_S3", (*right, groups), (right[0][:18], truth[:18], groups[:18]))


def test_a_cells_interval_is_the_95_percent_interval_of_the_dialogue_bootstrap():
    """100 dialogues of one instance each, half right: resampling dialogues draws the score from
    Binomial(100, 0.5) / 100, whose central 95 % runs from 40 to 60 (a 90 % interval: 42 to 58).
    A thousand draws land within a point of those quantiles."""
    from scipy.stats import binom

    groups = np.array([f"d{i:03d}" for i in range(100)])
    cell = score_cell("localization_S3", np.tile([1.0, 0.0], 50), np.zeros(100, dtype=int), groups)
    low, high = binom.ppf([0.025, 0.975], 100, 0.5)  # 40, 60
    assert cell["score"] == 50.0
    assert abs(cell["low"] - low) <= 1 and abs(cell["high"] - high) <= 1, (cell, low, high)


def test_the_features_alone_give_the_same_cells_and_count_no_artefact():
    """``add(unit, artifacts=False)`` (the bench's audits): the same task tables and cells as a full
    ``add``, and no clip in the artefact counts."""
    full, features_only = ShortcutAudit(), ShortcutAudit()
    for i in range(10):
        rng = np.random.default_rng(i)
        u = unit(i, rng, leak=LEAK)
        full.add(u)
        features_only.add(u, artifacts=False)
    assert features_only.scores() == full.scores()
    assert full.artifacts.result("published")["S2"]["clips"] == 10
    assert all(
        r["clips"] == 0 and np.isnan(r["hnr_db_female"]) for r in features_only.artifacts.result("published").values()
    )


@pytest.fixture(scope="module")
def two_backends():
    """Half the dialogues converted by a leaking backend, half by a clean one."""
    rng = np.random.default_rng(3)
    audit = ShortcutAudit(families=False, tasks=("localization_S3", "discrimination"))
    for i in range(40):
        backend = "leaky" if (i // 2) % 2 else "clean"  # per dialogue (two units each)
        audit.add(
            SimpleNamespace(**vars(unit(i, rng, leak=LEAK if backend == "leaky" else 0.0)), vc_model=backend),
            artifacts=False,
        )
    return audit


def test_a_residue_of_one_backend_is_traced_to_it(two_backends):
    """The cell and its warning split by backend put the residue on the leaking backend's units
    only, and the split is the same fit's (the whole cell is the instance-weighted mean of the
    backends' cells)."""
    audit = two_backends
    for task in audit.tasks:
        whole, split = audit.result("published")[task], audit.by_backend(task)
        assert list(split) == ["clean", "leaky"], split
        assert split["leaky"]["low"] > whole["chance"] and contains_chance(split["clean"], whole["chance"]), (
            task,
            split,
        )
        assert whole["all"]["score"] == pytest.approx(
            (split["clean"]["score"] + split["leaky"]["score"]) / 2, abs=0.11
        )
    warnings = audit.warnings("4vc")
    assert warnings and all("; by backend: clean " in line and ", leaky " in line for line in warnings), warnings
    assert (
        "| backend (published, all features) | localization, S3 | discrimination (pick the original) |"
        in audit.table()
    )
    assert "| leaky | " in audit.table()


def test_one_backend_gives_no_split(leaking):
    assert all(leaking.by_backend(task) == {} for task in TASKS)
    assert not any("by backend" in line for line in leaking.warnings()) and "| backend (" not in leaking.table()


def test_the_discrimination_readings_fit_each_part_of_the_candidates_rows():
    """Each reading is the cross-validated cell of the rows' own block of columns, sliced here by
    hand from ``task_tables`` (the candidate and its deviation from the context: the first two
    copies of the features; its deviation from the candidates' mean: the third)."""
    from speakersleuth.builder_scripts.audit_features import feature_vector
    from speakersleuth.builder_scripts.shortcut_fits import cross_validated
    from speakersleuth.builder_scripts.shortcuts import READINGS, _columns, task_tables

    n = len(FEATURES)
    assert _columns("discrimination", FEATURES, None, READINGS["against the context"]).tolist() == list(range(2 * n))
    assert _columns("discrimination", FEATURES, None, READINGS["among the candidates"]).tolist() == list(
        range(2 * n, 3 * n)
    )
    first = FAMILIES["band edge"]
    assert _columns("discrimination", FEATURES, first, (2,)).tolist() == [2 * n + FEATURES.index(f) for f in first]
    rng = np.random.default_rng(4)
    audit, instances, groups = ShortcutAudit(tasks=("discrimination",)), [], []
    for i in range(20):
        u = unit(i, rng, leak=LEAK / 3)
        audit.add(u, artifacts=False)
        turns = np.stack([feature_vector(c) for c in u.targets])
        converted = {s: feature_vector(u.converted[s]) for s in ("S2", "S3")}
        instances += task_tables(turns, u.converted_turn - 1, converted)["discrimination"]
        groups.append(f"synthetic/{u.segment.dialogue_id}")
    readings = audit.readings()
    for name, block in (("against the context", slice(0, 2 * n)), ("among the candidates", slice(2 * n, 3 * n))):
        credits = cross_validated(
            "discrimination", [(rows[:, block], t) for rows, t in instances], np.array(groups), "logistic"
        )
        assert readings[name] == score_cell("discrimination", credits, np.zeros(credits.size), np.array(groups)), name
    assert readings["against the context"] != readings["among the candidates"]
    assert all(d == {"score": 0.0, "low": 0.0, "high": 0.0} for d in audit.readings_difference(audit).values())
    clean, rng = ShortcutAudit(tasks=("discrimination",)), np.random.default_rng(5)
    for i in range(20):  # the same dialogues, no residue
        clean.add(unit(i, rng), artifacts=False)
    for name, d in audit.readings_difference(clean).items():
        assert d["score"] == pytest.approx(readings[name]["score"] - clean.readings()[name]["score"], abs=0.11), name
    assert ShortcutAudit(tasks=("detection",)).readings() == {}


def test_a_discrimination_above_chance_names_its_readings(leaking):
    from speakersleuth.builder_scripts.shortcuts import cell_text

    readings = leaking.readings()
    (line,) = [w for w in leaking.warnings() if "discrimination" in w]
    assert line.endswith(
        f"; read against the context {cell_text(readings['against the context'])}, "
        f"among the candidates {cell_text(readings['among the candidates'])}"
    ), line
    assert not any("; read " in w for w in leaking.warnings() if "discrimination" not in w)
    table = leaking.table()
    assert f"| among the candidates | {cell_text(readings['among the candidates'])} |" in table.splitlines()
    assert f"| against the context | {cell_text(readings['against the context'])} |" in table.splitlines()


def test_the_discrimination_rows_are_the_candidates_against_the_context_and_each_other():
    """Rows by hand: the candidates (turn k, S2, S3), their deviation from the other turns' median,
    their deviation from the three candidates' mean; the original first."""
    from speakersleuth.builder_scripts.shortcuts import task_tables

    rng = np.random.default_rng(7)
    turns, s2, s3 = rng.normal(size=(5, 4)), rng.normal(size=4), rng.normal(size=4)
    ((rows, truth),) = task_tables(turns, 2, {"S2": s2, "S3": s3})["discrimination"]
    candidates = np.array([turns[2], s2, s3])
    context = np.median(turns[[0, 1, 3, 4]], axis=0)
    expected = np.hstack([candidates, candidates - context, candidates - candidates.mean(axis=0)])
    assert truth == 0 and np.allclose(rows, expected)


def test_a_split_needs_two_named_backends():
    rng = np.random.default_rng(8)
    units = [unit(i, rng, leak=LEAK) for i in range(20)]
    for named in (["world"] * 20, ["world" if i % 4 else None for i in range(20)]):
        audit = ShortcutAudit(families=False, tasks=("discrimination",))
        for u, backend in zip(units, named):
            audit.add(SimpleNamespace(**vars(u), vc_model=backend), artifacts=False)
        assert audit.by_backend("discrimination") == {} and "by backend" not in " ".join(audit.warnings())
    audit = ShortcutAudit(families=False, tasks=("discrimination",))
    for i, u in enumerate(units):  # two named backends and units of none: the split names the two
        audit.add(
            SimpleNamespace(**vars(u), vc_model=[None, "praat", "world", "world"][(i // 2) % 4]), artifacts=False
        )
    assert list(audit.by_backend("discrimination")) == ["praat", "world"]


def test_the_card_shows_each_backends_cells_and_the_readings_only_for_discrimination(two_backends):
    from speakersleuth.builder_scripts.shortcuts import cell_text

    audit = two_backends
    located = audit.with_model("logistic", families=False, tasks=("localization_S3",))
    rows = audit.table().splitlines()
    for backend in ("clean", "leaky"):
        cells = [cell_text(audit.by_backend(t)[backend]) for t in audit.tasks]
        assert f"| {backend} | {cells[0]} | {cells[1]} |" in rows
        assert all(f"{backend} {c}" in w for w, c in zip(audit.warnings(), cells))
    assert located.result("published")["localization_S3"]["all"]["low"] > 20.0
    assert "discrimination fitted on" not in located.table() and located.readings() == {}
    assert located.readings_difference(audit) == {}
