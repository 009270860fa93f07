"""Judge reliability: spot checks with a second judge, Cohen's kappa, judge-human agreement.

Why: a judge at temperature 0 is repeatable, not right. Re-judging a seeded random sample
with a second judge (or a second prompt version) and measuring disagreement is the cheap
early warning that a judge drifted or that a metric is too noisy to compare methods on.

Disagreement, per compared value (METRICS.md: "|delta| > 1 point or different class"):
- binary / class metrics (answer_class, answer_correct...): the values differ;
- point scales (groundedness, correctness 0-5; judge_* 1-5; factual_grade 0-4): |delta| > 1;
- 0-1 scores (faithfulness, context_precision, *_norm...): |delta| > 0.2, i.e. more than one
  point when the 0-1 range is read as a 0-5 scale.
Kappa uses the same categories: the class, the integer point, or round(5 * value).
Which rule a metric gets is its MetricSpec's `scale` ("class", "points") and `norm_width` (a 0-1
copy of a point scale); a metric the registry does not know is read as a 0-1 score.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Hashable, Sequence

from evalcore.errors import EvalcoreError
from evalcore.judges import make_judge
from evalcore.metrics.base import ScoringContext
from evalcore.queries import query_df, run_questions, run_responses
from evalcore.stats.agreement import cohen_kappa
from evalcore.schemas import MetricValue

def _scale(metric: str) -> tuple[str, float | None]:
    """(scale, norm_width) of a metric from its spec; ("unit", None) for a name not registered."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    return (spec.scale, spec.norm_width) if spec is not None else ("unit", None)


def category(metric: str, value: float) -> Hashable:
    scale, width = _scale(metric)
    if scale in ("class", "points"):
        return int(round(value))
    if width is not None:
        return int(round(width * value))
    return int(round(5 * value))


def disagree(metric: str, v1: float, v2: float) -> bool:
    scale, width = _scale(metric)
    if scale == "class":
        return int(round(v1)) != int(round(v2))
    if scale == "points":
        return abs(v1 - v2) > 1.0
    if width is not None:
        # a 0-1 copy of a point scale is judged on the native scale (a 1-point gap on 1-5 is
        # 0.25 on the copy, and must not count there when it does not count on the original)
        return abs(v1 - v2) * width > 1.0 + 1e-9
    return abs(v1 - v2) > 0.2 + 1e-12


def agreement(metric: str, pairs: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Two judges' values of one metric on the same answers -> n (pairs with both values),
    disagreement_rate (`disagree`) and Cohen's kappa over `category`: the one definition the
    spot check and `evalcore rejudge` report."""
    pairs = [(a, b) for a, b in pairs if not (math.isnan(a) or math.isnan(b))]
    flags = [disagree(metric, a, b) for a, b in pairs]
    return {"n": len(pairs), "disagreement_rate": (sum(flags) / len(flags)) if flags else None,
            "kappa": cohen_kappa([category(metric, a) for a, _ in pairs], [category(metric, b) for _, b in pairs])}


def _judge_spec(label: str) -> str:
    return label.split("/", 1)[0]


def _resolve_spec(spec: str) -> str:
    """`heuristic` -> `heuristic:lexical-v3`, `anthropic` -> its default model, `openai:m@url` ->
    `openai:m`: the provider:model prefix stored judge labels start with."""
    try:
        return make_judge(spec).spec
    except EvalcoreError:
        return spec


def spot_check(store, run_id: str, fraction: float = 0.1, second_judge: str = "heuristic",
               first_judge: str | None = None, seed: int = 0) -> dict[str, Any]:
    """Re-judge a seeded random `fraction` of the run's judged (method, question) pairs with
    `second_judge`, compare with the stored values of `first_judge` (default: the judge that
    produced most judged values), and store the result:
    - a `judge_disagreement` metric value per sampled pair (share of its metrics that disagree),
    - the summary under manifest.config["judge_reliability"] (a list, newest last).
    Returns the summary dict. The first judge's stored values are never overwritten."""
    from evalcore.metrics.judged import SPECS

    specs = {s.name: s for s in SPECS}
    run_id = store.resolve(run_id)
    df = query_df(store, "SELECT method, question_id, metric, value, judge_id FROM metrics "
                         "WHERE run_id = ? AND judge_id IS NOT NULL", [run_id])
    df = df[df["metric"].isin(list(specs))]
    if df.empty:
        raise EvalcoreError(f"run {run_id} has no judged metric values to spot-check")
    df = df.assign(spec=df["judge_id"].map(_judge_spec))
    first = _resolve_spec(first_judge) if first_judge else df["spec"].value_counts().idxmax()
    df = df[df["spec"] == first]
    if df.empty:
        raise EvalcoreError(f"run {run_id} has no values judged by {first!r}")
    pairs = sorted(set(zip(df["method"], df["question_id"])))
    k = max(1, min(len(pairs), math.ceil(fraction * len(pairs))))
    sample = sorted(random.Random(seed).sample(pairs, k))
    metrics = sorted(set(df["metric"]))

    questions = {q.id: q for q in run_questions(store, run_id)}
    responses = {(r.method, r.question_id): r for r in run_responses(store, run_id)}
    items = [(questions[qid], responses[(m, qid)]) for m, qid in sample if (m, qid) in responses and qid in questions]
    judge = make_judge(second_judge, store=store)
    writer = store.open_run(run_id)
    ctx = ScoringContext(run_id=run_id, store=store, writer=writer,
                         options={"judge": judge, "judge_update_manifest": False})
    second = {m: specs[m].compute(items, ctx) for m in metrics}
    work = ctx._resources.get("judge_work")
    calls = work.take_calls() if work is not None else []
    if calls:  # the second judge's calls are kept with the run (its claims are not)
        writer.write_judge_calls(calls)
    firsts = {(r.method, r.question_id, r.metric): r.value for r in df.itertuples(index=False)}

    per_metric: dict[str, dict[str, Any]] = {}
    per_item: dict[tuple[str, str], dict[str, Any]] = {}
    all_flags: list[bool] = []
    for m in metrics:
        pairs, flags = [], []
        for (q, r), s in zip(items, second[m]):
            v1 = firsts.get((r.method, q.id, m))
            if v1 is None or math.isnan(v1) or math.isnan(s.value):
                continue
            d = disagree(m, v1, s.value)
            flags.append(d)
            pairs.append((v1, s.value))
            per_item.setdefault((r.method, q.id), {})[m] = {"first": v1, "second": s.value, "disagree": d}
        all_flags += flags
        per_metric[m] = agreement(m, pairs)
    second_label = f"{judge.provider}:{judge.model}"
    summary = {"first_judge": first, "second_judge": second_label, "fraction": fraction, "seed": seed,
               "spot_check_n": len(items), "n_compared": len(all_flags),
               "disagreement_rate": (sum(all_flags) / len(all_flags)) if all_flags else None,
               "per_metric": per_metric, "at": datetime.now(timezone.utc).isoformat()}
    values = [MetricValue(run_id=run_id, method=m, question_id=qid, metric="judge_disagreement",
                          value=sum(v["disagree"] for v in d.values()) / len(d), group="reliability",
                          details={"first_judge": first, "second_judge": second_label, "metrics": d},
                          judge_id=second_label)
              for (m, qid), d in sorted(per_item.items()) if d]
    if values:
        writer.write_metrics(values)
    writer.publish()
    writer.edit_manifest(lambda m: {"config": {**m.config, "judge_reliability": [
        *m.config.get("judge_reliability", []), summary]}})
    return summary
