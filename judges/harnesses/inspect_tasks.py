"""SpeakerSleuth as Inspect tasks: ``speakersleuth/detection``, ``speakersleuth/localization``,
``speakersleuth/discrimination``.

Installed with the ``inspect`` extra, the package registers them under Inspect's extension entry
point (``[project.entry-points.inspect_ai]`` in pyproject.toml), so that::

    inspect eval speakersleuth/detection --model vllm/Qwen/Qwen2.5-Omni-7B -T dataset=speakersleuth
    inspect eval speakersleuth/discrimination --model openai/gpt-4o-audio-preview -T variant=4vc -T setting=context

Task parameters (``-T``): ``dataset`` (a built folder or a Hub id), ``variant`` (main, 4vc,
10turn), ``setting`` (main, context, no_reference; per_turn for detection and localization),
``split`` (test) and, for discrimination, ``ranking`` (also ask for the ranking; default true).

Each sample is one dataset row: its input is the first query of the job ``judges run`` asks for the
row (the same system text, labels and clips as WAV audio content, in the same order); a solver
asks each of the job's queries (discrimination: the choice, then the ranking; per_turn: one per
target turn) as its own request, as ``judges run`` does; the scorer parses the answers and builds
the prediction line with the harness's own parsing (``Score.metadata["prediction"]``, which
``python -m speakersleuth.judges convert`` writes as a predictions file), and scores it with the
scorer's math: detection ``balanced_accuracy`` (and per scenario), localization ``balanced_f1``
(and per scenario), discrimination ``accuracy`` (and per source), ``ndcg_at_1``, ``ndcg_at_2``,
``exact_match``, each task its ``coverage`` (share of samples with a prediction line). Metrics are
fractions; the scorer's report shows the same figures in percent. On a blind copy's test split
the rows have no gold: each sample gets its prediction and the unscored value (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, ContentAudio, ContentText, get_model
from inspect_ai.scorer import SampleScore, Score, Target, mean, metric, scorer
from inspect_ai.solver import Generate, TaskState, solver

from speakersleuth.judges.harnesses.samples import (
    DISCRIMINATION_VALUES,
    check_task_options,
    gold_of,
    instance_values,
    load_rows,
    parsing_job,
    prompt_parts,
    row_job,
    scenario_means,
)
from speakersleuth.judges.lalm.backends.base import Prompt
from speakersleuth.judges.lalm.harness import Job
from speakersleuth.judges.lalm.prompts import PROMPT_VERSION


def chat_messages(prompt: Prompt) -> list[ChatMessage]:
    """A prompt as Inspect chat messages: the system text, then one user message of text and WAV
    audio content in prompt order (what the OpenAI-compatible backend sends)."""
    content = [
        ContentAudio(audio=value, format="wav") if kind == "audio" else ContentText(text=value)
        for kind, value in prompt_parts(prompt)
    ]
    return [ChatMessageSystem(content=prompt.system), ChatMessageUser(content=content)]


def _sample(task: str, setting: str, row: dict, ranking: bool) -> Sample:
    job = row_job(task, setting, row, ranking=ranking)
    gold = gold_of(task, row)
    metadata = {
        "task": task,
        "queries": [{"kind": q.kind, "turn": q.turn} for q in job.queries],
        "later_queries": [[m.model_dump() for m in chat_messages(q.prompt)] for q in job.queries[1:]],
        "num_turns": job.num_turns,
        "labels": list(job.labels),
        "gold": gold,
        "scenario": row.get("scenario"),
        "source_dataset": row.get("source_dataset"),
    }
    target = "" if gold is None else str(gold.get("label", gold.get("inconsistent_turns", gold.get("answer"))))
    return Sample(id=job.id, input=chat_messages(job.queries[0].prompt), target=target, metadata=metadata)


def speakersleuth_dataset(task: str, dataset: str, variant: str, setting: str, split: str, ranking: bool):
    """The samples of one task, variant and setting (rows read with ``datasets``)."""
    check_task_options(task, variant, setting)
    rows = load_rows(dataset, task, variant, split)
    samples = [_sample(task, setting, row, ranking) for row in rows]
    return MemoryDataset(samples, name=f"speakersleuth-{variant}-{task}", location=str(dataset))


@solver
def ask_queries():
    """Ask each query of the sample's job as its own request (the input is the first); the raw
    answers go to the store as ``answers``."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        later = [[_message(m) for m in messages] for messages in state.metadata["later_queries"]]
        outputs = [await model.generate(messages) for messages in [list(state.messages), *later]]
        state.output = outputs[0]
        state.messages.append(outputs[0].message)
        state.store.set("answers", [output.completion for output in outputs])
        return state

    return solve


def _message(data: dict) -> ChatMessage:
    return (ChatMessageSystem if data["role"] == "system" else ChatMessageUser).model_validate(data)


