"""LALM backends and harness, offline.

HTTP backends talk to a local server on 127.0.0.1 (``tests/support/lalm_http_double.py``) that records each
request and answers from a script (429, 500, timeouts, 401...) or with canned answers. It is a
transport test double for checking requests, retries and resumability; nothing it returns is a
model's result. The transformers backend runs its real load + processor + generate path on tiny
randomly initialised Qwen2.5-Omni and Qwen2-Audio checkpoints built from configs
(``tests/support/lalm_tiny_models.py``): their answers are garbage and must be counted as unparseable.
"""

from __future__ import annotations

import base64
import io
import json
import zlib

import jsonschema
import numpy as np
import pytest
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.lalm import make_lalm_judge
from speakersleuth.judges.lalm.backends import make_backend
from speakersleuth.judges.lalm.backends.base import Audio, Backend, FatalBackendError, Prompt, RequestError, Text
from speakersleuth.judges.lalm.backends.openai_backend import chat_messages
from speakersleuth.judges.lalm.harness import RAW_SUFFIX, TURN_COLUMNS, LALMJudge, turn_instance
from speakersleuth.judges.lalm.parsing import parse_answer
from speakersleuth.judges.lalm.prompts import SYSTEM, TurnInstance, turn_queries
from speakersleuth.metrics.score import score_submission
from speakersleuth.metrics.submission import load_gold, parse_submission
from tests.support.lalm_http_double import canned_answer, serve
from tests.support.lalm_tiny_models import TINY_BUILDERS
from tests.support.synthetic import build_synthetic_dataset


@pytest.fixture(scope="module")
def server():
    with serve() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VLLM_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return build_synthetic_dataset(tmp_path_factory.mktemp("lalm-data"), dialogues=2, variants=("main",))


FAST = {"retry_base_delay": 0.001, "retry_max_delay": 0.01}


def _clip(seconds: float, f0: float) -> np.ndarray:
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.3 * np.sin(2 * np.pi * f0 * t)).astype(np.float32)


@pytest.fixture(scope="module")
def prompt() -> Prompt:
    inst = TurnInstance(
        "x",
        [_clip(0.5, 200 + 20 * k) for k in range(3)],
        _clip(1.0, 180),
        [{"speaker": "s", "text": "hi", "is_target": True}] * 3,
        [0, 1, 2],
    )
    return turn_queries("detection", "main", inst)[0].prompt


# ------------------------------------------------------------------------- request schemas


def _closed(required: list[str] | None = None, **properties: dict) -> dict:
    """An object schema that allows no key beyond ``properties``: all of them required, or those ``required`` names."""
    return {
        "type": "object",
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
        "properties": properties,
    }


OPENAI_SCHEMA = {  # POST /chat/completions, as documented for audio input (input_audio parts)
    "type": "object",
    "required": ["model", "messages", "temperature"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "temperature": {"const": 0},
        "seed": {"type": "integer"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "messages": {
            "type": "array",
            "minItems": 2,
            "maxItems": 2,
            "prefixItems": [
                _closed(role={"const": "system"}, content={"type": "string"}),
                _closed(
                    role={"const": "user"},
                    content={
                        "type": "array",
                        "items": {
                            "oneOf": [
                                _closed(type={"const": "text"}, text={"type": "string"}),
                                _closed(
                                    type={"const": "input_audio"},
                                    input_audio=_closed(
                                        data={"type": "string", "contentEncoding": "base64"},
                                        format={"enum": ["wav", "mp3"]},
                                    ),
                                ),
                            ]
                        },
                    },
                ),
            ],
        },
    },
}

GEMINI_SCHEMA = {  # POST /{version}/models/{model}:generateContent (REST, camelCase)
    "type": "object",
    "required": ["contents", "generationConfig", "systemInstruction"],
    "properties": {
        "contents": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "parts"],
                "properties": {
                    "role": {"const": "user"},
                    "parts": {
                        "type": "array",
                        "items": {
                            "oneOf": [
                                _closed(text={"type": "string"}),
                                _closed(
                                    inlineData={  # proto JSON: mimeType or its field name mime_type
                                        **_closed(
                                            ["data"],
                                            mimeType={"const": "audio/wav"},
                                            mime_type={"const": "audio/wav"},
                                            data={"type": "string"},
                                        ),
                                        "oneOf": [{"required": ["mimeType"]}, {"required": ["mime_type"]}],
                                    }
                                ),
                            ]
                        },
                    },
                },
            },
        },
        "systemInstruction": {"type": "object", "required": ["parts"]},
        "generationConfig": {
            "type": "object",
            "required": ["temperature"],
            "properties": {"temperature": {"const": 0}, "seed": {"type": "integer"}},
        },
    },
}


