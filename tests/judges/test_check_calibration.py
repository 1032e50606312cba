"""Where the check's τ comes from (``judges.check.calibration``, ``.make_calibration``): the file
shipped with the package is what its own rule picks from its own figures; ``make_calibration`` on
a small build pools the variants' validation sweeps as the sweep CSVs it writes say it should; the
settings resolve from what is given and the file."""

from __future__ import annotations

import csv
import hashlib
import random
import re

import numpy as np
import pytest

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speech.encoders as encoders
from speakersleuth.judges.check import load_calibration, resolve_settings
from speakersleuth.judges.check import make_calibration as mk
from speakersleuth.judges.check.calibration import RECALIBRATION_GRID
from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS
from speakersleuth.judges.names import METHODS
from speakersleuth.judges.sweep import THRESHOLDS
from speakersleuth.speech.encoders import offline_encoders
from tests.support.synthetic import build_synthetic_dataset, dialogue_records


def test_the_shipped_file_follows_its_own_rule():
    calibration = load_calibration()
    data = calibration.data
    judges = {(j["encoder"], j["method"]): j for j in data["judges"]}
    assert set(judges) == {(e, m) for e in offline_encoders() for m in METHODS}
    built = [j for j in data["judges"] if "calibrated_on" not in j]
    assert {j["method"] for j in built} == {"reference"}  # fitted on the demo build alone
    source = data["source"]
    assert source["variants"] == ["main", "4vc", "10turn"] and "validation" in data["selection"]
    for entry in data["judges"]:  # every judge has the build's figures, at its own τ
        assert entry["threshold"] in THRESHOLDS and entry.get("calibrated_on") in (None, "labelled and validation")
        per_variant = [entry["validation"]["per_variant"][v]["det_bal_acc"] for v in source["variants"]]
        assert entry["validation"]["det_bal_acc"] == pytest.approx(np.mean(per_variant), abs=0.01)
        at_tau = entry["build_figures"][f"{entry['threshold']:g}"]
        assert (entry["validation"], entry["test"]) == (at_tau["validation"], at_tau["test"])
        assert 50 <= entry["validation"]["auroc"] <= 100  # the tie-break, threshold-free
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]) and source["command"].startswith(
        "python -m speakersleuth.judges.check.make_calibration --dataset "
    )
    # refitted on speech we did not make: every judge but reference has its figures on every source
    sources = data["labelled_sources"]
    assert set(sources) == {"real", "espeak", "dectalk"}
    assert data["labelled_command"].startswith("python -m speakersleuth.judges.check.calibrate_labelled ")
    for entry in data["judges"]:
        assert set(entry.get("labelled", {})) == (set() if entry["method"] == "reference" else set(sources))
        for f in entry.get("labelled", {}).values():  # the figures agree with each other, by their definitions
            assert f["bal_acc"] == pytest.approx((f["planted_found"] + 100 - f["false_flags"]) / 2, abs=0.02)
            assert f["only_planted"] <= f["planted_found"] and f["planted_turns"] > 0 and f["clean_turns"] > 0
    core = judges[(data["default"]["encoder"], "core")]
    assert core["calibrated_on"] == "labelled and validation" and core["threshold"] in RECALIBRATION_GRID
    assert data["default"] == {"encoder": "eres2net", "method": "core", "threshold": core["threshold"]}
    assert "--default-method core" in data["labelled_command"]


def test_settings_resolve_from_what_is_given_and_the_file():
    calibration = load_calibration()
    default = resolve_settings()
    assert (default.encoder, default.method, default.threshold) == tuple(calibration.default.values())
    assert default.source.startswith("calibrated on labelled dialogues of speech we did not make (real, espeak")
    chosen = resolve_settings("dvector")  # the default's method, at its τ under that encoder
    assert (chosen.method, chosen.threshold) == ("core", calibration.entry("dvector", "core")["threshold"])
    assert chosen.reference_threshold == calibration.entry("dvector", "reference")["threshold"]
    pairwise = resolve_settings("eres2net", "pairwise")
    assert pairwise.source.startswith("calibrated on labelled dialogues of speech we did not make (real, espeak")
    assert "and the benchmark's validation split" in pairwise.source
    reference = resolve_settings("eres2net", "reference")
    assert reference.source.startswith("calibrated on the validation split of the SpeakerSleuth demo build")
    given = resolve_settings("campplus", "centroid", 0.42)
    assert (given.threshold, given.source) == (0.42, "given (--threshold)")
    folder = resolve_settings("ecapa:/models/ecapa")
    assert (folder.method, folder.threshold, folder.reference_threshold) == ("centroid", 0.3, 0.4)
    with pytest.raises(ValueError, match="unknown method 'median'"):
        resolve_settings(method="median")


@pytest.fixture(scope="module")
def small_build(tmp_path_factory):
    """main and 4vc, 2 test dialogues each and 3 validation dialogues each."""
    root = build_synthetic_dataset(
        tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=2, variants=("main", "4vc")
    )
    for variant in ("main", "4vc"):
        made = [dialogue_records(variant, 30 + i, random.Random(i)) for i in range(3)]
        for task in ("detection", "localization"):
            with ssd.DatasetWriter(root, ssd.config_name(task, variant), split="validation") as writer:
                writer.write_all(r for recs, _ in made for r in recs)
    return root


