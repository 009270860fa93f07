"""The built-in judge tasks, each defined once: reply model, input rules, offline heuristic,
reply-size estimate and prompt version (see tasks.TaskDef for what each part is for).

Reading order follows the metrics: the ragas-style family first (decompose, reference
statements, context review, question generation, direct relevance), then the graded tasks.

The reply models are lenient where models are sloppy in harmless ways (a verdict written as
true/false, a null reason) and strict where sloppiness changes a number (a string "1" for a
verdict, a score out of range, a fractional 0-5 grade, a verdict list of the wrong length).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt
from pydantic.json_schema import SkipJsonSchema

from evalcore.judges.offline import lexical_verdicts
from evalcore.judges.offline.words import (Vocabulary, content, contradiction_pairs, coverage, is_hedge, recall,
                                     sentences, tokens)
from evalcore.judges.request_inputs import contexts_of, expected_text, gold_list
from evalcore.judges.task_def import ParseError, TaskDef, combine

# The built-in tasks, in definition order; evalcore.judges.tasks registers them.
BUILT_IN: list[TaskDef] = []
_define = BUILT_IN.append


# ---- field types --------------------------------------------------------------------------
def _flag(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int) and v in (0, 1):
        return v
    raise ValueError("must be 0/1 or true/false")


def _number(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError("must be a number")
    return float(v)


def _whole(v: Any) -> float:
    v = _number(v)
    if v != int(v):
        raise ValueError("must be a whole number")
    return v


def _text(v: Any) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ValueError("must be a string")
    return v


def _clean(items: list[str]) -> list[str]:
    return [s.strip() for s in items if s.strip()]


Flag = Annotated[Literal[0, 1], BeforeValidator(_flag)]
Text = Annotated[str, BeforeValidator(_text)]
Texts = Annotated[list[str], AfterValidator(_clean)]
Score100 = Annotated[float, Field(ge=0, le=100), BeforeValidator(_number)]
Score01 = Annotated[float, Field(ge=0, le=1), BeforeValidator(_number)]
Grade05 = Annotated[float, Field(ge=0, le=5), BeforeValidator(_whole)]
Grade15 = Annotated[float, Field(ge=1, le=5), BeforeValidator(_whole)]


class Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Verdict(Reply):
    i: StrictInt | None = None
    verdict: Flag
    context: StrictInt | None = None
    reason: Text = ""
    # the heuristic judge's graded support (0-1) behind its verdict; never asked of a model
    # (left out of the schema sent to providers) and read only for heuristic outputs
    support: SkipJsonSchema[Score01 | None] = None


class Relevance(Reply):
    i: StrictInt | None = None
    relevant: Flag
    score: Score100
    reason: Text = ""


def _numbered(entries: list[dict], where: str, n: int) -> list[dict]:
    """One entry per item, in order: `i` (when given) must count 1..n."""
    if len(entries) != n:
        raise ParseError(f"{where} must list exactly {n} entries, got {len(entries)}")
    for k, e in enumerate(entries, 1):
        if e.get("i") is not None and e["i"] != k:
            raise ParseError(f"{where}[{k}] has i={e['i']!r}, expected {k}")
    return entries


def _verdicts(entries: list[dict], where: str, n: int, n_contexts: int) -> list[dict]:
    out = []
    for k, e in enumerate(_numbered(entries, where, n), 1):
        ctx = e["context"]
        if ctx is not None and not 1 <= ctx <= n_contexts:
            raise ParseError(f"{where}[{k}].context must be a passage number 1..{n_contexts} or null")
        kept = {"verdict": e["verdict"], "context": ctx, "reason": e["reason"]}
        if e.get("support") is not None:
            kept["support"] = e["support"]
        out.append(kept)
    return out


# ---- decompose: the answer's claims ---------------------------------------------------------
class DecomposeReply(Reply):
    claims: Texts


DECOMPOSE = TaskDef(
    "decompose", "2", DecomposeReply, output_tokens=(40, 0),
    heuristic=lambda inp: {"claims": sentences(inp.get("answer") or "")},
    description="The answer split into atomic claims (the question completes fragments).")
_define(DECOMPOSE)


# ---- reference statements: once per question, shared by every method -------------------------
class ReferenceReply(Reply):
    statements: Texts


_define(TaskDef(
    "reference_statements", "1", ReferenceReply, output_tokens=(40, 0),
    heuristic=lambda inp: {"statements": sentences(inp.get("ground_truth") or "")},
    check=lambda out, inp: out if (inp.get("ground_truth") or "").strip() else {"statements": []},
    description="The reference answer split into atomic statements, independent of any method."))


# ---- context review: relevance of each context, support of claims and statements -------------
class ReviewReply(Reply):
    contexts: list[Relevance]
    claims: list[Verdict]
    statements: list[Verdict]


def _review_check(out: dict, inp: dict) -> dict:
    n_ctx = len(inp["contexts"])
    rel = _numbered(out["contexts"], "contexts", n_ctx)
    return {"contexts": [{"relevant": e["relevant"], "score": e["score"], "reason": e["reason"]} for e in rel],
            "claims": _verdicts(out["claims"], "claims", len(inp["claims"]), n_ctx),
            "statements": _verdicts(out["statements"], "statements", len(inp["statements"]), n_ctx)}


def _relevance_heuristic(q: str, golds: list[str], contexts: list[str]) -> list[dict]:
    """A context's relevance: the share of the question's words it holds, or of a gold
    answer's (the best one), or their mean, whichever is highest."""
    out = []
    for i, c in enumerate(contexts, 1):
        v = Vocabulary(c)
        qcov = coverage(q, v)[0] if content(q) else 0.0
        gcov = max([coverage(g, v, drop_text=q)[0] for g in golds if content(g, drop=set(tokens(q)))], default=0.0)
        score = 100 * max(qcov, gcov if golds else 0.0, 0.5 * qcov + 0.5 * gcov if golds else 0.0)
        out.append({"i": i, "relevant": int(score >= 50), "score": round(score, 1),
                    "reason": f"question words {qcov:.0%}, reference words {gcov:.0%} found"})
    return out


