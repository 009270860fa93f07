"""The four ragas-style judged metrics: faithfulness, context_precision(_ap), context_recall,
answer_relevance. Formulas are in docs/metrics/judged.md; the call budget is the point here.

Calls, whatever subset of the four is selected (shared through JudgeWork):
  per question:            reference_statements 1 (the reference split once, for every method)
  per (method, question):  decompose 1 (the answer's claims), context_review 1 (each context's
                           relevance, and which context supports each claim and each reference
                           statement), question_generation 1
  -> 3 + 1/M calls per answer for M methods (3.5 for two), independent of the number of contexts.
Context recall of every method is measured against the same statement list, and a re-score
finds it in the cache. The review always carries the claims and the statements (a few more
tokens when only context precision is selected, never another call for the others).
Metric functions return values, reasons, claim verdicts and context verdicts; scoring writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcore.judges.offline.words import tokens
from evalcore.judges.request_inputs import contexts_of, gold_list, has_truth
from evalcore.judges.work import JudgeWork, get_work
from evalcore.metrics.base import Item, Score, ScoringContext


def judge_details(work: JudgeWork, label: str, **extra: Any) -> dict[str, Any]:
    d = {"judge": label, "judge_kind": work.judge.kind}
    d.update(extra)
    return d


# ---- the requests, one builder per task (the dry-run estimator uses the same ones) ------------
def decompose_request(q, r) -> dict[str, Any] | None:
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


def questions_request(q, r) -> dict[str, Any] | None:
    return None if r.error or not (r.answer or "").strip() else {"answer": r.answer}


def decompositions(work: JudgeWork, items: list[Item]):
    return work.run("decompose", _requests("decompose", items))


def _claims_of(d) -> list[str]:
    return list(d.output["claims"]) if d is not None and d.output is not None else []


def _statements_of(s) -> list[str]:
    return list(s.output["statements"]) if s is not None and s.output is not None else []


def _requests(task: str, items: list[Item]) -> list:
    build = {"decompose": decompose_request, "question_generation": questions_request}
    if task == "reference_statements":  # method None: one request per question, shared
        return [None if (i := reference_request(q)) is None else (None, q.id, i) for q, _ in items]
    return [None if (i := build[task](q, r)) is None else (r.method, q.id, i) for q, r in items]


def claims_stage(items: list[Item]) -> list[tuple[str, list]]:
    """The first-round requests of faithfulness, context recall and context precision: the
    answer's claims and the reference statements (their context review needs both)."""
    return [("decompose", _requests("decompose", items)),
            ("reference_statements", _requests("reference_statements", items))]


def questions_stage(items: list[Item], ctx: ScoringContext | None = None) -> list[tuple[str, list]]:
    """answer_relevance's requests. They depend on nothing, but go out as a second stage,
    beside each answer's context review, so the first stage's request slots go to the claims
    and statements the reviews wait for."""
    return [("question_generation", _requests("question_generation", items))]


def _review_requests(items: list[Item], decs, refs) -> list:
    reqs = []
    for (q, r), d, s in zip(items, decs, refs):
        inp = review_request(q, r, _claims_of(d), _statements_of(s))
        reqs.append(None if inp is None else (r.method, q.id, inp))
    return reqs


def review_stage(items: list[Item], ctx: ScoringContext) -> list[tuple[str, list]]:
    """The second-stage requests (one context review per answer), built from the answer's
    claims and its question's statements (already in the pass's memo when scoring calls this)."""
    decs, refs = get_work(ctx).run_batches(claims_stage(items))
    return [("context_review", _review_requests(items, decs, refs))]


def reviews(work: JudgeWork, items: list[Item]):
    """(decompositions, references, reviews) for the items; the review of an answer carries
    its claims and the question's reference statements."""
    decs, refs = work.run_batches(claims_stage(items))
    return decs, refs, work.run("context_review", _review_requests(items, decs, refs))


