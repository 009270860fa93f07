"""Judged metrics on graded scales: factual accuracy (G-Eval), answer classes, groundedness,
correctness, answer_correctness and the Korean plan's three 1-5 scores.

Scales: the judge's native scale is kept as the metric value (0-5, 1-5) and a `<name>_norm`
metric holds the 0-1 copy (native - min) / (max - min), so dashboards can average across
metrics while the number a reader sees matches the rubric the judge used. factual_accuracy
is stored 0-1 (weighted G-Eval score / 100); its 0-100 parts and grade are in details.
One call feeds a metric and its _norm copy (and the three plan scores share one call).
"""

from __future__ import annotations

import dataclasses

from typing import Any, Callable

from evalcore.judges.lexical import is_hedge, norm
from evalcore.judges.ragas_metrics import _base, contexts_of, decompositions, gold_list
from evalcore.judges.work import get_work
from evalcore.metrics.base import Item, Score, ScoringContext
from evalcore.schemas.labels import AnswerClass, grade_for

WEIGHTS = {"correctness": 0.5, "completeness": 0.3, "consistency": 0.2}
GRADE_POINTS = {"A": 4, "B": 3, "C": 2, "D": 1, "E": 0}
INCONCLUSIVE = ("not sure", "unclear", "uncertain", "it depends", "possibly", "perhaps", "not specified",
                "not clear", "not certain", "hard to say", "difficult to determine", "아마", "불확실", "추정")


def grade(score_100: float) -> str:
    """G-Eval letter of a 0-100 score: evalcore.schemas.labels.grade_for (one definition)."""
    return grade_for(score_100).value


def _expected(q) -> str:
    parts = []
    if q.ground_truth:
        parts.append(f"Expected answer: {q.ground_truth}")
    if q.expected_keywords:
        parts.append("Keywords: " + ", ".join(q.expected_keywords))
    return "\n".join(parts)


# task -> (inputs builder, needs ground truth, needs contexts)
BUILDERS: dict[str, tuple[Callable[[Any, Any], dict], bool, bool]] = {
    "factual_accuracy": (lambda q, r: {"question": q.question, "ground_truth": q.ground_truth or "",
                                       "answers": gold_list(q), "answer": r.answer or ""}, True, False),
    "correctness": (lambda q, r: {"question": q.question, "contexts": contexts_of(r), "answer": r.answer or ""},
                    False, False),
    "answer_correctness": (lambda q, r: {"question": q.question, "ground_truth": q.ground_truth or "",
                                         "answers": gold_list(q), "answer": r.answer or ""}, True, False),
    "plan_scores": (lambda q, r: {"question": q.question, "expected": _expected(q), "answers": gold_list(q),
                                  "contexts": contexts_of(r), "answer": r.answer or ""}, False, False),
}


def _one_call(task: str, items: list[Item], ctx: ScoringContext, to_score: Callable[[dict, Any, str], Score]):
    work = get_work(ctx)
    label = work.judge.label(task)
    build, needs_gt, _ = BUILDERS[task]
    reqs = [None if r.error or (needs_gt and not (q.ground_truth or "").strip()) else (r.method, q.id, build(q, r))
            for q, r in items]
    outs = work.run(task, reqs)
    scores = []
    for (q, r), o in zip(items, outs):
        if r.error:
            scores.append(Score.nan("target error"))
        elif needs_gt and not (q.ground_truth or "").strip():
            scores.append(Score.nan("no ground truth"))
        elif o is None or o.output is None:
            scores.append(Score(float("nan"), reason=o.error if o else "no judge output", judge_id=label))
        else:
            s = to_score(o.output, work, label)
            scores.append(dataclasses.replace(s, judge_id=label))
    return scores


def _factual(out: dict, work, label: str, as_grade: bool) -> Score:
    weighted = sum(out[k]["score"] * w for k, w in WEIGHTS.items())
    g = grade(weighted)
    details = _base(work, label, score_100=round(weighted, 2), grade=g, weights=WEIGHTS,
                    **{k: out[k] for k in WEIGHTS}, overall_reasoning=out["overall_reasoning"])
    return Score(float(GRADE_POINTS[g]) if as_grade else weighted / 100.0, details=details, label=g)


def factual_accuracy(items, ctx):
    """0.5*correctness + 0.3*completeness + 0.2*consistency (judge's 0-100 parts) / 100."""
    return _one_call("factual_accuracy", items, ctx, lambda o, w, l: _factual(o, w, l, False))


def factual_grade(items, ctx):
    """Grade points of factual_accuracy: A=4 (>=80), B=3, C=2, D=1, E=0 (<20)."""
    return _one_call("factual_accuracy", items, ctx, lambda o, w, l: _factual(o, w, l, True))


def _scaled(key: str | None, lo: float, hi: float, normalised: bool):
    def to_score(out: dict, work, label: str) -> Score:
        part = out[key] if key else out
        native = part["score"]
        value = (native - lo) / (hi - lo) if normalised else native
        return Score(float(value), details=_base(work, label, native=native, scale=f"{lo:g}-{hi:g}",
                                                 reason=part.get("reason", "")))
    return to_score


def correctness(items, ctx):
    return _one_call("correctness", items, ctx, _scaled(None, 0, 5, False))


def correctness_norm(items, ctx):
    return _one_call("correctness", items, ctx, _scaled(None, 0, 5, True))