def sample_job(task: str, metadata: dict, sample_id: str) -> Job:
    """The job of a sample as far as parsing needs it (``samples.parsing_job``)."""
    queries = [(q["kind"], q["turn"]) for q in metadata["queries"]]
    return parsing_job(task, str(sample_id), queries, metadata["num_turns"], metadata["labels"])


def _score_of(task: str) -> Callable:
    async def score(state: TaskState, target: Target) -> Score:
        job = sample_job(task, state.metadata, state.sample_id)
        raws = state.store.get("answers", [])
        parsed = [job.parse(q, raw) for q, raw in zip(job.queries, raws)]
        line = job.prediction_line(parsed) if len(parsed) == len(job.queries) else None
        gold = state.metadata["gold"]
        values = math.nan if gold is None else instance_values(task, line, gold)
        if isinstance(values, dict) and task != "discrimination":
            (values,) = values.values()
        return Score(
            value=values,
            answer=None if line is None else str(line["prediction"]),
            metadata={"prediction": line, "how": [p.how for p in parsed], "prompt_version": PROMPT_VERSION},
        )

    return score


@metric
def coverage():
    """The share of samples with a prediction line (an unparseable answer has none)."""

    def compute(scores: list[SampleScore]) -> float:
        answered = [s.score.metadata["prediction"] is not None for s in scores]
        return sum(answered) / len(answered) if answered else math.nan

    return compute


def _scenario_means(scores: list[SampleScore]) -> tuple[float, dict[str, float]]:
    return scenario_means([s.score.as_float() for s in scores], [s.sample_metadata["scenario"] for s in scores])


@metric
def balanced_accuracy():
    """Detection: ½ (Acc_S1 + ½ (Acc_S2 + Acc_S3)), the scorer's ``balanced_accuracy``."""

    def compute(scores: list[SampleScore]) -> float:
        return _scenario_means(scores)[0]

    return compute


@metric
def balanced_f1():
    """Localization: the scenario-balanced mean of the per-instance F1, the scorer's ``balanced_f1``."""

    def compute(scores: list[SampleScore]) -> float:
        return _scenario_means(scores)[0]

    return compute


@metric
def scenario():
    """The mean of the sample values (accuracy or F1) in each scenario: ``scenario_S1``, ``_S2``, ``_S3``."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _scenario_means(scores)[1]

    return compute


@metric
def accuracy_by_source():
    """Discrimination: the accuracy per source corpus (the scorer's ``accuracy_by_source``)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        by_source: dict[str, list[float]] = {}
        for s in scores:
            by_source.setdefault(s.sample_metadata["source_dataset"], []).append(s.score.as_float())
        return {source: sum(v) / len(v) for source, v in sorted(by_source.items())}

    return compute


@scorer(metrics=[balanced_accuracy(), scenario(), coverage()])
def detection_scorer():
    """Parse the answers into the detection line and score it (``correct``)."""
    return _score_of("detection")


@scorer(metrics=[balanced_f1(), scenario(), coverage()])
def localization_scorer():
    """Parse the answers into the localization line and score it (its F1)."""
    return _score_of("localization")


@scorer(
    metrics={
        "accuracy": [mean(), accuracy_by_source(), coverage()],
        **{k: [mean()] for k in DISCRIMINATION_VALUES[1:]},
    }
)
def discrimination_scorer():
    """Parse the answers into the discrimination line and score it (accuracy, NDCG@1, NDCG@2, exact match)."""
    return _score_of("discrimination")


def _task(name: str, dataset: str, variant: str, setting: str, split: str, ranking: bool, scorer_) -> Task:
    return Task(
        dataset=speakersleuth_dataset(name, dataset, variant, setting, split, ranking),
        solver=ask_queries(),
        scorer=scorer_,
        name=f"speakersleuth_{name}",
        metadata={"variant": variant, "setting": setting, "split": split, "prompt_version": PROMPT_VERSION},
    )


@task
def detection(
    dataset: str = "speakersleuth", variant: str = "main", setting: str = "main", split: str = "test"
) -> Task:
    """Detection: is the target speaker's voice the same in every turn?"""
    return _task("detection", dataset, variant, setting, split, False, detection_scorer())


@task
def localization(
    dataset: str = "speakersleuth", variant: str = "main", setting: str = "main", split: str = "test"
) -> Task:
    """Localization: which target turns are spoken by someone else?"""
    return _task("localization", dataset, variant, setting, split, False, localization_scorer())


@task
def discrimination(
    dataset: str = "speakersleuth",
    variant: str = "main",
    setting: str = "main",
    split: str = "test",
    ranking: bool = True,
) -> Task:
    """Discrimination: which candidate is the target speaker's own recording of the masked turn (and the ranking)?"""
    return _task("discrimination", dataset, variant, setting, split, ranking, discrimination_scorer())
