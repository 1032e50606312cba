"""The Space's handlers without a server: submit/score/store/rate limit (with a hand-built OAuth
profile), display helpers and their escaping, the viewer's data path, seeding and config."""

from __future__ import annotations

import doctest
import io
import json
import math
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import pyarrow as pa
import pytest
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.run import PROGRESS_FILE
from speakersleuth.metrics.score import leaderboard_row, score_submission
from speakersleuth.metrics.submission import parse_submission
from speakersleuth.space import (
    baselines_status,
    bias_chart,
    disclosure,
    leaderboard_table,
    seed,
    submission_form,
    submit,
    text,
    viewer,
)
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.submission_form import FormError, clean_metadata
from speakersleuth.space.submitter import breakdown_frame, example_file
from tests.support.space_support import FORM, HEADLINE_COLUMNS, XSS, predictions


def profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile(
        {
            "name": username.title(),
            "preferred_username": username,
            "profile": f"https://huggingface.co/{username}",
            "picture": "",
        }
    )


def test_accepted_submission_is_scored_and_stored(make, gold):
    submitter = make()
    data = predictions(gold, 0b1011)
    result = submitter.submit(data, "main", FORM)
    assert result.status == "accepted", result
    expected = score_submission(parse_submission(data, gold), gold, n_bootstrap=submitter.n_bootstrap, seed=0)
    assert result.record.scores == expected
    assert submitter.store.predictions(result.record.id) == parse_submission(data, gold).canonical()
    assert result.record.submitter == "ip:127.0.0.1" and result.record.metadata.model_name == "judge A"
    frame = breakdown_frame(result.record.scores)
    row = leaderboard_row(expected)
    assert dict(zip(frame["metric"], frame["value"]))["Det Bal Acc"] == f"{row['det_bal_acc']:.1f}"
    assert "Loc Bal F1" in set(frame["metric"]) and "N@2" in set(frame["metric"])


def test_identical_file_is_recognised(make, gold):
    submitter = make()
    data = predictions(gold, 5)
    first = submitter.submit(data, "main", FORM)
    again = submitter.submit(data, "main", {**FORM, "model_name": "another name"})
    assert again.status == "duplicate" and again.record.id == first.record.id
    assert "judge A" in again.message and len(submitter.store.results()) == 1


def test_identical_files_racing_store_one_row(make, gold):
    submitter = make(concurrency=4)
    data = predictions(gold, 9)
    with ThreadPoolExecutor(6) as pool:
        statuses = sorted(pool.map(lambda _: submitter.submit(data, "main", FORM).status, range(6)))
    assert statuses == ["accepted"] + ["duplicate"] * 5 and len(submitter.store.results()) == 1


def test_invalid_file_lists_every_error_with_line_numbers(make, gold):
    submitter = make()
    good = predictions(gold).decode().splitlines()
    bad = [good[0], '{"task": "detection", "id": "nope", "prediction": "consistent"}', "{not json", good[0]]
    result = submitter.submit("\n".join(bad).encode(), "main", FORM)
    assert result.status == "invalid"
    assert [e.split(":")[0] for e in result.errors] == ["line 2", "line 3", "line 4"]
    assert submitter.store.results() == []


def test_form_problems_are_named_and_cost_no_quota(make, gold):
    submitter = make(rate_limit=1)
    result = submitter.submit(
        predictions(gold),
        "4vc",
        {**FORM, "model_name": " ", "link": "javascript:alert(1)", "model_type": "robot", "model_date": "June"},
    )
    assert result.status == "invalid"
    text = " | ".join(result.errors)
    for fragment in ("model name is required", "link must be", "model type must be", "model date", "variant must be"):
        assert fragment in text
    assert submitter.submit(None, "main", FORM).errors == ["choose a predictions file (.jsonl) to upload"]
    assert submitter.submit(predictions(gold), "main", FORM).status == "accepted"  # quota untouched


