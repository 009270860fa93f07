"""A bad judge reply is never cached, and a judge call's cost is never silently wrong.

Issue 22 items 3 and 4, through the real Anthropic and OpenAI SDKs against the scripted judge
server of tests/judges/conftest.py (127.0.0.1):
- a reply enters the judge cache only after it parsed and passed its task's check: a judge
  that answered prose (or verdict 7, score -3) and is then fixed is asked again, by `score`
  and by `rejudge`; an entry that an older evalcore cached without checking is ignored;
- cost comes from the reply's usage: missing usage is estimated from characters and marked
  so; negative or impossible counts make the reply malformed (an error, no stored cost); an
  unpriced model's cost is unknown (NaN, `price_known` false) on the pages and in `--dry-run`,
  never 0.
"""

from __future__ import annotations

import json
import math
import os

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.judges import make_judge
from evalcore.judges.client import JudgeTask
from evalcore.schemas import RunManifest, TokenUsage
from evalcore.scoring.engine import score_run
from evalcore.store import FORMAT_VERSION, query_df
from tests.judges.conftest import fence_of, good_judge, paris_item, scripted_llm, task_of

GOOD = '{"label": "CORRECT", "reason": "same fact"}'
PROSE = "The answer is correct, it names Paris."
INPUTS = {"question": "Capital of France?", "ground_truth": "Paris", "answer": "Paris"}
PRICED = {"anthropic": "anthropic:claude-haiku-4-5-20251001", "openai": "openai:gpt-4o-mini@{url}/v1"}


@pytest.fixture
def llm(monkeypatch):
    with scripted_llm() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-key")
        yield server


def _judge(provider: str, llm, store, model: str | None = None):
    spec = PRICED[provider].format(url=llm.url) if model is None else \
        (f"anthropic:{model}" if provider == "anthropic" else f"openai:{model}@{llm.url}/v1")
    return make_judge(spec, store=store, backoff_base=0.01)


def _ask(judge, task: str = "answer_class", inputs: dict = INPUTS):
    return judge.run_many([JudgeTask(task, inputs, "r", "m", "q1")])[0]


def _filed_key(judge, llm) -> str:
    """The cache key the client files INPUTS' answer_class request under, as it records it on
    the call: one good reply is asked for first (the server's count starts at 1)."""
    llm.push({"text": GOOD})
    _ask(judge)
    return judge.drain_calls()[0].request["meta"]["cache_key"]


def figure(name: str, value) -> None:
    """Hand a measured figure to bench/reliability_campaign.py (when it is the caller)."""
    target = os.environ.get("EVALCORE_CAMPAIGN_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": value}) + "\n")


def _cached_texts(store) -> list[str]:
    folder = store.root / "_shared" / "judge_cache"
    return [json.loads(p.read_text())["text"] for p in folder.rglob("*.json")] if folder.exists() else []


# ---- item 3: only good replies are cached ----------------------------------------------------
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("bad", [PROSE, '{"label": "MAYBE", "reason": "unsure"}'], ids=["prose", "out_of_range"])
def test_a_bad_reply_is_not_cached_and_the_fixed_judge_is_asked_again(llm, store, provider, bad):
    llm.push({"text": bad}, {"text": bad})  # the first answer and the repair turn
    first = _ask(_judge(provider, llm, store))
    assert first.output is None and "unparseable judge reply after one repair" in first.error
    assert llm.count() == 2 and bad not in _cached_texts(store)
    llm.push({"text": GOOD})  # the judge is fixed
    again = _ask(_judge(provider, llm, store))
    assert again.output == {"label": "CORRECT", "reason": "same fact"} and llm.count() == 3
    assert _cached_texts(store) == [GOOD]
    third = _judge(provider, llm, store)
    assert _ask(third).output["label"] == "CORRECT" and llm.count() == 3  # a good reply is cached
    assert third.drain_calls()[0].cache_hit


