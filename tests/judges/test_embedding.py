"""Embedding judges (paper appendix B.2), the content-keyed cache and the threshold sweep, end to end
on a small synthetic folder with the Resemblyzer encoder that ships in its wheel."""

from __future__ import annotations

import hashlib
import io
import json
import random

import numpy as np
import pytest
import soundfile as sf
import torch

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges import embedding as emb
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.sweep import THRESHOLDS, calibrate, pick_threshold, run_sweep, threshold_metrics
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from speakersleuth.speech.encoders import get_encoder
from tests.support.synthetic import build_synthetic_dataset, dialogue_records

TASKS = ["detection", "localization", "discrimination"]


class CountingEncoder:
    """Delegates to a real encoder and records every waveform it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.name, self.waves = inner, inner.name, []

    def encode(self, waveforms, batch_size=16):
        self.waves += [np.asarray(w).tobytes() for w in waveforms]
        return self.inner.encode(waveforms, batch_size=batch_size)


@pytest.fixture(scope="module")
def encoder():
    """The real Resemblyzer encoder; one torch thread, which is faster for its small LSTM on a
    busy 2-core machine (restored afterwards)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield get_encoder("resemblyzer")
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Main variant, 3 dialogues in test and 3 other dialogues in a validation split."""
    root = build_synthetic_dataset(tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=3, variants=("main",))
    rng = random.Random(7)
    made = [dialogue_records("main", 10 + i, rng) for i in range(3)]
    for task in ("detection", "localization"):
        with ssd.DatasetWriter(root, ssd.config_name(task, "main"), split="validation") as writer:
            writer.write_all(r for recs, _ in made for r in recs)
    return root


@pytest.fixture(scope="module")
def counted(encoder, folder):
    """One embedding pass over all tasks of the test split with a counting encoder."""
    counting = CountingEncoder(encoder)
    cache = EmbeddingCache(counting, batch_size=8)
    embeddings = emb.embed_variant(folder, "main", TASKS, cache, progress=False)
    first_pass = {
        "encoded": cache.encoded,
        "hits": cache.hits,
        "waves": list(counting.waves),
        "unique": cache.unique_clips,
    }
    return counting, cache, embeddings, first_pass


def _decode(value) -> np.ndarray:
    wave, sr = sf.read(io.BytesIO(value["bytes"]), dtype="float32")
    assert sr == ssd.SAMPLING_RATE
    return wave


def _cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ------------------------------------------------------------------------------ formulas


def test_formulas_on_hand_made_embeddings():
    e1, e2 = np.eye(2)
    turns = np.stack([e1, e1, e1, e2])
    np.testing.assert_allclose(emb.turn_scores("pairwise", turns), [2 / 3, 2 / 3, 2 / 3, 0.0])
    np.testing.assert_allclose(
        emb.turn_scores("centroid", turns), [1 - 3 / 10**0.5, 1 - 3 / 10**0.5, 1 - 3 / 10**0.5, 1 - 1 / 10**0.5]
    )
    np.testing.assert_allclose(emb.turn_scores("reference", turns, e1), [1, 1, 1, 0])
    np.testing.assert_allclose(emb.turn_scores("core", turns), [1, 1, 1, 0])  # core: turns 1-3
    for method in emb.METHODS:
        scores = emb.turn_scores(method, turns, e1)
        assert emb.flagged_turns(method, scores, emb.DEFAULT_THRESHOLDS[method]) == [4]
    context, candidates = np.stack([e1, e1, 0.8 * e1 + 0.6 * e2]), np.stack([e2, e1, 0.6 * e1 + 0.8 * e2])
    np.testing.assert_allclose(emb.candidate_scores("pairwise", context, candidates), [0.2, 14 / 15, 0.72])
    np.testing.assert_allclose(emb.candidate_scores("core", context, candidates), [0.0, 1.0, 0.6])  # core: 1, 2
    for method in emb.METHODS:
        s = emb.candidate_scores(method, context, candidates, e1)
        assert emb.ranking(method, ["A", "B", "C"], s) == ["B", "C", "A"]


def test_one_slipped_turn_does_not_drag_the_others_under_core():
    """Five turns, four of one voice at cosine 0.6 to each other and one at 0 to all: the pairwise
    mean of a good turn is (3 x 0.6 + 0) / 4 = 0.45, its core score (the three others of the
    core of three) 0.6; the slipped turn scores 0 under both."""
    gram = np.full((5, 5), 0.6)
    gram[4, :] = gram[:, 4] = 0.0
    np.fill_diagonal(gram, 1.0)
    turns = np.linalg.cholesky(gram)  # rows with exactly these cosines
    np.testing.assert_allclose(emb.turn_scores("pairwise", turns), [0.45] * 4 + [0.0], atol=1e-12)
    np.testing.assert_allclose(emb.turn_scores("core", turns), [0.6, 0.6, 0.6, 0.6, 0.0], atol=1e-12)
    assert emb.flagged_turns("pairwise", emb.turn_scores("pairwise", turns), 0.5) == [1, 2, 3, 4, 5]
    assert emb.flagged_turns("core", emb.turn_scores("core", turns), 0.5) == [5]


def test_pairwise_and_centroid_rank_candidates_alike():
    """Mean cosine to unit context vectors is |m| cos(x, m): both methods order candidates alike
    (why the paper's pairwise and centroid discrimination rows coincide)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        context, candidates = rng.normal(size=(4, 16)), rng.normal(size=(3, 16))
        pairwise = emb.ranking("pairwise", "ABC", emb.candidate_scores("pairwise", context, candidates))
        centroid = emb.ranking("centroid", "ABC", emb.candidate_scores("centroid", context, candidates))
        assert pairwise == centroid


def test_errors_name_the_problem(folder, encoder):
    with pytest.raises(ValueError, match="unknown embedding method 'median'"):
        emb.turn_scores("median", np.eye(3))
    with pytest.raises(ValueError, match="reference method needs the reference"):
        emb.turn_scores("reference", np.eye(3))
    with pytest.raises(ValueError, match="at least 2 turns"):
        emb.turn_scores("pairwise", np.ones((1, 3)))
    with pytest.raises(ValueError, match="zero or non-finite norm"):
        emb.turn_scores("centroid", np.zeros((3, 4)))
    with pytest.raises(FileNotFoundError, match=r"10turn/detection: no test shards"):
        emb.embed_variant(folder, "10turn", ["detection"], EmbeddingCache(encoder), progress=False)
    with pytest.raises(ValueError, match="limit must be >= 1, got 0"):
        emb.embed_variant(folder, "main", ["detection"], EmbeddingCache(encoder), limit=0, progress=False)
    with pytest.raises(ValueError, match="unknown or no tasks"):
        emb.parse_tasks("detection,ranking")


def test_judges_read_no_gold_column():
    gold = {
        "label",
        "inconsistent_turns",
        "scenario",
        "answer",
        "gold_ranking",
        "candidate_scenarios",
        "converted_turn",
        "substitute_speaker",
        "substitute_gender",
        "substitute_similarity",
        "candidate_substitute_speakers",
        "candidate_similarities",
        "vc_model",
    }
    assert not gold & set(emb.TURN_COLUMNS + emb.DISCRIMINATION_COLUMNS)


# ------------------------------------------------------------------- end to end on audio


@pytest.fixture(scope="module")
def direct(folder, encoder):
    """Embeddings computed without the judge code for the instances of the first dialogue: every
    clip slot of its rows decoded with soundfile and embedded in one encoder call (no
    de-duplication)."""
    layout = {
        "detection": ["target_audio", "reference_audio"],
        "discrimination": ["context_audio", "candidates", "reference_audio"],
    }
    rows, waves, spans = {}, [], {}
    for config, columns in layout.items():
        rows[config] = [r for r in ssd.read_rows(folder, config).to_pylist() if r["dialogue_id"] == "synthetic/0000"]
        for row in rows[config]:
            for column in columns:
                values = row[column] if isinstance(row[column], list) else [row[column]]
                spans[row["id"], column] = slice(len(waves), len(waves) + len(values))
                waves += [_decode(v) for v in values]
    vectors = encoder.encode(waves)
    return rows, {key: vectors[span] for key, span in spans.items()}


def _core_by_hand(e) -> list[int]:
    """The core of turns ``e`` from its definition: the floor(n/2) + 1 turns with the highest mean
    cosine to the other turns (ties: the earlier turn)."""
    n = len(e)
    if n == 1:
        return [0]
    agreement = [np.mean([_cos(e[i], e[j]) for j in range(n) if j != i]) for i in range(n)]
    return sorted(sorted(range(n), key=lambda i: (-agreement[i], i))[: n // 2 + 1])


def test_turn_scores_match_the_paper_formula(counted, direct):
    _, _, embeddings, _ = counted
    rows, vectors = direct
    for method in emb.METHODS:
        scores = dict(emb.score_variant(method, embeddings).turn["detection"])
        assert len(scores) == 9 and len(rows["detection"]) == 3
        for row in rows["detection"]:
            e, ref = vectors[row["id"], "target_audio"], vectors[row["id"], "reference_audio"][0]
            n = len(e)
            if method == "pairwise":
                expected = [np.mean([_cos(e[i], e[j]) for j in range(n) if j != i]) for i in range(n)]
            elif method == "centroid":
                expected = [1 - _cos(e[i], e.mean(axis=0)) for i in range(n)]
            elif method == "core":
                core = _core_by_hand(e)
                expected = [np.mean([_cos(e[i], e[j]) for j in core if j != i]) for i in range(n)]
            else:
                expected = [_cos(e[i], ref) for i in range(n)]
            np.testing.assert_allclose(scores[row["id"]], expected, atol=2e-5, err_msg=f"{method} {row['id']}")


def test_candidate_scores_match_the_paper_formula(counted, direct):
    _, _, embeddings, _ = counted
    rows, vectors = direct
    for method in emb.METHODS:
        scored = {rid: (labels, s) for rid, labels, s in emb.score_variant(method, embeddings).discrimination}
        for row in rows["discrimination"]:
            context, candidates = vectors[row["id"], "context_audio"], vectors[row["id"], "candidates"]
            ref = vectors[row["id"], "reference_audio"][0]
            if method == "pairwise":
                expected = [np.mean([_cos(x, c) for c in context]) for x in candidates]
            elif method == "centroid":
                expected = [1 - _cos(x, context.mean(axis=0)) for x in candidates]
            elif method == "core":
                expected = [np.mean([_cos(x, context[j]) for j in _core_by_hand(context)]) for x in candidates]
            else:
                expected = [_cos(x, ref) for x in candidates]
            labels, s = scored[row["id"]]
            assert labels == row["candidate_labels"]
            np.testing.assert_allclose(s, expected, atol=2e-5, err_msg=f"{method} {row['id']}")


@pytest.mark.parametrize("method", emb.METHODS)
def test_predictions_follow_from_scores_and_threshold(counted, method):
    _, _, embeddings, _ = counted
    scores = emb.score_variant(method, embeddings)
    all_turn_scores = np.concatenate([s for _, s in scores.turn["detection"]])
    # thresholds at and between actual score values, so flags flip between them
    for tau in [*np.quantile(all_turn_scores, [0.1, 0.5, 0.9]), 0.0, 1.0, emb.DEFAULT_THRESHOLDS[method]]:
        lines = emb.predictions(scores, float(tau))
        by_key = {(line["task"], line["id"]): line for line in lines}
        for rid, s in scores.turn["localization"]:
            flags = [i + 1 for i, v in enumerate(s) if (v < tau if method != "centroid" else v > tau)]
            assert by_key[("localization", rid)]["prediction"] == flags
            assert by_key[("detection", rid)]["prediction"] == ("inconsistent" if flags else "consistent")
            inconsistency = max(1 - v for v in s) if method != "centroid" else max(s)
            assert by_key[("detection", rid)]["score"] == pytest.approx(inconsistency, abs=1e-12)
            bound = (
                tau if method == "centroid" else 1 - tau
            )  # the score is the quantity thresholded (up to rounding at τ)
            assert (inconsistency > bound) == bool(flags) or abs(inconsistency - bound) < 1e-9
        for rid, labels, s in scores.discrimination:
            order = sorted(range(len(labels)), key=lambda i: s[i], reverse=method != "centroid")
            line = by_key[("discrimination", rid)]
            assert line["ranking"] == [labels[i] for i in order]
            assert line["prediction"] == labels[order[0]]


def test_each_unique_clip_is_encoded_once(folder, counted, tmp_path):
    counting, cache, _, first = counted
    unique, slots = set(), 0
    for config, columns in (
        ("detection", ["target_audio", "reference_audio"]),
        ("localization", ["target_audio", "reference_audio"]),
        ("discrimination", ["context_audio", "candidates", "reference_audio"]),
    ):
        for row in ssd.read_rows(folder, config, columns=columns).to_pylist():
            for column in columns:
                for value in row[column] if isinstance(row[column], list) else [row[column]]:
                    unique.add(hashlib.sha256(value["bytes"]).hexdigest())
                    slots += 1
    assert len(unique) == 24  # per dialogue: 5 original turns, 2 converted turns, 1 reference
    assert slots > 5 * len(unique)
    assert first["encoded"] == len(first["waves"]) == first["unique"] == len(unique)
    assert len(set(first["waves"])) == len(first["waves"])  # no waveform sent twice
    assert first["hits"] == slots - len(unique)
    # a second pass over the same cache encodes nothing; a disk cache serves a new cache object
    sent = len(counting.waves)
    emb.embed_variant(folder, "main", TASKS, cache, progress=False)
    assert len(counting.waves) == sent
    disk = EmbeddingCache(counting, tmp_path / "cache", batch_size=8)
    made = emb.embed_variant(folder, "main", ["discrimination"], disk, progress=False)
    assert disk.encoded == disk.unique_clips > 0
    again = EmbeddingCache(counting, tmp_path / "cache")
    read = emb.embed_variant(folder, "main", ["discrimination"], again, progress=False)
    assert again.encoded == 0 and again.disk_hits == again.unique_clips == disk.encoded
    for a, b in zip(made.instances["discrimination"], read.instances["discrimination"]):
        np.testing.assert_array_equal(a.candidates, b.candidates)


def test_judge_run_writes_a_submission_the_scorer_accepts(folder, counted, tmp_path):
    judge = emb.EmbeddingJudge("reference", threshold=0.55, cache=counted[1], progress=False)
    assert judge.name == "reference-resemblyzer"
    out = tmp_path / "preds.jsonl"
    summary = judge.run(folder, "main", "detection,localization,discrimination", out)
    assert summary["counts"] == {"detection": 9, "localization": 9, "discrimination": 3}
    assert summary["encoder_calls"] == 0 and summary["unique_clips"] == 24  # all from the shared cache
    gold = load_gold(folder, "main")
    scores = score_submission(parse_submission(out, gold), gold, n_bootstrap=0)
    assert scores["tasks"] == TASKS and scores["detection"]["coverage"] == 100.0
    assert scores["detection"]["scored"] == 9 and 0.0 <= scores["detection"]["auroc"] <= 100.0
    # the run at τ = 0.55 scores as the sweep's computation at τ = 0.55
    metrics = threshold_metrics(judge.score(folder, "main", ["detection", "localization"]), gold, 0.55)
    assert metrics == {
        "det_bal_acc": scores["detection"]["balanced_accuracy"],
        "loc_bal_f1": scores["localization"]["balanced_f1"],
    }
    limited = judge.run(folder, "main", ["detection"], tmp_path / "two.jsonl", limit=2)
    assert limited["counts"] == {"detection": 2}
    assert [json.loads(line)["id"] for line in (tmp_path / "two.jsonl").read_text().splitlines()] == [
        "main-synthetic-0000-S1",
        "main-synthetic-0000-S2",
    ]


# --------------------------------------------------------------------- sweep, calibration


def test_pick_threshold_prefers_best_then_closest_to_default():
    rows = [
        {"threshold": t, "det_bal_acc": v}
        for t, v in ((0.1, 60.0), (0.2, 70.0), (0.5, 70.0), (0.6, 70.0), (0.7, None))
    ]
    assert pick_threshold(rows, 0.4) == 0.5
    assert pick_threshold(rows, 0.3) == 0.2
    assert pick_threshold(rows, 0.35) == 0.2  # equidistant: the smaller τ
    with pytest.raises(ValueError, match="no detection balanced accuracy"):
        pick_threshold([{"threshold": 0.1, "det_bal_acc": None}], 0.4)


def test_sweep_writes_table_plot_and_calibration(folder, counted, tmp_path):
    counting, cache, _, _ = counted
    judges = ["pairwise-resemblyzer", "centroid-resemblyzer", "reference-resemblyzer"]
    result = run_sweep(folder, "main", judges, tmp_path, caches={"resemblyzer": cache}, progress=False)
    rows = result["rows"]
    assert {(r["split"], r["judge"]) for r in rows} == {(s, j) for s in ("test", "validation") for j in judges}
    test_rows = [r for r in rows if r["split"] == "test"]
    assert [r["threshold"] for r in test_rows[: len(THRESHOLDS)]] == list(THRESHOLDS)
    assert all(0 <= r["det_bal_acc"] <= 100 and 0 <= r["loc_bal_f1"] <= 100 for r in test_rows)
    assert all(r["loc_bal_f1"] is None for r in rows if r["split"] == "validation")  # calibration uses detection only
    csv_text = (tmp_path / "sweep.csv").read_text()
    assert csv_text.splitlines()[0] == "split,variant,judge,method,encoder,threshold,det_bal_acc,loc_bal_f1"
    assert len(csv_text.splitlines()) == 1 + len(rows)
    md = (tmp_path / "sweep.md").read_text()
    assert "## Detection Bal acc (%), test split" in md and "## Calibration on the validation split" in md
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the calibrated τ maximises validation detection Bal acc, and calibrate() agrees
    for judge in judges:
        method = judge.split("-")[0]
        val = [r for r in rows if r["split"] == "validation" and r["judge"] == judge]
        best = max(r["det_bal_acc"] for r in val)
        tau = result["calibration"][judge]["threshold"]
        assert next(r["det_bal_acc"] for r in val if r["threshold"] == tau) == best
        assert calibrate(method, cache, folder, "main", progress=False)["threshold"] == tau
    assert cache.unique_clips == 48  # test + validation, each clip encoded once
    assert len(set(counting.waves)) == cache.encoded


def test_embed_keyed_reports_progress_from_before_the_first_batch(encoder):
    """Five clips, one of them twice, one already cached, batches of two: the bar starts at 0 of
    the 3 to encode, moves per batch, and is not called when everything is cached."""
    rng = np.random.default_rng(0)
    waves = [rng.normal(0, 0.1, 16000).astype(np.float32) for _ in range(4)]
    cache = EmbeddingCache(CountingEncoder(encoder), batch_size=2)
    cache.embed_keyed(["w0"], lambda i: waves[0])
    calls = []
    cache.embed_keyed(["w0", "w1", "w2", "w1", "w3"], lambda i: waves[[0, 1, 2, 1, 3][i]], lambda *c: calls.append(c))
    assert calls == [(0, 3), (2, 3), (3, 3)]
    calls.clear()
    cache.embed_keyed(["w3", "w1"], lambda i: waves[[3, 1][i]], lambda *c: calls.append(c))
    assert calls == []
