"""Issue 38 item 3: the ragas four in 2 + 1/M judge calls per answer (an answer's claims and its
generated questions asked in one call, `answer_analysis`), the same values for the same
verdicts, the earlier design kept as `judge_calls: separate` with its requests (and so its
cached replies) unchanged, and a malformed part of the combined reply repaired alone."""

from __future__ import annotations

import json
import math

import pytest

from evalcore.errors import EvalcoreError
from evalcore.judges.offline.judge import HeuristicJudge
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged import ragas
from evalcore.metrics.judged.specs import SPECS
from evalcore.metrics.options import check_options
from evalcore.schemas import RunManifest
from evalcore.scoring.chunk import judge_rounds
from evalcore.scoring.engine import score_run
from evalcore.store import FORMAT_VERSION, query_df

from .conftest import PARIS_QUESTIONS, fence_of, good_judge, paris_item, task_of

JUDGE = "anthropic:claude-haiku-4-5-20251001"
FOUR = ["faithfulness", "context_precision", "context_precision_ap", "context_recall", "answer_relevance"]
BY_NAME = {s.name: s for s in SPECS}


@pytest.fixture(autouse=True)
def no_embedding_model(monkeypatch):
    """answer_relevance's cosine by words, and no model loading in the background: these tests
    are about judge requests; the cosine of equal questions is equal either way."""
    import evalcore.embeddings

    monkeypatch.setattr(evalcore.embeddings, "warm_up", lambda *a, **k: None)
    monkeypatch.setattr(ragas, "similarities", lambda ctx, pairs: (
        [[ragas._lexical_cos(q, g) for g in gs] for q, gs in pairs], "lexical cosine (test)"))


def _two_by_two(store, qids=("q1", "q2"), run_id="r2"):
    """Questions x 2 methods with different answers and contexts (no request shared by chance)."""
    items = []
    for qid in qids:
        q, r = paris_item(4, qid=qid, method="local")
        _, r2 = paris_item(3, qid=qid, method="basic",
                           answer="Paris is the capital. It has the Eiffel Tower. Founded on the Moon.")
        q = q.model_copy(update={"question": f"{q.question} ({qid})"})
        r, r2 = (x.model_copy(update={"answer": f"{x.answer} ({qid})"}) for x in (r, r2))
        items += [(q, r), (q, r2)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name="t",
                                          evalcore_version="test", methods=["basic", "local"]))
    writer.write_questions([q for q, _ in items[::2]])
    writer.write_responses([r for _, r in items])
    writer.publish()
    return items


def _score(store, run_id="r2", metrics=FOUR, **options):
    return score_run(store, run_id, metrics=metrics, options={"judge": JUDGE, **options}, progress=False)


def test_the_four_cost_two_calls_per_answer_plus_one_per_question(anthropic_env, store):
    anthropic_env.responder = good_judge
    _two_by_two(store, qids=("q1",))
    report = _score(store)
    assert not report.errors
    # per answer: the answer analysis and the context review; per question: the reference statements
    assert anthropic_env.count() == 2 * 2 + 1 == 5  # 2.5 per answer (3.5 in the separate design)
    calls = query_df(store, "SELECT purpose FROM judge_calls")
    assert sorted(set(calls.purpose)) == ["answer_analysis", "context_review", "reference_statements"]
    assert store.manifest("r2").counts["judge_calls_per_question_max"] == 2
    faith = query_df(store, "SELECT judge_id FROM metrics WHERE metric = 'faithfulness'")
    assert faith.judge_id.str.endswith("/answer_analysis+context_review@1+1").all()


def test_dry_run_counts_the_combined_calls(anthropic_env, store):
    anthropic_env.responder = good_judge
    _two_by_two(store, qids=("q1",))
    combined = score_run(store, "r2", metrics=FOUR, options={"judge": JUDGE}, dry_run=True, progress=False).estimate
    separate = score_run(store, "r2", metrics=FOUR, options={"judge": JUDGE, "judge_calls": "separate"},
                         dry_run=True, progress=False).estimate
    assert anthropic_env.count() == 0
    assert (combined["calls"], separate["calls"]) == (5, 7)
    assert combined["input_tokens"] < separate["input_tokens"] and combined["cost_usd"] < separate["cost_usd"]
    _score(store)
    assert anthropic_env.count() == combined["calls"]


