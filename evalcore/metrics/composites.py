"""Composite scores built from other metrics' stored values (scoring's second phase).

Why a second phase: a composite is a weighted mix of metrics that may come from different
modules, judges or earlier scoring passes. Scoring writes every ordinary metric first, then
loads the run's stored values and runs the specs of group "composite" over them, so a
composite always reflects what is in the store (re-scoring faithfulness updates ragas_score
the next time composites run).

Every composite renormalises its weights over the parts that have a value for the question
and lists the missing parts in details; with no part at all it is NaN with a reason.

- ragas_score   = 0.3 faithfulness + 0.2 context_precision + 0.2 context_recall + 0.3 answer_relevance
- overall_score = the Korean plan's .15 keyword_hit + .10 keyword_coverage + .15 negative_detection
                  + .25 judge_correctness/5 + .20 judge_faithfulness/5 + .15 judge_completeness/5
- weighted_score = accuracy .30, faithfulness .20, citation .20, retrieval .15, cost .10,
                  latency .05; cost and latency are inverted and min-max normalised over every
                  method of the run (1 = cheapest/fastest; all equal -> 1).
Weights and objective definitions are options (stored in the run manifest by scoring):
options["weights"], options["objectives"], options["overall_components"], options["ragas_weights"].
Run-level forms of the same formulas (on means, across runs) are `combine` + `objective_means`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from evalcore.metrics.base import Item, MetricSpec, Score, ScoringContext

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
INVERTED = {"cost", "latency"}


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


def invert(x: float, lo: float, hi: float) -> float:
    """Lower is better -> 0..1 higher is better, min-max over the compared set."""
    return 1.0 if hi <= lo else 1.0 - (x - lo) / (hi - lo)


def objective_means(values: dict[str, float], bounds: dict[str, tuple[float, float]],
                    objectives: dict | None = None) -> tuple[dict[str, float | None], dict[str, list[str]]]:
    """Objective values from metric values (per question, or run means); `bounds` gives the
    (min, max) used to invert each lower-is-better objective."""
    objectives = objectives or OBJECTIVES
    out, used = {}, {}
    for name, parts in objectives.items():
        value, names = _objective(values, parts)
        if value is not None and name in INVERTED:
            lo, hi = bounds.get(name, (value, value))
            value = invert(value, lo, hi)
        out[name], used[name] = value, names
    return out, used


def overall_parts(values: dict[str, float], components: dict | None = None) -> tuple[dict, dict]:
    components = components or OVERALL_COMPONENTS
    parts, weights = {}, {}
    for key, (metric, divisor, weight) in components.items():
        v = values.get(metric)
        parts[key] = float(v) / divisor if _ok(v) else None
        weights[key] = weight
    return parts, weights


# ---- per-question specs ------------------------------------------------------------------
def stored_values(ctx: ScoringContext) -> dict[tuple[str, str], dict[str, float]]:
    """{(method, question_id): {metric: value}} of the run, loaded once per scoring pass."""
    def load() -> dict[tuple[str, str], dict[str, float]]:
        from evalcore.queries import query_df

        df = query_df(ctx.store, "SELECT method, question_id, metric, value FROM metrics "
                                 "WHERE run_id = ? AND \"group\" <> 'composite'", [ctx.run_id])
        out: dict[tuple[str, str], dict[str, float]] = {}
        for row in df.itertuples(index=False):
            out.setdefault((row.method, row.question_id), {})[row.metric] = float(row.value)
        return out
    return ctx.resource("stored_metrics", load)


def _explain_missing(name: str, needed: list[str]) -> str:
    return f"no stored value for any part of {name} ({', '.join(needed)}); score those metrics first"


def _ragas(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    weights = ctx.options.get("ragas_weights") or RAGAS_WEIGHTS
    out = []
    for q, r in items:
        values = stored.get((r.method, q.id), {})
        score, used, missing = combine({k: values.get(k) for k in weights}, weights)
        out.append(Score.nan(_explain_missing("ragas_score", list(weights))) if score is None else
                   Score(score, details={"weights_used": used, "missing": missing}))
    return out


def _overall(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    components = ctx.options.get("overall_components") or OVERALL_COMPONENTS
    out = []
    for q, r in items:
        parts, weights = overall_parts(stored.get((r.method, q.id), {}), components)
        score, used, missing = combine(parts, weights)
        out.append(Score.nan(_explain_missing("overall_score", [c[0] for c in components.values()]))
                   if score is None else Score(score, details={"parts": parts, "weights_used": used,
                                                               "missing": missing}))
    return out


def _bounds(stored: dict, objectives: dict) -> dict[str, tuple[float, float]]:
    """Min/max of each inverted objective's raw value over every (method, question) of the run."""
    bounds = {}
    for name in INVERTED & set(objectives):
        raw = [v for v in (_objective(vals, objectives[name])[0] for vals in stored.values()) if v is not None]
        if raw:
            bounds[name] = (min(raw), max(raw))
    return bounds


def _weighted(items: list[Item], ctx: ScoringContext) -> list[Score]:
    stored = stored_values(ctx)
    objectives = ctx.options.get("objectives") or OBJECTIVES
    weights = ctx.options.get("weights") or WEIGHTS
    bounds = _bounds(stored, objectives)
    out = []
    for q, r in items:
        objs, used_metrics = objective_means(stored.get((r.method, q.id), {}), bounds, objectives)
        score, used, missing = combine(objs, weights)
        if score is None:
            out.append(Score.nan(_explain_missing("weighted_score", list(weights))))
        else:
            out.append(Score(score, details={"objectives": objs, "metrics_used": used_metrics,
                                             "weights_used": used, "missing": missing}))
    return out


# Inputs per composite: scoring runs a composite by default only when one of these exists.
INPUTS: dict[str, list[str]] = {
    "ragas_score": list(RAGAS_WEIGHTS),
    "overall_score": [c[0] for c in OVERALL_COMPONENTS.values()],
    "weighted_score": sorted({n for parts in OBJECTIVES.values() for p in parts
                              for n in ((p,) if isinstance(p, str) else p)}),
}

SPECS = [
    MetricSpec("ragas_score", "composite", _ragas, version="1",
               description="0.3 F + 0.2 CP + 0.2 CR + 0.3 AR, renormalised over the parts present."),
    MetricSpec("overall_score", "composite", _overall,
               description="The Korean plan's weighted mix of keyword, negative and 1-5 judge scores."),
    MetricSpec("weighted_score", "composite", _weighted,
               description="Objectives accuracy/faithfulness/citation/retrieval/cost/latency, weighted."),
]
