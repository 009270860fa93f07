"""Judged metrics end to end with a scripted Anthropic judge over HTTP and a real store."""

import json
import math

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged.specs import SPECS
from evalcore.schemas import EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, query_df

from .conftest import good_judge, paris_item

BY_NAME = {s.name: s for s in SPECS}
RAGAS = ["faithfulness", "context_precision", "context_precision_ap", "context_recall", "answer_relevance"]


def _run(store, items):
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    return writer


SEPARATE = {"judge_calls": "separate"}  # the call design before issue 38 (3 + 1/M calls per answer)


def _ctx(store, run, judge="anthropic:claude-haiku-4-5-20251001", **options):
    """A context for run r1 (`run`: its writer from `_run`, so the run exists in the store; the
    context holds no writer: metrics return, scoring writes)."""
    return ScoringContext(run_id="r1", store=store, options={"judge": judge, **options})


def test_ragas_four_within_call_budget(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(5)]
    writer = _run(store, items)
    ctx = _ctx(store, writer, **SEPARATE)
    scores = {name: BY_NAME[name].compute(items, ctx)[0] for name in RAGAS}
    # one method: claims, reference statements, one context review, questions
    assert anthropic_env.count() == 4
    assert scores["faithfulness"].value == pytest.approx(2 / 3)
    assert scores["context_recall"].value == pytest.approx(1 / 2)
    assert scores["context_precision"].value == pytest.approx(1 / 5)
    assert scores["context_precision_ap"].value == pytest.approx(1.0)  # the one relevant context is first
    assert 0.3 < scores["answer_relevance"].value <= 1.0
    for s in scores.values():
        assert s.judge_id.startswith("anthropic:claude-haiku-4-5-20251001/")
    faith = scores["faithfulness"].claims
    assert [c["verdict"] for c in faith] == ["supported", "supported", "not_supported"]
    assert [c["source"] for c in scores["context_recall"].claims] == ["ground_truth", "ground_truth"]
    assert scores["faithfulness"].judge_id.endswith("/decompose+context_review@2+1")
    assert scores["context_recall"].judge_id.endswith("/reference_statements+context_review@1+1")


def _score_two_methods(store, judge="anthropic:claude-haiku-4-5-20251001", metrics=RAGAS, options=None, **kw):
    """A run of 2 questions x 2 methods (different contexts), scored through score_run."""
    from evalcore.scoring.engine import score_run

    items = []
    for qid in ("q1", "q2"):
        q, r = paris_item(4, qid=qid, method="local")
        q2, r2 = paris_item(3, qid=qid, method="basic",  # another answer: no request is shared by chance
                            answer="Paris is the capital. It has the Eiffel Tower. Founded on the Moon.")
        q = q.model_copy(update={"question": f"{q.question} ({qid})"})  # distinct requests per question
        r, r2 = (x.model_copy(update={"answer": f"{x.answer} ({qid})"}) for x in (r, r2))
        items += [(q, r), (q, r2)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r2", name="t",
                                          evalcore_version="test", methods=["basic", "local"]))
    writer.write_questions([q for q, _ in items[::2]])
    writer.write_responses([r for _, r in items])
    writer.publish()
    return score_run(store, "r2", metrics=metrics, options={"judge": judge, **(options or {})}, progress=False, **kw)


def test_two_methods_share_reference_statements_and_scoring_writes(anthropic_env, store):
    anthropic_env.responder = good_judge
    report = _score_two_methods(store, options=SEPARATE)
    assert not report.errors
    # per answer: claims, review, questions; per question: the reference statements
    assert anthropic_env.count() == 4 * 3 + 2 == 14  # 3.5 calls per answer
    refs = [r for r in anthropic_env.requests if "rewrite a reference answer" in r["body"]["system"]]
    assert len(refs) == 2
    claims = query_df(store, "SELECT method, question_id, metric, source, idx, text, verdict FROM claims "
                             "ORDER BY method, question_id, metric, idx")
    recall = claims[claims.metric == "context_recall"]
    lists = {m: list(g.text) for m, g in recall[recall.question_id == "q1"].groupby("method")}
    assert lists["basic"] == lists["local"] == ["Paris is the capital of France.", "Paris lies on the Seine."]
    assert (claims[claims.metric == "faithfulness"].groupby(["method", "question_id"]).size() == 3).all()
    calls = query_df(store, "SELECT purpose, method, request FROM judge_calls")
    assert sorted(set(calls.purpose)) == ["context_review", "decompose", "question_generation",
                                          "reference_statements"]
    assert calls[calls.purpose == "reference_statements"].method.isna().all()
    assert all('"output_mode": "schema"' in r for r in calls.request)
    counts = store.manifest("r2").counts
    assert counts["judge_calls_live"] == 14 and counts["judge_calls_per_question_max"] == 3
    verdicts = query_df(store, "SELECT metric, rank FROM context_verdicts WHERE metric = 'context_precision'")
    assert len(verdicts) == 4 + 3 + 4 + 3 and (verdicts["rank"] >= 1).all()
    # the shared reference calls' cost is split between the methods: per-method cost adds up
    from evalcore.analysis.runs.leaderboard import system_rows
    from evalcore.analysis.read.sql import operations

    total = float(query_df(store, "SELECT sum(cost_usd) AS c FROM judge_calls").c[0])
    assert total > 0
    assert float(operations(store, "r2").judge_cost_usd.sum()) == pytest.approx(total)
    rows = system_rows(store)
    assert float((rows.judge_cost_per_query_usd * rows.n).sum()) == pytest.approx(total)
    assert float(rows.judge_calls.sum()) == pytest.approx(14)


