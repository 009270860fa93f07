"""The offline `heuristic` judge: the same task outputs as an LLM judge, computed lexically.

Why it exists: scoring must work without an API key (CI, air-gapped machines, quick looks),
and the judged metrics' plumbing (claims, verdicts, caching, storage) must be testable end to
end. It is never the default and never pretends to be a model: its provider is `heuristic`,
so every stored value's judge id starts with `heuristic:`.

How each task is approximated (see lexical.py for `coverage`):
- decompose: sentences of the answer / reference are the claims / statements.
- support: a statement is supported when >= 85% of its content words occur in the contexts
  (numbers exactly); the best-covering context is named. Measured on HaluEval QA: see docs.
- context_relevance: share of the question's (and reference's) content words in the passage.
- question_generation: cannot write questions, so it returns the answer's first sentences;
  answer_relevance then compares them with the question by embedding cosine.
- answer_relevance_direct (answer_relevance's fallback when no question was generated): share
  of the question's content words found in the answer, banded to quarters; 0 for a hedge.
- factual_accuracy: correctness = share of answer words in reference+question, completeness =
  share of reference words in the answer, consistency = 100 minus 50 per negation clash.
- answer_class / answer_correctness: reference recall and token F1.
- groundedness / correctness / plan_scores: banded from the support and recall shares.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from evalcore.judges.client import Judge, JudgeTask, Outcome
from evalcore.judges.lexical import (Vocabulary, content, contradiction_pairs, coverage, is_hedge, recall,
                                     sentences, tokens)
from evalcore.schemas import JudgeCall

SUPPORT_THRESHOLD = 0.85


def _best_context(statement: str, vocabs: list[Vocabulary]) -> tuple[float, int | None, list[str]]:
    best, best_i, best_missing = -1.0, None, []
    for i, v in enumerate(vocabs, 1):
        cov, missing = coverage(statement, v)
        if cov > best:
            best, best_i, best_missing = cov, i, missing
    return max(best, 0.0), best_i, best_missing


def _verdicts(statements: list[str], contexts: list[str]) -> list[dict]:
    whole = Vocabulary("\n".join(contexts))
    vocabs = [Vocabulary(c) for c in contexts]
    out = []
    for s in statements:
        cov, missing = coverage(s, whole)
        _, ctx, _ = _best_context(s, vocabs)
        ok = cov >= SUPPORT_THRESHOLD and bool(contexts)
        reason = f"{cov:.0%} of content words found in the contexts"
        if missing:
            reason += f"; missing: {', '.join(missing[:6])}"
        out.append({"verdict": int(ok), "context": ctx if ok else None, "reason": reason})
    return out


def _f1(answer: str, reference: str) -> float:
    a, r = content(answer), content(reference)
    if not a or not r:
        return 0.0
    va, vr = Vocabulary(answer), Vocabulary(reference)
    p = sum(vr.has(w) for w in a) / len(a)
    rc = sum(va.has(w) for w in r) / len(r)
    return 0.0 if p + rc == 0 else 2 * p * rc / (p + rc)


def _band(frac: float, top: int = 5) -> int:
    return int(round(max(0.0, min(1.0, frac)) * top))


def _support_frac(answer: str, contexts: list[str]) -> float:
    claims = sentences(answer) or ([answer] if answer.strip() else [])
    if not claims:
        return 0.0
    return sum(v["verdict"] for v in _verdicts(claims, contexts)) / len(claims)


def _cited(answer: str, n_citations: int) -> bool:
    low = answer.casefold()
    return n_citations > 0 or "[source" in low or "출처" in answer or "according to" in low


def run_task(task: str, inp: dict[str, Any]) -> dict[str, Any]:
    """The heuristic output for one task, in the same shape the LLM validators produce."""
    q, a, gt = inp.get("question") or "", inp.get("answer") or "", inp.get("ground_truth") or ""
    ctxs = list(inp.get("contexts") or [])
    if task == "decompose":
        return {"answer_claims": sentences(a), "ground_truth_statements": sentences(gt)}
    if task == "support":
        return {"claims": _verdicts(inp["claims"], ctxs), "statements": _verdicts(inp["statements"], ctxs)}
    if task == "context_relevance":
        out = []
        for c in ctxs:
            v = Vocabulary(c)
            qcov = coverage(q, v)[0] if content(q) else 0.0
            gcov = coverage(gt, v, drop_text=q)[0] if content(gt, drop=set(tokens(q))) else 0.0
            score = 100 * max(qcov, gcov if gt else 0.0, 0.5 * qcov + 0.5 * gcov if gt else 0.0)
            out.append({"relevant": int(score >= 50), "score": round(score, 1),
                        "reason": f"question words {qcov:.0%}, reference words {gcov:.0%} found"})
        return {"contexts": out}
    if task == "question_generation":
        sents = sentences(a) or ([a] if a.strip() else [])
        return {"questions": sents[:3] or [""], "noncommittal": int(is_hedge(a) or not a.strip())}
    if task == "answer_relevance_direct":
        cov = coverage(q, Vocabulary(a))[0] if content(q) and content(a) else 0.0
        score = 0.0 if is_hedge(a) else round(4 * cov) / 4
        return {"score": score, "reason": f"{cov:.0%} of question words in answer (banded to quarters)"}
    if task == "factual_accuracy":
        prec = coverage(a, Vocabulary(gt + "\n" + q))[0] if content(a) else 0.0
        comp = recall(gt, a)
        cons = max(0.0, 100.0 - 50.0 * contradiction_pairs(a))
        return {"correctness": {"score": round(100 * prec, 1), "reasoning": f"{prec:.0%} of answer words in reference"},
                "completeness": {"score": round(100 * comp, 1), "reasoning": f"{comp:.0%} of reference words in answer"},
                "consistency": {"score": cons, "reasoning": f"{contradiction_pairs(a)} negation clash(es)"},
                "overall_reasoning": "lexical approximation (heuristic judge)"}
    if task == "answer_class":
        r = recall(gt, a, q)
        return {"label": "CORRECT" if r >= 0.6 else "WRONG", "reason": f"{r:.0%} of reference words in answer"}
    if task == "abstention":
        return {"abstained": is_hedge(a) or not content(a), "reason": "hedge phrase list"}
    if task == "groundedness":
        claims = list(inp.get("claims") or [])
        verdicts = _verdicts(claims, ctxs)
        sup = [i for i, v in enumerate(verdicts, 1) if v["verdict"]]
        uns = [i for i, v in enumerate(verdicts, 1) if not v["verdict"]]
        frac = len(sup) / len(claims) if claims else 0.0
        score = 5 if frac == 1 else 4 if frac >= 0.75 else 3 if frac >= 0.5 else 2 if frac >= 0.25 else 1 if frac else 0
        if score >= 4 and not _cited(a, int(inp.get("n_citations", 0))):
            score -= 1
        return {"score": float(score), "supported_claims": sup, "unsupported_claims": uns,
                "reason": f"{len(sup)}/{len(claims)} statements lexically supported"}
    if task == "correctness":
        frac = 0.0 if is_hedge(a) else _support_frac(a, ctxs)
        return {"score": float(_band(frac)), "reason": f"{frac:.0%} of answer sentences supported by contexts"}
    if task == "answer_correctness":
        f1 = 1.0 if gt and content(gt) and recall(gt, a) == 1.0 else _f1(a, gt)
        return {"score": round(f1, 4), "reason": "token F1 with the expected answer"}
    if task == "plan_scores":
        exp = inp.get("expected") or ""
        corr = _f1(a, exp) if exp else _support_frac(a, ctxs)
        faith = _support_frac(a, ctxs)
        comp = recall(exp, a) if exp else corr
        return {k: {"score": float(1 + _band(v, 4)), "reason": f"lexical share {v:.0%}"}
                for k, v in (("correctness", corr), ("faithfulness", faith), ("completeness", comp))}
    raise KeyError(f"heuristic judge has no task {task!r}")


class HeuristicJudge(Judge):
    kind = "heuristic"
    provider = "heuristic"
    model = "lexical-v1"

    @asynccontextmanager
    async def _noop(self) -> AsyncIterator[None]:
        yield None

    def _session(self) -> Any:
        return self._noop()

    async def _run_one(self, t: JudgeTask, session: Any, sem: asyncio.Semaphore) -> Outcome:
        jid = self.judge_id(t.task)
        request = {"provider": self.provider, "model": self.model, "task": t.task, "inputs": t.inputs}
        from evalcore.judges.cache import request_key

        key = request_key(request)
        call = JudgeCall(run_id=t.run_id, call_key=request_key({"k": key, "m": t.method, "q": t.question_id,
                                                                 "p": t.purpose})[:40],
                         judge_id=jid, method=t.method, question_id=t.question_id, purpose=t.purpose or t.task,
                         request=request)
        try:
            out = run_task(t.task, t.inputs)
        except Exception as exc:  # noqa: BLE001 - becomes a NaN reason, never a crash
            call.error = f"{type(exc).__name__}: {exc}"
            self._record(call)
            return Outcome(None, f"heuristic judge failed: {call.error}", jid, 0)
        call.response_raw = json.dumps(out, ensure_ascii=False)
        call.parsed = out
        self._record(call)
        return Outcome(out, None, jid, 0)
