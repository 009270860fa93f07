"""Judge reliability: spot checks with a second judge, Cohen's kappa, judge-human agreement.

Why: a judge at temperature 0 is repeatable, not right. Re-judging a seeded random sample
with a second judge (or a second prompt version) and measuring disagreement is the cheap
early warning that a judge drifted or that a metric is too noisy to compare methods on.

Disagreement, per compared value (the spot-check rule of docs/judges.md: "|delta| > 1 point or different class"):
- binary / class metrics (answer_class, answer_correct...): the values differ;
- point scales (groundedness, correctness 0-5; judge_* 1-5; factual_grade 0-4): |delta| > 1;
- 0-1 scores (faithfulness, context_precision, *_norm...): |delta| > 0.2, i.e. more than one
  point when the 0-1 range is read as a 0-5 scale.
Kappa uses the same categories: the class, the integer point, or round(5 * value).
Which rule a metric gets is its MetricSpec's `scale` ("class", "points") and `norm_width` (a 0-1
copy of a point scale); a metric the registry does not know is read as a 0-1 score.

This module only computes (the judge layer writes nothing); the spot check that re-judges a
sample and stores the result is scoring's, evalcore/scoring/spot_check.py.
"""

from __future__ import annotations

import math
from typing import Any, Hashable, Sequence

from evalcore.stats.agreement import cohen_kappa


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