def test_dry_run_matches_the_real_call_count(anthropic_env, store):
    from evalcore.scoring.engine import score_run

    anthropic_env.responder = good_judge
    estimate = _score_two_methods(store, dry_run=True, options=SEPARATE).estimate
    assert anthropic_env.count() == 0
    score_run(store, "r2", metrics=RAGAS, options={"judge": "anthropic:claude-haiku-4-5-20251001", **SEPARATE},
              progress=False)
    real = anthropic_env.count()
    assert real == 14 and abs(estimate["calls"] - real) <= 0.05 * real, (estimate["calls"], real)


def test_rescoring_with_same_judge_makes_zero_calls(anthropic_env, store):
    anthropic_env.responder = good_judge
    from evalcore.scoring.engine import score_run

    _score_two_methods(store)
    n = anthropic_env.count()
    before = query_df(store, "SELECT method, question_id, metric, value FROM metrics ORDER BY ALL")
    score_run(store, "r2", metrics=RAGAS, options={"judge": "anthropic:claude-haiku-4-5-20251001"}, progress=False)
    assert anthropic_env.count() == n
    after = query_df(store, "SELECT method, question_id, metric, value FROM metrics ORDER BY ALL")
    assert before.equals(after)
    assert store.manifest("r2").counts["judge_calls_live"] == 0


def test_a_rescore_without_claims_leaves_no_old_claims(anthropic_env, store):
    """The store keeps the newest claim set per answer; an empty new set must win too."""
    from evalcore.scoring.engine import score_run

    anthropic_env.responder = good_judge
    _score_two_methods(store, metrics=["faithfulness"])
    assert len(query_df(store, "SELECT * FROM claims WHERE metric = 'faithfulness'")) == 12
    from .conftest import fence_of, task_of

    def no_claims(body, api):
        if task_of(fence_of(body, api)[0]) in ("decompose", "answer_analysis"):
            return {"text": json.dumps({**json.loads(good_judge(body, api)["text"]), "claims": []})}
        return good_judge(body, api)

    anthropic_env.responder = no_claims
    score_run(store, "r2", metrics=["faithfulness"], progress=False,
              options={"judge": "openai:gpt-4o-mini@" + anthropic_env.url + "/v1"})
    assert query_df(store, "SELECT * FROM claims WHERE metric = 'faithfulness'").empty
    values = query_df(store, "SELECT value, reason FROM metrics WHERE metric = 'faithfulness'")
    assert (values.value == 1.0).all() and values.reason.str.contains("no factual claims").all()


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
    purposes = [c.purpose for c in ctx._resources["judge_work"].take_calls()]
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
    assert not any("review retrieved passages" in req["body"]["system"] for req in anthropic_env.requests)


def test_no_claims_scores_one_with_reason(anthropic_env, store):
    from .conftest import fence_of, task_of

    anthropic_env.responder = lambda body, api: (
        {"text": json.dumps({**json.loads(good_judge(body, api)["text"]), "claims": []})}
        if task_of(fence_of(body, api)[0]) in ("decompose", "answer_analysis") else good_judge(body, api))
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
    ctx = _ctx(store, _run(store, items), **SEPARATE)
    est = {n: BY_NAME[n].estimate(items, ctx) for n in RAGAS}
    assert sum(e["calls"] for e in est.values()) == 4
    assert est["faithfulness"]["calls"] == 3 and est["context_recall"]["calls"] == 0
    assert est["faithfulness"]["input_tokens"] > 100 and est["faithfulness"]["cost_usd"] > 0
    assert anthropic_env.count() == 0


def _questions_then(reply_for_generation):
    """A judge that answers question_generation with `reply_for_generation` (raw text), and
    every other task like good_judge; in the combined design the answer analysis carries that
    reply as its questions part (the whole reply when it is not JSON)."""
    from .conftest import fence_of, task_of

    def respond(body, api):
        system, _ = fence_of(body, api)
        if task_of(system) == "question_generation":
            return {"text": reply_for_generation}
        if task_of(system) == "answer_analysis":
            try:
                return {"text": json.dumps({**json.loads(good_judge(body, api)["text"]),
                                            **json.loads(reply_for_generation)})}
            except ValueError:
                return {"text": reply_for_generation}
        return good_judge(body, api)
    return respond


def test_answer_relevance_falls_back_to_a_direct_rating_when_no_question_is_generated(anthropic_env, store):
    anthropic_env.responder = _questions_then('{"questions": [], "noncommittal": 0}')
    items = [paris_item(1)]
    ctx = _ctx(store, _run(store, items), **SEPARATE)
    s = BY_NAME["answer_relevance"].compute(items, ctx)[0]
    assert s.value == 0.75 and s.reason == "mostly"
    assert s.details["method"] == "direct" and s.details["fallback_because"] == "no question generated"
    assert s.judge_id.endswith("/question_generation+answer_relevance_direct@1+1")
    purposes = sorted(c.purpose for c in ctx._resources["judge_work"].take_calls())
    assert purposes == ["answer_relevance_direct", "question_generation"]
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
