"""Scripted misbehaving HTTP servers on 127.0.0.1 for the fault-injection and security suites.

One small server class serves both sides of evalcore's network use: a RAG target (GET /health,
POST /query) and an LLM provider (POST /v1/messages, POST /v1/chat/completions). What a POST
gets is decided by a `decide(request)` callable returning a `Fault`, so a test scripts the
exact failure sequence and counts the attempts the server really saw.

Fault kinds (each one is a way real networks fail):
  ok        a complete response (status, headers, body)
  reset     the connection is closed with RST, no response at all
  stall     nothing is sent for `seconds`, then the response (past a client's timeout)
  truncate  headers announce the full Content-Length, half the body is sent, then close
  drip      the body is sent `chunk` bytes at a time, `seconds` apart (each gap shorter than a
            per-read timeout, the whole longer than any sane total deadline)
  stream    a chunked body with no Content-Length: `body` repeated until `total` bytes are sent
            (a body "without end" that still stops by itself); the bytes the client accepted
            are added to the server's `streamed`

Every sleep waits on the server's stop event, so stopping the server frees its threads fast
and no test can hang on a stalled handler.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Fault:
    kind: str = "ok"
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    chunk: int = 4
    total: int = 0


def ok_json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Fault:
    return Fault("ok", status, json.dumps(payload).encode(), dict(headers or {}))


def rag_answer(question: str) -> Fault:
    """A valid answer in evalcore's default contract, echoing the question."""
    return ok_json({"answer": f"answer to {question}",
                    "retrieved": [{"chunk_id": "c1", "text": f"context for {question}", "score": 1.0}],
                    "citations": ["c1"], "token_usage": {"input_tokens": 10, "output_tokens": 3}})


def llm_completion(api: str, model: str, text: str) -> Fault:
    """A valid completion in the Anthropic Messages or OpenAI chat-completions shape."""
    if api == "anthropic":
        return ok_json({"id": "msg_t", "type": "message", "role": "assistant", "model": model,
                        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                        "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 10}})
    return ok_json({"id": "chatcmpl-t", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})


def api_of(path: str) -> str:
    return "anthropic" if path.endswith("/v1/messages") else "openai"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "ScriptedServer"

    def log_message(self, *args: Any) -> None:
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.server.on_get is not None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._emit(self.server.on_get({"path": self.path, "headers": headers}))
        elif self.path == "/health":
            self._emit(ok_json({"status": "ok"}))
        elif self.path == "/models/info":
            self._emit(ok_json({"llm": "scripted-1"}))
        else:
            self._emit(ok_json({"error": "not found"}, 404))

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        request = {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()},
                   "t": time.monotonic()}
        with self.server.lock:
            self.server.requests.append(request)
            self.server.calls[self.server.key(request)] += 1
            request["n"] = self.server.calls[self.server.key(request)]
        self._emit(self.server.decide(request))

    def _head(self, fault: Fault, length: int) -> None:
        self.send_response(fault.status)
        named = {k.lower() for k in fault.headers}
        if "content-type" not in named:  # a fault may declare its own (a charset, another type)
            self.send_header("Content-Type", "application/json")
        if "content-length" not in named:  # a fault may announce its own
            self.send_header("Content-Length", str(length))
        for k, v in fault.headers.items():
            self.send_header(k, v)
        self.end_headers()

    def _emit(self, fault: Fault) -> None:
        stop = self.server.stopping
        try:
            if fault.kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            if fault.kind == "stall" and stop.wait(fault.seconds):
                return
            if fault.kind == "truncate":
                self._head(fault, len(fault.body))
                self.wfile.write(fault.body[: len(fault.body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_WR)
                return
            if fault.kind == "drip":
                self._head(fault, len(fault.body))
                self.wfile.flush()
                for i in range(0, len(fault.body), fault.chunk):
                    if stop.wait(fault.seconds):
                        return
                    self.wfile.write(fault.body[i:i + fault.chunk])
                    self.wfile.flush()
                return
            if fault.kind == "stream":
                self._stream(fault, stop)
                return
            self._head(fault, len(fault.body))
            self.wfile.write(fault.body)
        except OSError:  # the client gave up (timeout) and hung up: expected here
            self.close_connection = True


    def _stream(self, fault: Fault, stop: threading.Event) -> None:
        self.send_response(fault.status)
        if "content-type" not in {k.lower() for k in fault.headers}:
            self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in fault.headers.items():
            self.send_header(k, v)
        self.end_headers()
        sent = 0
        while sent < fault.total and not stop.is_set():
            piece = fault.body[: fault.total - sent]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
            with self.server.lock:
                self.server.streamed += len(piece)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ScriptedServer(ThreadingHTTPServer):
    """`decide(request) -> Fault` answers every POST; `key(request)` names what `calls` counts
    (request["n"] is the attempt number for that key, 1-based); `on_get`, when given, answers
    every GET instead of the built-in /health and /models/info."""

    daemon_threads = True

    def __init__(self, decide: Callable[[dict], Fault], key: Callable[[dict], Any] | None = None,
                 on_get: Callable[[dict], Fault] | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.decide = decide
        self.on_get = on_get
        self.key = key or (lambda r: (r["body"].get("question"), r["body"].get("method")))
        self.calls: Counter = Counter()
        self.requests: list[dict] = []
        self.streamed = 0  # bytes of "stream" bodies written (see Fault)
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "ScriptedServer":
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


class Script:
    """A queue of faults consumed in order, then a fallback: the judge-side scripting style."""

    def __init__(self, fallback: Callable[[dict], Fault]):
        self.queue: list[Fault] = []
        self.fallback = fallback
        self.lock = threading.Lock()

    def push(self, *faults: Fault) -> None:
        with self.lock:
            self.queue.extend(faults)

    def __call__(self, request: dict) -> Fault:
        with self.lock:
            if self.queue:
                return self.queue.pop(0)
        return self.fallback(request)
