"""A scripted faulty RAG server on 127.0.0.1 for the runner tests.

Behaviour is chosen per question by a marker in the question text, so one server covers every
failure class and the tests can count exactly how often each question was asked:

  FLAKY      HTTP 500 on the first two attempts, then a valid answer
  BROKEN     HTTP 500 always
  TRUNC      a truncated JSON body (valid Content-Length, invalid JSON) always
  SLOW       sleeps `stall_s` before answering (past the client's timeout)
  RESET      closes the connection without any response, always
  EMPTY      a valid response with an empty answer
  BADRANK    a ranking that lists the same chunk twice (does not fit the contract)
  COIN       a valid answer that alternates: "heads" on the 1st, 3rd... asking, "tails" on the others
             (a system that samples, for repeated trials)
  anything else: a valid answer echoing the question
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "FaultyServer"

    def log_message(self, *args) -> None:
        return

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, b'{"status": "ok"}')
        elif self.path == "/models/info":
            self._send(200, json.dumps({"llm": "faulty-1"}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["question"]
        with self.server.lock:
            self.server.calls[(question, body.get("method"))] += 1
            n = self.server.calls[(question, body.get("method"))]
            self.server.headers_seen.append(dict(self.headers))
        if "FLAKY" in question and n <= 2:
            self._send(500, b'{"error": "warming up"}')
        elif "BROKEN" in question:
            self._send(500, b'{"error": "always broken"}')
        elif "TRUNC" in question:
            self._send(200, b'{"answer": "half an ans')
        elif "SLOW" in question:
            time.sleep(self.server.stall_s)
            self._send(200, b'{"answer": "too late"}')
        elif "RESET" in question:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif "COIN" in question:
            self._send(200, json.dumps({"answer": "heads" if n % 2 else "tails"}).encode())
        elif "EMPTY" in question:
            self._send(200, b'{"answer": "", "retrieved": []}')
        elif "BADRANK" in question:
            self._send(200, json.dumps({"answer": "x", "retrieved": [{"chunk_id": "a", "text": "t"},
                                                                     {"chunk_id": "a", "text": "t"}]}).encode())
        else:
            if self.server.delay_s:
                time.sleep(self.server.delay_s)
            self._send(200, json.dumps({
                "answer": f"answer to {question}",
                "retrieved": [{"chunk_id": f"c-{abs(hash(question)) % 97}", "text": question, "score": 1.0}],
                "citations": [f"c-{abs(hash(question)) % 97}"],
                "token_usage": {"input_tokens": 10, "output_tokens": 3}}).encode())


class FaultyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, stall_s: float = 3.0, delay_s: float = 0.0):
        super().__init__(("127.0.0.1", 0), FaultyHandler)
        self.calls: Counter = Counter()
        self.headers_seen: list[dict] = []
        self.lock = threading.Lock()
        self.stall_s = stall_s
        self.delay_s = delay_s

    def handle_error(self, request, client_address) -> None:
        return  # stalled requests whose client gave up end in BrokenPipe: expected here

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "FaultyServer":
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


import pytest  # noqa: E402


@pytest.fixture
def faulty():
    server = FaultyServer(stall_s=3.0).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def demo_server():
    from evalcore.demo.server import start_in_thread

    server = start_in_thread(0)
    yield server
    server.shutdown()
    server.server_close()


def write_questions(path, texts):
    """A native JSONL question file: ids q1..qn with the given texts."""
    with open(path, "w", encoding="utf-8") as fh:
        for i, text in enumerate(texts, start=1):
            fh.write(json.dumps({"id": f"q{i}", "question": text, "ground_truth": "x"}) + "\n")
    return path


@pytest.fixture
def question_file(tmp_path):
    return lambda texts: write_questions(tmp_path / "questions.jsonl", texts)
