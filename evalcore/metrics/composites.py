"""Composite scores built from other metrics' stored values (scoring's second phase).

Why a second phase: a composite is a weighted mix of metrics that may come from different
modules, judges or earlier scoring passes. Scoring writes every ordinary metric first, then
reads the run's stored values and passes them in (`ScoringContext.stored_metrics`: values in,
values out; no metric reads the store) to the specs of group "composite", so a
composite always reflects what is in the store (re-scoring faithfulness updates ragas_score
the next time composites run).

Every composite renormalises its weights over the parts that have a value for the question
and lists the missing parts in details; with no part at all it is NaN with a reason. A failed
answer (a target error, or empty where an answer was expected) is not renormalised: it scores
0, every part the run supports counted as 0, cost and latency included (a fast, free error is
not a cheap answer), so a system whose every answer failed scores 0.

- ragas_score   = 0.3 faithfulness + 0.2 context_precision + 0.2 context_recall + 0.3 answer_relevance
- overall_score = the Korean plan's .15 keyword_hit + .10 keyword_coverage + .15 negative_detection
                  + .25 judge_correctness/5 + .20 judge_faithfulness/5 + .15 judge_completeness/5
- weighted_score = accuracy .30, faithfulness .20, citation .20, retrieval .15, cost .10,
                  latency .05; cost and latency score s = budget / (budget + value) against fixed
                  reference budgets (defaults BUDGETS: 2,000 ms per answer, $0.01 per query).
Why fixed budgets, not min-max within the run: the score then depends only on the system's own
answers, so it is comparable across runs, does not move when other systems are imported next to
it, and drops when the system gets slower or dearer (min-max hid a 10x slowdown of everyone).
Options (stored in the run manifest by scoring): weights, objectives, budgets,
overall_components, ragas_weights; the budgets used are also in each weighted_score's details.
Run-level form (on run means, across runs): `weighted`, or `combine` + `objective_means`.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, Mapping, Sequence

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import ANSWER_QUALITY, Item, MetricOption, MetricSpec, Score, ScoringContext, answer_failed

RAGAS_WEIGHTS = {"faithfulness": 0.3, "context_precision": 0.2, "context_recall": 0.2, "answer_relevance": 0.3}
# component -> (metric, divisor, weight)
OVERALL_COMPONENTS: dict[str, tuple[str, float, float]] = {
    "keyword_hit": ("keyword_hit", 1.0, 0.15),
    "keyword_coverage": ("keyword_coverage", 1.0, 0.10),
    "negative_detection": ("negative_detection", 1.0, 0.15),
    "correctness": ("judge_correctness", 5.0, 0.25),
    "faithfulness": ("judge_faithfulness", 5.0, 0.20),
    "completeness": ("judge_completeness", 5.0, 0.15),
}
WEIGHTS = {"accuracy": 0.30, "faithfulness": 0.20, "citation": 0.20, "retrieval": 0.15,
           "cost": 0.10, "latency": 0.05}
# objective -> parts; a part is a metric name, or a tuple of alternatives (first one with a value).
# The objective's value is the mean of its parts that have a value.
OBJECTIVES: dict[str, list[str | tuple[str, ...]]] = {
    "accuracy": [("answer_correctness", "token_f1"), "unanswerable_accuracy"],
    "faithfulness": [("faithfulness",)],
    "citation": ["citation_precision", "citation_recall"],
    "retrieval": [("ndcg@10", "recall@5", "hit_rate@5", "mrr")],
    "cost": ["cost_usd"],
    "latency": ["latency_ms"],
}
# Reference budgets of the lower-is-better objectives (score 0.5 at the budget). Fixed, never
# derived from the data, on purpose (see above).
BUDGETS: dict[str, float] = {"latency": 2000.0, "cost": 0.01}
BUDGET_UNITS = {"latency": "ms per answer", "cost": "USD per query"}
INVERTED = set(BUDGETS)


def _ok(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def combine(parts: dict[str, float | None], weights: dict[str, float]) -> tuple[float | None, dict, list[str]]:
    """Weighted mean over the parts with a value, weights renormalised to sum to 1.
    Returns (score or None, weights used, missing part names)."""
    present = {k: w for k, w in weights.items() if w > 0 and _ok(parts.get(k))}
    missing = [k for k, w in weights.items() if w > 0 and not _ok(parts.get(k))]
    total = sum(present.values())
    if not present or total <= 0:
        return None, {}, missing
    used = {k: w / total for k, w in present.items()}
    return sum(used[k] * float(parts[k]) for k in used), used, missing


def _objective(values: dict[str, float], parts: Sequence[str | tuple[str, ...]]) -> tuple[float | None, list[str]]:
    picked, names = [], []
    for part in parts:
        options = (part,) if isinstance(part, str) else part
        for name in options:
            if _ok(values.get(name)):
                picked.append(float(values[name]))
                names.append(name)
                break
    return (sum(picked) / len(picked) if picked else None), names


def resolve_budgets(budgets: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The budgets to use: BUDGETS overlaid with `budgets` (options["budgets"]); None or {} ->
    the defaults. Anything but a positive finite number is refused rather than guessed, since a
    bad budget would silently skew every score of the run."""
    if budgets is None:
        return dict(BUDGETS)
    if not isinstance(budgets, Mapping):
        raise EvalcoreError(f"option 'budgets' must be a mapping like {BUDGETS}, got {budgets!r}")
    unknown = sorted(set(budgets) - set(BUDGETS))
    if unknown:
        raise EvalcoreError(f"option 'budgets' has unknown key(s) {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(sorted(BUDGETS))}")
    out = dict(BUDGETS)
    for name, value in budgets.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value <= 0:
            raise EvalcoreError(f"option 'budgets' {name!r} must be a positive finite number "
                                f"({BUDGET_UNITS[name]}), got {value!r}")
        out[name] = float(value)
    return out


