"""Judged metrics end to end with a scripted Anthropic judge over HTTP and a real store."""

import math

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged import SPECS
from evalcore.queries import query_df
from evalcore.schemas import EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION

from .conftest import good_judge, paris_item

BY_NAME = {s.name: s for s in SPECS}
RAGAS = ["faithfulness", "context_precision", "context_precision_ap", "context_recall", "answer_relevance"]


def _run(store, items):
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    return writer


def _published(store, sql):
    """Metrics called directly (not through scoring) leave their rows unpublished: publish, then read."""
    store.compact("r1")
    return query_df(store, sql)


def _ctx(store, writer, judge="anthropic:claude-haiku-4-5-20251001"):
    return ScoringContext(run_id="r1", store=store, writer=writer, options={"judge": judge})


def test_ragas_four_within_call_budget(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(5)]
    writer = _run(store, items)
    ctx = _ctx(store, writer)
    scores = {name: BY_NAME[name].compute(items, ctx)[0] for name in RAGAS}
    assert anthropic_env.count() <= 5  # the budget for 5 contexts; we use 4
    assert anthropic_env.count() == 4
    assert scores["faithfulness"].value == pytest.approx(2 / 3)
    assert scores["context_recall"].value == pytest.approx(1 / 2)
    assert scores["context_precision"].value == pytest.approx(1 / 5)
    assert scores["context_precision_ap"].value == pytest.approx(1.0)  # the one relevant context is first
    assert 0.3 < scores["answer_relevance"].value <= 1.0
    for s in scores.values():
        assert s.judge_id.startswith("anthropic:claude-haiku-4-5-20251001/")
    claims = _published(store, "SELECT metric, source, idx, text, verdict, reason FROM claims ORDER BY metric, idx")
    faith = claims[claims.metric == "faithfulness"]
    assert list(faith.verdict) == ["supported", "supported", "not_supported"]
    assert list(claims[claims.metric == "context_recall"].source) == ["ground_truth", "ground_truth"]
    calls = _published(store, "SELECT purpose, request, response_raw, cache_hit FROM judge_calls")
    assert sorted(calls.purpose) == ["context_relevance", "decompose", "question_generation", "support"]
    assert all('"params"' in r for r in calls.request) and calls.response_raw.notna().all()
    counts = store.manifest("r1").counts
    assert counts["judge_calls_per_question_max"] == 4 and counts["judge_questions"] == 1
    assert any(j.endswith("/support@1") for j in store.manifest("r1").judges)


def test_rescoring_with_same_judge_makes_zero_calls(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(3)]
    writer = _run(store, items)
    first = [BY_NAME[n].compute(items, _ctx(store, writer))[0].value for n in RAGAS]
    n = anthropic_env.count()
    second = [BY_NAME[n].compute(items, _ctx(store, writer))[0].value for n in RAGAS]
    assert anthropic_env.count() == n and first == second
    assert store.manifest("r1").counts["judge_calls_live"] == 0


def test_graded_metrics_and_norm_copies(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(2)]
    ctx = _ctx(store, _run(store, items))
    v = {s.name: s.compute(items, ctx)[0] for s in SPECS if s.name not in RAGAS}
    assert v["factual_accuracy"].value == pytest.approx((0.5 * 90 + 0.3 * 70 + 0.2 * 100) / 100)
    assert v["factual_grade"].value == 4 and v["factual_grade"].details["grade"] == "A"
    assert v["groundedness"].value == 4 and v["groundedness_norm"].value == pytest.approx(0.8)
    assert v["groundedness"].details["unsupported_claims"] == ["Paris was founded on the Moon."]
    assert v["correctness"].value == 4 and v["correctness_norm"].value == pytest.approx(0.8)
    assert v["answer_correctness"].value == 0.75
    assert v["judge_correctness"].value == 4 and v["judge_correctness_norm"].value == pytest.approx(0.75)
    assert v["answer_class"].value == 1 and v["answer_correct"].value == 1 and v["answer_wrong"].value == 0
    # plan_scores: one call feeds six metrics; factual_accuracy one call feeds two
    purposes = list(_published(store, "SELECT purpose FROM judge_calls").purpose)
    assert purposes.count("plan_scores") == 1 and purposes.count("factual_accuracy") == 1


def test_edge_cases_have_reasons(anthropic_env, store):
    anthropic_env.responder = good_judge
    q, r = paris_item(0)
    err = EvalResponse(question_id="q2", method="m", error="boom")
    q2 = q.model_copy(update={"id": "q2"})
    items = [(q, r), (q2, err)]
    ctx = _ctx(store, _run(store, items))
    cp = BY_NAME["context_precision"].compute(items, ctx)
    assert math.isnan(cp[0].value) and cp[0].reason == "no retrieved contexts"
    assert math.isnan(cp[1].value) and cp[1].reason == "target error"
    assert BY_NAME["context_recall"].compute(items, ctx)[0].value == 0.0  # no contexts -> 0
    f = BY_NAME["faithfulness"].compute(items, ctx)[0]
    assert f.value == 0.0 and f.reason == "no retrieved contexts"
    assert not any(req["body"]["system"].find("check statements") >= 0 for req in anthropic_env.requests)


