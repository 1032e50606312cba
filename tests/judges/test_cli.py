"""``python -m speakersleuth.judges`` (run, sweep, baselines) on a small synthetic folder with Resemblyzer; the
outputs must parse and score with the metrics package."""

from __future__ import annotations

import json
import random
import socket
import time

import pytest
import torch

import speakersleuth.judges.lalm as lalm
import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speech.encoders as encoders
from speakersleuth.judges.__main__ import build_parser, main
from speakersleuth.judges.cache import EmbeddingCache
from speakersleuth.judges.names import METHODS
from speakersleuth.judges.sweep import THRESHOLDS, calibrate
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from tests.support.synthetic import build_synthetic_dataset, dialogue_records


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """main and 4vc variants, 2 dialogues each; main also has a validation split."""
    root = build_synthetic_dataset(
        tmp_path_factory.mktemp("ds") / "speakersleuth", dialogues=2, variants=("main", "4vc")
    )
    made = [dialogue_records("main", 20 + i, random.Random(i)) for i in range(2)]
    for task in ("detection", "localization"):
        with ssd.DatasetWriter(root, ssd.config_name(task, "main"), split="validation") as writer:
            writer.write_all(r for recs, _ in made for r in recs)
    return root


@pytest.fixture(scope="module")
def resemblyzer():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # faster for Resemblyzer's small LSTM on a busy 2-core machine
    yield encoders.get_encoder("resemblyzer")
    torch.set_num_threads(threads)


@pytest.fixture()
def cli(resemblyzer, tmp_path_factory, monkeypatch, capsys):
    """Runs the CLI in-process; the encoder is loaded once per module (the CLI would reload the
    same packaged weights each call) and clips are cached on disk across calls."""
    made = []

    def get_encoder(spec, device="cpu"):
        assert spec == "resemblyzer", spec
        made.append(spec)
        return resemblyzer

    monkeypatch.setattr(encoders, "get_encoder", get_encoder)
    cache_dir = str(tmp_path_factory.getbasetemp() / "judges-cli-cache")

    def run(*args: str) -> tuple[int, str, str]:
        extra = ["--cache", cache_dir, "--no-progress"] if args[0] in ("run", "sweep", "baselines") else []
        code = main([*map(str, args), *extra])
        out, err = capsys.readouterr()
        return code, out, err

    run.made = made
    return run