def _review_heuristic(inp: dict) -> dict:
    ctxs = list(inp.get("contexts") or [])
    return {"contexts": _relevance_heuristic(inp.get("question") or "", lexical_verdicts.gold_answers(inp), ctxs),
            "claims": lexical_verdicts.verdicts(list(inp["claims"]), ctxs),
            "statements": lexical_verdicts.verdicts(list(inp["statements"]), ctxs)}


_define(TaskDef(
    "context_review", "1", ReviewReply, check=_review_check, heuristic=_review_heuristic,
    output_tokens=(40, 35),
    counts=lambda inp: {"n_contexts": len(inp["contexts"]), "n_claims": len(inp["claims"]),
                        "n_statements": len(inp["statements"])},
    description="One pass over a method's contexts: each one's relevance, and which context "
                "supports each answer claim and each reference statement."))


# ---- question generation (answer relevance) -----------------------------------------------
class QuestionsReply(Reply):
    questions: Texts
    noncommittal: Flag = 0


def _questions_check(out: dict, inp: dict) -> dict:
    if len(out["questions"]) > 5:  # none is allowed: answer_relevance then asks the direct 0-1 question
        raise ParseError("questions must hold at most 5 questions")
    return out


def _questions_heuristic(inp: dict) -> dict:
    a = inp.get("answer") or ""
    sents = sentences(a) or ([a] if a.strip() else [])
    return {"questions": sents[:3], "noncommittal": int(is_hedge(a) or not a.strip())}


QUESTION_GENERATION = TaskDef(
    "question_generation", "1", QuestionsReply, check=_questions_check, heuristic=_questions_heuristic,
    output_tokens=(80, 0), description="Three questions the answer responds to; is it noncommittal.")
_define(QUESTION_GENERATION)


# ---- answer analysis: the claims and the generated questions in one reply -----------------
# The combined design's first call per answer (metrics/judged/ragas_stages.py): decompose's and
# question_generation's questions asked together, each part checked by its own definition.
_define(combine("answer_analysis", "1", [DECOMPOSE, QUESTION_GENERATION],
                description="One read of the answer: its atomic claims (faithfulness) and three questions it "
                            "responds to, noncommittal or not (answer relevance)."))


class RatingReply(Reply):
    score: Score01
    reason: Text = ""


