"""The rows of a comparison's forest plot: per tested metric, Δ with its 95% CI, the Holm p and
n, and the shade the verdict gives it (better / worse / not significant, in the metric's own
direction).

Why a module of its own: the forest plot is the picture a PM reads in two seconds, so it must
say exactly what the verdict sentences say (evalcore.analysis.comparison.verdict): same Δ, same CI, same
Holm p, same outcome. This function only re-shapes a pair table and its verdict lines; the page
draws the figure. Rows whose values live on different scales (a 0–1 score beside milliseconds)
get separate panels, so one latency Δ of 300 ms does not flatten every score's bar to a dot.
"""

from __future__ import annotations

import math

import pandas as pd

from evalcore.analysis.comparison.verdict import NOT_COMPARED

# The shades of the plot; the verdict's outcomes fold into them (amber and grey outcomes are
# all "not significant" in the picture; the hover and the sentence say which). A metric on 0
# pairs keeps its own: it has no Δ and no CI to draw, and must not look like a finding.
SHADES = ("better", "worse", "not significant", NOT_COMPARED)
SCORE_PANEL = "scores (0–1)"
COLUMNS = ["metric", "delta", "ci_low", "ci_high", "p_holm", "n", "outcome", "shade", "higher_is_better",
           "panel", "label"]


def shade(outcome: str) -> str:
    """better / worse (significant after Holm) and not compared stay; every other outcome is
    "not significant"."""
    return outcome if outcome in ("better", "worse", NOT_COMPARED) else "not significant"


def row_label(metric: str, p_holm: float, n: int, higher_is_better: bool) -> str:
    """The plot's row label: the metric, its direction when lower is better, Holm p and n —
    readable without hovering (`faithfulness · Holm p = 0.003 · n = 40`); a metric on 0 pairs
    says it was not compared."""
    way = " (lower is better)" if not higher_is_better else ""
    if n == 0:
        return f"{metric}{way} · {NOT_COMPARED} · n = 0"
    p = f"{p_holm:.2g}" if p_holm == p_holm else "–"
    return f"{metric}{way} · Holm p = {p} · n = {n}"


def _panel(metric: str, span: float, ci_low: float, ci_high: float) -> str:
    """Metrics whose observed values span at most 1 (scores, rates) share one axis; any other
    metric (latency, cost, counts) gets an axis of its own, named after it."""
    if span == span:
        return SCORE_PANEL if span <= 1.0 + 1e-9 else metric
    bounded = all(v != v or abs(v) <= 1.0 for v in (ci_low, ci_high))
    return SCORE_PANEL if bounded else metric


def forest_rows(table: pd.DataFrame, lines: pd.DataFrame) -> pd.DataFrame:
    """One row per verdict line (the tested metrics, in the verdict's order) with the numbers of
    the pair table (evalcore.analysis.comparison.compare.pair_table): Δ = candidate − baseline, its
    paired-bootstrap 95% CI, Holm p, paired n, the verdict outcome and its shade, the panel
    (shared 0–1 axis or the metric's own) and the row label."""
    if lines.empty:
        return pd.DataFrame(columns=COLUMNS)
    by_metric = table.set_index("metric")
    rows = []
    for line in lines.itertuples(index=False):
        r = by_metric.loc[line.metric]
        n = int(r["n_pairs"])
        hib = bool(r["higher_is_better"])
        p = float(r["p_holm"])
        lo, hi = float(r["ci_low"]), float(r["ci_high"])
        span = float(r["span"]) if "span" in by_metric.columns else math.nan
        rows.append({"metric": line.metric, "delta": float(r["delta"]), "ci_low": lo, "ci_high": hi,
                     "p_holm": p, "n": n, "outcome": line.outcome, "shade": shade(line.outcome),
                     "higher_is_better": hib, "panel": _panel(line.metric, span, lo, hi),
                     "label": row_label(line.metric, p, n, hib)})
    return pd.DataFrame(rows, columns=COLUMNS)