def budget_score(value: float, budget: float) -> float:
    """Lower is better -> (0, 1], higher is better: budget / (budget + value). 1 at zero, 0.5 at
    the budget, strictly decreasing; depends on nothing but the value and the budget. A negative
    or non-finite value is an error (ValueError), never a silent 0."""
    if not math.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget must be a positive finite number, got {budget!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"value {value!r} is {'negative' if value < 0 else 'not finite'}")
    return budget / (budget + value)


def objective_values(values: dict[str, float], budgets: Mapping[str, Any] | None = None,
                     objectives: dict | None = None
                     ) -> tuple[dict[str, float | None], dict[str, list[str]], dict[str, str]]:
    """Objective values from metric values (one question's, or run means), each lower-is-better
    objective scored against its budget. Returns (objectives, metrics used, invalid), where
    invalid maps an objective whose raw value could not be scored to why; its value is None,
    so `combine` renormalises over the rest and lists it as missing."""
    budgets, objectives = resolve_budgets(budgets), objectives or OBJECTIVES
    out, used, invalid = {}, {}, {}
    for name, parts in objectives.items():
        value, names = _objective(values, parts)
        if value is not None and name in budgets:
            try:
                value = budget_score(value, budgets[name])
            except ValueError as exc:
                invalid[name] = f"{name} ({', '.join(names)}): {exc}"
                value = None
        out[name], used[name] = value, names
    return out, used, invalid


def objective_means(values: dict[str, float], budgets: Mapping[str, Any] | None = None,
                    objectives: dict | None = None) -> tuple[dict[str, float | None], dict[str, list[str]]]:
    """`objective_values` without the invalid reasons (second argument: budgets, None = defaults)."""
    objs, used, _ = objective_values(values, budgets, objectives)
    return objs, used


