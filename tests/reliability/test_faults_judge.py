"""Faults in flight, judge side: the judge client through the real Anthropic and OpenAI SDKs
against a server that resets, stalls, storms 5xx, rate-limits with Retry-After, truncates
and drips. Each fault is retried and the verdict still arrives; a permanent storm ends as a
reasoned error after exactly `max_attempts` requests; the judge's timeout bounds the whole
request (a drip whose every byte arrives in time must still time out)."""

from __future__ import annotations

import json
import time

import pytest

from evalcore.judges import make_judge
from evalcore.judges.client import JudgeTask

from .servers import Fault, Script, ScriptedServer, api_of, llm_completion

VERDICT = '{"label": "CORRECT", "reason": "same fact"}'
INPUTS = {"question": "Capital of France?", "ground_truth": "Paris", "answer": "Paris"}
TIMEOUT = 0.5
# the fault sequence's good reply must arrive within its timeout on a loaded CI machine (0.5 s
# once did not); stall (2 s) and drip (~6 s) still pass it
SEQUENCE_TIMEOUT = 1.0


def _good(request: dict) -> Fault:
    return llm_completion(api_of(request["path"]), request["body"].get("model", "m"), VERDICT)


@pytest.fixture
def llm(monkeypatch):
    script = Script(_good)
    srv = ScriptedServer(script, key=lambda r: r["path"]).start()
    srv.script = script
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    yield srv
    srv.stop()


def _judge(provider: str, srv: ScriptedServer, store, timeout: float = TIMEOUT, **kw):
    spec = "anthropic:claude-haiku-4-5" if provider == "anthropic" else f"openai:gpt-4o-mini@{srv.url}/v1"
    return make_judge(spec, store=store, timeout=timeout, backoff_base=0.01, **kw)


def _ask(judge, answer: str = "Paris"):
    return judge.run_many([JudgeTask("answer_class", {**INPUTS, "answer": answer}, "r", "m", "q1")])[0]


def _drip_body(provider: str) -> bytes:
    return llm_completion(provider, "m", VERDICT + " " * 200).body


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_each_fault_is_retried_then_the_verdict_arrives(llm, store, provider):
    faults = [Fault("reset"), Fault("stall", seconds=2.0), Fault("ok", 503, b"{}"), Fault("ok", 500, b"{}"),
              Fault("ok", 429, b"{}", {"Retry-After": "1"}),
              Fault("truncate", body=llm_completion(provider, "m", VERDICT).body),
              Fault("drip", body=_drip_body(provider), chunk=4, seconds=0.1)]
    llm.script.push(*faults)
    judge = _judge(provider, llm, store, timeout=SEQUENCE_TIMEOUT, max_attempts=len(faults) + 1)
    t0 = time.monotonic()
    out = _ask(judge)
    elapsed = time.monotonic() - t0
    assert out.error is None and out.output["label"] == "CORRECT"
    assert len(llm.requests) == len(faults) + 1       # one request per fault, then the answer
    call = judge.drain_calls()[0]
    waits = call.request["meta"]["retry_waits"]
    assert len(waits) == len(faults) and waits[4] == 1.0   # Retry-After honoured exactly
    # stall (2 s) and drip (~7 s) each cost one timeout: the gap before the next request is
    # the timeout plus the backoff wait, nothing more
    times = [r["t"] for r in llm.requests]
    for i in (1, 6):
        assert times[i + 1] - times[i] - waits[i] < SEQUENCE_TIMEOUT + 0.3, (i, times, waits)
    print(f"\n[faults/judge:{provider}] {len(faults)} faults, retries seen {len(waits)}, {elapsed:.1f}s")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_drip_alone_times_out_within_the_total_deadline(llm, store, provider):
    """Every byte arrives well within a per-read timeout; only a total deadline catches it."""
    llm.script.fallback = lambda r: Fault("drip", body=_drip_body(provider), chunk=4, seconds=0.1)
    judge = _judge(provider, llm, store, max_attempts=2)
    t0 = time.monotonic()
    out = _ask(judge)
    assert out.output is None and "gave up after 2 attempts" in out.error
    assert time.monotonic() - t0 < 2 * (TIMEOUT + 0.5) + 0.5
    assert len(llm.requests) == 2


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_5xx_storm_ends_as_a_reasoned_error_after_max_attempts(llm, store, provider):
    llm.script.fallback = lambda r: Fault("ok", 502, json.dumps({"error": "storm"}).encode())
    judge = _judge(provider, llm, store, max_attempts=4)
    out = _ask(judge)
    assert out.output is None and "gave up after 4 attempts" in out.error and "502" in out.error
    assert len(llm.requests) == 4
    (call,) = judge.drain_calls()
    assert call.error and len(call.request["meta"]["retry_waits"]) == 3
