"""Structured outputs (issue 15 item 4): both providers are asked for a reply constrained to
the task's JSON schema; a model that refuses one is learnt once per judge and then answered
in free text with the parse-and-repair path. Every stored call says which mode it used."""

from __future__ import annotations

import json

from evalcore.judges import make_judge
from evalcore.judges.client import JudgeTask
from evalcore.judges.tasks import get_task

from .conftest import openai_error

INPUTS = {"question": "Capital of France?", "ground_truth": "Paris", "answer": "Paris"}
VERDICT = json.dumps({"label": "CORRECT", "reason": "same"})


def _tasks(n):
    return [JudgeTask("answer_class", {**INPUTS, "answer": f"Paris {i}"}, "r", "m", f"q{i}") for i in range(n)]


def test_anthropic_request_carries_the_task_schema(anthropic_env, store):
    anthropic_env.responder = lambda body, api: {"text": VERDICT}
    judge = make_judge("anthropic:claude-haiku-4-5", store=store)
    (out,) = judge.run_many(_tasks(1))
    assert out.output == {"label": "CORRECT", "reason": "same"}
    body = anthropic_env.requests[0]["body"]
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": get_task("answer_class").schema()}}
    schema = body["output_config"]["format"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["label", "reason"]
    (call,) = judge.drain_calls()
    assert call.request["meta"]["output_mode"] == "schema"


def test_openai_request_carries_a_strict_json_schema(llm_server, store):
    llm_server.responder = lambda body, api: {"text": VERDICT}
    judge = make_judge(f"openai:gpt-4o-mini@{llm_server.url}/v1", store=store)
    judge.run_many(_tasks(1))
    fmt = llm_server.requests[0]["body"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "answer_class"
    assert fmt["json_schema"]["schema"] == get_task("answer_class").schema()


def test_a_refused_schema_is_learnt_once_and_calls_say_text(anthropic_env, store):
    refusal = {"status": 400, "error": {"type": "invalid_request_error",
                                        "message": "output_config.format: structured outputs are not supported "
                                                   "for this model"}}
    anthropic_env.push(refusal)
    anthropic_env.responder = lambda body, api: {"text": VERDICT}
    judge = make_judge("anthropic:claude-3-haiku", store=store, concurrency=1)
    outs = judge.run_many(_tasks(3))
    assert all(o.error is None for o in outs)
    bodies = [r["body"] for r in anthropic_env.requests]
    assert len(bodies) == 4 and "output_config" in bodies[0]
    assert not any("output_config" in b for b in bodies[1:])  # learnt: later calls go out without it
    calls = sorted(judge.drain_calls(), key=lambda c: c.question_id)
    assert [c.request["meta"]["output_mode"] for c in calls] == ["text"] * 3
    assert "output_config" in calls[0].request["meta"]["param_rejections"][0]
    assert all(c.error is None for c in calls)


def test_openai_refused_schema_falls_back_to_text(llm_server, store):
    llm_server.push(openai_error("response_format", "unsupported_parameter",
                                 "Invalid parameter: 'response_format' of type 'json_schema' is not supported"))
    llm_server.responder = lambda body, api: {"text": VERDICT}
    judge = make_judge(f"openai:local-model@{llm_server.url}/v1", store=store, concurrency=1)
    outs = judge.run_many(_tasks(2))
    assert all(o.error is None for o in outs) and llm_server.count() == 3
    assert "response_format" not in llm_server.requests[2]["body"]


def test_other_400s_are_not_mistaken_for_a_schema_refusal(llm_server, store):
    llm_server.push(openai_error("messages", "invalid_value", "messages must not be empty"))
    judge = make_judge(f"openai:gpt-4o-mini@{llm_server.url}/v1", store=store, max_attempts=1)
    (out,) = judge.run_many(_tasks(1))
    assert out.error and "HTTP 400" in out.error and llm_server.count() == 1


def test_structured_outputs_can_be_switched_off(llm_server, store, monkeypatch):
    monkeypatch.setenv("EVALCORE_JUDGE_STRUCTURED", "0")
    llm_server.responder = lambda body, api: {"text": VERDICT}
    judge = make_judge(f"openai:gpt-4o-mini@{llm_server.url}/v1", store=store)
    judge.run_many(_tasks(1))
    assert "response_format" not in llm_server.requests[0]["body"]
    assert judge.drain_calls()[0].request["meta"]["output_mode"] == "text"
