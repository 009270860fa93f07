"""A scripted LLM server on 127.0.0.1 speaking the Anthropic Messages API and the OpenAI
chat-completions API, so the real SDK code runs over real HTTP in tests.

`server.push(action, ...)` queues actions consumed in order; when the queue is empty the
`responder(body, api)` callable decides. An action is {"text": reply} (a normal completion),
or {"status": code, "headers": {...}} (an error), optionally with "sleep": seconds first.
A completion may carry "usage": a dict replaces the provider's usage block, None leaves it out.
An error action may carry "error": {...}, sent as OpenAI does ({"error": {message, type,
param, code}}); `openai_error(...)` builds one.
Every request is recorded with its path, headers and JSON body.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
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
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
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
    thread = threading.Thread(target=llm.httpd.serve_forever, daemon=True)
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
    for marker, task in (("rewrite an answer as a list", "decompose"),
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


def good_judge(body: dict, api: str) -> dict:
    """Supports claims/contexts that mention 'Paris'; 3 claims, 2 reference statements."""
    system, user = fence_of(body, api)
    task = task_of(system)
    if task == "decompose":
        out = {"claims": ["Paris is the capital of France.", "Paris has the Eiffel Tower.",
                          "Paris was founded on the Moon."]}
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
        out = {"questions": ["What is the capital of France?", "Which city is France's capital?",
                             "What is the French capital?"], "noncommittal": 0}
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