def test_a_good_repair_is_cached_but_the_bad_first_reply_is_not(llm, store):
    llm.push({"text": PROSE}, {"text": GOOD})
    assert _ask(_judge("anthropic", llm, store)).output["label"] == "CORRECT"
    assert _cached_texts(store) == [GOOD]  # the repair request's reply, under the repair request's key
    llm.push({"text": GOOD})
    judge = _judge("anthropic", llm, store)
    assert _ask(judge).output["label"] == "CORRECT" and llm.count() == 3  # the first request is asked again
    assert [c.cache_hit for c in judge.drain_calls()] == [False]


def test_a_bad_reply_in_flight_is_not_shared_with_identical_requests(llm, store):
    """Two methods asking the same request at once: the first reply is prose; the second
    request does not take it as a free hit but sends its own."""
    seen = []

    def respond(body: dict, api: str) -> dict:
        seen.append(len(body["messages"]))
        return {"text": PROSE, "sleep": 0.3} if len(seen) == 1 else {"text": GOOD}

    llm.responder = respond
    judge = _judge("anthropic", llm, store)
    outs = judge.run_many([JudgeTask("answer_class", INPUTS, "r", m, "q1") for m in ("a", "b")])
    assert [o.output["label"] for o in outs] == ["CORRECT", "CORRECT"]
    assert sorted(seen) == [1, 1, 3]  # the first request twice, one repair turn
    assert not any(c.cache_hit for c in judge.drain_calls() if c.response_raw == PROSE)
    assert PROSE not in _cached_texts(store)


def test_three_identical_requests_after_a_bad_first_reply_all_finish(llm, store):
    """Several requests wait on one in flight whose reply is bad: they must not all become the
    new sender at once (each overwrote the in-flight slot, and the second clean-up raised
    KeyError, ending the whole batch); one resends, the rest share its good reply."""
    seen = []

    def respond(body: dict, api: str) -> dict:
        seen.append(len(body["messages"]))
        return {"text": PROSE, "sleep": 0.3} if len(seen) == 1 else {"text": GOOD, "sleep": 0.1}

    llm.responder = respond
    judge = _judge("anthropic", llm, store)
    outs = judge.run_many([JudgeTask("answer_class", INPUTS, "r", m, "q1") for m in ("a", "b", "c")])
    assert [o.output["label"] for o in outs] == ["CORRECT"] * 3
    assert sorted(seen) == [1, 1, 3]  # the bad first reply, its repair turn, ONE resend
    calls = judge.drain_calls()
    assert sum(bool(c.request["meta"].get("shared_in_flight")) for c in calls) == 1  # the third shares it


def test_a_poisoned_entry_from_an_older_version_is_ignored(llm, store):
    judge = _judge("anthropic", llm, store)
    key = _filed_key(judge, llm)
    judge.cache.put(key, {"text": PROSE, "input_tokens": 1000, "output_tokens": 100})  # what 0.x cached
    assert not judge.answered_from_cache("answer_class", INPUTS)  # --dry-run counts it as a call
    llm.push({"text": GOOD})
    out = _ask(judge)
    assert out.output["label"] == "CORRECT" and llm.count() == 2
    calls = judge.drain_calls()
    assert [c.cache_hit for c in calls] == [False] and calls[0].request["meta"]["cache_entry_rejected"]
    assert judge.cache.get(key)["text"] == GOOD  # the good reply replaced the poisoned one
    assert judge.answered_from_cache("answer_class", INPUTS)


def test_an_entry_with_impossible_usage_is_ignored(llm, store):
    judge = _judge("anthropic", llm, store)
    key = _filed_key(judge, llm)
    judge.cache.put(key, {"text": GOOD, "input_tokens": -5, "output_tokens": 100})
    llm.push({"text": GOOD})
    assert _ask(judge).output["label"] == "CORRECT" and llm.count() == 2
    assert [c.cache_hit for c in judge.drain_calls()] == [False]