def test_rate_limit_per_oauth_user_and_local_identity(make, gold):
    submitter = make(rate_limit=2, rate_window_s=3600)
    alice, bob = profile("alice"), profile("bob")
    outcomes = [submitter.submit(predictions(gold, i), "main", FORM, alice).status for i in range(3)]
    assert outcomes == ["accepted", "accepted", "rate_limited"]
    # each identity under its own name: a name belongs to whoever used it first (space.names)
    assert submitter.submit(predictions(gold, 3), "main", {**FORM, "model_name": "judge B"}, bob).status == "accepted"
    assert (
        submitter.submit(predictions(gold, 4), "main", {**FORM, "model_name": "judge C"}).status == "accepted"
    )  # local identity
    submitters = {r.submitter for r in submitter.store.results()}
    assert submitters == {"hf:alice", "hf:bob", "ip:127.0.0.1"}


def test_only_accepted_submissions_count_and_the_refusal_says_when(make, gold):
    submitter = make(rate_limit=2, rate_window_s=3600)
    now = [1_000_000.0]
    submitter.clock = lambda: now[0]
    alice = profile("alice")
    assert submitter.submit(b"{bad", "main", FORM, alice).status == "invalid"
    assert submitter.submit(predictions(gold, 1), "main", FORM, alice).status == "accepted"
    assert submitter.submit(predictions(gold, 1), "main", FORM, alice).status == "duplicate"
    now[0] += 600
    assert submitter.submit(predictions(gold, 2), "main", FORM, alice).status == "accepted"
    now[0] += 60
    refused = submitter.submit(predictions(gold, 3), "main", FORM, alice)
    assert refused.status == "rate_limited", refused
    # the first accepted one (at 1,000,000 s) leaves the hour's window at 1,003,600 s, 49 minutes on
    assert "from 1970-01-12 14:46 UTC, in 49 minutes" in refused.message, refused.message
    now[0] = 1_000_000.0 + 3600 + 1
    assert submitter.submit(predictions(gold, 3), "main", FORM, alice).status == "accepted"


def test_on_spaces_a_login_is_required(make, gold):
    submitter = make(space_id="org/speakersleuth")
    assert submitter.submit(predictions(gold), "main", FORM, None).status == "signin"
    result = submitter.submit(predictions(gold), "main", FORM, profile("carol"))
    assert result.status == "accepted" and result.record.submitter == "hf:carol"


def test_unexpected_failures_leak_no_paths_or_traces(make, gold, monkeypatch, tmp_path):
    submitter = make()

    def explode(*args, **kwargs):
        raise RuntimeError(f"disk full at {tmp_path}/secret.db")

    monkeypatch.setattr(disclosure, "score_submission", explode)
    result = submitter.submit(predictions(gold), "main", FORM)
    assert result.status == "error" and "reference" in result.message
    shown = submit.result_html(result)
    assert str(tmp_path) not in shown and "Traceback" not in shown and "secret" not in shown
    assert submitter.store.results() == []


def test_size_and_line_caps(make, gold, tmp_path):
    data = predictions(gold)
    path = tmp_path / "upload.jsonl"
    path.write_bytes(data)
    too_big = make(max_bytes=len(data) - 1).submit(str(path), "main", FORM)
    assert too_big.status == "invalid" and str(tmp_path) not in " ".join(too_big.errors + [too_big.message])
    too_long = make(max_lines=3).submit(data, "main", FORM)
    assert too_long.status == "invalid" and "lines" in too_long.errors[0]


LONE_SURROGATE = "\ud800"  # what the JSON escape "\\ud800" decodes to: not text, and UTF-8 cannot carry it


def test_a_name_with_a_lone_surrogate_is_refused_and_costs_no_quota(make, gold):
    submitter = make(rate_limit=1)
    result = submitter.submit(predictions(gold), "main", {**FORM, "model_name": f"model-{LONE_SURROGATE}-x"})
    assert result.status == "invalid" and submitter.store.results() == []
    assert any("model name contains an unpaired surrogate" in e for e in result.errors), result.errors
    assert submitter.submit(predictions(gold), "main", FORM).status == "accepted"