def test_make_calibration_pools_the_variants_validation_sweeps(small_build, tmp_path, campplus, monkeypatch):
    monkeypatch.setattr(mk, "offline_encoders", lambda: ["campplus"])
    monkeypatch.setattr(encoders, "get_encoder", lambda spec, device="cpu": campplus)
    data = mk.make_calibration(small_build, sweep_out=tmp_path, progress=False, command="python -m x")
    assert data["source"]["variants"] == ["main", "4vc"] and data["source"]["validation_instances"] == {
        "main": 9,
        "4vc": 9,
    }
    shards = sorted(small_build.rglob("*.parquet"))
    assert data["source"]["shards_sha256"] == {
        p.relative_to(small_build).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in shards
    }
    rows = [r for v in ("main", "4vc") for r in csv.DictReader((tmp_path / v / "sweep.csv").open())]
    for method in METHODS:  # τ: the best mean over the variants, by hand from the CSVs
        judge = f"{method}-campplus"
        mean = {
            t: np.mean(
                [
                    float(r["det_bal_acc"])
                    for r in rows
                    if (r["judge"], r["split"], float(r["threshold"])) == (judge, "validation", t)
                ]
            )
            for t in THRESHOLDS
        }
        top = max(mean.values())
        tied = [t for t, m in mean.items() if abs(m - top) < 1e-9]
        tau = min(tied, key=lambda t: (abs(t - DEFAULT_THRESHOLDS[method]), t))
        entry = next(j for j in data["judges"] if j["judge"] == judge)
        assert entry["threshold"] == tau and entry["validation"]["det_bal_acc"] == pytest.approx(top, abs=0.01)
        test_mean = np.mean(
            [
                float(r["det_bal_acc"])
                for r in rows
                if (r["judge"], r["split"], float(r["threshold"])) == (judge, "test", tau)
            ]
        )
        assert entry["test"]["det_bal_acc"] == pytest.approx(test_mean, abs=0.01)
    best = max(data["judges"], key=lambda j: (j["validation"]["det_bal_acc"], j["validation"]["auroc"], j["judge"]))
    assert data["default"]["method"] == best["method"] and data["source"]["command"] == "python -m x"


def test_labelled_figures_and_the_pooled_tau_by_hand():
    """Two dialogues: d1's speaker A has its third turn planted, d2 is clean; the figures at τ
    0.5 and 0.35 and the pooled τ, counted here from the scores."""
    from speakersleuth.judges.check.calibrate_labelled import ScoredTurns, figures_at, pooled_threshold

    scores = np.array([0.8, 0.45, 0.2, 0.7, 0.9, 0.6, 0.4, 0.7])
    planted = np.array([False, False, True, False, False, False, False, False])
    speakers = [("d1", "A")] * 3 + [("d1", "B")] + [("d2", "A")] * 2 + [("d2", "B")] * 2
    scored = ScoredTurns("core", scores, planted, speakers)
    at_half = figures_at(scored, 0.5)  # flagged: 0.45 (d1 A, clean), 0.2 (planted), 0.4 (d2 B, clean)
    assert (at_half["planted_found"], at_half["only_planted"]) == (100.0, 0.0)
    assert at_half["false_flags"] == pytest.approx(100 * 2 / 7, abs=0.01)
    assert at_half["dialogues_right"] == 0.0 and at_half["bal_acc"] == pytest.approx(50 * (1 + 5 / 7), abs=0.01)
    at_low = figures_at(scored, 0.35)  # flagged: the planted turn alone
    assert (at_low["only_planted"], at_low["false_flags"], at_low["dialogues_right"]) == (100.0, 0.0, 100.0)
    curves = [{0.3: 50.0, 0.35: 100.0, 0.5: 0.0}, {0.3: 100.0, 0.35: 90.0, 0.5: 100.0, 0.6: 100.0}]
    assert pooled_threshold(curves, "core") == 0.35  # means 75, 95, 50 on the common grid


def test_a_refitted_tau_carries_the_builds_figures_at_that_tau(monkeypatch):
    """A judge whose τ the labelled sources move (0.5 -> 0.4) records the build's validation and
    test figures at 0.4, not those of the τ it had."""
    from speakersleuth.judges.check import calibrate_labelled as cl

    def build_figures(t: float) -> dict:
        return {"validation": {"det_bal_acc": 80.0}, "test": {"det_bal_acc": round(100 * t, 2), "per_variant": {}}}

    entry = {"judge": "pairwise-campplus", "encoder": "campplus", "method": "pairwise", "threshold": 0.5}
    entry |= {**build_figures(0.5), "build_figures": {f"{t:g}": build_figures(t) for t in THRESHOLDS}}
    calibration = {"default": {"encoder": "campplus", "method": "pairwise", "threshold": 0.5}, "judges": [entry]}
    planted = np.array([True, False, False, False])  # the planted turn 0.2, the clean ones 0.4 to 0.9
    turns = cl.ScoredTurns("pairwise", np.array([0.2, 0.4, 0.7, 0.9]), planted, [("d1", "A")] * 4)
    monkeypatch.setattr(cl, "score_source", lambda dialogues, encoder, method, cache: turns)
    refitted = cl.refit(calibration, {"real": []}, {"campplus": None}, None)
    pairwise = next(j for j in refitted["judges"] if j["judge"] == "pairwise-campplus")
    assert pairwise["threshold"] == 0.4 and pairwise["calibrated_on"] == "labelled and validation"
    assert pairwise["test"]["det_bal_acc"] == 40.0 and pairwise["validation"] == {"det_bal_acc": 80.0}