def _validate(body: dict, schema: dict) -> None:
    """jsonschema validation with a short failure message (bodies hold megabytes of base64)."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(body))
    if error is not None:
        pytest.fail(f"request breaks the schema at {list(error.absolute_path)}: {error.message[:300]}")


def _decoded_wav(b64: str) -> np.ndarray:
    data = base64.b64decode(b64 + "=" * (-len(b64) % 4), altchars=b"-_" if ("-" in b64 or "_" in b64) else None)
    wave, rate = sf.read(io.BytesIO(data), dtype="float32")
    assert rate == 16000 and wave.ndim == 1
    return wave


def _check_interleaving(parts: list[tuple[str, object]], prompt: Prompt) -> None:
    """Text and audio parts in prompt order; each clip decodes to the prompt's samples."""
    expected = [p for p in prompt.parts if not isinstance(p, Text) or p.text]
    assert len(parts) == len(expected)
    for (kind, value), part in zip(parts, expected):
        if isinstance(part, Text):
            assert kind == "text" and value == part.text
        else:
            assert kind == "audio"
            np.testing.assert_allclose(_decoded_wav(value), part.samples, atol=1e-4)


def test_openai_request_matches_schema(server, prompt, monkeypatch):
    server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    backend = make_backend(f"openai:{server.url}/v1:gpt-4o-audio-preview", **FAST)
    completion = backend.generate(prompt)
    assert completion.text == "Answer: inconsistent" and completion.attempts == 1
    assert completion.meta["system_fingerprint"] == "fp_test"
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test"
    _validate(req["body"], OPENAI_SCHEMA)
    body = req["body"]
    assert body["model"] == "gpt-4o-audio-preview" and body["messages"][0]["content"] == SYSTEM
    parts = [
        ("text", p["text"]) if p["type"] == "text" else ("audio", p["input_audio"]["data"])
        for p in body["messages"][1]["content"]
    ]
    _check_interleaving(parts, prompt)


def test_vllm_key_is_optional_and_read_from_env(server, prompt, monkeypatch):
    server.reset()
    make_backend(f"vllm:{server.url}/v1:Qwen/Qwen2.5-Omni-7B").generate(prompt)
    monkeypatch.setenv("MY_VLLM_KEY", "secret")
    make_backend(f"vllm:{server.url}/v1:Qwen/Qwen2.5-Omni-7B", api_key_env="MY_VLLM_KEY").generate(prompt)
    assert [r["headers"]["authorization"] for r in server.requests] == ["Bearer EMPTY", "Bearer secret"]
    assert server.requests[0]["body"]["model"] == "Qwen/Qwen2.5-Omni-7B"


def test_gemini_request_matches_schema(server, prompt, monkeypatch):
    server.reset()
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    backend = make_backend("gemini:gemini-2.5-pro", base_url=server.url, thinking_budget=128, **FAST)
    completion = backend.generate(prompt)
    assert completion.text == "Answer: inconsistent"
    assert completion.meta["model_version"] == "gemini-test"
    (req,) = server.requests
    assert req["path"].endswith("/models/gemini-2.5-pro:generateContent")
    assert req["headers"]["x-goog-api-key"] == "g-test"
    _validate(req["body"], GEMINI_SCHEMA)
    body = req["body"]
    assert body["systemInstruction"]["parts"][0]["text"] == SYSTEM
    config = body["generationConfig"]  # the SDK writes some nested fields in proto field-name form
    assert (config.get("thinkingConfig") or config.get("thinking_config")) in (
        {"thinkingBudget": 128},
        {"thinking_budget": 128},
    )
    parts = [
        ("text", p["text"]) if "text" in p else ("audio", p["inlineData"]["data"])
        for p in body["contents"][0]["parts"]
    ]
    _check_interleaving(parts, prompt)