def test_every_message_about_a_file_quoting_a_lone_surrogate_can_be_sent(make, gold):
    lines = predictions(gold).decode().splitlines()
    first = json.loads(lines[0])
    hostile = "\n".join([json.dumps({**first, "id": f"bad-{LONE_SURROGATE}"}), *lines[1:]]).encode()
    result = make().submit(hostile, "main", FORM)
    assert result.status == "invalid" and result.errors[0].startswith("line 1:"), result.errors
    for shown in (result.message, *result.errors, submit.result_html(result)):
        shown.encode("utf-8")  # Gradio sends UTF-8: this raised for the raw surrogate


def test_a_stored_name_with_a_lone_surrogate_still_draws(make, gold):
    """A store written before the form refused surrogates: its rows render for everyone."""
    import sqlite3

    submitter = make()
    assert submitter.submit(predictions(gold), "main", FORM).status == "accepted"
    escaped = json.dumps(
        {
            **{k: FORM[k] for k in ("model_name", "organisation", "model_type", "access", "link", "model_date")},
            "model_name": f"model-{LONE_SURROGATE}-x",
        }
    )
    with sqlite3.connect(submitter.store.path) as con:
        con.execute("UPDATE submissions SET metadata = ?", (escaped,))
    entries = disclosure.Disclosure().rows(submitter.store.results())
    frame, _ = leaderboard_table.leaderboard_frame(entries)
    assert frame.loc[0, "Model"] == "model-\\ud800-x"
    pa.Table.from_pandas(frame)  # what Gradio does with the table; raised UnicodeEncodeError
    json.dumps(bias_chart.bias_spec(entries, "main"))


@pytest.mark.parametrize(
    "name, accepted",
    [
        ("👩\u200d💻 judge", True),
        ("🏳\ufe0f\u200d🌈 model", True),
        ("👨🏽\u200d🚀 pilot", True),  # emoji joined by ZWJ
        ("judge\u200dA", False),
        ("\u200d👩", False),
        ("judge\u202eA", False),  # invisible joiner or bidi override in text
    ],
)
def test_emoji_sequences_are_names_but_invisible_characters_are_not(name, accepted):
    if accepted:
        assert clean_metadata(name).model_name == name
    else:
        with pytest.raises(FormError, match="control or invisible formatting characters"):
            clean_metadata(name)


def test_submitted_strings_are_escaped_in_every_view(make, gold):
    submitter = make()
    result = submitter.submit(predictions(gold), "main", {**FORM, "model_name": XSS, "organisation": XSS})
    html = submit.result_html(result)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    frame, datatypes = leaderboard_table.leaderboard_frame(disclosure.Disclosure().rows(submitter.store.results()))
    assert frame.loc[0, "Model"] == XSS
    assert datatypes[list(frame.columns).index("Model")] == "str"  # shown as text, not markdown/html
    assert all(d != "html" for d in datatypes)
    assert leaderboard_table.safe_link('https://a.org/x"><script>') == ""
    assert leaderboard_table.safe_link("javascript:alert(1)") == ""


def test_leaderboard_table_columns_sorting_and_ci(make, gold):
    submitter = make()
    for i, name in enumerate(["low", "high"]):
        submitter.submit(predictions(gold, [0, 0b111000111][i]), "main", {**FORM, "model_name": name})
    results = disclosure.Disclosure().rows(submitter.store.results())
    frame, datatypes = leaderboard_table.leaderboard_frame(results, groups=[])
    assert list(frame.columns[:3]) == ["Rank", "Model", "Verified"]
    assert list(frame.columns[3:10]) == HEADLINE_COLUMNS
    assert list(frame["Det Bal Acc"]) == sorted(frame["Det Bal Acc"], reverse=True)
    full, _ = leaderboard_table.leaderboard_frame(results, groups=leaderboard_table.GROUPS)
    assert {"Det S1", "Loc S2 P", "Disc Synthetic", "N@1", "Det Coverage", "Det Bal Acc 95% CI", "Link"} <= set(
        full.columns
    )
    assert "Disc Bazinga" not in full.columns  # a source this build does not have
    ci = full.loc[0, "Det Bal Acc 95% CI"]
    low, high = map(float, ci.split("-"))
    assert low <= full.loc[0, "Det Bal Acc"] <= high
    assert full.loc[0, "Link"] == "https://example.org/a"
    assert "; 2 submission(s)" in bias_chart.bias_spec(results, "main")["title"]  # one point per submission