def judge_run(judge: str, folder, out) -> list:
    """The arguments of ``run`` for ``judge`` on ``folder``, writing its predictions to ``out``."""
    return ["run", "--judge", judge, "--dataset", folder, "--predictions-out", out]


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_a_submission_the_scorer_accepts(cli, folder, tmp_path):
    out = tmp_path / "preds.jsonl"
    code, stdout, err = cli(
        *judge_run("centroid-resemblyzer", folder, out),
        "--variant",
        "main",
        "--task",
        "detection,localization,discrimination",
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["judge"] == "centroid-resemblyzer" and summary["threshold"] == 0.3
    assert summary["counts"] == {"detection": 6, "localization": 6, "discrimination": 2}
    gold = load_gold(folder, "main")
    scores = score_submission(parse_submission(out, gold), gold, n_bootstrap=0)
    assert scores["tasks"] == ["detection", "localization", "discrimination"]
    assert all(scores[t]["coverage"] == 100.0 for t in scores["tasks"])
    lines = _lines(out)
    assert {tuple(sorted(line)) for line in lines} == {
        ("id", "prediction", "score", "task"),
        ("id", "prediction", "task"),
        ("id", "prediction", "ranking", "task"),
    }
    assert all(
        "score" in line for line in lines if line["task"] == "detection"
    )  # threshold-free detection (AUROC/EER)


def test_run_without_out_writes_under_results_in_the_working_folder(cli, folder, tmp_path, monkeypatch):
    """The command as a user first types it, with no ``--predictions-out``."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(
        "run", "--judge", "centroid-resemblyzer", "--dataset", folder, "--variant", "main", "--task", "detection"
    )
    assert code == 0, err
    assert len(_lines(tmp_path / "results" / "centroid-resemblyzer.main.jsonl")) == 6


def test_threshold_reaches_the_judge(cli, folder, tmp_path):
    """Cosines lie in [-1, 1]: pairwise with τ above 1 flags every turn, below -1 none."""
    for tau, expected in (("1.01", [1, 2, 3, 4, 5]), ("-1.01", [])):
        out = tmp_path / f"p{tau}.jsonl"
        code, stdout, err = cli(
            *judge_run("pairwise-resemblyzer", folder, out),
            "--variant",
            "4vc",
            "--task",
            "localization,detection",
            "--threshold",
            tau,
        )
        assert code == 0, err
        assert json.loads(stdout)["threshold"] == float(tau)
        lines = _lines(out)
        assert len(lines) == 12
        assert all(line["prediction"] == expected for line in lines if line["task"] == "localization")
        label = "inconsistent" if expected else "consistent"
        assert all(line["prediction"] == label for line in lines if line["task"] == "detection")


def test_calibrate_uses_the_validation_split(cli, folder, tmp_path):
    out = tmp_path / "cal.jsonl"
    code, stdout, err = cli(*judge_run("reference-resemblyzer", folder, out), "--task", "detection", "--calibrate")
    assert code == 0, err
    summary = json.loads(stdout)
    calibration = summary["calibration"]
    assert summary["threshold"] == calibration["threshold"] in THRESHOLDS
    assert [r["threshold"] for r in calibration["validation"]] == list(THRESHOLDS)
    best = max(r["det_bal_acc"] for r in calibration["validation"])
    assert next(r["det_bal_acc"] for r in calibration["validation"] if r["threshold"] == summary["threshold"]) == best
    code, _, err = cli(
        "run",
        "--judge",
        "reference-resemblyzer",
        "--dataset",
        folder,
        "--variant",
        "4vc",
        "--task",
        "detection",
        "--predictions-out",
        tmp_path / "x.jsonl",
        "--calibrate",
    )
    assert code == 2 and "calibration needs a validation split" in err and "4vc/detection" in err


def test_bad_judges_and_options_are_refused(cli, folder, tmp_path):
    out = tmp_path / "x.jsonl"
    code, _, err = cli("run", "--judge", "median-resemblyzer", "--dataset", folder, "--predictions-out", out)
    assert code == 2 and "unknown judge 'median-resemblyzer'" in err
    code, _, err = cli(*judge_run("centroid-resemblyzer", folder, out), "--threshold", "0.2", "--calibrate")
    assert code == 2 and "either a threshold or calibrate" in err
    code, _, err = cli(
        "run", "--judge", "gemini:gemini-2.5-pro", "--dataset", folder, "--predictions-out", out, "--threshold", "0.2"
    )
    assert code == 2 and "embedding judges only" in err
    code, _, err = cli(
        "run", "--judge", "centroid-resemblyzer", "--dataset", folder, "--task", "ranking", "--predictions-out", out
    )
    assert code == 2 and "unknown or no tasks ['ranking']" in err
    assert not out.exists()


def test_lalm_names_go_to_the_lalm_factory(cli, folder, tmp_path, monkeypatch):
    calls = []

    class Recorder:
        def run(self, dataset_folder, variant, tasks, out_path, *, split="test", limit=None):
            calls.append(("run", str(dataset_folder), variant, tasks, str(out_path), split, limit))
            return {"judge": "recorded"}

    def factory(spec, setting="main", **opts):
        calls.append(("make", spec, setting, opts))
        return Recorder()

    monkeypatch.setattr(lalm, "make_lalm_judge", factory)
    spec = "vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B"
    code, stdout, err = cli(
        "run",
        "--judge",
        spec,
        "--dataset",
        folder,
        "--variant",
        "main",
        "--task",
        "detection",
        "--predictions-out",
        tmp_path / "l.jsonl",
        "--setting",
        "context",
        "--option",
        "max_concurrency=4",
        "--limit",
        "3",
    )
    assert code == 0, err
    assert json.loads(stdout) == {"judge": "recorded"}
    assert calls[0] == ("make", spec, "context", {"progress": False, "max_concurrency": 4})
    assert calls[1] == ("run", str(folder), "main", ["detection"], str(tmp_path / "l.jsonl"), "test", 3)


def test_sweep_writes_table_and_plot(cli, folder, tmp_path):
    code, stdout, err = cli(
        "sweep",
        "--dataset",
        folder,
        "--variant",
        "main",
        "--sweep-out",
        tmp_path,
        "--judge",
        "pairwise-resemblyzer,centroid-resemblyzer",
        "--threshold",
        "0.2,0.3,0.4",
    )
    assert code == 0, err
    assert "| pairwise-resemblyzer |" in stdout and "τ=0.3" in stdout
    rows = (tmp_path / "sweep.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 3 * 2  # header + (test, validation) x 2 judges x 3 τ
    assert (tmp_path / "sweep.png").stat().st_size > 1000


def test_baselines_cover_every_method_and_variant(cli, folder, resemblyzer, tmp_path):
    """Every method at the paper's τ on every variant, plus a calibrated run where the variant has
    a validation split (main here, not 4vc)."""
    code, stdout, err = cli(
        "baselines", "--dataset", folder, "--results-out", tmp_path, "--bootstrap", "20", "--encoder", "resemblyzer"
    )
    assert code == 0, err
    assert cli.made == ["resemblyzer"]  # one encoder for all methods and variants
    summary = json.loads((tmp_path / "summary.json").read_text())
    methods = ("pairwise", "centroid", "reference", "core")
    assert [(r["judge"], r["variant"], r["threshold_source"]) for r in summary["results"]] == [
        *(
            (j, "main", src)
            for m in methods
            for j, src in ((f"{m}-resemblyzer", "paper"), (f"{m}-resemblyzer-calibrated", "validation"))
        ),
        *((f"{m}-resemblyzer", "4vc", "paper") for m in methods),
    ]
    paper = {"pairwise": 0.4, "centroid": 0.3, "reference": 0.4, "core": 0.4}  # core: pairwise's until calibrated
    for result in summary["results"]:
        gold = load_gold(folder, result["variant"])
        parse_submission(result["predictions"], gold)  # raises if the file is not a valid submission
        method = result["judge"].split("-")[0]
        if result["threshold_source"] == "paper":
            assert result["threshold"] == paper[method]
        else:
            tau = calibrate(method, EmbeddingCache(resemblyzer), folder, "main", progress=False)["threshold"]
            assert result["threshold"] == tau
        row = result["row"]
        assert row["det_bal_acc"] is not None and row["loc_bal_f1"] is not None and row["ndcg_at_2"] is not None
        assert row["det_bal_acc_ci"] is not None
    assert summary["cache"]["resemblyzer"]["encoder_calls"] <= summary["cache"]["resemblyzer"]["unique_clips"]
    table = (tmp_path / "summary.md").read_text()
    assert "| Centroid (Resemblyzer) | 0.3 | paper |" in table
    assert table.count("| validation |") == len(methods)
    assert "## Variant 4vc" in stdout


def test_baselines_in_two_processes_write_the_files_one_process_writes(folder, tmp_path):
    """Two spawned processes (one per variant here) write the same predictions files byte for byte,
    and the same results in the same order, as one process; the progress file lists every file."""
    from speakersleuth.judges.run import PROGRESS_FILE, run_baselines

    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        summary = run_baselines(
            folder, out, encoders=["resemblyzer"], n_bootstrap=20, jobs=jobs, cache_dir=out / "cache", progress=False
        )
        files = {p.name: p.read_bytes() for p in out.glob("*.jsonl")}
        runs[jobs] = summary, files, json.loads((out / PROGRESS_FILE).read_text())
    (serial, serial_files, serial_progress), (parallel, parallel_files, parallel_progress) = runs[1], runs[2]
    assert (
        len(serial_files) == 3 * len(METHODS) and parallel_files == serial_files
    )  # per method: 2 runs on main, 1 on 4vc
    for summary in (serial, parallel):
        for result in summary["results"]:
            result["predictions"] = result["predictions"].rpartition("/")[2]
    assert parallel["results"] == serial["results"]
    for progress in (serial_progress, parallel_progress):
        assert (
            progress["finished"]
            and progress["planned"] == 3 * len(METHODS)
            and sorted(progress["written"]) == sorted(serial_files)
        )
    with pytest.raises(ValueError, match="jobs=2: expected 1 or more, and 1 when caches are shared"):
        run_baselines(folder, tmp_path / "x", encoders=["resemblyzer"], jobs=2, caches={})


def test_sweep_and_baselines_default_to_every_encoder_that_needs_no_folder():
    parser = build_parser()
    offline = ["campplus", "dvector", "eres2net", "resemblyzer"]
    assert parser.parse_args(["baselines", "--dataset", "d", "--results-out", "o"]).encoder.split(",") == offline
    judges = parser.parse_args(["sweep", "--dataset", "d", "--sweep-out", "o"]).judge.split(",")
    assert judges == [f"{m}-{e}" for e in offline for m in ("pairwise", "centroid", "reference", "core")]


@pytest.mark.parametrize(
    "args, named, user",
    [
        (["run", "--judge", "centroid-resemblyzer", "--predictions-out"], "ecapa", "--judge centroid-ecapa"),
        (["run", "--judge", "openai:gpt-4o-audio-preview", "--predictions-out"], "ecapa", "--judge centroid-ecapa"),
        (
            ["sweep", "--judge", "centroid-resemblyzer,pairwise-ecapa", "--sweep-out"],
            "wavlm",
            "--judge centroid-wavlm",
        ),
        (["baselines", "--encoder", "resemblyzer,ecapa", "--results-out"], "wavlm", "--encoder wavlm"),
    ],
)
def test_a_model_folder_no_judge_uses_is_refused(args, named, user, tmp_path, capsys):
    code = main([*args, str(tmp_path / "out"), "--dataset", str(tmp_path), "--model-dir", f"{named}={tmp_path}"])
    err = capsys.readouterr().err
    assert code == 2 and f"--model-dir {named}={tmp_path}: unused by this command; only {user} reads it" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, threads",
    [
        (["sweep", "--judge", "centroid-resemblyzer", "--sweep-out"], 1),
        (["sweep", "--judge", "centroid-resemblyzer", "--threads", "3", "--sweep-out"], 3),
        (["run", "--judge", "openai:gpt-4o-audio-preview", "--predictions-out"], None),
    ],
)
def test_embedding_judges_run_on_one_thread_unless_told(args, threads, monkeypatch, tmp_path):
    """torch gets 1 thread for embedding judges by default, --threads N when given, and is left
    alone for LALM judges; the command itself is stopped at its first step."""
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    monkeypatch.setattr(
        "speakersleuth.judges.__main__.run_sweep", lambda *a, **k: (_ for _ in ()).throw(ValueError("stop"))
    )
    monkeypatch.setattr(
        "speakersleuth.judges.__main__.run_judge", lambda *a, **k: (_ for _ in ()).throw(ValueError("stop"))
    )
    assert main([*args, str(tmp_path / "o"), "--dataset", str(tmp_path)]) == 2
    assert calls == ([] if threads is None else [threads])


def test_a_non_positive_thread_count_is_refused(capsys, tmp_path):
    assert main(["sweep", "--dataset", str(tmp_path), "--sweep-out", str(tmp_path / "o"), "--threads", "0"]) == 2
    assert "--threads 0: expected a positive number" in capsys.readouterr().err


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released: connecting to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_judge_whose_server_is_down_stops_in_one_line(cli, folder, tmp_path):
    """A vllm: judge with no server: the run stops after a few refused connections (it retried every
    instance with backoff, 14-28 s each, before), saying so in one line, and writes no prediction."""
    spec = f"vllm:http://127.0.0.1:{_closed_port()}/v1:Qwen/Qwen2.5-Omni-7B"
    out = tmp_path / "down.jsonl"
    start = time.monotonic()
    code, _, err = cli("run", "--judge", spec, "--dataset", folder, "--task", "detection", "--predictions-out", out)
    assert code == 2 and err.count("\n") == 1, err
    assert (
        err.startswith(f"error: {spec}: cannot reach the server (3 connection attempts in a row failed")
        and "refused" in err
    ), err
    assert time.monotonic() - start < 30
    assert not out.exists() or not out.read_text().strip()


def test_an_api_judge_without_its_key_stops_in_one_line(cli, folder, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = cli(
        "run", "--judge", "openai:gpt-4o-audio-preview", "--dataset", folder, "--predictions-out", tmp_path / "o.jsonl"
    )
    assert (
        code == 2
        and err == "error: openai:gpt-4o-audio-preview: set the API key in the environment variable OPENAI_API_KEY\n"
    ), err
