"""Replies a hostile tester found to escape the runner's classification (session 9, after the
targets moved to aiohttp), each as a class of replies:

- a final status outside 2xx that is not a redirect it follows (300, 304, 399, a 301 without a
  Location) is an `http` error, never an answer, however good its body looks;
- a Retry-After no date can hold (a year past 9999, digits without end) is ignored, not an
  exception out of the question;
- a redirect whose Location carries credentials (`user:pw@`) is followed without them, to the
  same origin or, with follow_redirects, to another: no server-chosen credential is sent, and
  the question does not fail with the client library's complaint about them;
- the same on the health check: a ready target, not an unexpected error.
Servers bind 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from evalcore.targets.client import RetryPolicy, TargetClient, retry_after_s
from evalcore.targets.spec import TargetSpec

from .servers import Fault, ScriptedServer, ok_json, rag_answer

GOOD = {"answer": "a fine answer", "retrieved": [{"chunk_id": "c1", "text": "t", "score": 1.0}]}


def _ask(spec: TargetSpec, n: int = 1, follow_redirects: bool = False):
    async def go():
        async with TargetClient(spec, timeout_s=5, concurrency=1, follow_redirects=follow_redirects,
                                retry=RetryPolicy(retries=1, backoff_s=0.01)) as client:
            await client.health()
            return [await client.query(f"q{i}", f"q{i}", "m", "m", 3) for i in range(n)]

    return asyncio.run(go())


@pytest.mark.parametrize("status, headers", [(300, {}), (301, {}), (304, {}), (399, {}), (308, {"Location": ""})])
def test_a_final_status_outside_2xx_is_an_http_error_whatever_its_body(status, headers):
    server = ScriptedServer(lambda r: ok_json(GOOD, status=status, headers=headers)).start()
    try:
        (answer,) = _ask(TargetSpec(url=server.url))
    finally:
        server.stop()
    assert answer.error_kind == "http" and f"HTTP {status}" in answer.error
    assert len(server.requests) == 1  # the same reply would come again: not retried


@pytest.mark.parametrize("value", ["Fri, 31 Dec 99999999999999999999 23:59:59 GMT", "Fri, 31 Dec 10000 23:59:59 GMT",
                                   "9" * 400, "1e400", "-1e400", "nan", ""])
def test_a_retry_after_no_date_can_hold_is_ignored_or_capped(value):
    seconds = retry_after_s(value)
    assert seconds is None or seconds >= 0.0


def test_a_503_with_an_impossible_retry_after_date_is_retried_then_answered():
    def decide(request):
        if request["n"] == 1:
            return ok_json({"e": 1}, status=503, headers={"Retry-After": "Fri, 31 Dec 99999999999999999999 23:59:59 GMT"})
        return rag_answer(request["body"]["question"])

    server = ScriptedServer(decide).start()
    try:
        (answer,) = _ask(TargetSpec(url=server.url))
    finally:
        server.stop()
    assert answer.error is None and answer.raw["attempts"] == 2


def _authorizations(server: ScriptedServer) -> list[str]:
    return [r["headers"].get("authorization", "") for r in server.requests]


def test_a_same_origin_redirect_with_credentials_in_its_location_is_followed_without_them():
    def decide(request):
        if request["path"].startswith("/final"):
            return rag_answer(request["body"]["question"])
        return Fault("ok", 307, b"", {"Location": f"http://evil:pw-CANARY@{server.url.removeprefix('http://')}/final"})

    server = ScriptedServer(decide).start()
    try:
        url = server.url.replace("http://", "http://alice:pw-mine@")
        answers = _ask(TargetSpec(url=url), n=2)
    finally:
        server.stop()
    assert [a.error for a in answers] == [None, None]
    mine = "Basic " + base64.b64encode(b"alice:pw-mine").decode()
    assert set(_authorizations(server)) == {mine}  # the configured credentials, never the Location's


def test_a_redirect_to_another_origin_with_credentials_goes_there_bare():
    other = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    home = ScriptedServer(lambda r: Fault("ok", 307, b"", {"Location": f"http://evil:pw-CANARY@"
                                                                       f"{other.url.removeprefix('http://')}/q"})).start()
    try:
        (answer,) = _ask(TargetSpec(url=home.url.replace("http://", "http://alice:pw-mine@")), follow_redirects=True)
    finally:
        home.stop()
        other.stop()
    assert answer.error is None and answer.raw["answered_by"] == other.url
    assert _authorizations(other) == [""]


def test_a_health_check_redirected_with_credentials_in_its_location_is_a_ready_target():
    def on_get(request):
        if request["path"] == "/health":
            return Fault("ok", 307, b"", {"Location": f"http://evil:pw-CANARY@{server.url.removeprefix('http://')}/ok"})
        return ok_json({"status": "ok"})

    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"]), on_get=on_get).start()
    try:
        (answer,) = _ask(TargetSpec(url=server.url.replace("http://", "http://alice:pw-mine@")))
    finally:
        server.stop()
    assert answer.error is None