def test_paper_tables_are_separate_and_complete():
    for variant in ssd.VARIANTS:
        frame = leaderboard_table.paper_frame(variant)
        assert list(frame.columns[:2]) == ["Method", "Group"] and "Det Bal Acc" in frame.columns
        assert len(frame) >= 3 and leaderboard_table.paper_caption(variant).startswith("Table")
    main = leaderboard_table.paper_frame("main").set_index("Method")
    assert main.loc["Gemini-2.5-Pro", "Det Bal Acc"] == 64.7 and main.loc["Pairwise (ECAPA)", "Group"] == "embedding"


def test_example_file_is_a_valid_complete_submission(gold):
    sub = parse_submission(example_file(gold), gold)
    assert {t: set(p) for t, p in sub.predictions.items()} == {t: set(rows) for t, rows in gold.tasks.items()}


def test_viewer_reads_one_instance_and_escapes_text(dataset):
    index = viewer.InstanceIndex(dataset)
    assert index.configs() == ["detection", "localization", "discrimination"]
    ids = index.ids("detection", "synthetic", "S2")
    assert len(ids) == 3 and all(i.endswith("-S2") for i in ids)
    assert index.locate(ids[0], prefer="localization") == "localization"
    assert index.locate("nope") is None
    row = index.load("detection", ids[0])
    dialogue, facts, turns, candidates, reference = viewer.instance_view(row, "detection")
    assert len(turns) == 5 and candidates == []
    assert sum("(converted)" in label for label, _ in turns) == 1
    wave, sr = sf.read(io.BytesIO(turns[0][1]))
    assert sr == ssd.SAMPLING_RATE and len(wave) > 0 and reference[:4] == b"RIFF"
    assert "substitute similarity" in facts and "S2" in facts
    disc = index.load("discrimination", index.ids("discrimination")[0])
    _, facts, turns, candidates, _ = viewer.instance_view(disc, "discrimination")
    assert len(turns) == 4 and len(candidates) == 3 and "gold ranking" in facts
    evil = dict(row, turns=[{**row["turns"][0], "text": "<script>alert(1)</script>"}] + row["turns"][1:])
    assert "<script>" not in viewer.dialogue_html(evil, "detection")
    for missing in ("missing-id", "\ud800"):  # a lone surrogate once reached pyarrow and raised UnicodeEncodeError
        with pytest.raises(KeyError):
            index.load("detection", missing)


