"""The Inspect tasks and ``judges convert`` (judges/harnesses), offline.

Each task runs through Inspect against two model doubles: our OpenAI-compatible HTTP double
(``tests/support/lalm_http_double.py``, reached by Inspect's own ``openai-api`` provider) and
Inspect's ``mockllm`` given the same answer function; both answer from the clips they receive
(``audio_answer``), so the converted log equals ``judges run``'s file only if Inspect sent the same
prompts with the same audio and our parsing read the answers alike. The lmms-eval tasks run in
their own environment (``benchmarks/bench_lmms_eval.py``: lmms-eval 0.7.3 needs filelock < 4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("inspect_ai")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

import speakersleuth.speakersleuth_dataset as ssd  # noqa: E402
from speakersleuth.judges.__main__ import main as judges_main  # noqa: E402
from speakersleuth.judges.harnesses.convert import HarnessLogError, convert  # noqa: E402
from speakersleuth.judges.harnesses.inspect_tasks import detection, discrimination, localization  # noqa: E402
from speakersleuth.judges.harnesses.lmms import LMMS_TASKS, TASK_FOLDER, write_task_folder  # noqa: E402
from speakersleuth.judges.lalm import make_lalm_judge  # noqa: E402
from speakersleuth.judges.lalm.backends.base import Backend  # noqa: E402
from speakersleuth.judges.lalm.backends.openai_backend import chat_messages  # noqa: E402
from speakersleuth.judges.lalm.harness import LALMJudge  # noqa: E402
from tests.support.lalm_http_double import audio_answer, prompt_kind, serve  # noqa: E402
from tests.support.synthetic import build_synthetic_dataset  # noqa: E402

TASKS = "detection,localization,discrimination"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_synthetic_dataset(tmp_path_factory.mktemp("harness-data"), dialogues=2, variants=("main",))


@pytest.fixture(scope="module")
def server():
    with serve() as srv:
        srv.reset(answer=audio_answer)
        yield srv


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("VLLM_API_KEY", "unused")


def _judges_run(judge, data, tasks, out) -> list[str]:
    """The lines ``judges run`` writes, in the converter's order: task by task, rows in dataset
    order (``judges run`` writes them as its requests finish, two in flight at least)."""
    judge.run(data, "main", tasks, out)
    lines = out.read_text().splitlines()
    order = {(t, i): n for n, (t, i) in enumerate((t, r["id"]) for t in tasks.split(",") for r in _rows(data, t))}
    return sorted(lines, key=lambda line: order[(json.loads(line)["task"], json.loads(line)["id"])])


def _rows(data, task):
    return ssd.read_rows(data, task, columns=["id"]).to_pylist()


def _figures(log) -> dict[str, float]:
    """Inspect's own metrics of a log, ``<score name>/<metric name>``, in percent as the scorer reports."""
    return {
        f"{score.name}/{name}": round(metric.value * 100, 4)
        for score in log.results.scores
        for name, metric in score.metrics.items()
    }


@pytest.fixture(scope="module")
def http_run(data, server, tmp_path_factory):
    """The three tasks through Inspect's openai-api provider against the HTTP double, converted."""
    os.environ.setdefault("VLLM_API_KEY", "unused")
    logs = inspect_eval(
        [detection(dataset=str(data)), localization(dataset=str(data)), discrimination(dataset=str(data))],
        model="openai-api/vllm/tiny-lalm",
        model_base_url=f"{server.url}/v1",
        log_dir=str(tmp_path_factory.mktemp("inspect-logs")),
        display="none",
        max_connections=1,
    )
    out = tmp_path_factory.mktemp("converted") / "preds.jsonl"
    return logs, convert([log.location for log in logs], out), out


def test_inspect_runs_convert_to_what_judges_run_writes(http_run, data, server, tmp_path):
    logs, summary, out = http_run
    assert [log.status for log in logs] == ["success"] * 3
    judge = make_lalm_judge(f"vllm:{server.url}/v1:tiny-lalm", concurrency=1, progress=False)
    written = _judges_run(judge, data, TASKS, tmp_path / "judges.jsonl")
    assert out.read_text().splitlines() == written  # line for line, byte for byte
    assert summary["lines"] == {"detection": 6, "localization": 6, "discrimination": 2}
    run = json.loads((out.parent / "preds.jsonl.run.json").read_text())
    assert run["harness"] == "inspect" and run["model"] == "openai-api/vllm/tiny-lalm"
    assert (run["variant"], run["setting"], run["split"], run["prompt_version"]) == ("main", "main", "test", "1")


def test_the_scorers_figures_equal_inspects_own(http_run):
    logs, summary, _ = http_run
    scores = summary["scores"]
    det, loc, disc = (_figures(log) for log in logs)
    assert det["detection_scorer/balanced_accuracy"] == scores["detection"]["balanced_accuracy"]
    assert {s: det[f"detection_scorer/{s}"] for s in ("S1", "S2", "S3")} == scores["detection"]["accuracy"]
    assert loc["localization_scorer/balanced_f1"] == scores["localization"]["balanced_f1"]
    assert {s: loc[f"localization_scorer/{s}"] for s in ("S1", "S2", "S3")} == scores["localization"]["f1"]
    assert disc["accuracy/mean"] == scores["discrimination"]["accuracy"]
    assert disc["accuracy/accuracy_by_source_synthetic"] == scores["discrimination"]["accuracy_by_source"]["synthetic"]
    for ours, theirs in (("ndcg@1", "ndcg_at_1"), ("ndcg@2", "ndcg_at_2"), ("exact_match", "exact_match")):
        assert disc[f"{theirs}/mean"] == scores["discrimination"][ours]
    assert det["detection_scorer/coverage"] == scores["detection"]["coverage"] == 100.0
    # the figures are not all trivial: the answers depend on the clips
    assert 0 < scores["detection"]["balanced_accuracy"] < 100 or 0 < scores["localization"]["balanced_f1"] < 100


