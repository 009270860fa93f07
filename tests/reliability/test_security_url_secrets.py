"""Secrets that used to get through (issue 14): escaped echoes, URL credentials, query keys.

- a target echoing its header secret with JSON escapes (`\\/`, `\\uXXXX`) defeated the byte
  scrub: the client now also scrubs every string after decoding;
- `user:pass@` in a target URL made httpx send Basic auth in place of the configured Bearer
  header, and its echo reached run.json;
- `?api_key=...` in a target or judge URL was stored verbatim in run.json, judge requests and
  the cache. URL credentials and secret-looking query values are now secrets: sent, never
  stored, shown as `***`.
"""

from __future__ import annotations

import json

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.pipeline import run_evaluation
from evalcore.schemas import RunManifest
from evalcore.common.secret_urls import public_url, url_secrets
from evalcore.store import FORMAT_VERSION
from evalcore.targets.spec import TargetSpec

from .servers import Fault, ScriptedServer, ok_json
from .test_security_secrets import everything_written

TOKEN = "tok/CANARY-esc-91f2"  # with a '/', which JSON encoders may write as '\\/' 
QUERY_KEY = "qk-CANARY-query-3b7d"
PASSWORD = "pw-CANARY-basic-0c4e"


def _escaped(value: str) -> str:
    """`value` as a JSON string body with every character \\u-escaped (what no byte search finds)."""
    return "".join(f"\\u{ord(c):04x}" for c in value)


def _run(store, tmp_path, url, headers, decide, on_get=None):
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "q1", "question": "who am I?"}) + "\n")
    server = ScriptedServer(decide, on_get=on_get or (lambda r: ok_json({"status": "ok"}))).start()
    try:
        spec = TargetSpec(url=url.replace("SERVER", server.url.removeprefix("http://")), headers=headers)
        config = EvalConfig(target=spec, dataset=str(qfile), retries=1, backoff=0.01, score=False, progress=False)
        result = run_evaluation(config, store)
    finally:
        server.stop()
    return result, server


def test_escaped_echo_of_a_header_secret_is_scrubbed_after_decoding(store, tmp_path, monkeypatch):
    monkeypatch.setenv("ESC_TOKEN_FOR_TEST", TOKEN)

    def decide(request: dict) -> Fault:
        slashed = TOKEN.replace("/", "\\/")
        body = ('{"answer": "token ' + _escaped(TOKEN) + '", "retrieved": [{"chunk_id": "c1", "text": "'
                + slashed + '"}], "debug": {"' + _escaped(TOKEN) + '": "' + json.dumps(TOKEN)[1:-1] + '"}}')
        return Fault("ok", 200, body.encode(), {"Content-Type": "application/json"})

    info = ok_json({"status": "ok"})
    echo_info = lambda r: Fault("ok", 200, ('{"auth": "' + _escaped(TOKEN) + '"}').encode())  # noqa: E731
    result, server = _run(store, tmp_path, "http://SERVER", {"X-Api-Key": "${ESC_TOKEN_FOR_TEST}"}, decide,
                          on_get=lambda r: echo_info(r) if "info" in r["path"] or "health" in r["path"] else info)
    assert result.status == "complete"
    written = everything_written(store.root)
    assert "[redacted]" in written
    for form in ("CANARY", _escaped(TOKEN)):
        assert form not in written


def test_url_credentials_never_override_the_configured_authorization(store, tmp_path, monkeypatch):
    monkeypatch.setenv("BEARER_FOR_TEST", "bearer-CANARY-value-55")
    result, server = _run(
        store, tmp_path, f"http://evaluser:{PASSWORD}@SERVER",
        {"Authorization": "Bearer ${BEARER_FOR_TEST}"},
        lambda r: ok_json({"answer": f"you sent {r['headers'].get('authorization')}"}),
        on_get=lambda r: ok_json({"status": "ok", "headers": r["headers"]}))
    assert result.status == "complete"
    sent = [r["headers"].get("authorization") for r in server.requests]
    assert sent and all(a == "Bearer bearer-CANARY-value-55" for a in sent)
    written = everything_written(store.root)
    assert "CANARY" not in written and PASSWORD not in written
    assert store.manifest(result.run_id).config["targets"]["default"]["url"].startswith("http://***@")


def test_url_credentials_alone_become_basic_auth(store, tmp_path):
    result, server = _run(store, tmp_path, f"http://evaluser:{PASSWORD}@SERVER", {},
                          lambda r: ok_json({"answer": f"you sent {r['headers'].get('authorization')}"}))
    assert result.status == "complete"
    (basic,) = url_secrets(f"http://evaluser:{PASSWORD}@h") - {"evaluser", PASSWORD}
    assert server.requests[0]["headers"]["authorization"] == f"Basic {basic}"
    written = everything_written(store.root)
    assert basic not in written and PASSWORD not in written and "you sent Basic [redacted]" in written


def test_secret_query_parameters_are_sent_but_stored_as_stars(store, tmp_path):
    result, server = _run(store, tmp_path, f"http://SERVER/rag?api_key={QUERY_KEY}&region=eu", {},
                          lambda r: ok_json({"answer": f"path was {r['path']}"}))
    assert result.status == "complete"
    assert server.requests[0]["path"].startswith("/rag/query?") and f"api_key={QUERY_KEY}" in server.requests[0]["path"]
    written = everything_written(store.root)
    assert QUERY_KEY not in written and "CANARY" not in written
    url = store.manifest(result.run_id).config["targets"]["default"]["url"]
    assert url.endswith("/rag?api_key=***&region=eu")


@pytest.mark.parametrize("url, shown", [
    ("http://u:p4ssword@h:1/x?token=abc123&top_k=5", "http://***@h:1/x?token=***&top_k=5"),
    ("https://h/v1?sig=zzz&api-version=2024", "https://h/v1?sig=***&api-version=2024"),
    ("http://h/plain", "http://h/plain"),
])
def test_public_url_masks_credentials_and_secret_params(url, shown):
    assert public_url(url) == shown


def test_judge_url_query_key_is_not_stored(store, monkeypatch):
    from evalcore.judges import make_judge
    from evalcore.judges.client import JudgeTask

    from .servers import Script, api_of, llm_completion

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = []

    def reply(request: dict) -> Fault:
        seen.append(request["path"])
        return llm_completion(api_of(request["path"].split("?")[0]), "m",
                              json.dumps({"label": "CORRECT", "reason": f"path {request['path']}"}))

    server = ScriptedServer(Script(reply), key=lambda r: r["path"]).start()
    try:
        judge = make_judge(f"openai:gpt-4o-mini@{server.url}/v1?api_key={QUERY_KEY}", store=store,
                           backoff_base=0.01, max_attempts=1)
        (out,) = judge.run_many([JudgeTask("answer_class", {"question": "Q?", "ground_truth": "Paris",
                                                            "answer": "Paris"}, "r", "m", "Paris")])
        assert out.output and out.output["label"] == "CORRECT"
        writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r", name="r",
                                              evalcore_version="t", methods=["m"]))
        writer.write_judge_calls(judge.drain_calls())
    finally:
        server.stop()
    assert seen and seen[0].startswith("/v1/chat/completions?") and QUERY_KEY in seen[0]
    written = everything_written(store.root)
    assert QUERY_KEY not in written and "api_key=***" in written
