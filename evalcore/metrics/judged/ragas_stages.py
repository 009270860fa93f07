"""Which judge requests the ragas four (faithfulness, context_precision(_ap), context_recall,
answer_relevance) make, in either of the two call designs; the formulas are in ragas.py.

Why two designs: the scoring option `judge_calls` chooses them (default `combined`).

  separate (the design of evalcore before issue 38):
    per question:           reference_statements 1 (the reference split once, for every method)
    per (method, question): decompose 1 (the answer's claims), context_review 1 (each context's
                            relevance, and which context supports each claim and statement),
                            question_generation 1
    -> 3 + 1/M calls per answer for M methods (3.5 for two).
  combined:
    per question:           reference_statements 1, as above
    per (method, question): answer_analysis 1 (decompose's and question_generation's questions in
                            one reply, each part checked by its own definition), context_review 1
    -> 2 + 1/M calls per answer (2.5 for two, 2.33 for three).

The reference statements and the review are the same requests in both designs (same prompt
versions, same inputs for the same claims), so their cached replies serve both; the old
design's requests are unchanged, so every reply cached before is still read when it is chosen.
Whatever subset of the four is selected, the first call of an answer asks for its claims and
its questions (a few more tokens when only faithfulness is selected, never a call more when
answer_relevance is added later), and the review always carries the claims and the statements.
"""

from __future__ import annotations

from typing import Any

from evalcore.judges.request_inputs import contexts_of, gold_list, has_truth
from evalcore.judges.work import JudgeWork, get_work
from evalcore.metrics.base import Item, MetricOption, ScoringContext

SEPARATE, COMBINED = "separate", "combined"
ANALYSIS = "answer_analysis"


def _check_design(value: Any) -> str | None:
    return None if value in (SEPARATE, COMBINED) else f"must be {COMBINED!r} or {SEPARATE!r}"


JUDGE_CALLS_OPTION = MetricOption(
    "judge_calls", str, COMBINED,
    "how the ragas-style metrics ask the judge: combined (an answer's claims and its generated questions "
    "in one call, 2 + 1/M calls per answer) or separate (the earlier prompts, 3 + 1/M)", _check_design)


def design(ctx: ScoringContext | None) -> str:
    """The call design of the pass (`judge_calls`, default combined)."""
    return (ctx.options.get("judge_calls") if ctx is not None else None) or COMBINED


def claims_task(ctx: ScoringContext | None) -> str:
    """The task whose reply holds an answer's claims."""
    return ANALYSIS if design(ctx) == COMBINED else "decompose"


def questions_task(ctx: ScoringContext | None) -> str:
    """The task whose reply holds the questions generated from an answer."""
    return ANALYSIS if design(ctx) == COMBINED else "question_generation"


# ---- the requests, one builder per task (the dry-run estimator uses the same ones) ------------
def claims_request(q, r) -> dict[str, Any] | None:
    """decompose's and answer_analysis's inputs: the question completes the answer's fragments."""
    return None if r.error else {"question": q.question, "answer": r.answer or ""}


def reference_request(q, r=None) -> dict[str, Any] | None:
    return {"question": q.question, "ground_truth": q.ground_truth} if has_truth(q) else None


def review_request(q, r, claims: list[str], statements: list[str]) -> dict[str, Any] | None:
    ctxs = contexts_of(r)
    if r.error or not ctxs:
        return None
    return {"question": q.question, "ground_truth": q.ground_truth or "", "answers": gold_list(q), "contexts": ctxs,
            "claims": claims, "statements": statements, "n_contexts": len(ctxs), "n_claims": len(claims),
            "n_statements": len(statements)}


def questions_request(q, r, ctx: ScoringContext | None) -> dict[str, Any] | None:
    """answer_relevance's request: none for an empty answer (it scores 0 without a call); in
    the separate design the answer alone, in the combined one the answer analysis."""
    if r.error or not (r.answer or "").strip():
        return None
    return claims_request(q, r) if design(ctx) == COMBINED else {"answer": r.answer}


def _per_answer(items: list[Item], build) -> list:
    return [None if (i := build(q, r)) is None else (r.method, q.id, i) for q, r in items]


def reference_requests(items: list[Item]) -> list:
    """One request per question (method None), shared by every method."""
    return [None if (i := reference_request(q)) is None else (None, q.id, i) for q, _ in items]


def claims_stage(items: list[Item], ctx: ScoringContext | None = None) -> list[tuple[str, list]]:
    """The first-round requests of faithfulness, context recall and context precision: the
    answer's claims and the reference statements (their context review needs both)."""
    return [(claims_task(ctx), _per_answer(items, claims_request)),
            ("reference_statements", reference_requests(items))]


def questions_first_stage(items: list[Item], ctx: ScoringContext | None = None) -> list[tuple[str, list]]:
    """answer_relevance's first-round requests: the answer analysis in the combined design
    (the request the context reviews also wait for); none in the separate one."""
    if design(ctx) != COMBINED:
        return []
    return [(ANALYSIS, _per_answer(items, lambda q, r: questions_request(q, r, ctx)))]


def questions_stage(items: list[Item], ctx: ScoringContext | None = None) -> list[tuple[str, list]]:
    """answer_relevance's second-round requests in the separate design: its questions depend on
    nothing, but go out beside each answer's context review, so the first round's request slots
    go to the claims and statements the reviews wait for. None in the combined design."""
    if design(ctx) == COMBINED:
        return []
    return [("question_generation", _per_answer(items, lambda q, r: questions_request(q, r, ctx)))]


def generated_questions(work: JudgeWork, items: list[Item], ctx: ScoringContext) -> list:
    """The outcome holding each answer's generated questions (None: no request)."""
    return work.run(questions_task(ctx), _per_answer(items, lambda q, r: questions_request(q, r, ctx)))


def reply_texts(outcome, key: str) -> list[str]:
    """The claims / statements / questions of a reply ([] when it has none)."""
    value = outcome.reply_value(key)[0] if outcome is not None else None
    return list(value) if value is not None else []


def _review_requests(items: list[Item], decs, refs) -> list:
    reqs = []
    for (q, r), d, s in zip(items, decs, refs):
        inp = review_request(q, r, reply_texts(d, "claims"), reply_texts(s, "statements"))
        reqs.append(None if inp is None else (r.method, q.id, inp))
    return reqs


def review_stage(items: list[Item], ctx: ScoringContext) -> list[tuple[str, list]]:
    """The second-stage requests (one context review per answer), built from the answer's
    claims and its question's statements (already in the pass's memo when scoring calls this)."""
    decs, refs = get_work(ctx).run_batches(claims_stage(items, ctx))
    return [("context_review", _review_requests(items, decs, refs))]


def decompositions(work: JudgeWork, items: list[Item], ctx: ScoringContext) -> list:
    """The outcome holding each answer's claims (groundedness shares it)."""
    return work.run(claims_task(ctx), _per_answer(items, claims_request))


def reviews(work: JudgeWork, items: list[Item], ctx: ScoringContext):
    """(claims outcomes, references, reviews) for the items; the review of an answer carries
    its claims and the question's reference statements."""
    decs, refs = work.run_batches(claims_stage(items, ctx))
    return decs, refs, work.run("context_review", _review_requests(items, decs, refs))
