"""Paired comparison of methods/runs on question_id.

Selections are "RUN[:METHOD]"; the first one is the baseline and every other one is compared
with it. Only questions scored on both sides enter a metric's statistics (pairing removes
question difficulty from the noise); questions answered on one side only are listed as
unpaired, and questions with a NaN on either side are counted as missing for that metric.

Per metric: paired means, Δ = mean(candidate) - mean(baseline) with a paired bootstrap CI,
and a p-value from the exact McNemar test (0/1 metrics) or the paired randomization test
(exact for <= 16 non-zero differences, seeded Monte Carlo above). p-values are Holm-adjusted
across the metrics compared for each candidate. improved/regressed/unchanged count questions,
in the metric's better direction (lower latency is an improvement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.errors import EvalcoreError
from evalcore.analysis import sql as Q
from evalcore.metrics.composites import INVERTED, OBJECTIVES, WEIGHTS, combine, objective_means
from evalcore.stats.pareto import pareto_front
from evalcore.stats.resample import (
    DEFAULT_BOOT,
    DEFAULT_PERM,
    holm,
    is_binary,
    mcnemar_exact,
    paired_bootstrap_ci,
    randomization_test,
)
from evalcore.store import RunStore

EPS = 1e-12


@dataclass(frozen=True)
class Selection:
    run_id: str
    method: str

    @property
    def label(self) -> str:
        return f"{self.run_id}:{self.method}"


@dataclass
class Comparison:
    baseline: Selection
    candidates: list[Selection]
    table: pd.DataFrame
    unpaired: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    run_level: pd.DataFrame | None = None
    alpha: float = 0.05

    def to_dict(self) -> dict[str, Any]:
        def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
            if df is None:
                return []
            return [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                    for r in df.to_dict("records")]
        return {"baseline": self.baseline.label, "candidates": [c.label for c in self.candidates],
                "alpha": self.alpha, "metrics": records(self.table), "unpaired": self.unpaired,
                "run_level": records(self.run_level)}


def parse_selections(store: RunStore, refs: Sequence[str]) -> list[Selection]:
    """RUN[:METHOD] -> selections. A run given without a method expands to all its methods."""
    out: list[Selection] = []
    for ref in refs:
        run_ref, _, method = ref.partition(":")
        run_id = store.resolve(run_ref)
        methods = Q.run_methods(store, run_id)
        if method:
            if method not in methods:
                raise EvalcoreError(f"run {run_id} has no method {method!r}; it has: {', '.join(methods)}")
            out.append(Selection(run_id, method))
        else:
            out.extend(Selection(run_id, m) for m in methods)
    if len(out) < 2:
        raise EvalcoreError("compare needs at least two selections (RUN:METHOD, or a run with several methods)")
    if len(set(out)) != len(out):
        raise EvalcoreError("the same run:method is selected twice")
    return out


def _spec_info(metric: str) -> tuple[bool, bool | None]:
    """(higher_is_better, binary) from the registry; binary None for unregistered metrics."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    return (True, None) if spec is None else (spec.higher_is_better, spec.binary)


def _wide(store: RunStore, sel: Selection, metrics: Sequence[str] | None) -> pd.DataFrame:
    rows = Q.paired_rows(store, sel.run_id, sel.method, metrics)
    if rows.empty:
        return pd.DataFrame()
    return rows.pivot_table(index="question_id", columns="metric", values="value", aggfunc="first",
                            dropna=False)


def compare_pair(a: np.ndarray, b: np.ndarray, higher_is_better: bool, n_boot: int, n_perm: int,
                 seed: int, binary: bool | None = None) -> dict[str, Any]:
    """Statistics for aligned, NaN-free paired values of one metric. McNemar for metrics
    declared binary (or, for unregistered metrics, whose values are all 0/1)."""
    n = len(a)
    if n == 0:
        return {"n_pairs": 0, "mean_a": np.nan, "mean_b": np.nan, "delta": np.nan, "ci_low": np.nan,
                "ci_high": np.nan, "p_value": np.nan, "test": "none", "improved": 0, "regressed": 0,
                "unchanged": 0}
    diff = b - a
    better = diff if higher_is_better else -diff
    lo, hi = paired_bootstrap_ci(a, b, n_boot=n_boot, seed=seed)
    if (binary if binary is not None else is_binary(a, b)) and is_binary(a, b):
        p, _, _ = mcnemar_exact(a, b)
        test = "mcnemar_exact"
    else:
        p, kind = randomization_test(diff, n_perm=n_perm, seed=seed)
        test = f"randomization_{kind}"
    return {"n_pairs": n, "mean_a": float(a.mean()), "mean_b": float(b.mean()), "delta": float(diff.mean()),
            "ci_low": lo, "ci_high": hi, "p_value": p, "test": test,
            "improved": int(np.sum(better > EPS)), "regressed": int(np.sum(better < -EPS)),
            "unchanged": int(np.sum(np.abs(diff) <= EPS))}


