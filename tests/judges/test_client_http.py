"""The judge client over real HTTP (official SDKs) against the scripted server."""

import asyncio
import json
import math
import threading
from pathlib import Path

import pytest

from evalcore.judges import make_judge
from evalcore.judges.client import JudgeTask
from tests.optional import requires

from .conftest import CANARY_ANTHROPIC, CANARY_OPENAI

CLASS_INPUTS = {"question": "Capital of France?", "ground_truth": "Paris", "answer": "Paris"}


def _one(judge, inputs=CLASS_INPUTS, task="answer_class"):
    return judge.run_many([JudgeTask(task, inputs, "run1", "m", "q1")])[0]


def test_anthropic_request_shape_and_reply(anthropic_env, store):
    anthropic_env.push({"text": '{"label": "CORRECT", "reason": "same"}'})
    judge = make_judge("anthropic:claude-haiku-4-5-20251001", store=store)
    out = _one(judge)
    assert out.error is None and out.output == {"label": "CORRECT", "reason": "same"}
    req = anthropic_env.requests[0]
    assert req["path"] == "/v1/messages"
    body = req["body"]
    assert body["model"] == "claude-haiku-4-5-20251001" and "temperature" not in body
    assert "declines" not in body["system"] and "correct or wrong" in body["system"]
    assert req["headers"].get("authorization") == f"Bearer {CANARY_ANTHROPIC}" or \
        req["headers"].get("x-api-key") == CANARY_ANTHROPIC
    call = judge.drain_calls()[0]
    assert call.judge_id.label == "anthropic:claude-haiku-4-5-20251001/answer_class@1"
    assert call.input_tokens == 1000 and call.output_tokens == 100
    assert abs(call.cost_usd - (1000 * 1.0 + 100 * 5.0) / 1e6) < 1e-12
    assert call.request["params"]["messages"][0]["content"] == body["messages"][0]["content"]
    assert call.response_raw == '{"label": "CORRECT", "reason": "same"}' and not call.cache_hit


def test_openai_compatible_with_base_url(llm_server, store, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_OPENAI)
    llm_server.push({"text": '{"label": "WRONG", "reason": "differs"}'})
    judge = make_judge(f"openai:local-model@{llm_server.url}/v1", store=store)
    out = _one(judge)
    assert out.output["label"] == "WRONG"
    req = llm_server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["temperature"] == 0 and req["body"]["messages"][0]["role"] == "system"
    assert req["headers"].get("authorization") == f"Bearer {CANARY_OPENAI}"
    call = judge.drain_calls()[0]
    assert call.judge_id.temperature == 0.0 and math.isnan(call.cost_usd)  # unpriced local model: unknown
    assert call.request["meta"]["price_known"] is False


def test_429_honours_retry_after(anthropic_env, store, monkeypatch):
    """The client waits what Retry-After says (its sleep is recorded here, not timed)."""
    anthropic_env.push({"status": 429, "headers": {"Retry-After": "1"}},
                       {"text": '{"label": "CORRECT", "reason": "x"}'})
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, backoff_base=0.01)
    slept, real_sleep = [], asyncio.sleep

    async def recorded_sleep(seconds, *args, **kwargs):
        slept.append(seconds)
        return await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
    out = _one(judge)
    assert out.output["label"] == "CORRECT"
    assert [s for s in slept if s > 0] == [1.0], slept  # one wait, as long as Retry-After (sleep(0): yields)
    assert anthropic_env.count() == 2
    assert judge.drain_calls()[0].request["meta"]["retry_waits"] == [1.0]


def test_500_then_success_and_giving_up(anthropic_env, store):
    anthropic_env.push({"status": 500}, {"status": 503}, {"text": '{"label": "WRONG", "reason": "x"}'})
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, backoff_base=0.01)
    assert _one(judge).output["label"] == "WRONG"
    assert anthropic_env.count() == 3
    anthropic_env.push(*[{"status": 502}] * 3)
    judge2 = make_judge("anthropic:claude-haiku-4-5", store=store, backoff_base=0.01, max_attempts=3)
    out = _one(judge2, {**CLASS_INPUTS, "answer": "Lyon"})
    assert out.output is None and "gave up after 3 attempts" in out.error and "502" in out.error


def test_4xx_is_not_retried(anthropic_env, store):
    anthropic_env.push({"status": 400})
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, backoff_base=0.01)
    out = _one(judge)
    assert out.output is None and "HTTP 400" in out.error
    assert anthropic_env.count() == 1