def weighted(values: dict[str, float], budgets: Mapping[str, Any] | None = None,
             weights: dict[str, float] | None = None, objectives: dict | None = None
             ) -> tuple[float | None, dict[str, Any]]:
    """The weighted_score formula on one set of metric values: per question (what scoring
    stores) or on run means (the run-level form; note a score of mean cost differs from the
    mean of per-question scores). Returns (score or None, details)."""
    budgets, objectives = resolve_budgets(budgets), objectives or OBJECTIVES
    objs, used_metrics, invalid = objective_values(values, budgets, objectives)
    score, used, missing = combine(objs, weights or WEIGHTS)
    raw = {n: _objective(values, objectives[n])[0] for n in budgets if n in objectives}
    details: dict[str, Any] = {"objectives": objs, "metrics_used": used_metrics, "weights_used": used,
                               "missing": missing, "budgets": budgets, "raw": raw}
    if invalid:
        details["invalid"] = invalid
    return score, details


def overall_parts(values: dict[str, float], components: dict | None = None) -> tuple[dict, dict]:
    components = components or OVERALL_COMPONENTS
    parts, weights = {}, {}
    for key, (metric, divisor, weight) in components.items():
        v = values.get(metric)
        parts[key] = float(v) / divisor if _ok(v) else None
        weights[key] = weight
    return parts, weights


# ---- per-question specs ------------------------------------------------------------------
def stored_values(ctx: ScoringContext) -> dict[tuple[str, str, int], dict[str, float]]:
    """{(method, question_id, trial): {metric: value}} of the run, as scoring passed them in
    (`ScoringContext.stored_metrics`): a composite reads no store, it is given the values."""
    if ctx.stored_metrics is None:
        raise EvalcoreError("composite metrics are built from the run's stored values: score them with "
                            "evalcore score (scoring passes the values in)")
    return ctx.stored_metrics


def _explain_missing(name: str, needed: list[str]) -> str:
    return f"no stored value for any part of {name} ({', '.join(needed)}); score those metrics first"


def _failed_items(items: list[Item], ctx: ScoringContext) -> list[bool]:
    answers_expected = ctx.run_has("answer", items)
    return [answer_failed(r, answers_expected) for _, r in items]


def _scored_names(ctx: ScoringContext) -> set[str]:
    """The metrics with a value on some answer of the run (computed once per pass: a run's
    stored values are read once, and every chunk asks)."""
    def names() -> set[str]:
        return {m for values in stored_values(ctx).values() for m, v in values.items() if _ok(v)}
    return ctx.resource("stored_metric_names", names)


def failed_score(r: Any, parts: dict[str, float]) -> Score:
    """A failed answer's composite: 0, every part the run supports counted as 0. Not
    renormalised away (that left a fast, free error scoring near 1 on cost and latency)."""
    return Score(0.0, details={"failed_answer": True, "target_error": r.error_kind or "empty",
                               "parts": parts, "missing": []})


def _supported(ctx: ScoringContext, names_by_part: dict[str, set[str]]) -> dict[str, float]:
    """{part: 0.0} for each part some answer of the run has a value for."""
    scored = _scored_names(ctx)
    return {part: 0.0 for part, names in names_by_part.items() if names & scored}


