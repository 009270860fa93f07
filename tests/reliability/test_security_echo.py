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

from evalcore.config import EvalConfig
from evalcore.runner import run_evaluation
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