def test_timeout_is_retried(anthropic_env, store):
    """The first request is never answered while the client waits (held until the test ends),
    so its timeout fires whatever the machine's speed; the retry is answered."""
    release, seen = threading.Event(), []

    def first_never_answers(body, api):
        seen.append(1)
        if len(seen) == 1:
            release.wait(timeout=30)
            return {"text": "{}"}
        return {"text": '{"label": "CORRECT", "reason": "x"}'}

    anthropic_env.responder = first_never_answers
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, timeout=0.5, backoff_base=0.01)
    try:
        out = _one(judge)
    finally:
        release.set()  # let the held handler finish before the server shuts down
    assert out.output["label"] == "CORRECT"
    assert anthropic_env.count() == 2
    assert len(judge.drain_calls()[0].request["meta"]["retry_waits"]) == 1


def test_malformed_then_repaired(anthropic_env, store):
    anthropic_env.push({"text": 'Sure! Here is my verdict: {"label": "CORRECT"}'},
                       {"text": '{"label": "CORRECT", "reason": "fixed"}'})
    judge = make_judge("anthropic:claude-haiku-4-5", store=store)
    out = _one(judge)
    assert out.output == {"label": "CORRECT", "reason": "fixed"}
    repair = anthropic_env.requests[1]["body"]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "could not be used" in repair[2]["content"]
    calls = judge.drain_calls()
    assert [c.purpose for c in calls] == ["answer_class", "answer_class:repair"]
    assert calls[0].error.startswith("unparseable") and calls[1].parsed["reason"] == "fixed"


def test_malformed_twice_gives_reasoned_failure(anthropic_env, store):
    anthropic_env.push({"text": "CORRECT"}, {"text": '{"label": "MAYBE"}'})
    judge = make_judge("anthropic:claude-haiku-4-5", store=store)
    out = _one(judge)
    assert out.output is None and "after one repair" in out.error and "'CORRECT' or 'WRONG'" in out.error
    assert anthropic_env.count() == 2


def test_cache_second_run_makes_no_http_calls(anthropic_env, store):
    anthropic_env.push({"text": '{"label": "CORRECT", "reason": "a"}'}, {"text": '{"label": "WRONG", "reason": "b"}'})
    tasks = [JudgeTask("answer_class", CLASS_INPUTS, "r", "m", "q1"),
             JudgeTask("answer_class", {**CLASS_INPUTS, "answer": "Rome"}, "r", "m", "q2")]
    first = make_judge("anthropic:claude-haiku-4-5", store=store).run_many(tasks)
    assert anthropic_env.count() == 2
    judge = make_judge("anthropic:claude-haiku-4-5", store=store)
    second = judge.run_many(tasks)
    assert anthropic_env.count() == 2  # zero new HTTP requests
    assert [o.output for o in first] == [o.output for o in second]
    calls = judge.drain_calls()
    assert all(c.cache_hit and c.cost_usd == 0 for c in calls)
    # another model or prompt input misses the cache
    anthropic_env.push({"text": '{"label": "CORRECT", "reason": "c"}'})
    make_judge("anthropic:claude-sonnet-5-5", store=store).run_many(tasks[:1])
    assert anthropic_env.count() == 3


def test_bounded_concurrency(anthropic_env, store):
    """concurrency=2: two requests are in flight together (each is held until a second one is
    there, or until every request has arrived: no timing involved), and never a third (a
    request sent beside them would arrive while they linger)."""
    tasks = [JudgeTask("answer_class", {**CLASS_INPUTS, "answer": f"a{i}"}, "r", "m", f"q{i}") for i in range(6)]
    state = threading.Condition()
    active, peak, arrived = [0], [0], [0]

    def held(body, api):
        with state:
            arrived[0] += 1
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            state.notify_all()
            state.wait_for(lambda: active[0] >= 2 or arrived[0] == len(tasks), timeout=10)
            state.wait_for(lambda: active[0] > 2, timeout=0.2)  # a request beyond the bound shows up here
            active[0] -= 1
        return {"text": json.dumps({"label": "CORRECT", "reason": "x"})}

    anthropic_env.responder = held
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, concurrency=2)
    outs = judge.run_many(tasks)
    assert all(o.output for o in outs) and peak[0] == 2


