"""The lmms-eval tasks run end to end, in an environment of their own, against the OpenAI-compatible double.

    .venv/bin/python benchmarks/bench_lmms_eval.py [--env cache/lmms-eval-venv] [--dialogues 2]

Why apart: lmms-eval 0.7.3 installs beside the pinned stack, but does not run there: its evaluator
imports ``filelock._api``, which filelock 4 (pinned 4.3.1) no longer has, and it pins wandb 0.25
(protobuf < 7, where onnx runs on 7.36). So this script makes an overlay environment: a venv whose
own site-packages (lmms-eval, its extra dependencies and filelock < 4) come first and the project's
``.venv`` (torch, datasets, this package, editable) after, so nothing pinned is reinstalled. Then:

1. lmms-eval's ``TaskManager`` indexes the folder shipped in the package (the five names);
2. a copy of the tasks for a small synthetic build (``lmms-tasks --tasks-out``) runs with
   ``lmms-eval --model openai`` against ``tests/support/lalm_http_double.py``'s server, which
   answers from the clips it receives;
3. its samples files go through ``judges convert`` and are compared line for line with what
   ``judges run`` writes against the same double, and lmms-eval's own figures with the scorer's.

It prints the install size of the overlay, the wall times and each check's verdict; exit status 1
when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import speakersleuth.speakersleuth_dataset as ssd  # noqa: E402
from speakersleuth.judges.harnesses.convert import convert  # noqa: E402
from speakersleuth.judges.harnesses.lmms import LMMS_TASKS, TASK_FOLDER, write_task_folder  # noqa: E402
from speakersleuth.judges.lalm import make_lalm_judge  # noqa: E402
from tests.support.lalm_http_double import audio_answer, serve  # noqa: E402
from tests.support.synthetic import build_synthetic_dataset  # noqa: E402

LMMS_EVAL = ["lmms-eval==0.7.3", "filelock<4"]


def make_overlay(env: Path) -> Path:
    """The overlay venv (made once): its python."""
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        base = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        Path(site, "_speakersleuth_base.pth").write_text(f"import site; site.addsitedir({base!r})\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", *LMMS_EVAL], check=True)
    return python


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def run_lmms(python: Path, tasks: Path, url: str, out: Path) -> float:
    env = {**os.environ, "OPENAI_API_KEY": "unused", "NO_PROXY": "127.0.0.1", "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run(
        [str(python), "-m", "lmms_eval", "--model", "openai",
         "--model_args", f"model_version=tiny-lalm,base_url={url}/v1,num_concurrent=1",
         "--include_path", str(tasks), "--tasks", "speakersleuth", "--log_samples", "--output_path", str(out),
         "--verbosity", "WARNING"],
        check=True, env=env,
    )  # fmt: skip
    return time.perf_counter() - start


def indexed_tasks(python: Path) -> list[str]:
    code = (
        "import json, sys; from lmms_eval.tasks import TaskManager;"
        "tm = TaskManager(include_path=sys.argv[1]);"
        "print(json.dumps(sorted(t for t in tm.all_tasks if t.startswith('speakersleuth'))))"
    )
    done = subprocess.run([str(python), "-c", code, str(TASK_FOLDER)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ids(dataset: Path, task: str) -> list[str]:
    return ssd.read_rows(dataset, task, columns=["id"]).column("id").to_pylist()


def _key(line: str) -> tuple[str, str]:
    item = json.loads(line)
    return item["task"], item["id"]


def lmms_figures(out: Path) -> dict:
    (results,) = out.rglob("*_results.json")
    return json.loads(results.read_text())["results"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default=str(ROOT / "cache" / "lmms-eval-venv"), help="the overlay venv")
    parser.add_argument("--dialogues", type=int, default=2, help="dialogues of the synthetic build")
    args = parser.parse_args()
    start = time.perf_counter()
    python = make_overlay(Path(args.env))
    print(
        f"overlay: {args.env}: {folder_size(Path(args.env)) / 1e6:.0f} MB, made in {time.perf_counter() - start:.0f} s"
    )
    checks = {
        "task manager indexes the shipped folder": indexed_tasks(python) == sorted([*LMMS_TASKS, "speakersleuth"])
    }
    work = Path(tempfile.mkdtemp(prefix="bench-lmms-"))
    dataset = build_synthetic_dataset(work / "data", dialogues=args.dialogues, variants=("main",))
    tasks = write_task_folder(work / "tasks", str(dataset))
    with serve() as server:
        server.reset(answer=audio_answer)
        seconds = run_lmms(python, tasks, server.url, work / "out")
        print(f"lmms-eval run: {seconds:.1f} s, {len(server.requests)} requests")
        samples = sorted((work / "out").rglob("*_samples_*.jsonl"))
        summary = convert(samples, work / "lmms.jsonl")
        judge = make_lalm_judge(f"vllm:{server.url}/v1:tiny-lalm", concurrency=1, progress=False)
        judge.run(dataset, "main", "detection,localization,discrimination", work / "judges.jsonl")
    converted = (work / "lmms.jsonl").read_text().splitlines()
    # judges run writes lines as requests finish; the converter writes task by task in row order
    order = [(t, i) for t in ("detection", "localization", "discrimination") for i in _ids(dataset, t)]
    written = sorted((work / "judges.jsonl").read_text().splitlines(), key=lambda line: order.index(_key(line)))
    checks["converted file equals judges run's, line for line"] = converted == written
    figures, scores = lmms_figures(work / "out"), summary["scores"]
    pairs = {
        "balanced_accuracy": (figures["speakersleuth_detection"]["balanced_accuracy,none"], scores["detection"]["balanced_accuracy"]),
        "balanced_f1": (figures["speakersleuth_localization"]["balanced_f1,none"], scores["localization"]["balanced_f1"]),
        "accuracy": (figures["speakersleuth_discrimination"]["accuracy,none"], scores["discrimination"]["accuracy"]),
        **{m: (figures["speakersleuth_discrimination_ranking"][f"{m},none"], scores["discrimination"][m.replace("_at_", "@")])
           for m in ("ndcg_at_1", "ndcg_at_2")},
        "exact_match": (figures["speakersleuth_discrimination_ranking"]["exact_match,none"], scores["discrimination"]["exact_match"]),
    }  # fmt: skip
    for name, (theirs, ours) in pairs.items():
        print(f"  {name}: lmms-eval {theirs}  scorer {ours}")
    checks["lmms-eval's figures equal the scorer's"] = all(a == b for a, b in pairs.values())
    print(f"converted ({len(converted)} lines), first: {converted[0]}")
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