def test_seed_describes_files_and_is_idempotent(make, gold, tmp_path):
    results = tmp_path / "results"
    (results / "main").mkdir(parents=True)
    scored = [json.loads(line) for line in predictions(gold, 1).splitlines()]
    for line in scored:  # the embedding judges write their distance as the detection score
        if line["task"] == "detection":
            line["score"] = float(gold.tasks["detection"][line["id"]]["label"] == "inconsistent")
    (results / "main" / "pairwise-resemblyzer.jsonl").write_text("".join(json.dumps(line) + "\n" for line in scored))
    (results / "centroid-resemblyzer.main.jsonl").write_bytes(predictions(gold, 2))
    (results / "custom.jsonl").write_bytes(predictions(gold, 3))
    (results / "custom.json").write_text(
        json.dumps({"variant": "main", "model_name": "Custom judge", "model_type": "LALM"})
    )
    submitter = make(rate_limit=0)  # seeding ignores the rate limit
    assert seed.seed(submitter, results) == {"accepted": 3}
    assert seed.seed(submitter, results) == {"duplicate": 3}
    names = {r.metadata.model_name: r.metadata.model_type for r in submitter.store.results("main")}
    assert names == {"pairwise-resemblyzer": "embedding", "centroid-resemblyzer": "embedding", "Custom judge": "LALM"}
    assert {r.submitter for r in submitter.store.results()} == {seed.BASELINE_SUBMITTER}
    entries = disclosure.Disclosure().rows(submitter.store.results("main"))
    assert "Det AUROC" not in leaderboard_table.leaderboard_frame(entries)[0]  # the default columns fit 1,200 px
    frame, _ = leaderboard_table.leaderboard_frame(
        entries, [leaderboard_table.GROUP_THRESHOLD_FREE, leaderboard_table.GROUP_CI]
    )
    auroc = dict(zip(frame["Model"], frame["Det AUROC"]))
    assert auroc.pop("pairwise-resemblyzer") == 100.0 and all(math.isnan(v) for v in auroc.values())
    assert dict(zip(frame["Model"], frame["Det EER"]))["pairwise-resemblyzer"] == 0.0
    assert dict(zip(frame["Model"], frame["Det AUROC 95% CI"]))["pairwise-resemblyzer"] == "100.0-100.0"
    assert "Det EER 95% CI" in leaderboard_table.leaderboard_csv(entries).decode("utf-8-sig").splitlines()[0]


def test_follow_seeds_the_baselines_files_as_they_are_written(make, gold, tmp_path):
    """While the baselines' process runs, each file its progress lists is seeded and the status
    (and the Leaderboard's note) says how many are still running; once it has ended, the rest."""
    import subprocess
    import sys
    import time

    from speakersleuth.space import leaderboard

    results, status = tmp_path / "results", tmp_path / "data" / baselines_status.STATUS_FILE
    results.mkdir()
    status.parent.mkdir()
    baselines = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def write(names, finished=False):
        for pattern, name in enumerate(names, start=1):
            (results / name).write_bytes(predictions(gold, pattern))
        (results / PROGRESS_FILE).write_text(json.dumps({"planned": 3, "written": names, "finished": finished}))

    def wait_for(seeded):
        end = time.monotonic() + 300  # scoring a file takes seconds; minutes on a loaded machine
        while not (status.is_file() and json.loads(status.read_text())["seeded"] == seeded):
            assert time.monotonic() < end, status.read_text() if status.is_file() else "no status"
            time.sleep(0.05)

    submitter = make(rate_limit=0)
    with ThreadPoolExecutor(1) as pool:
        followed = pool.submit(seed.follow, submitter, results, baselines.pid, status, poll_s=0.05)
        write(["pairwise-x.main.jsonl"])
        wait_for(1)
        assert [r.metadata.model_name for r in submitter.store.results("main")] == ["pairwise-x"]
        note = baselines_status.baselines_note(status)
        assert note.startswith("1 of 3 baseline runs are on the board; 2 are still running"), note
        with gr.Blocks():
            refresh, _, outputs = leaderboard.build_leaderboard_tab(
                submitter.store,
                ["main"],
                ["main"],
                tmp_path / "exports",
                note=lambda: baselines_status.baselines_note(status),
            )
        shown = refresh(list(leaderboard_table.DEFAULT_GROUPS))
        assert len(shown) == len(outputs) and shown[-1].value == note and shown[-1].visible
        write(["pairwise-x.main.jsonl", "centroid-x.main.jsonl", "reference-x.main.jsonl"], finished=True)
        baselines.kill()
        baselines.wait()
        assert followed.result(timeout=300) == {"accepted": 3}
    assert json.loads(status.read_text()) == {"planned": 3, "seeded": 3, "running": False, "finished": True}
    assert (
        baselines_status.baselines_note(status) == ""
        and not refresh(list(leaderboard_table.DEFAULT_GROUPS))[-1].visible
    )


