"""A target that echoes secrets back cannot get them stored.

Header secrets are sent (they must be), and some servers send them back: an error page or a
debugging proxy that prints the request headers, an info endpoint that dumps its auth
context, an answer that quotes the token. Everything the run stores comes from those bytes
(answers, raw payloads, errors, the manifest's target_info), so the client scrubs every
secret it sent before parsing. URL credentials (user:password@) are secrets too, also in
the message of a target that cannot be reached.
"""

from __future__ import annotations

import json
import socket

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.pipeline import run_evaluation
from evalcore.schemas import RunManifest
from evalcore.store import FORMAT_VERSION
from evalcore.targets import TargetUnavailable
from evalcore.targets.spec import TargetSpec

from .servers import Fault, ScriptedServer, ok_json
from .test_security_secrets import everything_written

TOKEN = "tok-CANARY-echo-5e21"
PASSWORD = "pw-CANARY-url-77a0"


def _echo_post(request: dict) -> Fault:
    seen = json.dumps(request["headers"])
    if request["n"] == 1:  # an error page that prints the request headers
        return Fault("ok", 500, f"upstream failed; request headers were {seen}".encode())
    return ok_json({"answer": f"I was called with {request['headers'].get('x-api-key')}",
                    "retrieved": [{"chunk_id": "c1", "text": seen}], "debug": request["headers"]})


def test_secrets_echoed_by_the_target_are_not_stored(store, tmp_path, monkeypatch):
    monkeypatch.setenv("ECHO_TOKEN_FOR_TEST", TOKEN)
    server = ScriptedServer(_echo_post, on_get=lambda r: ok_json({"status": "ok", "headers": r["headers"]})).start()
    try:
        url = server.url.replace("http://", f"http://evaluser:{PASSWORD}@")
        spec = TargetSpec(url=url, headers={"X-Api-Key": "${ECHO_TOKEN_FOR_TEST}",
                                            "Authorization": "Bearer ${ECHO_TOKEN_FOR_TEST}"})
        qfile = tmp_path / "q.jsonl"
        qfile.write_text(json.dumps({"id": "q1", "question": "who am I?"}) + "\n")
        config = EvalConfig(target=spec, dataset=str(qfile), retries=2, backoff=0.01, score=False,
                            progress=False)
        result = run_evaluation(config, store)
    finally:
        server.stop()
    assert result.status == "complete"
    assert server.requests[0]["headers"]["x-api-key"] == TOKEN  # the secret did go out...
    written = everything_written(store.root)
    assert "[redacted]" in written                                 # ...and came back, scrubbed
    for canary in (TOKEN, PASSWORD, "CANARY"):
        assert canary not in written


def test_unreachable_target_message_hides_url_credentials(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "q1", "question": "q"}) + "\n")
    config = EvalConfig(target=f"http://evaluser:{PASSWORD}@127.0.0.1:{port}", dataset=str(qfile),
                        timeout=1, score=False, progress=False)
    with pytest.raises(TargetUnavailable) as info:
        run_evaluation(config, tmp_path / "runs")
    assert PASSWORD not in str(info.value) and f"127.0.0.1:{port}" in str(info.value)


def test_judge_url_with_credentials_is_refused_without_quoting_them():
    """The judge side refuses credentials in its URL, and its message does not repeat them."""
    from evalcore.errors import EvalcoreError
    from evalcore.judges import make_judge

    with pytest.raises(EvalcoreError) as info:
        make_judge(f"openai:m@http://u:{PASSWORD}@127.0.0.1:9/v1")
    assert PASSWORD not in str(info.value)


def test_a_judge_server_echoing_the_api_key_gets_it_scrubbed(store, monkeypatch):
    """Error bodies and replies that quote the key end up in judge_calls and the cache: scrubbed."""
    from evalcore.judges import make_judge
    from evalcore.judges.client import JudgeTask

    from .servers import Script, api_of, llm_completion

    key = "sk-CANARY-judge-echo-" + "x" * 300  # longer than any error-body cut
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def echo(request: dict) -> Fault:
        auth = request["headers"].get("authorization", "")
        verdict = json.dumps({"label": "WRONG", "reason": f"called with {auth}"})
        return llm_completion(api_of(request["path"]), "m", verdict)

    script = Script(echo)
    storm = Fault("ok", 500, ("x" * 250 + " bad key " + key).encode())  # a 300-char cut lands mid-key
    script.push(storm, storm, Fault("ok", 401, json.dumps({"error": {"message": f"invalid key {key}"}}).encode()))
    server = ScriptedServer(script, key=lambda r: r["path"]).start()
    try:
        judge = make_judge(f"openai:gpt-4o-mini@{server.url}/v1", store=store, backoff_base=0.01, max_attempts=2)
        inputs = {"question": "Q?", "ground_truth": "Paris", "answer": "Lyon"}
        outs = [judge.run_many([JudgeTask("answer_class", {**inputs, "answer": a}, "r", "m", a)])[0]
                for a in ("Lyon", "Rome", "Nice")]
        assert "gave up after 2 attempts" in outs[0].error and "HTTP 401" in outs[1].error
        assert outs[2].output["label"] == "WRONG"
        writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r", name="r",
                                              evalcore_version="t", methods=["m"]))
        writer.write_judge_calls(judge.drain_calls())
    finally:
        server.stop()
    assert any(key in r["headers"].get("authorization", "") for r in server.requests)
    written = everything_written(store.root)
    assert "[redacted]" in written and "called with Bearer" in written
    assert "CANARY" not in written and not any("CANARY" in (o.error or "") for o in outs)