def _scores(items, ctx) -> dict:
    """What each of the four returns per answer, without the judge labels (they name the prompts)."""
    out = {}
    for name in FOUR:
        for (q, r), s in zip(items, BY_NAME[name].compute(items, ctx)):
            details = {k: v for k, v in s.details.items() if k != "judge"}
            out[(name, r.method)] = (s.value, s.reason, s.claims, s.contexts, details)
    return out


def test_both_designs_give_the_same_values_for_the_same_verdicts(anthropic_env, store):
    anthropic_env.responder = good_judge
    items = [paris_item(3, method="local"), paris_item(2, method="basic", answer="Paris is the capital. Moon.")]
    separate = _scores(items, ScoringContext(run_id="r1", store=store, options={"judge": JUDGE,
                                                                                "judge_calls": "separate"}))
    assert anthropic_env.count() == 7
    combined = _scores(items, ScoringContext(run_id="r1", store=store, options={"judge": JUDGE}))
    assert anthropic_env.count() == 7 + 2  # only the analyses: the statements and reviews are the same requests
    assert combined == separate and len(separate) == 2 * len(FOUR)
    assert not any(math.isnan(v[0]) for v in separate.values())


# The cache keys of the requests evalcore sent before issue 38 (computed with commit a202aeb's
# code: the ragas four judged by the offline judge's claims, each request re-built as the
# Anthropic judge at ANTHROPIC_BASE_URL=http://127.0.0.1:9 would send it). A reply cached under
# any of them is read again by the separate design.
EARLIER_KEYS = sorted([
    ("context_review", "2a71c58fb0fd31e1f6fb478ffd65790ff4f89f0dfc6c3d4ad53dbe1af06abadd"),
    ("context_review", "a8acfa5a3e04d331cfb8498371e2d8caf9628fe4ebf6fffbbaa28ca8e34aa529"),
    ("decompose", "0ab62dbee8b5d49c5ca2b9cc4c6b4d38c118f0bc4108c5b5b41580d14557f1ef"),
    ("decompose", "e5f9c7a683b29dc30bb7710d792059cbce7d20c138a2031d89b5d64b097cf03d"),
    ("question_generation", "9778075cc3fcaad926ba8b0c3ec8c6a82050b2e171286f492a598cc64d065e02"),
    ("question_generation", "c581fe28f217362f676796ede33ae3bb55849a9aaf52b6b0b597d93f8dfde588"),
    ("reference_statements", "3bea3f868099533f5a9ae8e444e336ef3bbdacbc7a42532b383d2be91b4266b1")])


def _request_keys(monkeypatch, design: str) -> list[tuple[str, str]]:
    from evalcore.judges.backends import AnthropicBackend
    from evalcore.judges.cache import JudgeCache
    from evalcore.judges.client import LLMJudge, repeat_key
    from evalcore.judges.tasks import get_task

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    items = [paris_item(3, qid="q1", method="a"), paris_item(2, qid="q1", method="b", answer="Paris. It is on the Seine.")]
    judge = HeuristicJudge()
    ctx = ScoringContext(run_id="r1", store=None, options={"judge": judge, "judge_calls": design}, items=items)
    judge_rounds([BY_NAME[n] for n in ("faithfulness", "context_precision", "context_recall", "answer_relevance")],
                 items, ctx)
    llm = LLMJudge(AnthropicBackend("claude-haiku-4-5-20251001"), JudgeCache(None))
    keys = []
    for call in judge.drain_calls():
        task, inputs = call.request["task"], call.request["inputs"]
        p = get_task(task).prompt(inputs)
        request = llm.request_for(p.system, [{"role": "user", "content": p.user}], p.max_tokens, task=task)
        keys.append((task, repeat_key(request)))
    return sorted(keys)


def test_the_separate_design_sends_the_requests_evalcore_sent_before(monkeypatch):
    assert _request_keys(monkeypatch, "separate") == EARLIER_KEYS
    combined = _request_keys(monkeypatch, "combined")
    # the combined design shares the reference statements and the reviews with it
    assert [k for k in combined if k[0] != "answer_analysis"] == \
        [k for k in EARLIER_KEYS if k[0] in ("context_review", "reference_statements")]
    assert len(combined) == 5


