"""A scripted LLM server on 127.0.0.1 speaking the Anthropic Messages API and the OpenAI
chat-completions API, so the real SDK code runs over real HTTP in tests.

`server.push(action, ...)` queues actions consumed in order; when the queue is empty the
`responder(body, api)` callable decides. An action is {"text": reply} (a normal completion),
or {"status": code, "headers": {...}} (an error), optionally with "sleep": seconds first.
A completion may carry "usage": a dict replaces the provider's usage block, None leaves it out.
An error action may carry "error": {...}, sent as OpenAI does ({"error": {message, type,
param, code}}); `openai_error(...)` builds one.
Any action may carry "raw": bytes sent as the body instead (a reply that is no completion;
give it a "status"), "encode": the Content-Encoding list in the order applied (gzip, x-gzip,
deflate, br, zstd, identity), and "pad_mb": megabytes of spaces put after the body's first `{`
(still valid JSON, so a bomb the SDK's own decoding would inflate and parse whole; built from
one compressed megabyte, never held inflated; `encoded_body(...)` does the encoding), and
"no_length": true to send no Content-Length (the body ends when the connection closes).
Every request is recorded with its path, headers and JSON body.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

from evalcore.schemas import EvalQuestion, EvalResponse, RetrievedChunk


class ScriptedLLM:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] = []
        self.responder: Callable[[dict, str], dict] | None = None
        self.lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def push(self, *actions: dict) -> None:
        with self.lock:
            self.script.extend(actions)

    def next_action(self, body: dict, api: str) -> dict:
        with self.lock:
            if self.script:
                return self.script.pop(0)
        if self.responder is None:
            return {"status": 500}
        return self.responder(body, api)

    def count(self) -> int:
        return len(self.requests)


_NO_OVERRIDE = object()


def _completion(api: str, body: dict, text: str, usage: Any = _NO_OVERRIDE) -> dict:
    if api == "anthropic":
        out = {"id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model"),
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 1000, "output_tokens": 100}}
    else:
        out = {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body.get("model"),
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}}
    if usage is None:
        del out["usage"]
    elif usage is not _NO_OVERRIDE:
        out["usage"] = usage
    return out


def openai_error(param: str | None, code: str, message: str, status: int = 400) -> dict:
    """An action answering with the error body OpenAI sends, e.g. for a parameter the model
    does not support: openai_error("max_tokens", "unsupported_parameter", "Unsupported ...")."""
    return {"status": status, "error": {"message": message, "type": "invalid_request_error",
                                        "param": param, "code": code}}


_SPACES = b" " * 2 ** 20


def _padded_deflate(head: bytes, pad_mb: int, tail: bytes, container: str) -> bytes:
    """head + pad_mb MB of spaces + tail as one gzip or zlib (deflate) stream: a block that
    ends in a full flush stands alone, so the compressed megabyte is repeated, not recomputed."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(_SPACES) + c.flush(zlib.Z_FULL_FLUSH)
    raw = first + block * pad_mb + c.compress(tail) + c.flush()
    check = zlib.crc32 if container == "gzip" else zlib.adler32
    value = check(head)
    for _ in range(pad_mb):
        value = check(_SPACES, value)
    value = check(tail, value)
    if container == "gzip":
        size = (len(head) + len(tail) + pad_mb * 2 ** 20) % 2 ** 32
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw + value.to_bytes(4, "little") + \
            size.to_bytes(4, "little")
    return b"\x78\xda" + raw + value.to_bytes(4, "big")