def _mock_answer(messages, tools, tool_choice, config) -> ModelOutput:
    """``audio_answer`` of the request Inspect's messages would make (clips as base64 WAV)."""
    user = messages[-1]
    parts = [
        {"type": "input_audio", "input_audio": {"data": c.audio.split("base64,", 1)[1]}}
        if c.type == "audio"
        else {"type": "text", "text": c.text}
        for c in user.content
    ]
    text = "".join(p.get("text", "") for p in parts)
    output = ModelOutput.from_content("mockllm", audio_answer(prompt_kind(text), {"messages": [{"content": parts}]}))
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tiktoken download
    return output


class DoubleBackend(Backend):
    """``judges run``'s side of the mock: the same answer function, on the request our backend makes."""

    kind = "double"

    def _send(self, prompt):
        messages = chat_messages(prompt)
        return audio_answer(prompt_kind(prompt.text), {"messages": messages}), {}


def test_inspect_mockllm_per_turn_converts_to_what_judges_run_writes(data, http_run, tmp_path):
    model = get_model("mockllm/model", custom_outputs=_mock_answer)
    tasks = [detection(dataset=str(data), setting="per_turn"), localization(dataset=str(data), setting="per_turn")]
    logs = inspect_eval(tasks, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert [log.status for log in logs] == ["success", "success"]
    summary = convert([log.location for log in logs], tmp_path / "mock.jsonl")
    written = _judges_run(
        LALMJudge(DoubleBackend("m"), "per_turn", progress=False), data, "detection,localization", tmp_path / "j.jsonl"
    )
    assert (tmp_path / "mock.jsonl").read_text().splitlines() == written
    assert _figures(logs[1])["localization_scorer/balanced_f1"] == summary["scores"]["localization"]["balanced_f1"]
    with pytest.raises(HarnessLogError, match="model 'mockllm/model'.*setting 'per_turn'"):  # two runs, one file
        convert([http_run[0][0].location, logs[0].location], tmp_path / "mixed.jsonl")


def test_the_entry_point_makes_inspect_eval_find_the_task(data, server, tmp_path):
    command = [str(Path(sys.executable).parent / "inspect"), "eval", "speakersleuth/discrimination", "--model", "openai-api/vllm/tiny-lalm",
               "--model-base-url", f"{server.url}/v1", "-T", f"dataset={data}", "-T", "ranking=false",
               "--log-dir", str(tmp_path), "--display", "none"]  # fmt: skip
    subprocess.run(command, check=True, env={**os.environ, "VLLM_API_KEY": "unused"}, timeout=300)
    (log,) = tmp_path.glob("*.eval")
    assert judges_main(["convert", "--log", str(log), "--predictions-out", str(tmp_path / "p.jsonl")]) == 0
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and all("ranking" not in line for line in lines)  # -T ranking=false reached the task


def test_a_bad_log_gets_one_line(http_run, tmp_path, capsys):
    logs, _, _ = http_run
    other = inspect_eval(
        Task(dataset=[Sample(input="2+2?", target="4")], name="arithmetic"),
        model=get_model("mockllm/model", custom_outputs=_mock_answer),
        log_dir=str(tmp_path),
        display="none",
    )[0]
    with pytest.raises(HarnessLogError, match="task 'arithmetic', not of speakersleuth"):
        convert([other.location], tmp_path / "x.jsonl")
    truncated = tmp_path / "truncated.eval"
    data = open(logs[0].location, "rb").read()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(HarnessLogError, match="not a readable Inspect log"):
        convert([truncated], tmp_path / "x.jsonl")
    foreign = tmp_path / "2026_samples_mmlu.jsonl"
    foreign.write_text('{"doc_id": 0, "resps": ["A"]}\n')
    for bad in (truncated, foreign):
        assert judges_main(["convert", "--log", str(bad), "--predictions-out", str(tmp_path / "x.jsonl")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"error: {bad}:")
    assert not (tmp_path / "x.jsonl").exists()


def test_the_lmms_eval_folder_ships_the_tasks_it_writes(tmp_path, capsys):
    written = write_task_folder(tmp_path / "tasks", "speakersleuth")
    shipped = {p.name: p.read_text() for p in TASK_FOLDER.glob("*.yaml")}
    assert shipped == {p.name: p.read_text() for p in written.glob("*.yaml")}
    assert (written / "utils.py").read_bytes() == (TASK_FOLDER / "utils.py").read_bytes()
    assert judges_main(["lmms-tasks"]) == 0 and capsys.readouterr().out.strip() == str(TASK_FOLDER)
    loader = type("TaskLoader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda loader_, node: loader_.construct_scalar(node))
    config = yaml.load((TASK_FOLDER / "speakersleuth_discrimination_ranking.yaml").read_text(), Loader=loader)
    assert config["task"] in LMMS_TASKS and config["dataset_name"] == "discrimination"
    assert config["process_results"] == "utils.process_ranking"
    copy = write_task_folder(tmp_path / "t4", "org/speakersleuth", "4vc", "context")
    config = yaml.load((copy / "speakersleuth_detection.yaml").read_text(), Loader=loader)
    assert (config["dataset_path"], config["dataset_name"]) == ("org/speakersleuth", "detection-4vc")
    assert config["lmms_eval_specific_kwargs"]["default"]["setting"] == "context"
    assert (
        judges_main(["lmms-tasks", "--dataset", "d", "--setting", "per_turn", "--tasks-out", str(tmp_path / "x")]) == 2
    )
