"""The spot check (`evalcore score --spot-check FRACTION --second-judge J`): re-judge a seeded
sample of a run with a second judge and store how often the two disagree.

Why in scoring's layer: it reads the run, runs judged metrics and writes their results (the
second judge's calls, a `judge_disagreement` value per sampled answer, a summary in the run's
manifest), and scoring is the one writer of results; the judges only compute. What counts as a
disagreement, and the kappa, are one definition by the metric's scale (metrics/judge_agreement.py), which
`evalcore rejudge` reports too.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timezone
from typing import Any

from evalcore.errors import EvalcoreError
from evalcore.judges import make_judge
from evalcore.metrics.judge_agreement import agreement, disagree
from evalcore.metrics.base import ScoringContext
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.store import query_df
from evalcore.schemas import MetricValue


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
    from evalcore.metrics.judged.specs import SPECS

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
    ctx = ScoringContext(run_id=run_id, store=store,
                         options={"judge": judge, "judge_update_manifest": False})
    second = {m: specs[m].compute(items, ctx) for m in metrics}
    work = ctx.built("judge_work")
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
    # the summary describes the disagreement values: recorded with the publish that shows them
    writer.publish(record=lambda m: {"config": {**m.config, "judge_reliability": [
        *m.config.get("judge_reliability", []), summary]}})
    return summary