def _encode_one(data: bytes, coding: str, pad_mb: int = 0) -> bytes:
    from tests.optional import requires

    head, tail = (data[:1], data[1:]) if pad_mb else (data, b"")
    coding = {"x-gzip": "gzip"}.get(coding.lower(), coding.lower())
    if coding in ("gzip", "deflate"):
        return _padded_deflate(head, pad_mb, tail, coding)
    if coding == "zstd":  # frames one after another decode to their concatenation
        compress = requires("zstandard").ZstdCompressor().compress
        return compress(head) + compress(_SPACES) * pad_mb + (compress(tail) if tail else b"")
    if coding == "br":
        c = requires("brotli").Compressor(quality=5)
        return c.process(head) + b"".join(c.process(_SPACES) for _ in range(pad_mb)) + c.process(tail) + c.finish()
    assert coding == "identity" and not pad_mb, coding
    return data


def encoded_body(data: bytes, codings: list[str], pad_mb: int = 0) -> bytes:
    """`data` under `codings` (the first applied first), with `pad_mb` MB of spaces after its
    first byte (put in by the first coding that is not identity)."""
    for coding in codings:
        padding = pad_mb if coding.lower() != "identity" else 0
        data, pad_mb = _encode_one(data, coding, padding), pad_mb - padding
    assert not pad_mb, "pad_mb needs a coding to carry it"
    return data