def _direct_heuristic(inp: dict) -> dict:
    q, a = inp.get("question") or "", inp.get("answer") or ""
    cov = coverage(q, Vocabulary(a))[0] if content(q) and content(a) else 0.0
    score = 0.0 if is_hedge(a) else round(4 * cov) / 4
    return {"score": score, "reason": f"{cov:.0%} of question words in answer (banded to quarters)"}


_define(TaskDef(
    "answer_relevance_direct", "1", RatingReply, heuristic=_direct_heuristic, output_tokens=(50, 0),
    description="A direct 0-1 rating of how well the answer addresses the question (fallback)."))


# ---- G-Eval factual accuracy ----------------------------------------------------------------
class Part(Reply):
    score: Score100
    reasoning: Text = ""


class FactualReply(Reply):
    correctness: Part
    completeness: Part
    consistency: Part
    overall_reasoning: Text = ""


def _factual_heuristic(inp: dict) -> dict:
    """correctness: answer words found in any gold answer or the question; completeness: the
    best gold answer's words found in the answer."""
    q, a, golds = inp.get("question") or "", inp.get("answer") or "", lexical_verdicts.gold_answers(inp)
    prec = coverage(a, Vocabulary("\n".join([*golds, q])))[0] if content(a) else 0.0
    comp = max((recall(g, a) for g in golds), default=recall("", a))
    clashes = contradiction_pairs(a)
    return {"correctness": {"score": round(100 * prec, 1), "reasoning": f"{prec:.0%} of answer words in reference"},
            "completeness": {"score": round(100 * comp, 1), "reasoning": f"{comp:.0%} of reference words in answer"},
            "consistency": {"score": max(0.0, 100.0 - 50.0 * clashes), "reasoning": f"{clashes} negation clash(es)"},
            "overall_reasoning": "lexical approximation (heuristic judge)"}


def _against_reference(q, r) -> dict:
    return {"question": q.question, "ground_truth": q.ground_truth or "", "answers": gold_list(q),
            "answer": r.answer or ""}


_define(TaskDef("factual_accuracy", "1", FactualReply, heuristic=_factual_heuristic, output_tokens=(300, 0),
                 inputs=_against_reference, needs_ground_truth=True,
                 description="G-Eval correctness, completeness, consistency (0-100 each)."))


# ---- answer classes ----------------------------------------------------------------------
class ClassReply(Reply):
    label: Literal["CORRECT", "WRONG"]
    reason: Text = ""


CORRECT_AT = 0.6


def _class_heuristic(inp: dict) -> dict:
    """CORRECT when answer_correctness's match with the best gold answer is >= CORRECT_AT:
    the answer holds a gold answer, or the two share most of their words."""
    score, why = lexical_verdicts.best_match(inp.get("answer") or "", lexical_verdicts.gold_answers(inp),
                                             inp.get("question") or "")
    return {"label": "CORRECT" if score >= CORRECT_AT else "WRONG", "reason": f"match {score:.2f}; {why}"}


_define(TaskDef("answer_class", "1", ClassReply, heuristic=_class_heuristic, output_tokens=(40, 0),
                 description="CORRECT or WRONG against the reference answer."))


class AbstentionReply(Reply):
    abstained: Flag
    reason: Text = ""


def _abstention_check(out: dict, inp: dict) -> dict:
    return {"abstained": bool(out["abstained"]), "reason": out["reason"]}


_define(TaskDef("abstention", "1", AbstentionReply, check=_abstention_check, output_tokens=(30, 0),
                 heuristic=lambda inp: {"abstained": int(is_hedge(inp.get("answer") or "")
                                                         or not content(inp.get("answer") or "")),
                                        "reason": "hedge phrase list"},
                 description="Does the answer decline to answer?"))


# ---- groundedness and correctness (0-5) --------------------------------------------------------
class GroundednessReply(Reply):
    score: Grade05
    supported_claims: list[StrictInt] = []
    unsupported_claims: list[StrictInt] = []
    reason: Text = ""


def _groundedness_check(out: dict, inp: dict) -> dict:
    n = len(inp["claims"])
    for key in ("supported_claims", "unsupported_claims"):
        if not all(1 <= i <= n for i in out[key]):
            raise ParseError(f"{key} must be a list of statement numbers 1..{n}")
        out[key] = sorted(set(out[key]))
    return out


