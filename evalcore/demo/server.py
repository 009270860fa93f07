"""The demo RAG server: evalcore's default HTTP contract over the packaged corpus.

Standard library only (ThreadingHTTPServer), so `evalcore demo` needs nothing beyond
evalcore itself. It binds 127.0.0.1 and nothing else: it is a local demo, not a service.

Endpoints: GET /health, GET /models/info, GET /index/stats, POST /query
{"question", "method", "top_k"} -> {"answer", "retrieved", "citations", "abstained",
"scope"?, "token_usage", "timings"}. Speaks HTTP/1.1 with keep-alive so a benchmark
measures the client, not TCP handshakes.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evalcore import __version__
from evalcore.demo.corpus import Corpus, default_corpus
from evalcore.demo.methods import RETRIEVERS, SETTINGS, answer_question

HOST = "127.0.0.1"
MAX_BODY = 1 << 20


def index_stats(corpus: Corpus) -> dict[str, Any]:
    """What an indexing-coverage report needs: docs processed/skipped, chunk sizes, versions."""
    sizes = sorted(len(c.text.split()) for c in corpus.chunks)
    p95 = sizes[min(len(sizes) - 1, math.ceil(0.95 * len(sizes)) - 1)] if sizes else 0
    return {
        "docs_processed": len(corpus.docs) + len(corpus.skipped),
        "docs_indexed": len(corpus.docs), "docs_skipped": len(corpus.skipped),
        "zero_chunk_docs": len(corpus.skipped), "chunks": len(corpus.chunks), "chunks_skipped": 0,
        "tokens_per_chunk": {"unit": "words", "min": sizes[0] if sizes else 0,
                             "mean": round(sum(sizes) / len(sizes), 2) if sizes else 0,
                             "p95": p95, "max": sizes[-1] if sizes else 0},
        "doc_types": {"md": len(corpus.docs)},
        "versions": {"chunker": "markdown-h2/1", "embedding": "none (lexical BM25)", "index": "bm25-okapi/1"},
    }


def models_info(ms_per_100_tokens: float, latency_ms: float) -> dict[str, Any]:
    return {
        "server": f"evalcore-demo/{__version__}",
        "llm": {"provider": "none", "model": "demo-extractive-1",
                "note": "extractive: answers are sentences copied from the retrieved context; "
                         "llm_with_context adds an uncited sentence from outside its context when "
                         "the context covers the question poorly (simulated background knowledge)"},
        "embedding_model": None, "reranker_model": None, "retriever": "bm25 (k1=1.2, b=0.75)",
        "methods": {name: vars(SETTINGS[name]) for name in RETRIEVERS},
        "retrieval_top_k": 5,
        "simulated_latency": {"fixed_ms": latency_ms, "generation_ms_per_100_input_tokens": ms_per_100_tokens},
    }


class DemoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "DemoServer"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
        # plus delayed ACKs add ~40 ms to every keep-alive response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the runner has its own progress
        return

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._send(200, {"status": "ok", "documents": len(self.server.corpus.docs)})
        elif path == "/models/info":
            self._send(200, models_info(self.server.ms_per_100_tokens, self.server.latency_ms))
        elif path == "/index/stats":
            self._send(200, index_stats(self.server.corpus))
        else:
            self._send(404, {"error": f"no such endpoint {path}"})

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != "/query":
            self._send(404, {"error": "no such endpoint"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_BODY:
            self._send(400, {"error": "a JSON body is required"})
            return
        try:
            request = json.loads(self.rfile.read(length))
            question = str(request["question"])
            method = str(request.get("method") or "basic_search")
            top_k = int(request.get("top_k") or 5)
        except (ValueError, KeyError, TypeError):
            self._send(400, {"error": "expected {\"question\": str, \"method\"?: str, \"top_k\"?: int}"})
            return
        if method not in RETRIEVERS:
            self._send(400, {"error": f"unknown method {method!r}; known: {', '.join(RETRIEVERS)}"})
            return
        if self.server.latency_ms > 0:
            time.sleep(self.server.latency_ms / 1000.0)
        body = answer_question(self.server.corpus, question, method, max(1, min(top_k, 50)),
                               ms_per_100_tokens=self.server.ms_per_100_tokens)
        self._send(200, body)


class DemoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0, corpus: Corpus | None = None, latency_ms: float = 0.0,
                 ms_per_100_tokens: float = 5.0):
        self.corpus = corpus or default_corpus()
        self.latency_ms = latency_ms
        self.ms_per_100_tokens = ms_per_100_tokens
        super().__init__((HOST, port), DemoHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # a client that timed out and hung up: nothing to report
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}"


def start_in_thread(port: int = 0, **kwargs: Any) -> DemoServer:
    """Start a demo server on 127.0.0.1 (port 0 = a free port) in a daemon thread.
    Stop it with `server.shutdown(); server.server_close()`."""
    server = DemoServer(port, **kwargs)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     name="evalcore-demo-server", daemon=True).start()
    return server


def serve(port: int = 8001, latency_ms: float = 0.0) -> None:
    """Serve in the foreground until Ctrl-C (`evalcore demo-server`)."""
    server = DemoServer(port, latency_ms=latency_ms)
    print(f"evalcore demo RAG server on {server.url}  (methods: {', '.join(RETRIEVERS)}; Ctrl-C stops)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
