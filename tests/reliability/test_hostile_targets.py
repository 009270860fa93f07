"""A target cannot lead the runner astray (issue 22, item 5).

- a redirect to another origin used to be followed with the configured secret header (httpx
  strips only `Authorization`), and the other server's answers were stored as the target's;
  now it is a per-question error naming the new origin, and even with `follow_redirects`
  no configured header, URL credential or URL query parameter crosses to another origin;
- a 301 that would turn the POST into a GET is said so (it used to read "HTTP 404");
- a body without end was read whole: bodies are read up to `max_response_mb`;
- a 1 MB /models/info was copied whole into run.json: the snapshot is capped at 64 KB;
- `rank: Infinity` ended as "unexpected failure: OverflowError";
- a base URL with a query string: its parameters go with every endpoint, after the
  endpoint's own (which httpx used to drop), and the secret among them never reaches disk.

Two servers on 127.0.0.1 on different ports are two origins; no other address is used.
"""

from __future__ import annotations

import json
import logging

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.scoring.queries import run_responses
from evalcore.pipeline import run_evaluation
from evalcore.targets.spec import TargetSpec

from .servers import Fault, ScriptedServer, ok_json, rag_answer
from .test_fuzz_import import figure
from .test_security_secrets import everything_written

KEY = "rk-CANARY-redirect-7d3a"
QUERY_SECRET = "qs-CANARY-basekey-19ab"


def _qfile(tmp_path, n: int = 2):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"question {i}?"}) + "\n" for i in range(n)))
    return path


def _run(store, tmp_path, spec: TargetSpec, **settings):
    config = EvalConfig(target=spec, dataset=str(_qfile(tmp_path)), retries=1, backoff=0.01, score=False,
                        progress=False, **settings)
    result = run_evaluation(config, store)
    return result, run_responses(store, result.run_id)


@pytest.fixture
def two_servers():
    """`home` (the configured target) and `other` (another origin: same address, other port)."""
    other = ScriptedServer(lambda r: ok_json({"answer": "the other server's answer"}),
                           on_get=lambda r: ok_json({"status": "other"})).start()
    home = ScriptedServer(lambda r: rag_answer(r["body"].get("question", "")),
                          on_get=lambda r: ok_json({"status": "ok"})).start()
    yield home, other
    home.stop()
    other.stop()


def _redirect(status: int, location: str) -> Fault:
    return Fault("ok", status, b"", {"Location": location})


@pytest.mark.parametrize("status", [302, 307])
def test_a_cross_origin_redirect_is_an_error_naming_the_origin(two_servers, store, tmp_path, monkeypatch, status):
    home, other = two_servers
    monkeypatch.setenv("RAG_KEY", KEY)
    home.decide = lambda r: _redirect(status, f"{other.url}/query")
    result, responses = _run(store, tmp_path, TargetSpec(url=home.url, headers={"X-Api-Key": "${RAG_KEY}"}))
    assert result.status == "complete"
    assert not other.requests, "the other origin was asked"
    assert len(responses) == 2
    for response in responses:
        assert response.error_kind == "http"
        assert other.url in response.error and "--follow-redirects" in response.error
        assert "other server's answer" not in response.answer
    assert len(home.requests) == 2  # not retried: the next attempt would be redirected the same way


def test_follow_redirects_never_carries_configured_secrets_across(two_servers, store, tmp_path, monkeypatch):
    home, other = two_servers
    monkeypatch.setenv("RAG_KEY", KEY)
    # the cookie jar ignores ports: a cookie home sets would go to the other port if jar-built
    home.decide = lambda r: Fault("ok", 307, b"", {"Location": f"{other.url}/query",
                                                   "Set-Cookie": "session=CANARY-cookie; Path=/"})
    url = f"http://user:pw-CANARY-creds@{home.url.removeprefix('http://')}/?api_key={QUERY_SECRET}&region=eu"
    spec = TargetSpec(url=url, headers={"X-Api-Key": "${RAG_KEY}", "Authorization": "Bearer ${RAG_KEY}",
                                        "X-Team": "evals"})
    result, responses = _run(store, tmp_path, spec, follow_redirects=True)
    assert result.status == "complete"
    assert [r.answer for r in responses] == ["the other server's answer"] * 2  # followed: the user asked for it
    assert [r.raw["answered_by"] for r in responses] == [other.url] * 2  # and the record says who answered
    assert home.requests[0]["headers"]["x-api-key"] == KEY  # the home origin did get the configured headers
    assert QUERY_SECRET in home.requests[0]["path"]
    assert len(other.requests) == 2
    for request in other.requests:
        assert request["body"]["question"].startswith("question")  # a 307 keeps the POST and its body
        sent = json.dumps(request).lower()
        assert KEY.lower() not in sent and "canary" not in sent and "x-team" not in sent
        assert "authorization" not in request["headers"] and "cookie" not in request["headers"]
    assert "CANARY" not in everything_written(store.root)


