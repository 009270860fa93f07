"""The four ragas-style judged metrics: faithfulness, context_precision(_ap), context_recall,
answer_relevance. Formulas are in docs/metrics/judged.md; which judge requests they make, in
either call design (scoring option `judge_calls`: combined, 2 + 1/M calls per answer for M
methods, or separate, 3 + 1/M), is ragas_stages.py's job. Context recall of every method is
measured against the same statement list, and a re-score finds it in the cache.
Metric functions return values, reasons, claim verdicts and context verdicts; scoring writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcore.judges.offline.words import tokens
from evalcore.judges.request_inputs import contexts_of, has_truth
from evalcore.judges.work import JudgeWork, get_work
from evalcore.metrics.base import Item, Score, ScoringContext
from evalcore.metrics.judged.ragas_stages import claims_task, generated_questions, questions_task, reply_texts, reviews


def judge_details(work: JudgeWork, label: str, **extra: Any) -> dict[str, Any]:
    d = {"judge": label, "judge_kind": work.judge.kind}
    d.update(extra)
    return d


def _claim_scores(ctx: ScoringContext, items: list[Item], source: str) -> list[Score]:
    """faithfulness (source=answer) and context_recall (source=ground_truth) share this."""
    work = get_work(ctx)
    key = "claims" if source == "answer" else "statements"
    tasks = (claims_task(ctx), "context_review") if source == "answer" else ("reference_statements", "context_review")
    label = work.judge.label(*tasks)
    decs, refs, revs = reviews(work, items, ctx)
    scores: list[Score] = []
    for (q, r), d, ref, rev in zip(items, decs, refs, revs):
        if r.error:
            scores.append(Score.nan("target error"))
            continue
        if source == "ground_truth" and not has_truth(q):
            scores.append(Score.nan("no ground truth"))
            continue
        split = d if source == "answer" else ref
        said, why = split.reply_value(key) if split is not None else (None, "no judge output")
        if said is None:
            scores.append(Score(float("nan"), reason=why, judge_id=label))
            continue
        ctxs = contexts_of(r)
        if not said:
            what = "the answer makes no factual claims" if source == "answer" else "the ground truth has no statements"
            scores.append(Score(1.0, reason=what, details=judge_details(work, label, n=0), judge_id=label))
            continue
        if not ctxs:
            verdicts = [{"verdict": 0, "context": None, "reason": "no retrieved contexts"} for _ in said]
        elif rev is None or rev.output is None:
            scores.append(Score(float("nan"), reason=rev.error if rev else "no judge output", judge_id=label))
            continue
        else:
            verdicts = rev.output[key]
        n_ok = sum(v["verdict"] for v in verdicts)
        listed = [{"text": t, **v} for t, v in zip(said, verdicts)]
        claims = tuple({"source": source, "idx": i, "text": t,
                        "verdict": "supported" if v["verdict"] else "not_supported", "reason": v["reason"]}
                       for i, (t, v) in enumerate(zip(said, verdicts)))
        # The heuristic judge's value is its mean graded support, not the share of its 0/1
        # verdicts: a yes/no per sentence ranks answers worse than the plain word overlap it
        # is built from (docs/judges.md, "The heuristic judge"). A model's verdicts count as given.
        graded = work.heuristic and ctxs and all(v.get("support") is not None for v in verdicts)
        value = sum(v["support"] for v in verdicts) / len(said) if graded else n_ok / len(said)
        scores.append(Score(value, reason="no retrieved contexts" if not ctxs else None,
                            details=judge_details(work, label, n=len(said), n_supported=n_ok, statements=listed),
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
    _, _, outs = reviews(work, items, ctx)
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


def answer_relevance(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """mean cosine(question, generated question) over 3 generated questions; 0 if noncommittal.

    When question generation gives nothing usable for an answer (the judge returned no
    question, or no valid reply even after the repair request), the judge is asked directly
    for a 0-1 rating of how well the answer addresses the question (docs/metrics/judged.md's fallback).
    Such values say so: details.method = "direct", and the judge id names that prompt.
    """
    work = get_work(ctx)
    label = work.judge.label(questions_task(ctx))
    direct_label = work.judge.label(questions_task(ctx), "answer_relevance_direct")
    outs = generated_questions(work, items, ctx)
    directs = work.run("answer_relevance_direct", [
        (r.method, q.id, {"question": q.question, "answer": r.answer})
        if o is not None and not reply_texts(o, "questions") else None for (q, r), o in zip(items, outs)])
    pairs = [(q.question, reply_texts(o, "questions")) for (q, _), o in zip(items, outs)]
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
            why = (o.reply_value("questions")[1] or "no question generated") if o is not None else "no judge output"
            if d is None or d.output is None:
                reason = f"{why}; direct rating failed: {d.error if d is not None else 'no judge output'}"
                scores.append(Score(float("nan"), reason=reason, judge_id=direct_label))
            else:
                scores.append(Score(float(d.output["score"]), reason=d.output.get("reason"),
                                    details=judge_details(work, direct_label, method="direct", fallback_because=why),
                                    judge_id=direct_label))
        else:
            nc = o.reply_value("noncommittal")[0]
            value = 0.0 if nc else float(np.clip(np.mean(sim), 0.0, 1.0)) if sim else 0.0
            scores.append(Score(value, reason="noncommittal answer" if nc else None,
                                details=judge_details(work, label, method="question_generation", questions=generated,
                                              cosines=[round(s, 4) for s in sim], noncommittal=nc,
                                              similarity=how),
                                judge_id=label))
    return scores