def _broken_then_fixed(state: dict):
    """A judge whose replies are wrong while state["broken"]: answer_class in prose,
    correctness -3, every context_review verdict 7; good_judge's replies otherwise."""

    def respond(body: dict, api: str) -> dict:
        reply = good_judge(body, api)
        if not state["broken"]:
            return reply
        task = task_of(fence_of(body, api)[0])
        if task == "answer_class":
            return {"text": PROSE}
        out = json.loads(reply["text"])
        if task == "correctness":
            out["score"] = -3
        elif task == "context_review":
            for claim in out["claims"]:
                claim["verdict"] = 7
        return {"text": json.dumps(out)}

    return respond


METRICS = ["answer_class", "correctness", "faithfulness"]


def _run(store, rag_cost: float | None = None) -> None:
    items = [paris_item(3, qid=q, answer=f"Paris is the capital. It has the Eiffel Tower ({q}).") for q in ("q1", "q2")]
    if rag_cost is not None:  # what the target reported per answer
        items = [(q, r.model_copy(update={"token_usage": TokenUsage(cost_usd=rag_cost)})) for q, r in items]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    writer.publish()


def _tasks(requests: list[dict]) -> list[str]:
    return sorted(task_of(fence_of(r["body"], r["api"])[0]) for r in requests)


def _values(store) -> dict[tuple[str, str], float]:
    rows = query_df(store, "SELECT question_id, metric, value FROM metrics WHERE run_id = 'r1'")
    return {(r.question_id, r.metric): r.value for r in rows.itertuples() if r.metric in METRICS}


def test_a_rescore_asks_again_every_value_a_bad_reply_left_nan(llm, store):
    state = {"broken": True}
    llm.responder = _broken_then_fixed(state)
    _run(store)
    spec = PRICED["anthropic"]
    score_run(store, "r1", metrics=METRICS, options={"judge": spec}, progress=False)
    assert all(math.isnan(v) for v in _values(store).values()) and len(_values(store)) == 6
    reasons = set(query_df(store, "SELECT reason FROM metrics WHERE metric = 'answer_class'").reason)
    assert any("unparseable judge reply after one repair" in r for r in reasons)
    state["broken"] = False
    before = llm.count()
    score_run(store, "r1", metrics=METRICS, options={"judge": spec}, progress=False)
    # answer_class and correctness per answer, the context review once (both answers have the
    # same claims and contexts); the claims and reference statements were good and are cached
    assert _tasks(llm.requests[before:]) == ["answer_class", "answer_class", "context_review",
                                              "correctness", "correctness"]
    assert not any(math.isnan(v) for v in _values(store).values())
    assert _values(store)[("q1", "correctness")] == 4
    figure("judge_rescore_after_fix", f"{llm.count() - before} requests re-asked for 6 NaN values "
                                      f"({before} in the bad pass), all 6 values scored")


def test_rejudge_after_the_fix_asks_the_judge_again(llm, store):
    state = {"broken": True}
    llm.responder = _broken_then_fixed(state)
    _run(store)
    spec = f"openai:gpt-4o-mini@{llm.url}/v1"
    score_run(store, "r1", metrics=METRICS, options={"judge": spec}, progress=False)
    state["broken"] = False
    before = llm.count()
    res = CliRunner().invoke(app, ["--store", str(store.root), "rejudge", "r1", "--judge", spec, "--json"])
    assert res.exit_code == 0, res.output
    assert _tasks(llm.requests[before:]) == ["answer_class", "answer_class", "context_review",
                                              "correctness", "correctness"]
    data = json.loads(res.output)
    assert data["metrics"]["correctness"]["new_mean"] == 4