def test_a_same_origin_redirect_is_followed_with_the_headers(two_servers, store, tmp_path, monkeypatch):
    home, _ = two_servers
    monkeypatch.setenv("RAG_KEY", KEY)

    def decide(request: dict) -> Fault:
        if request["path"] == "/query":
            return _redirect(308, "/v2/query")
        return rag_answer(request["body"]["question"])

    home.decide = decide
    result, responses = _run(store, tmp_path, TargetSpec(url=home.url, headers={"X-Api-Key": "${RAG_KEY}"}))
    assert [r.error for r in responses] == [None, None]
    moved = [r for r in home.requests if r["path"] == "/v2/query"]
    assert len(moved) == 2 and all(r["headers"]["x-api-key"] == KEY for r in moved)


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_turns_the_post_into_a_get_is_reported_as_such(two_servers, store, tmp_path, status):
    home, _ = two_servers
    home.decide = lambda r: _redirect(status, "/v2/query")
    result, responses = _run(store, tmp_path, TargetSpec(url=home.url))
    for error in [r.error for r in responses]:
        assert f"HTTP {status}" in error and "POST" in error and "GET" in error and "/v2/query" in error
        # the GET was never sent, so no 404 of it is reported ("404" alone matched a port like 40477)
        assert "HTTP 404" not in error and "Not Found" not in error
    assert all(r["path"] == "/query" for r in home.requests)  # nothing was sent as a GET instead


def test_a_redirect_loop_ends(two_servers, store, tmp_path):
    home, _ = two_servers
    home.decide = lambda r: _redirect(307, "/query")
    _, responses = _run(store, tmp_path, TargetSpec(url=home.url))
    assert all("redirect" in r.error for r in responses)


def test_a_body_without_end_is_cut_at_the_cap(store, tmp_path):
    total = 64 * 2 ** 20
    server = ScriptedServer(lambda r: Fault("stream", body=b"x" * 65536, total=total)).start()
    try:
        _, responses = _run(store, tmp_path, TargetSpec(url=server.url), max_response_mb=1, concurrency=1)
    finally:
        server.stop()
    assert [r.error_kind for r in responses] == ["malformed"] * 2
    assert all("response larger than 1 MB" in r.error for r in responses)
    assert len(server.requests) == 2  # the same body would come again: not retried
    assert server.streamed < total / 2, server.streamed  # the client stopped reading
    figure("endless_body_mb_sent_before_the_1_mb_cap_stopped_it", round(server.streamed / 2 ** 20, 1))


def test_a_declared_length_over_the_cap_is_refused_before_reading(store, tmp_path):
    server = ScriptedServer(lambda r: Fault("ok", 200, b"{}", {"Content-Length": str(2 ** 40)})).start()
    try:
        _, responses = _run(store, tmp_path, TargetSpec(url=server.url), max_response_mb=1)
    finally:
        server.stop()
    assert all("response larger than 1 MB" in r.error for r in responses)


def test_the_default_cap_is_32_mb():
    assert EvalConfig(target="http://127.0.0.1:1", dataset="q.jsonl").max_response_mb == 32


def test_a_huge_models_info_is_capped_in_the_manifest(store, tmp_path):
    info = {"llm": "big-model-1", "embedding": "e5", "blob": "z" * 2 ** 20,
            **{f"k{i}": i for i in range(20000)}}

    def on_get(request: dict) -> Fault:
        return ok_json(info) if request["path"].startswith("/models/info") else ok_json({"status": "ok"})

    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"]), on_get=on_get).start()
    try:
        result, _ = _run(store, tmp_path, TargetSpec(url=server.url))
    finally:
        server.stop()
    manifest_file = store.root / result.run_id / "run.json"
    assert manifest_file.stat().st_size < 200_000
    snapshot = store.manifest(result.run_id).target_info["models_info"]
    assert len(json.dumps(snapshot)) <= 64 * 1024
    assert snapshot["llm"] == "big-model-1" and snapshot["embedding"] == "e5"
    assert snapshot["blob"].startswith("<left out: ") and "more fields not listed" in snapshot["_truncated"]