def _claim_scores(ctx: ScoringContext, items: list[Item], source: str) -> list[Score]:
    """faithfulness (source=answer) and context_recall (source=ground_truth) share this."""
    work = get_work(ctx)
    tasks = ("decompose", "context_review") if source == "answer" else ("reference_statements", "context_review")
    label = work.judge.label(*tasks)
    decs, refs, revs = reviews(work, items)
    key = "claims" if source == "answer" else "statements"
    scores: list[Score] = []
    for (q, r), d, ref, rev in zip(items, decs, refs, revs):
        if r.error:
            scores.append(Score.nan("target error"))
            continue
        if source == "ground_truth" and not has_truth(q):
            scores.append(Score.nan("no ground truth"))
            continue
        split = d if source == "answer" else ref
        if split is None or split.output is None:
            scores.append(Score(float("nan"), reason=split.error if split else "no judge output", judge_id=label))
            continue
        texts = _claims_of(split) if source == "answer" else _statements_of(split)
        ctxs = contexts_of(r)
        if not texts:
            what = "the answer makes no factual claims" if source == "answer" else "the ground truth has no statements"
            scores.append(Score(1.0, reason=what, details=judge_details(work, label, n=0), judge_id=label))
            continue
        if not ctxs:
            verdicts = [{"verdict": 0, "context": None, "reason": "no retrieved contexts"} for _ in texts]
        elif rev is None or rev.output is None:
            scores.append(Score(float("nan"), reason=rev.error if rev else "no judge output", judge_id=label))
            continue
        else:
            verdicts = rev.output[key]
        n_ok = sum(v["verdict"] for v in verdicts)
        listed = [{"text": t, **v} for t, v in zip(texts, verdicts)]
        claims = tuple({"source": source, "idx": i, "text": t,
                        "verdict": "supported" if v["verdict"] else "not_supported", "reason": v["reason"]}
                       for i, (t, v) in enumerate(zip(texts, verdicts)))
        # The heuristic judge's value is its mean graded support, not the share of its 0/1
        # verdicts: a yes/no per sentence ranks answers worse than the plain word overlap it
        # is built from (docs/judges.md, "The heuristic judge"). A model's verdicts count as given.
        graded = work.heuristic and ctxs and all(v.get("support") is not None for v in verdicts)
        value = sum(v["support"] for v in verdicts) / len(texts) if graded else n_ok / len(texts)
        scores.append(Score(value, reason="no retrieved contexts" if not ctxs else None,
                            details=judge_details(work, label, n=len(texts), n_supported=n_ok, statements=listed),
                            judge_id=label, claims=claims))
    return scores


