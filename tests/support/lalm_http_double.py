"""A local HTTP test double for the OpenAI-compatible and Gemini backends (127.0.0.1 only).

``FakeServer`` records every request (path, headers, JSON body) and answers from its ``script``
first (an HTTP status with headers and a body, or ``("sleep", seconds)`` to force a client
timeout), then with ``answer(kind, body)`` wrapped as a Chat Completions or ``generateContent``
response. It is a transport double for tests and the harness-overhead benchmark: nothing it
returns is a model's result.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer(ThreadingHTTPServer):
    """Records requests; answers from ``script`` first (status, headers, body or delay), then
    with ``answer(kind, body)`` wrapped as an OpenAI or Gemini response."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reset()

    def reset(self, answer=None):
        self.requests: list[dict] = []
        self.script: deque = deque()
        self.answer = answer or canned_answer
        self.in_flight = self.max_in_flight = 0
        self.delay = 0.0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def prompt_kind(text: str) -> str:
    """Which query a request's text is (from the answer format line of the prompt)."""
    for key, kind in (
        ('"inconsistent_turns"', "localization"),
        ('"ranking"', "ranking"),
        ('"same_speaker"', "same_speaker"),
        ("<one of A, B, C>", "choice"),
    ):
        if key in text:
            return kind
    return "detection"


def canned_answer(kind: str, body: dict | None = None) -> str:
    return {
        "detection": "Answer: inconsistent",
        "localization": '```json\n{"inconsistent_turns": [2]}\n```',
        "choice": '{"answer": "B"}',
        "ranking": "B > C > A",
        "same_speaker": '{"same_speaker": true}',
    }[kind]


def request_clips(body: dict) -> list[str]:
    """The base64 WAV of each clip of a Chat Completions request, in order: ``input_audio`` parts
    (our backend, Inspect) or ``audio_url`` data URIs (lmms-eval)."""
    clips = []
    for part in body["messages"][-1]["content"]:
        if part.get("type") == "input_audio":
            clips.append(part["input_audio"]["data"])
        elif part.get("type") == "audio_url":
            clips.append(part["audio_url"]["url"].split("base64,", 1)[1])
    return clips


def audio_answer(kind: str, body: dict) -> str:
    """An answer that is a fixed function of the clips the request carries (their CRC-32s), so
    two harnesses get the same answers only if they send the same audio, in the same order."""
    digests = [zlib.crc32(clip.encode()) for clip in request_clips(body)]
    total = sum(digests)
    if kind == "detection":
        return json.dumps({"answer": "inconsistent" if total % 2 else "consistent"})
    if kind == "localization":
        return json.dumps({"inconsistent_turns": [k for k, d in enumerate(digests[1:], start=1) if d % 3 == 0]})
    if kind == "choice":
        return json.dumps({"answer": "ABC"[total % 3]})
    if kind == "ranking":
        shift = total % 3
        return json.dumps({"ranking": ["ABC"[(shift + i) % 3] for i in range(3)]})
    return json.dumps({"same_speaker": digests[-1] % 3 != 0})


def request_text(path: str, body: dict) -> str:
    if "chat/completions" in path:
        return "".join(p.get("text", "") for p in body["messages"][-1]["content"])
    return "".join(p.get("text", "") for p in body["contents"][0]["parts"])


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server: FakeServer = self.server
        size = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(size))
        with server.lock:
            server.requests.append(
                {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                    "size": size,
                }
            )
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
            step = server.script.popleft() if server.script else None
        try:
            time.sleep(server.delay)
            if step is not None and step[0] == "sleep":
                time.sleep(step[1])
                step = None
            if step is not None:
                status, headers, payload = step
            else:
                status, headers = 200, {}
                text = server.answer(prompt_kind(request_text(self.path, body)), body)
                if "chat/completions" in self.path:
                    payload = {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "system_fingerprint": "fp_test",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                else:
                    payload = {
                        "candidates": [
                            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
                        ],
                        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
                        "modelVersion": "gemini-test",
                    }
            data = json.dumps(payload).encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with server.lock:
                server.in_flight -= 1


@contextmanager
def serve():
    """A running ``FakeServer`` on a free port, shut down on exit."""
    server = FakeServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
