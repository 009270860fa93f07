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

from typing import Callable

from evalcore.judges.offline.words import is_hedge, norm
from evalcore.metrics.judged.ragas import judge_details
from evalcore.metrics.judged.ragas_stages import claims_task, decompositions
from evalcore.judges.request_inputs import contexts_of, gold_list, has_truth
from evalcore.judges.tasks import get_task
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


Read = Callable[[dict], "Score | float"]


def one_call(task: str, items: list[Item], ctx: ScoringContext, read: Read) -> list[Score]:
    """A metric that asks `task` once per answer: the request is the TaskDef's `inputs`, and
    `read(output)` turns the judge's reply into the value (a Score or a number); the judge's
    label and kind lead its details. A failed answer, or a question without the reference
    the task needs, is not sent."""
    work = get_work(ctx)
    label = work.judge.label(task)
    defn = get_task(task)
    if defn.inputs is None:
        raise ValueError(f"judge task {task!r} has no `inputs`: it cannot back a one-call metric")

    def skip(q, r) -> bool:
        return bool(r.error) or (defn.needs_ground_truth and not has_truth(q))

    outs = work.run(task, [None if skip(q, r) else (r.method, q.id, defn.inputs(q, r)) for q, r in items])
    scores = []
    for (q, r), o in zip(items, outs):
        if r.error:
            scores.append(Score.nan("target error"))
        elif skip(q, r):
            scores.append(Score.nan("no ground truth"))
        elif o is None or o.output is None:
            scores.append(Score(float("nan"), reason=o.error if o else "no judge output", judge_id=label))
        else:
            s = read(o.output)
            s = s if isinstance(s, Score) else Score(float(s))
            scores.append(dataclasses.replace(s, details=judge_details(work, label, **s.details), judge_id=label))
    return scores


def factual(as_grade: bool) -> Read:
    """factual_accuracy: 0.5*correctness + 0.3*completeness + 0.2*consistency (the judge's
    0-100 parts) / 100; factual_grade: its grade points, A=4 (>=80), B=3, C=2, D=1, E=0 (<20)."""
    def read(out: dict) -> Score:
        weighted = sum(out[k]["score"] * w for k, w in WEIGHTS.items())
        g = grade(weighted)
        details = dict(score_100=round(weighted, 2), grade=g, weights=WEIGHTS,
                       **{k: out[k] for k in WEIGHTS}, overall_reasoning=out["overall_reasoning"])
        return Score(float(GRADE_POINTS[g]) if as_grade else weighted / 100.0, details=details, label=g)
    return read


def scaled(key: str | None, lo: float, hi: float, normalised: bool) -> Read:
    """The reply's score (or its part `key`'s) on the judge's lo-hi scale, or its 0-1 copy
    (native - lo) / (hi - lo); the native score, scale and reason go in details."""
    def read(out: dict) -> Score:
        part = out[key] if key else out
        native = part["score"]
        value = (native - lo) / (hi - lo) if normalised else native
        return Score(float(value), details=dict(native=native, scale=f"{lo:g}-{hi:g}", reason=part.get("reason", "")))
    return read


def _groundedness(items: list[Item], ctx: ScoringContext, normalised: bool) -> list[Score]:
    """Judge 0-5 with supported/unsupported claims; reuses the shared answer decomposition
    (the answer analysis in the combined call design)."""
    work = get_work(ctx)
    label = work.judge.label(claims_task(ctx), "groundedness")
    decs = decompositions(work, items, ctx)
    reqs = []
    for (q, r), d in zip(items, decs):
        claims = d.reply_value("claims")[0] if d is not None else None
        reqs.append(None if r.error or not claims else
                    (r.method, q.id, {"contexts": contexts_of(r), "answer": r.answer, "claims": claims,
                                      "n_citations": len(r.citations)}))
    outs = work.run("groundedness", reqs)
    scores = []
    for (q, r), d, o in zip(items, decs, outs):
        if r.error:
            scores.append(Score.nan("target error"))
            continue
        claims, why = d.reply_value("claims") if d is not None else (None, "no judge output")
        if claims is None:
            scores.append(Score(float("nan"), reason=why, judge_id=label))
            continue
        if not claims:
            scores.append(Score(float("nan"), reason="the answer makes no factual claims", judge_id=label))
            continue
        if o is None or o.output is None:
            scores.append(Score(float("nan"), reason=o.error if o else "no judge output", judge_id=label))
            continue
        native = o.output["score"]
        pick = lambda idx: [claims[i - 1] for i in idx]  # noqa: E731
        details = judge_details(work, label, native=native, scale="0-5", reason=o.output["reason"],
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
            out.append(Score(float(hit), details=judge_details(work, label, **{"class": cls}, evidence=how), judge_id=label,
                             label=AnswerClass(cls).value))
        return out
    return fn
