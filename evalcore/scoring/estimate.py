"""`evalcore score --dry-run`: what a scoring pass would cost, before anything is sent.

Why apart from the pass itself (evalcore/scoring/engine.py): it writes nothing and calls no judge;
it only sums what each selected metric says its calls would take, and prices the tokens.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from evalcore.metrics.base import Item, MetricSpec, ScoringContext


def estimate_pass(specs: list[MetricSpec], items: list[Item], ctx: ScoringContext) -> dict[str, Any]:
    """Sum of each selected spec's estimate. A spec's own cost_usd is used when it gives one
    (the judge layer prices its own calls and skips cached ones); otherwise its tokens are
    priced with the performance price table for the chosen judge's model. A spec whose calls
    have no price is listed in `unpriced_metrics`, and then the total cost is None (unknown),
    never the sum of the priced ones."""
    from evalcore.metrics.performance import token_cost

    per_metric: dict[str, Any] = {}
    total: Counter = Counter()
    unpriced = []
    for spec in specs:
        if spec.estimate is None:
            if "judge" in spec.needs:
                per_metric[spec.name] = {"note": "no estimate available"}
            continue
        est = dict(spec.estimate(items, ctx))
        per_metric[spec.name] = est
        for key in ("calls", "input_tokens", "output_tokens", "cached"):
            total[key] += float(est.get(key, 0) or 0)
        if est.get("cost_usd") is not None:
            total["cost_usd"] += float(est["cost_usd"])
        elif est.get("price_known") is False:
            unpriced.append(spec.name)
        else:
            cost = token_cost(ctx.options.get("judge"), int(est.get("input_tokens", 0) or 0),
                              int(est.get("output_tokens", 0) or 0), ctx.options.get("prices"))
            if cost is None:
                unpriced.append(spec.name)
            else:
                total["cost_usd"] += cost
    from evalcore.judges.work import judge_repeats

    # judged metrics' calls and cost count every one of the K repeats (judges/work.estimate_calls)
    return {"per_metric": per_metric, "judge_repeats": judge_repeats(ctx.options),
            "calls": int(total["calls"]), "cached": int(total["cached"]),
            "input_tokens": int(total["input_tokens"]), "output_tokens": int(total["output_tokens"]),
            "cost_usd": None if unpriced else float(total["cost_usd"]),
            "unpriced_metrics": unpriced}
