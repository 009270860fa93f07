"""OpenAI reasoning models and servers that refuse `max_tokens` or `temperature`.

The scripted server answers the way OpenAI does (HTTP 400, error body naming the parameter),
so the real SDK path runs: what the backend sends, how it adapts, and what the judge records.
"""

import json
import logging

import pytest

from evalcore.judges import make_judge
from evalcore.judges.backends import REASONING_ALLOWANCE, is_reasoning_model
from evalcore.judges.client import JudgeTask

from .conftest import CANARY_OPENAI, openai_error

VERDICT = json.dumps({"label": "CORRECT", "reason": "same"})
MAX_TOKENS_MSG = "Unsupported parameter: 'max_tokens' is not supported with this model. " \
                 "Use 'max_completion_tokens' instead."
TEMPERATURE_MSG = "Unsupported value: 'temperature' does not support 0.0 with this model. " \
                  "Only the default (1) value is supported."
REJECTIONS = {
    "max_tokens": openai_error("max_tokens", "unsupported_parameter", MAX_TOKENS_MSG),
    "temperature": openai_error("temperature", "unsupported_value", TEMPERATURE_MSG),
    "max_completion_tokens": openai_error("max_completion_tokens", "unsupported_parameter",
                                          "Unsupported parameter: 'max_completion_tokens'."),
}


def _inputs(i: int) -> dict:
    return {"question": "Capital of France?", "ground_truth": "Paris", "answer": f"Paris ({i})"}


def _tasks(n: int) -> list[JudgeTask]:
    return [JudgeTask("answer_class", _inputs(i), "run1", "m", f"q{i}") for i in range(n)]


def _judge(server, model, store, **kw):
    return make_judge(f"openai:{model}@{server.url}/v1", store=store, backoff_base=0.01, **kw)


def _refusing(*params: str):
    """A server that refuses the given parameters the way OpenAI does, and else replies."""
    def respond(body: dict, api: str) -> dict:
        for name in params:
            if name in body:
                return REJECTIONS[name]
        return {"text": VERDICT}
    return respond