def _ragas(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    weights = ctx.options.get("ragas_weights") or RAGAS_WEIGHTS
    supported = _supported(ctx, {k: {k} for k in weights})
    out = []
    for (q, r), failed in zip(items, _failed_items(items, ctx)):
        if failed and supported:
            out.append(failed_score(r, supported))
            continue
        values = stored.get((r.method, q.id, r.trial), {})
        score, used, missing = combine({k: values.get(k) for k in weights}, weights)
        out.append(Score.nan(_explain_missing("ragas_score", list(weights))) if score is None else
                   Score(score, details={"weights_used": used, "missing": missing}))
    return out


def _overall(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    components = ctx.options.get("overall_components") or OVERALL_COMPONENTS
    supported = _supported(ctx, {k: {c[0]} for k, c in components.items()})
    out = []
    for (q, r), failed in zip(items, _failed_items(items, ctx)):
        if failed and supported:
            out.append(failed_score(r, supported))
            continue
        parts, weights = overall_parts(stored.get((r.method, q.id, r.trial), {}), components)
        score, used, missing = combine(parts, weights)
        out.append(Score.nan(_explain_missing("overall_score", [c[0] for c in components.values()]))
                   if score is None else Score(score, details={"parts": parts, "weights_used": used,
                                                               "missing": missing}))
    return out


def _weighted(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    objectives = ctx.options.get("objectives") or OBJECTIVES
    weights = ctx.options.get("weights") or WEIGHTS
    budgets = resolve_budgets(ctx.options.get("budgets"))  # defaults recorded in details too
    supported = _supported(ctx, {name: {n for p in parts for n in ((p,) if isinstance(p, str) else p)}
                                    for name, parts in objectives.items()})
    out = []
    for (q, r), failed in zip(items, _failed_items(items, ctx)):
        if failed and supported:
            score = failed_score(r, supported)
            out.append(Score(0.0, details={**score.details, "objectives": score.details.pop("parts"),
                                           "budgets": budgets}))
            continue
        score, details = weighted(stored.get((r.method, q.id, r.trial), {}), budgets, weights, objectives)
        if score is None:  # nothing scorable; an invalid raw value is named rather than hidden
            invalid = details.get("invalid")
            why = ("; ".join(invalid.values()) + " (no other objective has a value)" if invalid
                   else _explain_missing("weighted_score", list(weights)))
            out.append(Score.nan(why, **details))
        else:
            out.append(Score(score, details=details))
    return out


# Inputs per composite: scoring runs a composite by default only when one of these exists.
INPUTS: dict[str, list[str]] = {
    "ragas_score": list(RAGAS_WEIGHTS),
    "overall_score": [c[0] for c in OVERALL_COMPONENTS.values()],
    "weighted_score": sorted({n for parts in OBJECTIVES.values() for p in parts
                              for n in ((p,) if isinstance(p, str) else p)}),
}

def positive_weights(value: Any) -> str | None:
    """What is wrong with a weights option (weights, ragas_weights), or None: names mapped to
    non-negative finite numbers with a positive sum (checked before scoring starts)."""
    good = isinstance(value, Mapping) and value and all(
        isinstance(w, Real) and not isinstance(w, bool) and math.isfinite(w) and w >= 0 for w in value.values())
    return None if good and sum(value.values()) > 0 else "must map names to non-negative numbers with a positive sum"


RAGAS_OPTIONS = (MetricOption("ragas_weights", dict[str, float], RAGAS_WEIGHTS, "ragas_score weights",
                              check=positive_weights),)
OVERALL_OPTIONS = (MetricOption("overall_components", dict[str, tuple[str, float, float]], OVERALL_COMPONENTS,
                                "overall_score components: name -> (metric, divisor, weight)"),)
WEIGHTED_OPTIONS = (
    MetricOption("weights", dict[str, float], WEIGHTS, "weighted_score objective weights", check=positive_weights),
    MetricOption("objectives", dict[str, list[str | list[str]]], OBJECTIVES, "weighted_score objective definitions"),
    MetricOption("budgets", dict[str, float], BUDGETS, "weighted_score reference budgets for latency and cost"),
)
DOCS = "docs/metrics/composites.md"  # one page for the group "composite"

SPECS = [
    MetricSpec("ragas_score", "composite", _ragas, version="2",
               description="0.3 F + 0.2 CP + 0.2 CR + 0.3 AR, renormalised over the parts present.",
               importance=(ANSWER_QUALITY, 13), options=RAGAS_OPTIONS, docs=DOCS),
    MetricSpec("overall_score", "composite", _overall, version="2",
               description="The Korean plan's weighted mix of keyword, negative and 1-5 judge scores.",
               importance=(ANSWER_QUALITY, 14), options=OVERALL_OPTIONS, docs=DOCS),
    MetricSpec("weighted_score", "composite", _weighted, version="3",
               description="Objectives accuracy/faithfulness/citation/retrieval/cost/latency, weighted; "
                           "cost and latency as budget / (budget + value).",
                           importance=(ANSWER_QUALITY, 12), key_rank=0, ranks_systems=True,
               options=WEIGHTED_OPTIONS, docs=DOCS),
]
