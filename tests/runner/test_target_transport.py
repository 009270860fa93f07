"""The targets' connections (evalcore/targets/transport.py) keep what the httpx clients they
replaced did: a cookie the target sets comes back to it, a proxy named by the environment is
not used, the request's JSON is the same bytes, Basic credentials from the URL are UTF-8."""

from __future__ import annotations

import asyncio
import base64

import httpx

from evalcore.targets.client import RetryPolicy, TargetClient
from evalcore.targets.fetch import json_body
from evalcore.targets.spec import TargetSpec
from tests.reliability.servers import ScriptedServer, ok_json, rag_answer


def _ask(spec: TargetSpec, questions: list[str]) -> list:
    async def go():
        async with TargetClient(spec, timeout_s=10, concurrency=1, retry=RetryPolicy(retries=1, backoff_s=0.01)) as client:
            return [await client.query(q, f"q{i}", "m", "m", 3) for i, q in enumerate(questions)]

    return asyncio.run(go())


def test_a_cookie_the_target_sets_goes_back_to_it():
    def decide(request):
        reply = rag_answer(request["body"]["question"])
        reply.headers["Set-Cookie"] = "route=node-7; Path=/"
        return reply

    server = ScriptedServer(decide).start()
    try:
        answers = _ask(TargetSpec(url=server.url), ["one", "two"])
    finally:
        server.stop()
    assert [a.error for a in answers] == [None, None]
    assert "cookie" not in server.requests[0]["headers"]
    assert server.requests[1]["headers"]["cookie"] == "route=node-7"


def test_a_proxy_named_by_the_environment_is_not_used(monkeypatch):
    proxy = ScriptedServer(lambda r: ok_json({"answer": "from the proxy"})).start()
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        (answer,) = _ask(TargetSpec(url=server.url), ["one"])
    finally:
        proxy.stop()
        server.stop()
    assert answer.error is None and answer.answer == "answer to one"
    assert proxy.requests == [] and len(server.requests) == 1


def test_the_request_json_is_the_bytes_httpx_wrote():
    value = {"question": "où est-ce ? \u2028 🙂", "top_k": 3, "nested": {"a": [1, 2.5, None, True]}}
    assert json_body(value) == httpx.Request("POST", "http://127.0.0.1/", json=value).content


def test_url_credentials_are_sent_as_utf8_basic_auth_with_the_json_type():
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        url = server.url.replace("http://", "http://us%C3%A9r:p%C3%A4ss@")
        (answer,) = _ask(TargetSpec(url=url), ["où est-ce ?"])
    finally:
        server.stop()
    assert answer.error is None and answer.answer == "answer to où est-ce ?"
    headers = server.requests[0]["headers"]
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Basic " + base64.b64encode("usér:päss".encode()).decode()
    assert headers["authorization"] == httpx.BasicAuth("usér", "päss")._auth_header


def test_header_lines_up_to_16_kb_are_read_and_longer_ones_are_an_error():
    def decide(request):
        reply = rag_answer(request["body"]["question"])
        size = 12_000 if request["body"]["question"] == "long" else 20_000
        reply.headers["X-Trace"] = "t" * size
        return reply

    server = ScriptedServer(decide).start()
    try:
        spec = TargetSpec(url=server.url)
        long, too_long = _ask(spec, ["long", "too long"])
    finally:
        server.stop()
    assert long.error is None and long.answer == "answer to long"  # as h11 took it (its limit: 16 KB)
    assert too_long.error_kind == "error" and "too long" not in (too_long.answer or "")


def test_a_reply_that_is_not_http_is_an_error_quoting_the_url_with_its_secret_masked():
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    secret = "sk-CANARY/secret+value"
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/?api_key={secret.replace('/', '%2F').replace('+', '%2B')}"
    try:
        (answer,) = _ask(TargetSpec(url=url, health_path=None), ["one"])
    finally:
        listener.close()
    assert answer.error_kind == "error" and "api_key=***" in answer.error
    assert "CANARY" not in answer.error