def _handler(llm: ScriptedLLM):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
            body = json.loads(raw or b"{}")
            api = "anthropic" if self.path.endswith("/v1/messages") else "openai"
            llm.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "api": api})
            action = llm.next_action(body, api)
            if action.get("sleep"):
                time.sleep(action["sleep"])
            if "text" in action:
                status, payload = 200, _completion(api, body, action["text"], action.get("usage", _NO_OVERRIDE))
            elif "error" in action:
                status, payload = action.get("status", 400), {"error": action["error"]}
            else:
                status = action.get("status", 500)
                payload = {"type": "error", "error": {"type": "api_error", "message": f"scripted {status}"}}
            data = action["raw"] if "raw" in action else json.dumps(payload).encode()
            if action.get("encode"):
                data = encoded_body(data, action["encode"], action.get("pad_mb", 0))
                action = {**action, "headers": {"content-encoding": ", ".join(action["encode"]),
                                                **(action.get("headers") or {})}}
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if not action.get("no_length"):  # without it the body ends where the connection does
                    self.send_header("content-length", str(len(data)))
                for k, v in (action.get("headers") or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


@contextlib.contextmanager
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A ScriptedLLM serving on 127.0.0.1 for the duration of the block (other suites use it
    too, e.g. tests/reliability/test_judge_cache_and_cost.py)."""
    llm = ScriptedLLM()
    llm.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(llm))
    thread = threading.Thread(target=llm.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield llm
    finally:
        llm.httpd.shutdown()
        llm.httpd.server_close()


@pytest.fixture
def llm_server():
    with scripted_llm() as llm:
        yield llm


CANARY_ANTHROPIC = "sk-ant-CANARY-7f3e9b1c2d4a"
CANARY_OPENAI = "sk-openai-CANARY-5b8d2e6f1a0c"


@pytest.fixture
def anthropic_env(llm_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", llm_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    return llm_server


# ---- a responder that plays a well-behaved judge for every task --------------------------
def fence_of(body: dict, api: str) -> tuple[str, str]:
    if api == "anthropic":
        system, user = body["system"], body["messages"][0]["content"]
    else:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    return system, user


def blocks(user: str, label: str) -> list[str]:
    token = re.search(r"<<<(DATA-[0-9A-F]{16}) BEGIN", user)
    if not token:
        return []
    t = re.escape(token.group(1))
    return re.findall(rf"<<<{t} BEGIN {label}>>>\n(.*?)\n<<<{t} END {label}>>>", user, re.DOTALL)


def task_of(system: str) -> str:
    for marker, task in (("rewrite an answer as a list", "decompose"), ("analyse an answer in two parts", "answer_analysis"),
                         ("rewrite a reference answer", "reference_statements"),
                         ("review retrieved passages", "context_review"),
                         ("which questions an answer", "question_generation"),
                         ("factual accuracy of an answer", "factual_accuracy"), ("correct or wrong", "answer_class"),
                         ("declines to answer", "abstention"), ("grounded in retrieved", "groundedness"),
                         ("correctly addresses", "correctness"), ("same thing as an expected", "answer_correctness"),
                         ("three 1-5 scales", "plan_scores"),
                         ("rate directly how well", "answer_relevance_direct")):
        if marker in system:
            return task
    raise AssertionError("unknown task")


PARIS_CLAIMS = ["Paris is the capital of France.", "Paris has the Eiffel Tower.", "Paris was founded on the Moon."]
PARIS_QUESTIONS = {"questions": ["What is the capital of France?", "Which city is France's capital?",
                                 "What is the French capital?"], "noncommittal": 0}


def good_judge(body: dict, api: str) -> dict:
    """Supports claims/contexts that mention 'Paris'; 3 claims, 2 reference statements."""
    system, user = fence_of(body, api)
    task = task_of(system)
    if task == "decompose":
        out = {"claims": PARIS_CLAIMS}
    elif task == "answer_analysis":  # the claims and the questions in one reply (judge_calls: combined)
        out = {"claims": PARIS_CLAIMS, **PARIS_QUESTIONS}
    elif task == "reference_statements":
        out = {"statements": ["Paris is the capital of France.", "Paris lies on the Seine."]}
    elif task == "context_review":
        ctxs = blocks(user, r"context \d+")
        first = next((i for i, c in enumerate(ctxs, 1) if "Paris" in c), None)
        n_claims, n_statements = len(blocks(user, r"claim \d+")), len(blocks(user, r"statement \d+"))
        claims = [{"i": 1, "verdict": 1, "context": first, "reason": "stated"},
                  {"i": 2, "verdict": 1, "context": first, "reason": "stated"},
                  {"i": 3, "verdict": 0, "context": None, "reason": "not mentioned"}]
        statements = [{"i": 1, "verdict": 1, "context": first, "reason": "stated"},
                      {"i": 2, "verdict": 0, "context": None, "reason": "absent"}]
        out = {"contexts": [{"i": i, "relevant": "Paris" in c, "score": 90 if "Paris" in c else 5, "reason": "r"}
                            for i, c in enumerate(ctxs, 1)],
               "claims": claims[:n_claims], "statements": statements[:n_statements]}
    elif task == "question_generation":
        out = PARIS_QUESTIONS
    elif task == "factual_accuracy":
        out = {k: {"reasoning": "ok", "score": s} for k, s in
               (("correctness", 90), ("completeness", 70), ("consistency", 100))}
        out["overall_reasoning"] = "fine"
    elif task == "answer_class":
        out = {"label": "CORRECT", "reason": "same fact"}
    elif task == "abstention":
        out = {"abstained": False, "reason": "answers"}
    elif task == "groundedness":
        out = {"score": 4, "supported_claims": [1, 2], "unsupported_claims": [3], "reason": "one invented"}
    elif task in ("correctness",):
        out = {"score": 4, "reason": "mostly"}
    elif task in ("answer_correctness", "answer_relevance_direct"):
        out = {"score": 0.75, "reason": "mostly"}
    else:
        out = {k: {"score": 4, "reason": "r"} for k in ("correctness", "faithfulness", "completeness")}
    return {"text": json.dumps(out)}


def paris_item(n_contexts: int = 5, answer: str | None = None, qid: str = "q1", method: str = "m"):
    texts = ["Paris is the capital of France and home of the Eiffel Tower."] + \
            [f"Unrelated passage number {i} about cheese." for i in range(2, n_contexts + 1)]
    texts = texts[:n_contexts]
    q = EvalQuestion(id=qid, question="What is the capital of France?", ground_truth="Paris, on the Seine.")
    r = EvalResponse(question_id=qid, method=method,
                     answer=answer or "Paris is the capital. It has the Eiffel Tower. It was founded on the Moon.",
                     retrieved=[RetrievedChunk(rank=i, chunk_id=f"c{i}", text=t) for i, t in enumerate(texts, 1)])
    return q, r