def answer_correctness(items, ctx):
    return _one_call("answer_correctness", items, ctx, _scaled(None, 0, 1, False))


def plan_metric(key: str, normalised: bool):
    def fn(items, ctx):
        return _one_call("plan_scores", items, ctx, _scaled(key, 1, 5, normalised))
    fn.__doc__ = f"Korean plan {key} on 1-5{' normalised to 0-1' if normalised else ''}."
    return fn


def _groundedness(items: list[Item], ctx: ScoringContext, normalised: bool) -> list[Score]:
    """Judge 0-5 with supported/unsupported claims; reuses the shared answer decomposition."""
    work = get_work(ctx)
    label = work.judge.label("decompose", "groundedness")
    decs = decompositions(work, items)
    reqs = []
    for (q, r), d in zip(items, decs):
        claims = d.output["claims"] if d is not None and d.output else None
        reqs.append(None if r.error or not claims else
                    (r.method, q.id, {"contexts": contexts_of(r), "answer": r.answer, "claims": claims,
                                      "n_citations": len(r.citations)}))
    outs = work.run("groundedness", reqs)
    scores = []
    for (q, r), d, o in zip(items, decs, outs):
        if r.error:
            scores.append(Score.nan("target error"))
            continue
        if d is None or d.output is None:
            scores.append(Score(float("nan"), reason=d.error if d else "no judge output", judge_id=label))
            continue
        claims = d.output["claims"]
        if not claims:
            scores.append(Score(float("nan"), reason="the answer makes no factual claims", judge_id=label))
            continue
        if o is None or o.output is None:
            scores.append(Score(float("nan"), reason=o.error if o else "no judge output", judge_id=label))
            continue
        native = o.output["score"]
        pick = lambda idx: [claims[i - 1] for i in idx]  # noqa: E731
        details = _base(work, label, native=native, scale="0-5", reason=o.output["reason"],
                        supported_claims=pick(o.output["supported_claims"]),
                        unsupported_claims=pick(o.output["unsupported_claims"]))
        scores.append(Score(native / 5 if normalised else native, details=details, judge_id=label))
    return scores


def groundedness(items, ctx):
    return _groundedness(items, ctx, False)


def groundedness_norm(items, ctx):
    return _groundedness(items, ctx, True)


# ---- answer classes ----------------------------------------------------------------------
def _phrase_rule(r, options: dict) -> tuple[bool, dict]:
    """The abstention module's detector when present, else a minimal hedge-phrase check."""
    try:
        from evalcore.metrics.abstention import detect_dont_know
    except ImportError:
        if r.abstained is not None:
            return bool(r.abstained), {"by": "abstained_field"}
        return is_hedge(r.answer), {"by": "judged.minimal_phrase_check"}
    return detect_dont_know(r, options)


def classify(items: list[Item], ctx: ScoringContext) -> list[tuple[str | None, dict, str | None]]:
    """(class, evidence, error) per item: DONT_KNOW by field/phrases/abstention judge, else the judge."""
    work = get_work(ctx)
    res: list[list] = []
    abst_reqs = []
    for q, r in items:
        if r.error:
            res.append([None, {}, "target error"])
            abst_reqs.append(None)
            continue
        dk, how = _phrase_rule(r, ctx.options)
        inconclusive = (not dk and r.abstained is None and any(c in norm(r.answer) for c in INCONCLUSIVE))
        res.append(["DONT_KNOW" if dk else None, dict(how), None])
        abst_reqs.append((r.method, q.id, {"question": q.question, "answer": r.answer}) if inconclusive else None)
    for row, o in zip(res, work.run("abstention", abst_reqs)):
        if o is None:
            continue
        if o.output is None:
            row[1]["abstention_judge_error"] = o.error
        elif o.output["abstained"]:
            row[0] = "DONT_KNOW"
            row[1] = {"by": "abstention_judge", "judge": work.judge.label("abstention"), "reason": o.output["reason"]}
    cls_reqs = [None if row[0] or row[2] or not (q.ground_truth or "").strip() else
                (r.method, q.id, {"question": q.question, "ground_truth": q.ground_truth, "answers": gold_list(q),
                                  "answer": r.answer or ""})
                for row, (q, r) in zip(res, items)]
    for row, (q, _), o in zip(res, items, work.run("answer_class", cls_reqs)):
        if row[0] or row[2]:
            continue
        if not (q.ground_truth or "").strip():
            row[2] = "no ground truth"
        elif o is None or o.output is None:
            row[2] = o.error if o else "no judge output"
        else:
            row[0] = o.output["label"]
            row[1] = {**row[1], "by": "answer_class_judge", "reason": o.output["reason"]}
    return [tuple(row) for row in res]


def class_metric(target: str | None):
    """answer_class (1 = CORRECT, 0 otherwise) or an indicator for one class."""
    def fn(items, ctx):
        work = get_work(ctx)
        label = work.judge.label("answer_class")
        out = []
        for cls, how, err in classify(items, ctx):
            if err:
                out.append(Score(float("nan"), reason=err, judge_id=None if err == "target error" else label))
                continue
            hit = cls == (target or "CORRECT")
            out.append(Score(float(hit), details=_base(work, label, **{"class": cls}, evidence=how), judge_id=label,
                             label=AnswerClass(cls).value))
        return out
    return fn