def compare(store: RunStore, refs: Sequence[str] | Sequence[Selection], metrics: Sequence[str] | None = None,
            n_boot: int = DEFAULT_BOOT, n_perm: int = DEFAULT_PERM, seed: int = 0,
            alpha: float = 0.05) -> Comparison:
    """Compare every selection after the first with the first (the baseline)."""
    sels = list(refs) if refs and isinstance(refs[0], Selection) else parse_selections(store, refs)  # type: ignore[arg-type]
    base, cands = sels[0], sels[1:]
    wide = {s: _wide(store, s, metrics) for s in sels}
    answered = {s: set(Q.question_ids(store, s.run_id, s.method)) for s in sels}
    rows, unpaired = [], {}
    for cand in cands:
        a_df, b_df = wide[base], wide[cand]
        names = sorted(set(a_df.columns) & set(b_df.columns)) if metrics is None else list(metrics)
        missing_names = [m for m in names if m not in a_df.columns or m not in b_df.columns]
        if metrics is not None and missing_names:
            raise EvalcoreError(f"metric(s) {', '.join(missing_names)} not scored for both "
                                f"{base.label} and {cand.label} (run `evalcore score` first)")
        unpaired[cand.label] = {"only_in_baseline": sorted(answered[base] - answered[cand]),
                                "only_in_candidate": sorted(answered[cand] - answered[base])}
        union = answered[base] | answered[cand]
        cand_rows = []
        for metric in names:
            joined = pd.concat([a_df[metric].rename("a"), b_df[metric].rename("b")], axis=1, join="inner").dropna()
            hib, binary = _spec_info(metric)
            stats = compare_pair(joined["a"].to_numpy(float), joined["b"].to_numpy(float), hib, n_boot, n_perm,
                                 seed, binary)
            cand_rows.append({"baseline": base.label, "candidate": cand.label, "metric": metric,
                              "higher_is_better": hib, **stats, "missing": len(union) - stats["n_pairs"]})
        adjusted = holm([r["p_value"] for r in cand_rows])
        for r, p in zip(cand_rows, adjusted):
            r["p_holm"] = p
            r["significant"] = bool(p == p and p < alpha)
        rows.extend(cand_rows)
    cols = ["baseline", "candidate", "metric", "higher_is_better", "n_pairs", "mean_a", "mean_b", "delta",
            "ci_low", "ci_high", "test", "p_value", "p_holm", "significant", "improved", "regressed",
            "unchanged", "missing"]
    table = pd.DataFrame(rows, columns=cols)
    return Comparison(base, cands, table, unpaired, run_level=run_level(store, sels), alpha=alpha)


def run_level(store: RunStore, sels: Sequence[Selection], weights: dict[str, float] | None = None) -> pd.DataFrame:
    """Per selection: weighted_score (the mean of its stored per-question values, the leaderboard's
    number: fixed budgets make it independent of what else is selected), its quality-only part
    (the non-cost objectives on run means), cost per query and median latency (the Pareto axes,
    by the leaderboard's definitions in evalcore.analysis.leaderboard)."""
    from evalcore.analysis.leaderboard import system_rows

    rows = system_rows(store, [(s.run_id, s.method) for s in sels], metrics=None)
    by_key = {(r["run_id"], r["method"]): r for r in rows.to_dict("records")} if not rows.empty else {}
    weights = weights or WEIGHTS
    out = []
    for s in sels:
        means = dict(Q.df(store, """SELECT metric, mean FROM summary_metrics
                                    WHERE run_id = ? AND method = ? AND mean IS NOT NULL""",
                          [s.run_id, s.method], runs=[s.run_id]).itertuples(index=False, name=None))
        raw, _ = objective_means(means, None, {k: v for k, v in OBJECTIVES.items() if k not in INVERTED})
        quality, _, missing = combine(raw, {k: w for k, w in weights.items() if k not in INVERTED})
        row = by_key.get((s.run_id, s.method), {})
        out.append({"label": s.label, "weighted_score": row.get("weighted_score", np.nan),
                    "quality": np.nan if quality is None else quality,
                    "cost": row.get("cost_per_query_usd", np.nan), "latency": row.get("latency_p50_ms", np.nan),
                    "missing_objectives": ", ".join(missing)})
    return pd.DataFrame(out)


def pareto(comparison: Comparison) -> tuple[pd.DataFrame, list[str]]:
    """The Pareto front over the comparison's selections (quality up, cost and latency down)."""
    points = comparison.run_level.to_dict("records") if comparison.run_level is not None else []
    return pareto_front([{k: p[k] for k in ("label", "quality", "cost", "latency")} for p in points])


def regressions(comparison: Comparison, metric: str, min_delta: float = 0.0) -> pd.DataFrame:
    """Rows where `metric` got worse by more than min_delta AND the Holm-adjusted p < alpha."""
    t = comparison.table
    rows = t[t.metric == metric]
    if rows.empty:
        raise EvalcoreError(f"metric {metric!r} was not compared (compared: {', '.join(sorted(set(t.metric)))})")
    worse = np.where(rows.higher_is_better, -rows.delta, rows.delta)
    mask = (worse > min_delta) & rows.significant.astype(bool)
    return rows[mask]