def test_keys_come_from_the_environment(server):
    with pytest.raises(FatalBackendError, match="OPENAI_API_KEY"):
        make_backend("openai:gpt-4o-audio-preview")
    with pytest.raises(FatalBackendError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make_backend("gemini:gemini-2.5-flash", base_url=server.url)


def test_a_key_variable_set_to_the_empty_string_counts_as_missing(server, prompt, monkeypatch):
    """``OPENAI_API_KEY=`` (set, empty) is no key: refused as if unset. For Gemini an empty
    ``GEMINI_API_KEY`` is passed over for ``GOOGLE_API_KEY``, the next variable named."""
    monkeypatch.setenv("OPENAI_API_KEY", "")
    with pytest.raises(FatalBackendError, match="set the API key in the environment variable OPENAI_API_KEY"):
        make_backend("openai:gpt-4o-audio-preview")
    monkeypatch.setenv("GEMINI_API_KEY", "")
    with pytest.raises(FatalBackendError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make_backend("gemini:gemini-2.5-flash", base_url=server.url)
    monkeypatch.setenv("GOOGLE_API_KEY", "g-second")
    server.reset()
    make_backend("gemini:gemini-2.5-flash", base_url=server.url, **FAST).generate(prompt)
    assert [r["headers"]["x-goog-api-key"] for r in server.requests] == ["g-second"]


@pytest.mark.parametrize("kind", ["vllm", "gemini"])
def test_a_refused_connection_stops_the_run_at_the_third_attempt_in_a_row(prompt, monkeypatch, kind):
    """Nothing listens on the port: each attempt is a refused connection. The third in a row stops
    the run (``FatalBackendError``), counted across requests: a first request that gives up after
    two attempts (``RequestError``), then the next request's first attempt."""
    from tests.support.space_support import free_port

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    url = f"http://127.0.0.1:{free_port()}"
    name = f"vllm:{url}/v1:m" if kind == "vllm" else "gemini:m"
    extra = {} if kind == "vllm" else {"base_url": url}
    waits: list[float] = []
    backend = make_backend(name, max_retries=1, sleep=waits.append, timeout=5, **FAST, **extra)
    with pytest.raises(RequestError, match="gave up after 2 attempts"):
        backend.generate(prompt)
    with pytest.raises(FatalBackendError, match="cannot reach the server"):
        backend.generate(prompt)
    assert len(waits) == 1  # one retry in the first request; the third attempt stopped without a wait
    patient = make_backend(name, max_retries=10, sleep=waits.append, timeout=5, **FAST, **extra)
    with pytest.raises(FatalBackendError, match="3 connection attempts in a row"):
        patient.generate(prompt)
    assert patient.retries == 2  # attempts 1 and 2 retried, the third stopped


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_retries_429_5xx_and_timeouts_then_succeeds(server, prompt, monkeypatch, kind):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    server.reset()
    error = {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    server.script.extend(
        [(429, {"Retry-After": "0.02"}, error), (503, {}, {"error": {"code": 503, "message": "busy"}}), ("sleep", 1.5)]
    )
    waits = []
    name = f"openai:{server.url}/v1:m" if kind == "openai" else "gemini:m"
    extra = {} if kind == "openai" else {"base_url": server.url}
    backend = make_backend(name, timeout=0.5, sleep=waits.append, **FAST, **extra)
    completion = backend.generate(prompt)
    assert completion.text == "Answer: inconsistent"
    assert completion.attempts == 4 and backend.retries == 3
    assert len(server.requests) == 4
    assert waits[0] >= 0.02  # the server's Retry-After is honoured
    assert all(w <= 0.01 for w in waits[1:])  # jittered backoff, capped by retry_max_delay


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_auth_errors_stop_at_once_and_bad_requests_fail_one_request(server, prompt, monkeypatch, kind):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    name = f"openai:{server.url}/v1:m" if kind == "openai" else "gemini:m"
    extra = {} if kind == "openai" else {"base_url": server.url}
    backend = make_backend(name, **FAST, **extra)
    server.reset()
    server.script.append((401, {}, {"error": {"code": 401, "message": "bad key"}}))
    with pytest.raises(FatalBackendError, match="401"):
        backend.generate(prompt)
    server.script.append((400, {}, {"error": {"code": 400, "message": "audio too long"}}))
    with pytest.raises(RequestError, match="400"):
        backend.generate(prompt)
    server.script.extend([(500, {}, {"error": {"code": 500, "message": "x"}})] * 3)
    with pytest.raises(RequestError, match="gave up after 3 attempts"):
        make_backend(name, max_retries=2, **FAST, **extra).generate(prompt)
    assert len(server.requests) == 5


# ----------------------------------------------------------------------------- the harness


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_run_is_resumable_and_writes_the_submission_format(server, dataset, tmp_path):
    server.reset()
    server.delay = 0.05
    out = tmp_path / "preds.jsonl"
    judge = make_lalm_judge(f"vllm:{server.url}/v1:tiny-lalm", concurrency=3, progress=False, **FAST)
    summary = judge.run(dataset, "main", "detection,localization,discrimination", out, limit=4)
    assert summary["counts"] == {"detection": 4, "localization": 4, "discrimination": 2}
    assert summary["parse_failure_rate"] == 0.0
    assert 1 < server.max_in_flight <= 3  # bounded concurrency
    sent = len(server.requests)
    assert sent == 4 + 4 + 2 * 2  # discrimination asks for the choice and the ranking
    lines = _lines(out)
    assert len({(x["task"], x["id"]) for x in lines}) == len(lines) == 10
    by_task = {t: [x for x in lines if x["task"] == t] for t in ("detection", "localization", "discrimination")}
    assert {x["prediction"] for x in by_task["detection"]} == {"inconsistent"}
    assert all(x["prediction"] == [2] for x in by_task["localization"])
    assert all(x["prediction"] == "B" and x["ranking"] == ["B", "C", "A"] for x in by_task["discrimination"])
    raw = _lines(str(out) + RAW_SUFFIX)
    assert all(r["setting"] == "main" and r["answers"][0]["raw"] for r in raw)

    again = judge.run(dataset, "main", "detection,localization,discrimination", out, limit=4)
    assert len(server.requests) == sent  # nothing re-asked
    assert again["tasks"]["detection"]["skipped"] == 4 and again["tasks"]["detection"]["written"] == 0
    assert len(_lines(out)) == 10

    # a stop mid-write: the torn last line is cut; a raw record without its line gets the line back
    text = out.read_text().splitlines(keepends=True)
    out.write_text("".join(text[:-2]) + text[-2][:15])
    more = judge.run(dataset, "main", "detection,localization,discrimination", out, limit=6)
    assert len(server.requests) == sent + 2 + 2  # only the two new turn instances per task
    assert more["counts"] == {"detection": 6, "localization": 6, "discrimination": 2}
    lines = _lines(out)
    assert len({(x["task"], x["id"]) for x in lines}) == len(lines) == 14
    submission = parse_submission(out, load_gold(dataset, "main"))  # the scorer's validator accepts it
    assert submission.num_lines == 14


def test_foreign_or_damaged_files_are_refused(server, dataset, tmp_path):
    judge = make_lalm_judge(f"vllm:{server.url}/v1:m", progress=False)
    foreign = tmp_path / "theirs.jsonl"
    foreign.write_text('{"task": "detection", "id": "x", "prediction": "consistent"}\n')
    with pytest.raises(ValueError, match="without its raw log"):
        judge.run(dataset, "main", "detection", foreign, limit=1)
    damaged = tmp_path / "damaged.jsonl"
    (tmp_path / ("damaged.jsonl" + RAW_SUFFIX)).write_text('{"task": "detection"\n{}\n')
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        judge.run(dataset, "main", "detection", damaged, limit=1)


def test_unparseable_answers_are_recorded_and_counted_not_guessed(server, dataset, tmp_path):
    server.reset(
        answer=lambda kind, body: (
            "I'm sorry, I can't help with identifying speakers."
            if kind in ("localization", "ranking")
            else canned_answer(kind)
        )
    )
    out = tmp_path / "preds.jsonl"
    judge = make_lalm_judge(f"vllm:{server.url}/v1:m", progress=False, **FAST)
    summary = judge.run(dataset, "main", ["localization", "discrimination"], out, limit=3)
    loc = summary["tasks"]["localization"]
    assert loc["unparseable"] == 3 and loc["predictions"] == 0 and loc["parse_failure_rate"] == 1.0
    disc = summary["tasks"]["discrimination"]
    assert disc["written"] == 2 and disc["ranking_unparseable"] == 2 and disc["parse_failure_rate"] == 0.0
    assert summary["parse_failure_rate"] == pytest.approx(3 / 5, abs=1e-4)
    lines = _lines(out)
    assert [x["task"] for x in lines] == ["discrimination"] * 2 and all("ranking" not in x for x in lines)
    raw = [r for r in _lines(str(out) + RAW_SUFFIX) if r["task"] == "localization"]
    assert all(r["status"] == "unparseable" and r["answers"][0]["how"] == "refusal" for r in raw)
    assert all(r["answers"][0]["raw"].startswith("I'm sorry") for r in raw)
    n = len(server.requests)
    judge.run(dataset, "main", ["localization"], out, limit=3)  # unparseable counts as finished
    assert len(server.requests) == n


def test_failed_requests_are_retried_on_the_next_run(server, dataset, tmp_path):
    server.reset()
    server.script.append((400, {}, {"error": {"message": "bad audio"}}))
    out = tmp_path / "preds.jsonl"
    judge = make_lalm_judge(f"vllm:{server.url}/v1:m", progress=False, **FAST)
    first = judge.run(dataset, "main", "detection", out, limit=3)
    assert first["tasks"]["detection"]["errors"] == 1 and first["counts"]["detection"] == 2
    second = judge.run(dataset, "main", "detection", out, limit=3)
    assert second["tasks"]["detection"]["written"] == 1 and second["counts"]["detection"] == 3
    assert len(server.requests) == 4


@pytest.mark.parametrize("status, message", [(401, "invalid key"), (404, "The model `m` does not exist")])
def test_fatal_errors_stop_the_run(server, dataset, tmp_path, status, message):
    """A rejected key (401) or an unknown model (404) fails every request alike: the run stops."""
    server.reset()
    server.script.extend([(status, {}, {"error": {"message": message}})] * 4)
    judge = make_lalm_judge(f"vllm:{server.url}/v1:m", progress=False, **FAST)
    with pytest.raises(FatalBackendError, match=str(status)):
        judge.run(dataset, "main", "detection", tmp_path / "p.jsonl", limit=2)


def _judged_different(body: dict) -> bool:
    """The double's per-turn verdict: a fixed function of the compared clip's bytes."""
    clip = [p for p in body["messages"][1]["content"] if p["type"] == "input_audio"][-1]
    return zlib.crc32(clip["input_audio"]["data"].encode()) % 3 == 0


def test_per_turn_queries_serve_both_tasks_once(server, dataset, tmp_path):
    server.reset(answer=lambda kind, body: json.dumps({"same_speaker": not _judged_different(body)}))
    out = tmp_path / "preds.jsonl"
    judge = make_lalm_judge(f"vllm:{server.url}/v1:m", setting="per_turn", progress=False, **FAST)
    judge.run(dataset, "main", "detection,localization", out, limit=3)
    rows = ssd.read_rows(dataset, "detection", columns=TURN_COLUMNS).to_pylist()[:3]
    queries = {r["id"]: turn_queries("detection", "per_turn", turn_instance(r)) for r in rows}
    unique = {q.prompt.key() for qs in queries.values() for q in qs}
    assert len(unique) < 15  # S1/S2/S3 of a dialogue share all but the converted turn
    assert len(server.requests) == len(unique)  # each distinct comparison asked once, for both tasks
    lines = {(x["task"], x["id"]): x["prediction"] for x in _lines(out)}
    for rid, qs in queries.items():
        different = [q.turn for q in qs if _judged_different({"messages": chat_messages(q.prompt)})]
        assert lines[("localization", rid)] == different
        assert lines[("detection", rid)] == ("inconsistent" if different else "consistent")
    with pytest.raises(ValueError, match="per_turn"):
        judge.run(dataset, "main", "discrimination", tmp_path / "d.jsonl")
    with pytest.raises(ValueError, match="setting 'per_turn'"):
        make_lalm_judge(f"vllm:{server.url}/v1:m", setting="main", progress=False).run(
            dataset, "main", "detection", out
        )


class LogitBackend(Backend):
    """A stand-in for a backend that sees logits: answers in format ("consistent", no turn) and
    reports for a yes/no query a P("inconsistent") made from the prompt's key (test data)."""

    kind = "logits"

    def _send(self, prompt):
        if not prompt.answers:
            return '{"inconsistent_turns": []}', {}
        return prompt.answers[1], {"p_inconsistent": int(prompt.key()[:6], 16) / 0xFFFFFF}


@pytest.mark.parametrize("setting", ["main", "per_turn"])
def test_detection_lines_carry_the_backends_probability_as_score(dataset, tmp_path, setting):
    out = tmp_path / "preds.jsonl"
    LALMJudge(LogitBackend("m"), setting, progress=False).run(dataset, "main", "detection,localization", out)
    lines = {(x["task"], x["id"]): x for x in _lines(out)}
    for row in ssd.read_rows(dataset, "detection", columns=TURN_COLUMNS).to_pylist():
        queries = turn_queries("detection", setting, turn_instance(row))
        expected = max(LogitBackend("m")._send(q.prompt)[1]["p_inconsistent"] for q in queries)
        assert lines[("detection", row["id"])]["score"] == expected  # per turn: the turn most likely different
        assert "score" not in lines[("localization", row["id"])]
    raw = _lines(str(out) + RAW_SUFFIX)
    assert all((a["p_inconsistent"] is None) == (a["kind"] == "localization") for r in raw for a in r["answers"])
    gold = load_gold(dataset, "main")
    detection = score_submission(parse_submission(out, gold), gold, n_bootstrap=0)["detection"]
    assert detection["scored"] == 6 and detection["auroc"] is not None


# -------------------------------------------------------------------- transformers backend


@pytest.fixture(scope="module", params=["qwen2_5_omni", "qwen2_audio"])
def tiny_lalm(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    TINY_BUILDERS[request.param](folder)
    return folder


def test_transformers_backend_processor_and_generate(tiny_lalm, prompt):
    backend = make_backend(f"transformers:{tiny_lalm}", max_new_tokens=6, device="cpu")
    assert backend.describe()["decoding"] == "greedy"
    if backend.model_type == "qwen2_5_omni":
        assert not hasattr(backend.lm, "talker")  # text only: the talker is never built
    batch = backend.inputs(prompt)
    ids = batch["input_ids"][0].tolist()
    tok = backend.processor.tokenizer
    audio_id = tok.convert_tokens_to_ids("<|AUDIO|>")
    # each clip expands to as many audio tokens as the encoder makes from its frames
    frames = [len(c.samples) // 160 for c in prompt.clips]
    expected = [((f - 1) // 2 + 1 - 2) // 2 + 1 for f in frames]
    runs, i = [], 0
    while i < len(ids):
        if ids[i] == audio_id:
            j = i
            while j < len(ids) and ids[j] == audio_id:
                j += 1
            runs.append((i, j - i))
            i = j
        else:
            i += 1
    assert [n for _, n in runs] == expected
    for k, (start, _) in enumerate(runs):  # the label right before each clip names it
        label = tok.decode(ids[max(0, start - 60) : start], skip_special_tokens=True)
        assert label.rstrip().endswith("Reference recording of the target speaker:" if k == 0 else f"Turn {k}:")
    first = backend.generate(prompt)
    again = backend.generate(prompt)
    assert first.text == again.text and first.meta["new_tokens"] <= 6  # greedy: deterministic
    assert first.meta["p_inconsistent"] == again.meta["p_inconsistent"]
    too_long = Prompt(prompt.system, (*prompt.parts[:-1], Audio(_clip(6.0, 100), "long")))
    with pytest.raises(ValueError, match="longer than the processor's 5 s window"):
        backend.inputs(too_long)


def test_transformers_backend_gives_p_inconsistent_from_the_next_token_logits(tiny_lalm, prompt):
    import torch

    backend = make_backend(f"transformers:{tiny_lalm}", max_new_tokens=2, device="cpu")
    inconsistent, consistent = prompt.answers
    p = backend.generate(prompt).meta["p_inconsistent"]
    # teacher-forced over the whole "inconsistent" answer: the logits where the two answers part
    tok = backend.processor.tokenizer
    first, second = (tok(a, add_special_tokens=False)["input_ids"] for a in prompt.answers)
    shared = [a == b for a, b in zip(first, second)].index(False)
    batch = backend.inputs(prompt)
    answer = torch.tensor([first])
    inputs = {
        **batch,
        "input_ids": torch.cat([batch["input_ids"], answer], dim=1),
        "attention_mask": torch.cat([batch["attention_mask"], torch.ones_like(answer)], dim=1),
    }
    with torch.inference_mode():
        logits = backend.generator(**inputs).logits[0, batch["input_ids"].shape[1] + shared - 1].float()
    expected = torch.softmax(logits[[first[shared], second[shared]]], dim=0)[0].item()
    assert p == pytest.approx(expected, abs=1e-5) and 0.0 < p < 1.0 and p != 0.5
    swapped = Prompt(prompt.system, prompt.parts, (consistent, inconsistent))
    assert backend.generate(swapped).meta["p_inconsistent"] == pytest.approx(1 - p, abs=1e-6)
    assert "p_inconsistent" not in backend.generate(Prompt(prompt.system, prompt.parts)).meta


def test_transformers_backend_refuses_what_it_cannot_load(tmp_path):
    with pytest.raises(FatalBackendError, match="not a local model folder"):
        make_backend(f"transformers:{tmp_path / 'missing'}")
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(FatalBackendError, match="model_type 'bert' is not supported; supported: qwen2_5_omni"):
        make_backend(f"transformers:{tmp_path}")


def test_transformers_garbage_is_counted_unparseable(tiny_lalm, dataset, tmp_path):
    out = tmp_path / "preds.jsonl"
    judge = make_lalm_judge(f"transformers:{tiny_lalm}", max_new_tokens=6, device="cpu", progress=False)
    summary = judge.run(dataset, "main", "detection,discrimination", out, limit=1)
    raw = _lines(str(out) + RAW_SUFFIX)
    assert len(raw) == 2 and all(a["raw"] is not None for r in raw for a in r["answers"])
    for record in raw:  # the summary and the files agree with the parser on the logged raw text
        parses = [parse_answer(a["kind"], a["raw"], num_turns=5) for a in record["answers"]]
        assert [p.how for p in parses] == [a["how"] for a in record["answers"]]
        assert (record["status"] == "ok") == parses[0].ok
    unparseable = sum(r["status"] == "unparseable" for r in raw)
    assert unparseable >= 1  # a random model does not answer in the asked format
    assert summary["parse_failure_rate"] == pytest.approx(unparseable / 2)
    assert len(_lines(out)) == 2 - unparseable


@pytest.mark.parametrize(
    ("name", "option", "backend"),
    [
        ("openai:gpt-4o-audio-preview", "thinking_budget", "OpenAIBackend"),
        ("gemini:gemini-2.5-pro", "kind", "GeminiBackend"),
    ],
)
def test_an_option_the_backend_does_not_take_is_named_with_the_backend(name, option, backend):
    """The TypeError of a wrong ``--option`` names the backend that refused it, as Python names it."""
    with pytest.raises(TypeError, match=rf"^{backend}\.__init__\(\) got an unexpected keyword argument '{option}'$"):
        make_backend(name, **{option: 1}, api_key_env="UNSET_FOR_THIS_TEST")