def test_docstring_examples():
    for module in (submission_form, seed, text):
        result = doctest.testmod(module)
        assert result.attempted and result.failed == 0, module.__name__


def test_config_from_env():
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_RATE_LIMIT": "3", "SPEAKERSLEUTH_DATASET": "/data/x"})
    assert (config.rate_limit, config.host, config.port, config.on_spaces) == (3, "127.0.0.1", 7860, False)
    assert SpaceConfig.from_env({"SPACE_ID": "o/s"}).host == "0.0.0.0"
    with pytest.raises(ValueError, match="SPEAKERSLEUTH_MAX_LINES"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_MAX_LINES": "many"})
    with pytest.raises(ValueError, match="no dataset configured"):
        SpaceConfig.from_env({}).dataset_folder()
    with pytest.raises(ValueError, match="dataset /no/such/folder: no such folder, and not a Hub dataset id"):
        SpaceConfig.from_env({}, dataset="/no/such/folder").dataset_folder()
    assert SpaceConfig.from_env({}).gold_folder() is None
    with pytest.raises(ValueError, match="gold /no/such/gold: no such folder, and not a Hub dataset id"):
        SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": "/no/such/gold"}).gold_folder()


def test_gradios_monitoring_summary_is_not_made_after_every_event(dataset, tmp_path, monkeypatch):
    """Gradio's queue makes its monitoring summary (a pandas groupby over its last 10,000 events)
    after every event by default; the Space's queue makes it once per ANALYTICS_SUMMARY_EVERY."""
    from speakersleuth.space.app import ANALYTICS_SUMMARY_EVERY, build_app
    from tests.support.space_support import served_config

    monkeypatch.setenv(
        "GRADIO_ANALYTICS_CACHE_FREQUENCY", ""
    )  # recorded, so the test leaves the variable as it found it
    monkeypatch.delenv("GRADIO_ANALYTICS_CACHE_FREQUENCY")
    app = build_app(served_config(dataset, tmp_path / "data"), n_bootstrap=0)
    assert app.blocks._queue.ANAYLTICS_CACHE_FREQUENCY == ANALYTICS_SUMMARY_EVERY  # (sic: Gradio's spelling)
    monkeypatch.setenv("GRADIO_ANALYTICS_CACHE_FREQUENCY", "7")  # a deployer's own setting is kept
    assert (
        build_app(served_config(dataset, tmp_path / "data2"), n_bootstrap=0).blocks._queue.ANAYLTICS_CACHE_FREQUENCY
        == 7
    )


def test_leaderboard_refreshes_are_not_queued_behind_each_other(dataset, tmp_path):
    """Every leaderboard refresh (the button's API, after a submission, on page load, after a
    withdrawal, a column toggle) shares one limit wider than the submissions' (a refresh that waits
    out the coalescing must not hold one of their few slots) and below Gradio's 40 worker threads."""
    from speakersleuth.space.app import build_app
    from speakersleuth.space.leaderboard import REFRESH_CONCURRENCY
    from tests.support.space_support import served_config

    config = served_config(dataset, tmp_path / "data")
    app = build_app(config, n_bootstrap=0)
    fns = list(app.blocks.fns.values())
    tables = {
        b.elem_id
        for b in app.blocks.blocks.values()
        if (getattr(b, "elem_id", None) or "").startswith("ss-leaderboard-")
    }
    refreshes = [f for f in fns if {getattr(o, "elem_id", None) for o in f.outputs} & tables]
    assert len(tables) == 3 and len(refreshes) == 4 + len(tables), [
        f.name for f in refreshes
    ]  # four events, one toggle per table
    assert {(f.concurrency_limit, f.concurrency_id) for f in refreshes} == {(REFRESH_CONCURRENCY, "refresh")}
    assert config.concurrency < REFRESH_CONCURRENCY < app.blocks.max_threads
    submits = [f for f in fns if f.api_name == "submit"]
    assert len(submits) == 1 and submits[0].concurrency_limit == config.concurrency
