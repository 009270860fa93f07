"""Strict parsing of judge replies into validated task outputs.

Why strict: a lenient parser ("find anything that looks like JSON") is exactly what a hostile
answer exploits, by writing a fake verdict that the judge then quotes. We accept one JSON value
and nothing else: the whole reply, or the whole reply inside one ```json fence (some models add
it despite being told not to). Anything else is a parse error; the client then sends one repair
request, and if that fails too the metric becomes NaN with the error as its reason.

Each task has a validator that checks types, ranges and counts (one verdict per context...)
and returns a normalised dict, so metric code never sees a half-formed verdict.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

_FENCED = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.DOTALL)


class ParseError(ValueError):
    """The reply is not the JSON the task asked for (the message says what is wrong)."""


def parse_json(text: str | None) -> Any:
    if text is None or not text.strip():
        raise ParseError("empty reply")
    body = text.strip()
    m = _FENCED.match(body)
    if m:
        body = m.group(1).strip()
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not a single JSON value ({exc.msg} at char {exc.pos})") from None


def _reject_constant(name: str) -> Any:
    raise ParseError(f"{name} is not allowed in a verdict")


# ---- field helpers -----------------------------------------------------------------------
def _obj(v: Any, where: str) -> dict:
    if not isinstance(v, dict):
        raise ParseError(f"{where} must be a JSON object")
    return v


def _num(v: Any, where: str, lo: float, hi: float, integer: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ParseError(f"{where} must be a number")
    if integer and float(v) != int(v):
        raise ParseError(f"{where} must be a whole number")
    if not lo <= v <= hi:
        raise ParseError(f"{where} must be between {lo:g} and {hi:g}, got {v}")
    return float(v)


def _str(v: Any, where: str, required: bool = False) -> str:
    if v is None and not required:
        return ""
    if not isinstance(v, str):
        raise ParseError(f"{where} must be a string")
    return v


def _strings(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ParseError(f"{where} must be a list of strings")
    return [s.strip() for s in v if s.strip()]


def _flag(v: Any, where: str) -> int:
    if isinstance(v, bool):
        return int(v)
    if v in (0, 1):
        return int(v)
    raise ParseError(f"{where} must be 0/1 or true/false")


def _verdict_list(v: Any, where: str, n: int, n_contexts: int) -> list[dict]:
    if not isinstance(v, list) or len(v) != n:
        raise ParseError(f"{where} must list exactly {n} entries")
    out = []
    for k, entry in enumerate(v, 1):
        e = _obj(entry, f"{where}[{k}]")
        if e.get("i", k) != k:
            raise ParseError(f"{where}[{k}] has i={e.get('i')!r}, expected {k}")
        ctx = e.get("context")
        if ctx is not None and (isinstance(ctx, bool) or not isinstance(ctx, int) or not 1 <= ctx <= n_contexts):
            raise ParseError(f"{where}[{k}].context must be a passage number or null")
        out.append({"verdict": _flag(e.get("verdict"), f"{where}[{k}].verdict"), "context": ctx,
                    "reason": _str(e.get("reason"), f"{where}[{k}].reason")})
    return out


# ---- validators: (parsed JSON, task inputs) -> normalised output --------------------------
def v_decompose(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    claims = _strings(o.get("answer_claims"), "answer_claims")
    stmts = _strings(o.get("ground_truth_statements", []), "ground_truth_statements")
    if not inp.get("ground_truth"):
        stmts = []
    return {"answer_claims": claims, "ground_truth_statements": stmts}


def v_support(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    n_ctx = len(inp["contexts"])
    return {"claims": _verdict_list(o.get("claims", []), "claims", len(inp["claims"]), n_ctx),
            "statements": _verdict_list(o.get("statements", []), "statements", len(inp["statements"]), n_ctx)}


def v_context_relevance(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    items = o.get("contexts")
    n = len(inp["contexts"])
    if not isinstance(items, list) or len(items) != n:
        raise ParseError(f"contexts must list exactly {n} entries")
    out = []
    for k, entry in enumerate(items, 1):
        e = _obj(entry, f"contexts[{k}]")
        if e.get("i", k) != k:
            raise ParseError(f"contexts[{k}] has i={e.get('i')!r}, expected {k}")
        out.append({"relevant": _flag(e.get("relevant"), f"contexts[{k}].relevant"),
                    "score": _num(e.get("score"), f"contexts[{k}].score", 0, 100),
                    "reason": _str(e.get("reason"), f"contexts[{k}].reason")})
    return {"contexts": out}


def v_question_generation(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    qs = [q for q in _strings(o.get("questions"), "questions") if q.strip()]
    if len(qs) > 5:  # none is allowed: answer_relevance then asks the direct 0-1 question
        raise ParseError("questions must hold at most 5 questions")
    return {"questions": qs, "noncommittal": _flag(o.get("noncommittal", 0), "noncommittal")}


def v_factual_accuracy(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    out: dict[str, Any] = {}
    for key in ("correctness", "completeness", "consistency"):
        part = _obj(o.get(key), key)
        out[key] = {"score": _num(part.get("score"), f"{key}.score", 0, 100),
                    "reasoning": _str(part.get("reasoning"), f"{key}.reasoning")}
    out["overall_reasoning"] = _str(o.get("overall_reasoning"), "overall_reasoning")
    return out


def v_answer_class(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    label = o.get("label")
    if label not in ("CORRECT", "WRONG"):
        raise ParseError("label must be CORRECT or WRONG")
    return {"label": label, "reason": _str(o.get("reason"), "reason")}


def v_abstention(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    return {"abstained": bool(_flag(o.get("abstained"), "abstained")), "reason": _str(o.get("reason"), "reason")}


def v_groundedness(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    n = len(inp["claims"])
    lists = {}
    for key in ("supported_claims", "unsupported_claims"):
        v = o.get(key, [])
        if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= n
                                              for i in v):
            raise ParseError(f"{key} must be a list of statement numbers 1..{n}")
        lists[key] = sorted(set(v))
    return {"score": _num(o.get("score"), "score", 0, 5, integer=True), **lists,
            "reason": _str(o.get("reason"), "reason")}


def v_score05(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    return {"score": _num(o.get("score"), "score", 0, 5, integer=True), "reason": _str(o.get("reason"), "reason")}


def v_score01(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    return {"score": _num(o.get("score"), "score", 0, 1), "reason": _str(o.get("reason"), "reason")}


def v_plan_scores(obj: Any, inp: dict) -> dict:
    o = _obj(obj, "reply")
    out = {}
    for key in ("correctness", "faithfulness", "completeness"):
        part = _obj(o.get(key), key)
        out[key] = {"score": _num(part.get("score"), f"{key}.score", 1, 5, integer=True),
                    "reason": _str(part.get("reason"), f"{key}.reason")}
    return out


VALIDATORS: dict[str, Callable[[Any, dict], dict]] = {
    "decompose": v_decompose,
    "support": v_support,
    "context_relevance": v_context_relevance,
    "question_generation": v_question_generation,
    "factual_accuracy": v_factual_accuracy,
    "answer_class": v_answer_class,
    "abstention": v_abstention,
    "groundedness": v_groundedness,
    "correctness": v_score05,
    "answer_correctness": v_score01,
    "answer_relevance_direct": v_score01,
    "plan_scores": v_plan_scores,
}


def parse_reply(task: str, text: str | None, inputs: dict) -> dict:
    """Parse and validate one reply; raises ParseError naming the problem."""
    return VALIDATORS[task](parse_json(text), inputs)