def _groundedness_heuristic(inp: dict) -> dict:
    claims, ctxs = list(inp.get("claims") or []), list(inp.get("contexts") or [])
    verdicts = lexical_verdicts.verdicts(claims, ctxs)
    sup = [i for i, v in enumerate(verdicts, 1) if v["verdict"]]
    uns = [i for i, v in enumerate(verdicts, 1) if not v["verdict"]]
    frac = len(sup) / len(claims) if claims else 0.0
    score = 5 if frac == 1 else 4 if frac >= 0.75 else 3 if frac >= 0.5 else 2 if frac >= 0.25 else 1 if frac else 0
    if score >= 4 and not lexical_verdicts.cited(inp.get("answer") or "", int(inp.get("n_citations", 0))):
        score -= 1
    return {"score": float(score), "supported_claims": sup, "unsupported_claims": uns,
            "reason": f"{len(sup)}/{len(claims)} statements lexically supported"}


_define(TaskDef("groundedness", "1", GroundednessReply, check=_groundedness_check,
                 heuristic=_groundedness_heuristic, output_tokens=(80, 5),
                 description="0-5: how far the answer's claims are grounded in the contexts."))


class Grade05Reply(Reply):
    score: Grade05
    reason: Text = ""


def _correctness_heuristic(inp: dict) -> dict:
    a = inp.get("answer") or ""
    frac = 0.0 if is_hedge(a) else lexical_verdicts.support_frac(a, list(inp.get("contexts") or []))
    return {"score": float(lexical_verdicts.band(frac)),
            "reason": f"{frac:.0%} of answer sentences supported by contexts"}


_define(TaskDef("correctness", "1", Grade05Reply, heuristic=_correctness_heuristic, output_tokens=(50, 0),
                 inputs=lambda q, r: {"question": q.question, "contexts": contexts_of(r), "answer": r.answer or ""},
                 description="0-5: does the answer correctly address the question."))


def _answer_correctness_heuristic(inp: dict) -> dict:
    """The best match over every gold answer (lexical_verdicts.match: same words 1, holds a gold
    answer 0.9, else 0.9 x the mean of the two word shares)."""
    score, why = lexical_verdicts.best_match(inp.get("answer") or "", lexical_verdicts.gold_answers(inp),
                                             inp.get("question") or "")
    return {"score": round(score, 4), "reason": why}


_define(TaskDef("answer_correctness", "1", RatingReply, heuristic=_answer_correctness_heuristic,
                 inputs=_against_reference, needs_ground_truth=True, output_tokens=(50, 0), description="0-1: same meaning as the expected answer."))


# ---- the Korean plan's three 1-5 scores -----------------------------------------------------
class PlanPart(Reply):
    score: Grade15
    reason: Text = ""


class PlanReply(Reply):
    correctness: PlanPart
    faithfulness: PlanPart
    completeness: PlanPart


def _plan_heuristic(inp: dict) -> dict:
    """correctness: the best match with a gold answer (else token F1 with the expected text,
    which may be keywords only, else support by the contexts); completeness: the best gold
    answer's words found in the answer; faithfulness: share of sentences supported."""
    a, exp, ctxs = inp.get("answer") or "", inp.get("expected") or "", list(inp.get("contexts") or [])
    golds = lexical_verdicts.gold_answers(inp)
    if golds:
        corr = lexical_verdicts.best_match(a, golds, inp.get("question") or "")[0]
        comp = max(recall(g, a) for g in golds)
    else:
        corr = lexical_verdicts.f1(a, exp) if exp else lexical_verdicts.support_frac(a, ctxs)
        comp = recall(exp, a) if exp else corr
    faith = lexical_verdicts.support_frac(a, ctxs)
    return {k: {"score": float(1 + lexical_verdicts.band(v, 4)), "reason": f"lexical share {v:.0%}"}
            for k, v in (("correctness", corr), ("faithfulness", faith), ("completeness", comp))}


_define(TaskDef("plan_scores", "1", PlanReply, heuristic=_plan_heuristic, output_tokens=(150, 0),
                 inputs=lambda q, r: {"question": q.question, "expected": expected_text(q), "answers": gold_list(q),
                                      "contexts": contexts_of(r), "answer": r.answer or ""},
                 description="The Korean plan's correctness, faithfulness, completeness (1-5)."))