def faithfulness(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """supported answer claims / answer claims (1.0 with a reason when there are no claims);
    with the heuristic judge, the claims' mean graded support."""
    return _claim_scores(ctx, items, "answer")


def context_recall(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """reference statements attributable to the contexts / reference statements."""
    return _claim_scores(ctx, items, "ground_truth")


def average_precision(verdicts: list[int]) -> float:
    """sum_k precision@k * v_k / #relevant (0 when nothing is relevant)."""
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def _precision(items: list[Item], ctx: ScoringContext, ap: bool) -> list[Score]:
    work = get_work(ctx)
    label = work.judge.label("context_review")
    _, _, outs = reviews(work, items)
    scores = []
    for (q, r), o in zip(items, outs):
        if r.error:
            scores.append(Score.nan("target error"))
        elif not contexts_of(r):
            scores.append(Score.nan("no retrieved contexts"))
        elif o is None or o.output is None:
            scores.append(Score(float("nan"), reason=o.error if o else "no judge output", judge_id=label))
        else:
            v = [c["relevant"] for c in o.output["contexts"]]
            value = average_precision(v) if ap else sum(v) / len(v)
            ranked = tuple({"rank": i, "verdict": c["relevant"], "score": c.get("score"), "reason": c.get("reason")}
                           for i, c in enumerate(o.output["contexts"], start=1))
            scores.append(Score(value, details=judge_details(work, label, n=len(v), n_relevant=sum(v),
                                                     contexts=o.output["contexts"]), judge_id=label,
                                contexts=ranked))
    return scores


def context_precision(items: list[Item], ctx: ScoringContext) -> list[Score]:
    return _precision(items, ctx, ap=False)


def context_precision_ap(items: list[Item], ctx: ScoringContext) -> list[Score]:
    return _precision(items, ctx, ap=True)


def _lexical_cos(a: str, b: str) -> float:
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    va, vb = {}, {}
    for t in ta:
        va[t] = va.get(t, 0) + 1
    for t in tb:
        vb[t] = vb.get(t, 0) + 1
    dot = sum(c * vb.get(t, 0) for t, c in va.items())
    return dot / (sum(c * c for c in va.values()) ** 0.5 * sum(c * c for c in vb.values()) ** 0.5)


def warm_embedder(ctx: ScoringContext) -> None:
    """Load the embedding model answer_relevance compares questions with (scoring calls this
    in the background while the judge calls are in flight), in a child process when this one
    has not imported torch: the loading then runs beside the judge calls instead of competing
    with them for the interpreter (embeddings/worker.py)."""
    try:
        from evalcore.embeddings import warm_up
    except ImportError:
        return
    warm_up(ctx.options.get("embedding_model"), ctx.store, in_child=True)


def similarities(ctx: ScoringContext, pairs: list[tuple[str, list[str]]]) -> tuple[list[list[float]], str]:
    """Cosine of each question with its generated questions: embeddings if evalcore.embeddings
    is importable, else a bag-of-words cosine (named in details so it is never mistaken)."""
    try:
        from evalcore.embeddings import get_embedder

        embedder = ctx.resource("embedder", lambda: get_embedder(model=ctx.options.get("embedding_model"),
                                                                  store=ctx.store))
        texts = sorted({t for q, gs in pairs for t in [q, *gs]})
        if not texts:
            return [[] for _ in pairs], "embeddings"
        vecs = np.asarray(embedder.encode(texts), dtype=np.float32)
        index = {t: i for i, t in enumerate(texts)}
        out = [[float(vecs[index[q]] @ vecs[index[g]]) for g in gs] for q, gs in pairs]
        return out, f"embeddings:{getattr(embedder, 'model_id', 'default')}"
    except ImportError:
        return [[_lexical_cos(q, g) for g in gs] for q, gs in pairs], \
            "lexical cosine (evalcore.embeddings not importable)"


def _generated(o) -> list[str]:
    return list(o.output["questions"]) if o is not None and o.output else []


def answer_relevance(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """mean cosine(question, generated question) over 3 generated questions; 0 if noncommittal.

    When question generation gives nothing usable for an answer (the judge returned no
    question, or no valid reply even after the repair request), the judge is asked directly
    for a 0-1 rating of how well the answer addresses the question (docs/metrics/judged.md's fallback).
    Such values say so: details.method = "direct", and the judge id names that prompt.
    """
    work = get_work(ctx)
    label = work.judge.label("question_generation")
    direct_label = work.judge.label("question_generation", "answer_relevance_direct")
    (outs,) = work.run_batches(questions_stage(items))
    directs = work.run("answer_relevance_direct", [
        (r.method, q.id, {"question": q.question, "answer": r.answer})
        if o is not None and not _generated(o) else None for (q, r), o in zip(items, outs)])
    pairs = [(q.question, _generated(o)) for (q, _), o in zip(items, outs)]
    sims, how = similarities(ctx, [p for p in pairs if p[1]])
    sims_iter = iter(sims)
    scores = []
    for (q, r), o, d, (_, generated) in zip(items, outs, directs, pairs):
        sim = next(sims_iter) if generated else []
        if r.error:
            scores.append(Score.nan("target error"))
        elif not (r.answer or "").strip():
            scores.append(Score(0.0, reason="empty answer", details=judge_details(work, label), judge_id=label))
        elif not generated:
            why = "no question generated" if o is not None and o.output is not None else \
                (o.error if o is not None else "no judge output")
            if d is None or d.output is None:
                reason = f"{why}; direct rating failed: {d.error if d is not None else 'no judge output'}"
                scores.append(Score(float("nan"), reason=reason, judge_id=direct_label))
            else:
                scores.append(Score(float(d.output["score"]), reason=d.output.get("reason"),
                                    details=judge_details(work, direct_label, method="direct", fallback_because=why),
                                    judge_id=direct_label))
        else:
            nc = o.output["noncommittal"]
            value = 0.0 if nc else float(np.clip(np.mean(sim), 0.0, 1.0)) if sim else 0.0
            scores.append(Score(value, reason="noncommittal answer" if nc else None,
                                details=judge_details(work, label, method="question_generation", questions=generated,
                                              cosines=[round(s, 4) for s in sim], noncommittal=nc,
                                              similarity=how),
                                judge_id=label))
    return scores
