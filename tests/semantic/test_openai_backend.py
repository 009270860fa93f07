"""The OpenAI-compatible backend against a scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from evalcore.embeddings import get_embedder, reset_embedders
from evalcore.embeddings.openai_compat import EmbeddingServiceError, OpenAICompatibleBackend
from evalcore.errors import EvalcoreError


def vector_for(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)) % 97), 1.0]


class Script:
    """What the server answers: a queue of canned failures, then proper embeddings."""

    def __init__(self):
        self.requests: list[dict] = []
        self.failures: list[tuple[int, str]] = []
        self.malformed = False


def make_handler(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
            if script.failures:
                status, text = script.failures.pop(0)
                return self._send(status, text)
            if script.malformed:
                return self._send(200, json.dumps({"object": "list", "data": [{"nope": 1}]}))
            data = [{"object": "embedding", "index": i, "embedding": vector_for(t)}
                    for i, t in enumerate(body["input"])]
            data.reverse()  # servers may answer out of order: the client must use "index"
            self._send(200, json.dumps({"object": "list", "data": data, "model": body["model"]}))

        def _send(self, status: int, text: str):
            raw = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@pytest.fixture
def server():
    script = Script()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(script))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    script.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield script
    httpd.shutdown()
    httpd.server_close()
    reset_embedders()


def test_vectors_order_auth_and_cache(server, store, monkeypatch):
    monkeypatch.setenv("EVALCORE_EMBEDDING_API_KEY", "sk-test-secret")
    emb = get_embedder(f"tiny-embed@{server.base}/v1", store)
    assert emb.model_id == f"tiny-embed@{server.base}/v1"
    assert "sk-test" not in emb.model_id and "sk-test" not in emb.label
    texts = ["hello", "a longer sentence", "hello", "x"]
    out = emb.encode(texts)
    expected = np.array([vector_for(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert len(server.requests) == 1
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["auth"] == "Bearer sk-test-secret"
    assert request["body"]["model"] == "tiny-embed"
    assert sorted(request["body"]["input"]) == ["a longer sentence", "hello", "x"]  # deduplicated
    emb.encode(["x", "hello"])
    assert len(server.requests) == 1  # cached: no second request
    stored = list(store.shared_dir("embeddings").rglob("*"))
    assert not any(b"sk-test" in p.read_bytes() for p in stored if p.is_file())


def test_batches_and_base_url_without_v1(server, monkeypatch):
    monkeypatch.delenv("EVALCORE_EMBEDDING_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = OpenAICompatibleBackend("m", server.base, batch_size=2)
    out = backend.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert out.shape == (5, 3) and list(out[:, 0]) == [1, 2, 3, 4, 5]
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["path"] == "/v1/embeddings" and r["auth"] is None for r in server.requests)


def test_retries_transient_errors(server):
    server.failures = [(503, "busy"), (429, "slow down")]
    backend = OpenAICompatibleBackend("m", server.base, backoff=0.01)
    assert backend.embed(["retry me"]).shape == (1, 3)
    assert len(server.requests) == 3


def test_clear_errors(server):
    server.failures = [(400, '{"error": "unknown model m"}')]
    with pytest.raises(EmbeddingServiceError, match="HTTP 400.*unknown model"):
        OpenAICompatibleBackend("m", server.base).embed(["x"])
    server.failures = [(503, "down")] * 3
    with pytest.raises(EvalcoreError, match="failed after 3 attempts"):
        OpenAICompatibleBackend("m", server.base, max_retries=2, backoff=0.01).embed(["x"])
    server.malformed = True
    with pytest.raises(EvalcoreError, match="malformed"):
        OpenAICompatibleBackend("m", server.base).embed(["x"])


def test_unreachable_endpoint_is_a_clear_error():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EvalcoreError, match="cannot reach embedding endpoint"):
        OpenAICompatibleBackend("m", f"http://127.0.0.1:{port}").embed(["x"])


def test_a_final_status_outside_2xx_is_an_error_whatever_its_body(server):
    good = json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": vector_for("x")}]})
    for status in (300, 304, 399):
        server.failures = [(status, good)]
        with pytest.raises(EmbeddingServiceError, match=f"HTTP {status}"):
            OpenAICompatibleBackend("m", server.base).embed(["x"])