@pytest.fixture
def server(llm_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    return llm_server


def _bodies(server) -> list[dict]:
    return [r["body"] for r in server.requests]


@pytest.mark.parametrize("name", ["o1", "o1-mini", "o3", "o3-mini", "o4-mini", "o3-pro-2025-06-10", "gpt-5",
                                  "gpt-5-mini", "gpt-5.1", "gpt-5.2-pro", "GPT-5-nano", "openai/o3"])
def test_reasoning_names(name):
    assert is_reasoning_model(name)


@pytest.mark.parametrize("name", ["gpt-4o", "gpt-4.1-mini", "gpt-50", "olmo-2", "llama3.1", "omni-7b", "o",
                                  "my-o3-deployment", "qwen2.5:7b"])
def test_other_names(name):
    assert not is_reasoning_model(name)


@pytest.mark.parametrize("model", ["o4-mini", "gpt-5-mini"])
def test_reasoning_model_gets_max_completion_tokens_and_no_temperature_at_once(server, store, model):
    server.responder = _refusing("max_tokens", "temperature")
    judge = _judge(server, model, store)
    out = judge.run_many(_tasks(1))[0]
    assert out.error is None and out.output["label"] == "CORRECT"
    assert server.count() == 1
    body = server.requests[0]["body"]
    assert "max_tokens" not in body and "temperature" not in body
    assert body["max_completion_tokens"] == 300 + REASONING_ALLOWANCE  # reply limit + room to reason
    call = judge.drain_calls()[0]
    assert call.judge_id.temperature is None and judge.temperature is None
    assert call.request["params"] == body
    assert "params_adapted" not in call.request["meta"]


def test_rejected_max_tokens_is_resent_once_then_remembered(server, store, caplog):
    server.responder = _refusing("max_tokens")
    judge = _judge(server, "my-deployment", store, concurrency=1)
    with caplog.at_level(logging.WARNING, logger="evalcore.judges.backends"):
        outs = judge.run_many(_tasks(3))
    assert all(o.error is None and o.output["label"] == "CORRECT" for o in outs)
    bodies = _bodies(server)
    assert len(bodies) == 4  # one refused request, then three that went out right
    assert "max_tokens" in bodies[0] and "max_completion_tokens" not in bodies[0]
    for body in bodies[1:]:
        assert "max_tokens" not in body and body["max_completion_tokens"] == 300 + REASONING_ALLOWANCE
        assert body["temperature"] == 0
    first, *later = judge.drain_calls()
    assert first.error is None and judge.live_calls == 3
    assert first.request["params"] == bodies[1]  # the stored request is the one that got the reply
    assert first.request["meta"]["param_rejections"][0].startswith("HTTP 400 rejected max_tokens")
    assert first.request["meta"]["params_adapted"] == \
        ["the server rejects max_tokens for this model: max_completion_tokens is sent instead"]
    assert [c.request["params"] for c in later] == bodies[2:]
    assert all("param_rejections" not in c.request["meta"] for c in later)
    assert all(c.judge_id.temperature == 0.0 for c in [first, *later])
    assert sum("rejects max_tokens" in r.getMessage() for r in caplog.records) == 1


def test_rejected_temperature_is_dropped_and_recorded_as_none(server, store):
    server.responder = _refusing("temperature")
    judge = _judge(server, "my-deployment", store, concurrency=1)
    assert judge.temperature == 0.0
    outs = judge.run_many(_tasks(2))
    assert all(o.error is None for o in outs)
    bodies = _bodies(server)
    assert len(bodies) == 3 and bodies[0]["temperature"] == 0
    assert all("temperature" not in b and b["max_tokens"] == 300 for b in bodies[1:])
    calls = judge.drain_calls()
    assert [c.judge_id.temperature for c in calls] == [None, None] and judge.temperature is None
    assert "temperature" not in calls[0].request["params"]


def test_both_refused_costs_two_rejections_once(server, store):
    server.responder = _refusing("max_tokens", "temperature")
    judge = _judge(server, "reasoner-behind-a-proxy", store, concurrency=1)
    assert all(o.error is None for o in judge.run_many(_tasks(2)))
    bodies = _bodies(server)
    assert len(bodies) == 4
    assert {k for k in bodies[2] if k != "messages"} == {"model", "max_completion_tokens", "response_format"} == \
        {k for k in bodies[3] if k != "messages"}
    assert len(judge.drain_calls()[0].request["meta"]["param_rejections"]) == 2


def test_rejection_named_only_in_the_message_is_understood(server, store):
    server.push({"status": 400, "error": {"message": MAX_TOKENS_MSG, "code": "invalid_request_body"}})
    server.responder = _refusing()
    out = _judge(server, "proxied", store).run_many(_tasks(1))[0]
    assert out.error is None and server.count() == 2
    assert "max_completion_tokens" in server.requests[1]["body"]


def test_adaptation_does_not_use_the_transient_retry_budget(server, store):
    server.push(REJECTIONS["max_tokens"], {"status": 429, "headers": {"Retry-After": "0"}}, {"text": VERDICT})
    judge = _judge(server, "my-deployment", store, max_attempts=2)
    out = judge.run_many(_tasks(1))[0]
    assert out.error is None and server.count() == 3
    assert "max_completion_tokens" in server.requests[2]["body"]  # the retry after 429 was adapted too
    call = judge.drain_calls()[0]
    assert call.request["meta"]["retry_waits"] == [0.0] and "max_completion_tokens" in call.request["params"]


@pytest.mark.parametrize("action", [
    openai_error("messages[0].role", "unsupported_value", "Unsupported value: 'messages[0].role' ..."),
    openai_error("max_tokens", "invalid_value", "max_tokens is too large: 300000. This model supports at most "
                 "16384 completion tokens, whereas you provided 300000."),
    openai_error(None, None, "Invalid request."),
])
def test_other_400s_stay_errors(server, store, action):
    server.push(action)
    judge = _judge(server, "gpt-4o", store)
    out = judge.run_many(_tasks(1))[0]
    assert out.output is None and "HTTP 400" in out.error
    assert server.count() == 1
    assert "max_tokens" not in judge.backend.rejected


def test_refusing_the_replacement_too_is_an_error_not_a_loop(server, store):
    server.responder = _refusing("max_tokens", "max_completion_tokens")
    judge = _judge(server, "odd-server", store)
    out = judge.run_many(_tasks(1))[0]
    assert out.output is None and "HTTP 400" in out.error and "max_completion_tokens" in out.error
    assert server.count() == 2
    call = judge.drain_calls()[0]
    assert call.error and call.response_raw is None


def test_concurrent_requests_all_adapt(server, store):
    server.responder = _refusing("max_tokens")
    judge = _judge(server, "my-deployment", store, concurrency=4)
    outs = judge.run_many(_tasks(8))
    assert all(o.error is None for o in outs)
    refused = [b for b in _bodies(server) if "max_tokens" in b]
    assert 1 <= len(refused) <= 4  # at most the requests already in flight pay a refusal
    assert server.count() == 8 + len(refused)
    assert all("max_completion_tokens" in c.request["params"] for c in judge.drain_calls())


def test_rerun_hits_the_cache_and_keeps_the_sent_params(server, store):
    server.responder = _refusing("temperature")
    _judge(server, "my-deployment", store, concurrency=1).run_many(_tasks(2))
    sent = _bodies(server)[1:]
    again = _judge(server, "my-deployment", store)
    outs = again.run_many(_tasks(2))
    assert server.count() == 3  # a fresh judge makes no request at all
    assert all(o.output["label"] == "CORRECT" for o in outs)
    calls = again.drain_calls()
    assert all(c.cache_hit for c in calls)
    assert [c.request["params"] for c in calls] == sent
    assert all(c.judge_id.temperature is None and c.request["meta"]["params_adapted"] for c in calls)


def test_reasoning_allowance_can_be_set_and_is_validated(server, store, monkeypatch):
    from evalcore.errors import EvalcoreError

    monkeypatch.setenv("EVALCORE_REASONING_TOKENS", "2000")
    server.responder = _refusing("max_tokens", "temperature")
    judge = _judge(server, "o3", store)
    assert judge.run_many(_tasks(1))[0].error is None
    assert server.requests[0]["body"]["max_completion_tokens"] == 300 + 2000
    monkeypatch.setenv("EVALCORE_REASONING_TOKENS", "lots")
    with pytest.raises(EvalcoreError, match="EVALCORE_REASONING_TOKENS"):
        _judge(server, "o3", store).backend.params("s", [], 10)