def test_no_claims_scores_one_with_reason(anthropic_env, store):
    anthropic_env.push({"text": '{"answer_claims": [], "ground_truth_statements": []}'})
    items = [paris_item(2, answer="Hello!")]
    ctx = _ctx(store, _run(store, items))
    s = BY_NAME["faithfulness"].compute(items, ctx)[0]
    assert s.value == 1.0 and "no factual claims" in s.reason


def test_abstention_fallback_only_when_inconclusive(anthropic_env, store):
    anthropic_env.responder = good_judge
    q, r = paris_item(2)
    items = [(q, r.model_copy(update={"answer": "I don't know."})),
             (q.model_copy(update={"id": "q2"}), r.model_copy(update={"question_id": "q2", "answer": "Possibly Paris."})),
             (q.model_copy(update={"id": "q3"}), r.model_copy(update={"question_id": "q3", "abstained": True}))]
    ctx = _ctx(store, _run(store, items))
    vals = BY_NAME["answer_dont_know"].compute(items, ctx)
    assert [v.value for v in vals] == [1.0, 0.0, 1.0]
    purposes = [req["body"]["system"] for req in anthropic_env.requests]
    assert sum("declines to answer" in s for s in purposes) == 1  # only the hedged answer
    assert sum("correct or wrong" in s for s in purposes) == 1


def test_failed_judge_gives_nan_with_reason(anthropic_env, store):
    anthropic_env.push({"text": "not json"}, {"text": "still not json"})
    items = [paris_item(1)]
    ctx = _ctx(store, _run(store, items))
    s = BY_NAME["answer_correctness"].compute(items, ctx)[0]
    assert math.isnan(s.value) and "after one repair" in s.reason and s.judge_id


def test_dry_run_estimate_counts_shared_work_once(anthropic_env, store):
    items = [paris_item(5)]
    ctx = _ctx(store, _run(store, items))
    est = {n: BY_NAME[n].estimate(items, ctx) for n in RAGAS}
    assert sum(e["calls"] for e in est.values()) == 4
    assert est["faithfulness"]["calls"] == 2 and est["context_recall"]["calls"] == 0
    assert est["faithfulness"]["input_tokens"] > 100 and est["faithfulness"]["cost_usd"] > 0
    assert anthropic_env.count() == 0


def _questions_then(reply_for_generation):
    """A judge that answers question_generation with `reply_for_generation` (raw text), and
    every other task like good_judge."""
    from .conftest import fence_of, task_of

    def respond(body, api):
        system, _ = fence_of(body, api)
        if task_of(system) == "question_generation":
            return {"text": reply_for_generation}
        return good_judge(body, api)
    return respond


def test_answer_relevance_falls_back_to_a_direct_rating_when_no_question_is_generated(anthropic_env, store):
    anthropic_env.responder = _questions_then('{"questions": [], "noncommittal": 0}')
    items = [paris_item(1)]
    ctx = _ctx(store, _run(store, items))
    s = BY_NAME["answer_relevance"].compute(items, ctx)[0]
    assert s.value == 0.75 and s.reason == "mostly"
    assert s.details["method"] == "direct" and s.details["fallback_because"] == "no question generated"
    assert s.judge_id.endswith("/question_generation+answer_relevance_direct@1+1")
    calls = _published(store, "SELECT purpose FROM judge_calls ORDER BY purpose")
    assert list(calls.purpose) == ["answer_relevance_direct", "question_generation"]
    direct = [r["body"] for r in anthropic_env.requests if "rate directly how well" in r["body"]["system"]]
    assert len(direct) == 1 and "What is the capital of France?" in direct[0]["messages"][0]["content"]


def test_answer_relevance_falls_back_after_an_unusable_generation_reply(anthropic_env, store):
    anthropic_env.responder = _questions_then("no json here")  # the first reply and the repair both fail
    items = [paris_item(1)]
    s = BY_NAME["answer_relevance"].compute(items, _ctx(store, _run(store, items)))[0]
    assert s.value == 0.75 and s.details["method"] == "direct"
    assert "repair" in s.details["fallback_because"]


def test_answer_relevance_is_nan_with_both_reasons_when_the_fallback_fails_too(anthropic_env, store):
    anthropic_env.responder = lambda body, api: {"text": "no json here"}
    items = [paris_item(1)]
    s = BY_NAME["answer_relevance"].compute(items, _ctx(store, _run(store, items)))[0]
    assert math.isnan(s.value) and "direct rating failed" in s.reason and "repair" in s.reason


def test_answer_relevance_uses_generated_questions_without_a_direct_call(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(1)]
    s = BY_NAME["answer_relevance"].compute(items, _ctx(store, _run(store, items)))[0]
    assert s.details["method"] == "question_generation" and len(s.details["questions"]) == 3
    assert not any("rate directly how well" in r["body"]["system"] for r in anthropic_env.requests)