def test_a_models_info_over_the_read_cap_is_a_note(store, tmp_path):
    def on_get(request: dict) -> Fault:
        if request["path"].startswith("/models/info"):
            return Fault("stream", body=b"[1," * 20000, total=3 * 2 ** 20)
        return ok_json({"status": "ok"})

    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"]), on_get=on_get).start()
    try:
        result, responses = _run(store, tmp_path, TargetSpec(url=server.url), max_response_mb=1)
    finally:
        server.stop()
    assert [r.error for r in responses] == [None, None]
    info = store.manifest(result.run_id).target_info["models_info"]
    assert info == {"_not_kept": "GET /models/info: response larger than 1 MB"}


@pytest.mark.parametrize("field, value, named", [
    ("rank", "Infinity", "retrieved[0].rank"),
    ("rank", "-Infinity", "retrieved[0].rank"),
    ("rank", "1e300", "retrieved[0].rank"),
    ("score", "NaN", "retrieved[0].score"),
])
def test_a_non_finite_number_is_a_malformed_reply_naming_the_field(store, tmp_path, field, value, named):
    body = ('{"answer": "a", "retrieved": [{"chunk_id": "c1", "text": "t", "' + field + '": ' + value + '}]}')
    server = ScriptedServer(lambda r: Fault("ok", 200, body.encode())).start()
    try:
        _, responses = _run(store, tmp_path, TargetSpec(url=server.url))
    finally:
        server.stop()
    assert len(responses) == 2
    for response in responses:
        assert response.error_kind == "malformed" and named in response.error, response.error
        assert "OverflowError" not in response.error and "unexpected" not in response.error


def test_a_base_url_query_goes_with_every_endpoint_after_its_own(store, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    def on_get(request: dict) -> Fault:
        seen.append(request["path"])
        return ok_json({"status": "ok", "echo": request["path"]})

    server = ScriptedServer(lambda r: ok_json({"answer": f"path {r['path']}"}), on_get=on_get).start()
    try:
        url = f"{server.url}/?api_key={QUERY_SECRET}&region=eu"
        spec = TargetSpec(url=url, health_path="/health?deep=1", query_path="/query?mode=fast&region=us")
        result, responses = _run(store, tmp_path, spec)
    finally:
        server.stop()
    assert [r.error for r in responses] == [None, None]
    assert seen[0] == f"/health?deep=1&api_key={QUERY_SECRET}&region=eu"
    assert "/models/info?api_key=" in seen[1]
    # the endpoint's own parameter wins over the base URL's of the same name
    assert server.requests[0]["path"] == f"/query?mode=fast&region=us&api_key={QUERY_SECRET}"
    written = everything_written(store.root)
    assert QUERY_SECRET not in written and "api_key=***" in written
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "HTTP Request" in logged and QUERY_SECRET not in logged  # httpx logs every URL


def test_the_cli_flag_follows_a_redirect_to_another_origin(two_servers, tmp_path):
    from typer.testing import CliRunner

    from evalcore.cli.main import app

    home, other = two_servers
    home.decide = lambda r: _redirect(307, f"{other.url}/query")
    args = ["--store", str(tmp_path / "runs"), "run", "--target", home.url, "--dataset", str(_qfile(tmp_path)),
            "--no-score", "--no-progress", "--retries", "0"]
    refused = CliRunner().invoke(app, args)
    followed = CliRunner().invoke(app, [*args, "--follow-redirects", "--max-response-mb", "2"])
    # refused: every answer is the cross-origin error, so the run fails as a whole (exit 1) and says why
    assert refused.exit_code == 1 and "another origin" in refused.output, refused.output
    assert followed.exit_code == 0, followed.output
    assert len(other.requests) == 2  # only the second run went there


@pytest.mark.parametrize("field", ["health_path", "query_path", "info_path"])
def test_an_endpoint_path_cannot_name_another_server(field):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="path"):
        TargetSpec(url="http://127.0.0.1:1", **{field: "http://127.0.0.1:2/x"})
