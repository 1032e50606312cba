"""What the SpeakerSleuth lmms-eval tasks' YAMLs name: the documents, the messages, the results and
their aggregation, all through ``speakersleuth.judges.harnesses.samples`` (the prompts, parsing and
per-instance scores of ``judges run`` and the scorer). Each document's results also carry, under
``speakersleuth``, its prediction line, which ``python -m speakersleuth.judges convert`` writes."""

from __future__ import annotations

from speakersleuth.judges.harnesses.samples import (
    gold_of,
    instance_values,
    parsing_job,
    percent,
    prompt_parts,
    row_job,
    scenario_means,
    undecoded,
)
from speakersleuth.judges.lalm.prompts import PROMPT_VERSION


def process_docs(dataset):
    """The rows with their clips as file bytes, as ``judges run`` reads them."""
    return undecoded(dataset)


def _query(doc: dict, kwargs: dict):
    job = row_job(kwargs["task"], kwargs["setting"], doc, ranking=kwargs["query"] == "ranking")
    (query,) = [q for q in job.queries if q.kind == kwargs["query"]]
    return job, query


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict) -> list[dict]:
    """The query as chat messages: the system text, then the labels and clips (WAV data URIs) in order."""
    _, query = _query(doc, lmms_eval_specific_kwargs)
    content = [
        {"type": kind, ("text" if kind == "text" else "url"): value} for kind, value in prompt_parts(query.prompt)
    ]
    return [
        {"role": "system", "content": [{"type": "text", "text": query.prompt.system}]},
        {"role": "user", "content": content},
    ]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict) -> str:
    """lmms-eval's context text, which it builds from the document without its audio columns and
    logs: the instance id (the prompt is ``doc_to_messages``)."""
    return doc["id"]


#: The per-instance values each query's task reports (``instance_values`` names them).
_REPORTED = {
    "detection": {"correct": "balanced_accuracy"},
    "localization": {"f1": "balanced_f1"},
    "choice": {"accuracy": "accuracy"},
    "ranking": {"ndcg_at_1": "ndcg_at_1", "ndcg_at_2": "ndcg_at_2", "exact_match": "exact_match"},
}


def _process(task: str, query: str, doc: dict, results: list[str]) -> dict:
    """The document's prediction line (parsed as ``judges run`` parses; a ranking alone for the
    ranking task, joined to its choice's line by ``convert``) and its per-instance values."""
    labels = doc["candidate_labels"] if task == "discrimination" else ()
    job = parsing_job(task, doc["id"], [(query, None)], len(doc["target_turn_positions"]), labels)
    parsed = job.parse(job.queries[0], results[0] if results else None)
    if query == "ranking":
        line = {"task": task, "id": job.id, "ranking": parsed.value} if parsed.ok else None
        scored = None if line is None else {"prediction": parsed.value[0], "ranking": parsed.value}
    else:
        line = scored = job.prediction_line([parsed])
    gold = gold_of(task, doc)
    values = {} if gold is None else instance_values(task, scored, gold)
    shared = {"scenario": doc.get("scenario")}
    out = {name: {**shared, "value": values[key]} for key, name in _REPORTED[query].items() if key in values}
    out["coverage"] = {**shared, "value": float(line is not None)}
    out["speakersleuth"] = {"task": task, "prediction": line, "how": parsed.how, "prompt_version": PROMPT_VERSION}
    return out


def process_detection(doc: dict, results: list[str]) -> dict:
    return _process("detection", "detection", doc, results)


def process_localization(doc: dict, results: list[str]) -> dict:
    return _process("localization", "localization", doc, results)


def process_choice(doc: dict, results: list[str]) -> dict:
    return _process("discrimination", "choice", doc, results)


def process_ranking(doc: dict, results: list[str]) -> dict:
    return _process("discrimination", "ranking", doc, results)


def _mean(items: list[dict]) -> float | None:
    return percent(sum(i["value"] for i in items) / len(items)) if items else None


def _balanced(items: list[dict]) -> float | None:
    return percent(scenario_means([i["value"] for i in items], [i["scenario"] for i in items])[0])


aggregate_balanced_accuracy = _balanced
aggregate_balanced_f1 = _balanced
aggregate_accuracy = _mean
aggregate_ndcg_at_1 = _mean
aggregate_ndcg_at_2 = _mean
aggregate_exact_match = _mean
aggregate_coverage = _mean