def test_identical_requests_in_flight_are_sent_once(anthropic_env, store):
    """Two methods that retrieved the same contexts ask the same context-relevance question in
    one concurrent batch: one HTTP request; the other call is recorded as a free shared reply.

    The first request is answered only once the last task's ("Rome") has arrived: the batch's
    tasks start in order, so by then the duplicates have found the first one in flight."""
    anthropic_env.responder = _answer_after_rome(json.dumps({"label": "CORRECT", "reason": "x"}))
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, concurrency=4)
    tasks = [JudgeTask("answer_class", CLASS_INPUTS, "r", method, "q1") for method in ("a", "b", "c")]
    tasks.append(JudgeTask("answer_class", {**CLASS_INPUTS, "answer": "Rome"}, "r", "a", "q2"))
    outs = judge.run_many(tasks)
    assert anthropic_env.count() == 2  # three identical requests sent once, plus the different one
    assert all(o.output and o.output["label"] == "CORRECT" for o in outs)
    calls = sorted(judge.drain_calls(), key=lambda c: (c.question_id, c.method))
    assert [(c.method, c.cache_hit) for c in calls] == [("a", False), ("b", True), ("c", True), ("a", False)]
    assert [c.request["meta"].get("shared_in_flight") for c in calls] == [None, True, True, None]
    assert sum(c.cost_usd for c in calls[:3]) == calls[0].cost_usd > 0
    assert judge.live_calls == 2 and judge.cached_calls == 2


def test_a_failed_leader_lets_followers_send_their_own(anthropic_env, store):
    """The first request fails for good (HTTP 400), answered only once the last task's ("Rome")
    has arrived, so "b" is surely waiting on it by then: "b" sends its own request after that
    failure, and gets its answer."""
    events: list[str] = []
    answer = _answer_after_rome(json.dumps({"label": "WRONG", "reason": "y"}), first={"status": 400},
                                events=events)
    anthropic_env.responder = answer
    judge = make_judge("anthropic:claude-haiku-4-5", store=store, concurrency=4, max_attempts=1)
    tasks = [JudgeTask("answer_class", CLASS_INPUTS, "r", m, "q1") for m in ("a", "b")]
    outs = judge.run_many([*tasks, JudgeTask("answer_class", {**CLASS_INPUTS, "answer": "Rome"}, "r", "a", "q2")])
    assert sorted(bool(o.error) for o in outs[:2]) == [False, True] and outs[2].output
    assert anthropic_env.count() == 3
    # b's request came after the first one's failure was sent: it waited for it, then sent its own
    # (the leader's and Rome's requests run concurrently: either may arrive first)
    assert sorted(events[:2]) == ["Paris arrived", "Rome arrived"], events
    assert events[2:] == ["Paris answered 400", "Paris arrived"], events


def _answer_after_rome(text: str, first: dict | None = None, events: list[str] | None = None):
    """A responder that holds the first "Paris" request until a "Rome" request has arrived,
    then answers it with `first` (default: `text`); every other request gets `text`."""
    rome, lock, events = threading.Event(), threading.Lock(), [] if events is None else events

    def respond(body, api):
        word = "Rome" if "Rome" in json.dumps(body) else "Paris"
        with lock:
            events.append(f"{word} arrived")
            leader = word == "Paris" and events.count("Paris arrived") == 1
        if word == "Rome":
            rome.set()
        if not leader:
            return {"text": text}
        assert rome.wait(timeout=20), "the last task's request never arrived"
        action = first or {"text": text}
        with lock:
            events.append(f"Paris answered {action.get('status', 200)}")
        return action

    return respond


@pytest.mark.parametrize("sdk_name", ["anthropic", "openai"])
def test_judge_clients_share_one_tls_context_per_ca_setting(sdk_name, monkeypatch, tmp_path):
    """Every judge client of a process uses the TLS context its HTTP library builds by default,
    built once; a different SSL_CERT_FILE (another CA bundle) gets a context of its own."""
    import certifi

    sdk = requires(sdk_name, "the judge SDKs, part of the dev extra")
    from evalcore.judges.http_client import http_library, judge_http_client, tls_context

    library = http_library(sdk)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = tls_context(library)
    assert tls_context(library) is shared
    judge_http_client(sdk)  # builds no other context for this setting
    assert tls_context(library) is shared
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    other = tls_context(library)
    assert other is not shared and tls_context(library) is other


@pytest.mark.parametrize("value", ["Fri, 31 Dec 99999999999999999999 23:59:59 GMT", "Fri, 31 Dec 10000 23:59:59 GMT"])
def test_a_retry_after_no_date_can_hold_is_ignored(value):
    from evalcore.judges.call_errors import retry_after

    assert retry_after({"retry-after": value}) is None
