"""The four ragas-style judged metrics: faithfulness, context_precision(_ap), context_recall,
answer_relevance. Formulas are in docs/metrics/judged.md; the call budget is the point here.

Calls per (method, question), whatever subset is selected (shared through JudgeWork):
  decompose (answer claims + reference statements) 1, support (all claims and statements
  against all contexts) 1, context_relevance (all contexts) 1, question_generation 1
  -> at most 4 calls for the four metrics, independent of the number of contexts.
The shared decompose/support calls carry the reference statements even when only
faithfulness is selected (a few more tokens, never another call).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np

from evalcore.judges.lexical import tokens
from evalcore.judges.work import JudgeWork, get_work
from evalcore.metrics.base import Item, Score, ScoringContext
from evalcore.schemas import Claim


def contexts_of(r) -> list[str]:
    return [c.text for c in sorted(r.retrieved, key=lambda c: c.rank) if c.text and c.text.strip()]


def _base(work: JudgeWork, label: str, **extra: Any) -> dict[str, Any]:
    d = {"judge": label, "judge_kind": work.judge.kind}
    d.update(extra)
    return d


def decompositions(work: JudgeWork, items: list[Item]):
    reqs = [None if r.error else (r.method, q.id, {"question": q.question, "answer": r.answer or "",
                                                     "ground_truth": q.ground_truth or ""}) for q, r in items]
    return work.run("decompose", reqs)


def supports(work: JudgeWork, items: list[Item], decs):
    reqs = []
    for (q, r), d in zip(items, decs):
        ctxs = contexts_of(r)
        if d is None or d.output is None or not ctxs:
            reqs.append(None)
            continue
        claims, stmts = d.output["answer_claims"], d.output["ground_truth_statements"]
        if not claims and not stmts:
            reqs.append(None)
            continue
        reqs.append((r.method, q.id, {"contexts": ctxs, "claims": claims, "statements": stmts,
                                      "n_claims": len(claims), "n_statements": len(stmts)}))
    return work.run("support", reqs)


def _write_claims(ctx: ScoringContext, work: JudgeWork, rows: list[Claim]) -> None:
    if rows and work.record_claims and ctx.writer is not None:
        ctx.writer.write_claims(rows)


def _claim_scores(ctx: ScoringContext, items: list[Item], metric: str, source: str) -> list[Score]:
    """faithfulness (source=answer) and context_recall (source=ground_truth) share this."""
    work = get_work(ctx)
    label = work.judge.label("decompose", "support")
    decs = decompositions(work, items)
    sups = supports(work, items, decs)
    key_list, key_verdicts = (("answer_claims", "claims") if source == "answer"
                              else ("ground_truth_statements", "statements"))
    now = datetime.now(timezone.utc)
    claims_out: list[Claim] = []
    scores: list[Score] = []
    for (q, r), d, s in zip(items, decs, sups):
        if r.error:
            scores.append(Score.nan("target error"))
            continue
        if source == "ground_truth" and not (q.ground_truth or "").strip():
            scores.append(Score.nan("no ground truth"))
            continue
        if d is None or d.output is None:
            scores.append(Score(float("nan"), reason=d.error if d else "no judge output", judge_id=label))
            continue
        texts = d.output[key_list]
        ctxs = contexts_of(r)
        if not texts:
            what = "the answer makes no factual claims" if source == "answer" else "the ground truth has no statements"
            scores.append(Score(1.0, reason=what, details=_base(work, label, n=0), judge_id=label))
            continue
        if not ctxs:
            verdicts = [{"verdict": 0, "context": None, "reason": "no retrieved contexts"} for _ in texts]
        elif s is None or s.output is None:
            scores.append(Score(float("nan"), reason=s.error if s else "no judge output", judge_id=label))
            continue
        else:
            verdicts = s.output[key_verdicts]
        n_ok = sum(v["verdict"] for v in verdicts)
        listed = [{"text": t, **v} for t, v in zip(texts, verdicts)]
        reason = "no retrieved contexts" if not ctxs else None
        scores.append(Score(n_ok / len(texts), reason=reason,
                            details=_base(work, label, n=len(texts), n_supported=n_ok, statements=listed),
                            judge_id=label))
        claims_out += [Claim(run_id=ctx.run_id, method=r.method, question_id=q.id, source=source, idx=i,
                             text=t, verdict="supported" if v["verdict"] else "not_supported",
                             reason=v["reason"], metric=metric, judge_id=label, computed_at=now)
                       for i, (t, v) in enumerate(zip(texts, verdicts))]
    _write_claims(ctx, work, claims_out)
    work.flush()
    return scores


def faithfulness(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """supported answer claims / answer claims (1.0 with a reason when there are no claims)."""
    return _claim_scores(ctx, items, "faithfulness", "answer")


def context_recall(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """reference statements attributable to the contexts / reference statements."""
    return _claim_scores(ctx, items, "context_recall", "ground_truth")


def relevance_outcomes(work: JudgeWork, items: list[Item]):
    reqs = []
    for q, r in items:
        ctxs = contexts_of(r)
        reqs.append(None if r.error or not ctxs else
                    (r.method, q.id, {"question": q.question, "ground_truth": q.ground_truth or "",
                                      "contexts": ctxs, "n_contexts": len(ctxs)}))
    return work.run("context_relevance", reqs)


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
    label = work.judge.label("context_relevance")
    outs = relevance_outcomes(work, items)
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
            scores.append(Score(value, details=_base(work, label, n=len(v), n_relevant=sum(v),
                                                     contexts=o.output["contexts"]), judge_id=label,
                                contexts=ranked))
    work.flush()
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
    for a 0-1 rating of how well the answer addresses the question (METRICS.md's fallback).
    Such values say so: details.method = "direct", and the judge id names that prompt.
    """
    work = get_work(ctx)
    label = work.judge.label("question_generation")
    direct_label = work.judge.label("question_generation", "answer_relevance_direct")
    outs = work.run("question_generation", [None if r.error or not (r.answer or "").strip()
                                            else (r.method, q.id, {"answer": r.answer}) for q, r in items])
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
            scores.append(Score(0.0, reason="empty answer", details=_base(work, label), judge_id=label))
        elif not generated:
            why = "no question generated" if o is not None and o.output is not None else \
                (o.error if o is not None else "no judge output")
            if d is None or d.output is None:
                reason = f"{why}; direct rating failed: {d.error if d is not None else 'no judge output'}"
                scores.append(Score(float("nan"), reason=reason, judge_id=direct_label))
            else:
                scores.append(Score(float(d.output["score"]), reason=d.output.get("reason"),
                                    details=_base(work, direct_label, method="direct", fallback_because=why),
                                    judge_id=direct_label))
        else:
            nc = o.output["noncommittal"]
            value = 0.0 if nc else float(np.clip(np.mean(sim), 0.0, 1.0)) if sim else 0.0
            scores.append(Score(value, reason="noncommittal answer" if nc else None,
                                details=_base(work, label, method="question_generation", questions=generated,
                                              cosines=[round(s, 4) for s in sim], noncommittal=nc,
                                              similarity=how),
                                judge_id=label))
    work.flush()
    return scores