def _analysis_then(*replies: dict):
    """good_judge, except that the answer analysis and then its repair get `replies` in turn
    (each merged over the good reply), and every request is kept."""
    turn = iter(replies)

    def respond(body, api):
        reply = good_judge(body, api)
        if task_of(fence_of(body, api)[0]) != "answer_analysis":
            return reply
        return {"text": json.dumps({**json.loads(reply["text"]), **next(turn, {})})}
    return respond


def _one_answer(store, judge=JUDGE):
    items = [paris_item(2)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    return items, ScoringContext(run_id="r1", store=store, options={"judge": judge})


def _reply_schema(body: dict) -> dict:
    """The reply schema a request carries, Anthropic's or OpenAI's way."""
    if "output_config" in body:
        return body["output_config"]["format"]["schema"]
    return body["response_format"]["json_schema"]["schema"]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_malformed_part_is_repaired_alone(anthropic_env, store, api):
    anthropic_env.responder = _analysis_then({"noncommittal": "maybe"}, {"claims": ["not asked for"]})
    judge = JUDGE if api == "anthropic" else f"openai:gpt-4o-mini@{anthropic_env.url}/v1"
    items, ctx = _one_answer(store, judge)
    faith, relevance = (BY_NAME[n].compute(items, ctx)[0] for n in ("faithfulness", "answer_relevance"))
    repairs = [r["body"] for r in anthropic_env.requests  # a repair's last message is not the task's prompt
               if fence_of(r["body"], r["api"])[1] != r["body"]["messages"][-1]["content"]]
    assert len(repairs) == 1 and {r["api"] for r in anthropic_env.requests} == {api}
    assert sorted(_reply_schema(repairs[0])["properties"]) == ["noncommittal", "questions"]  # the failed part only
    assert "questions, noncommittal" in repairs[0]["messages"][-1]["content"]
    # the claims are the first reply's (the repair's claims were not asked for and are ignored)
    assert faith.value == pytest.approx(2 / 3) and len(faith.claims) == 3
    assert relevance.details["method"] == "question_generation"
    assert relevance.details["questions"] == PARIS_QUESTIONS["questions"]
    assert anthropic_env.count() == 4  # analysis, its repair, reference statements, review


@pytest.mark.parametrize("bad, broken, intact", [
    ({"noncommittal": "maybe"}, "answer_relevance", "faithfulness"),
    ({"claims": "one claim"}, "faithfulness", "answer_relevance")])
def test_a_part_still_bad_after_the_repair_marks_only_its_metrics(anthropic_env, store, bad, broken, intact):
    anthropic_env.responder = _analysis_then(bad, bad)
    items, ctx = _one_answer(store)
    scores = {n: BY_NAME[n].compute(items, ctx)[0] for n in ("faithfulness", "answer_relevance", "context_recall")}
    assert not math.isnan(scores[intact].value) and not math.isnan(scores["context_recall"].value)
    assert scores["context_recall"].value == pytest.approx(1 / 2)
    hurt = scores[broken]
    part = "question_generation part" if broken == "answer_relevance" else "decompose part"
    if broken == "faithfulness":  # NaN, never a silent 0, with the part's problem as the reason
        assert math.isnan(hurt.value) and "after one repair" in hurt.reason and part in hurt.reason
    else:  # no usable questions: the direct rating, saying why
        assert hurt.value == 0.75 and hurt.details["method"] == "direct"
        assert "after one repair" in hurt.details["fallback_because"] and part in hurt.details["fallback_because"]


def test_groundedness_shares_the_answer_analysis(anthropic_env, store):
    anthropic_env.responder = good_judge
    items, ctx = _one_answer(store)
    for name in ("faithfulness", "groundedness", "answer_relevance"):
        assert not math.isnan(BY_NAME[name].compute(items, ctx)[0].value)
    tasks = sorted(task_of(fence_of(r["body"], r["api"])[0]) for r in anthropic_env.requests)
    assert tasks == ["answer_analysis", "context_review", "groundedness", "reference_statements"]


def test_judge_calls_takes_only_the_two_designs():
    assert check_options({"judge_calls": "separate"}) == {"judge_calls": "separate"}
    with pytest.raises(EvalcoreError, match="option 'judge_calls' must be 'combined' or 'separate', got 'both'"):
        check_options({"judge_calls": "both"})