# ---- item 4: cost is never silently wrong ----------------------------------------------------
def _usage(provider: str, input_tokens, output_tokens) -> dict:
    if provider == "anthropic":
        return {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
            "total_tokens": (input_tokens or 0) + (output_tokens or 0)}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_missing_usage_is_estimated_from_characters_and_marked(llm, store, provider):
    llm.push({"text": GOOD, "usage": None})
    judge = _judge(provider, llm, store)
    assert _ask(judge).output["label"] == "CORRECT"
    call = judge.drain_calls()[0]
    meta = call.request["meta"]
    assert meta["usage"] == "estimated" and meta["price_known"] is True
    system, user = fence_of(llm.requests[0]["body"], llm.requests[0]["api"])
    assert abs(call.input_tokens - (len(system) + len(user)) / 3.5) < 5  # + the role names
    assert call.output_tokens == math.ceil(len(GOOD) / 3.5)
    assert call.cost_usd > 0


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("usage, text, problem", [
    ((-5000, 100), GOOD, "input_tokens -5000"),
    ((1000, -100), GOOD, "output_tokens -100"),
    ((10**12, 100), GOOD, "input_tokens 1000000000000"),
    ((1000, 786_440), GOOD + " " * (3 << 20), "output_tokens 786440"),  # under the 4 MB reply cap
], ids=["negative_input", "negative_output", "10^12_input", "3MB_reply_786k_tokens"])
def test_negative_or_impossible_usage_makes_the_reply_malformed(llm, store, provider, usage, text, problem):
    llm.push({"text": text, "usage": _usage(provider, *usage)})
    judge = _judge(provider, llm, store)
    out = _ask(judge)
    assert out.output is None and "malformed judge reply" in out.error and problem in out.error
    assert llm.count() == 1  # no repair: the reply itself is not to be trusted
    call = judge.drain_calls()[0]
    assert call.error and math.isnan(call.cost_usd) and call.input_tokens == call.output_tokens == 0
    assert call.request["meta"]["usage"] == "malformed"
    assert _cached_texts(store) == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_unpriced_model_costs_unknown_not_zero(llm, store, provider):
    llm.push({"text": GOOD})
    judge = _judge(provider, llm, store, model="my-local-llama")
    assert _ask(judge).output["label"] == "CORRECT"
    call = judge.drain_calls()[0]
    assert call.request["meta"]["price_known"] is False and math.isnan(call.cost_usd)
    assert call.input_tokens == 1000  # the tokens are known; only their price is not


def test_unpriced_judge_cost_is_unknown_on_the_pages_and_in_the_dry_run(llm, store):
    from evalcore.analysis.charts.distributions import latency_cost
    from evalcore.analysis.runs.leaderboard import system_rows
    from evalcore.analysis.read.sql import operations

    llm.responder = good_judge
    _run(store, rag_cost=0.01)
    spec = f"openai:my-local-llama@{llm.url}/v1"
    dry = CliRunner().invoke(app, ["--store", str(store.root), "score", "r1", "--metrics", "answer_class",
                                   "--judge", spec, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    est = json.loads(dry.output)
    assert est["calls"] == 2 and est["cost_usd"] is None and est["unpriced_metrics"] == ["answer_class"]
    # a known target cost beside an unknown judge cost: the total is unknown, not the target's alone
    score_run(store, "r1", metrics=["answer_class"], options={"judge": spec}, progress=False)
    row = system_rows(store).iloc[0]
    assert row.rag_cost_per_query_usd == pytest.approx(0.01)
    assert math.isnan(row.judge_cost_per_query_usd) and math.isnan(row.cost_per_query_usd)
    assert math.isnan(operations(store, "r1").cost_per_query_usd.iloc[0])
    assert latency_cost(store, ["r1:m"]).cost_usd.isna().all()


def test_one_price_table_module():
    """evalcore/judges/pricing.py prices everything; the judges' copy (which said 0 for an unknown
    model where the shared one said None) is gone: no other pricing module exists. (The check
    imported the copy's old name, evalcore.judges.pricing, expecting none; the move of the shared
    table to that very name turned it into an import of the table itself.)"""
    from pathlib import Path

    import evalcore
    from evalcore.judges import pricing

    assert pricing.token_cost("my-local-llama", 10, 10) is None
    package = Path(evalcore.__file__).parent
    assert sorted(p.relative_to(package).as_posix() for p in package.rglob("pricing*.py")) == ["judges/pricing.py"]
