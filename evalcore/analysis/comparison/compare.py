"""Paired comparison of methods/runs on question_id.

Selections are "RUN[:METHOD]"; the first one is the baseline and every other one is compared
with it. Only questions scored on both sides enter a metric's statistics (pairing removes
question difficulty from the noise); questions answered on one side only are listed as
unpaired, and questions with a NaN on either side are counted as missing for that metric.

Per metric: paired means, Δ = mean(candidate) - mean(baseline) with a paired bootstrap CI,
and a p-value from the exact McNemar test (0/1 metrics) or the paired randomization test
(exact for <= 16 non-zero differences, seeded Monte Carlo above); above RESAMPLE_MAX_N pairs
(5,000) the CI and the randomization p are their normal limits (evalcore.stats.resample says
why and where the two are checked to agree). p-values are Holm-adjusted
across the metrics compared for each candidate. improved/regressed/unchanged count questions,
in the metric's better direction (lower latency is an improvement).
"""

from __future__ import annotations

import math
import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.errors import EvalcoreError
from evalcore.analysis.read import sql as Q
from evalcore.analysis.read.catalog import direction
from evalcore.metrics.composites import INVERTED, OBJECTIVES, WEIGHTS, combine, objective_means
from evalcore.stats.pareto import pareto_front
from evalcore.stats.resample import (
    DEFAULT_BOOT,
    DEFAULT_PERM,
    holm,
    is_binary,
    mcnemar_exact,
    paired_mean_ci,
    paired_mean_cis,
    randomization_test,
)
from evalcore.analysis.comparison.regression_gate import check_alpha, known_metric, missing_metrics_message, regressions  # noqa: F401
from evalcore.analysis.comparison.side_by_side import SideBySide, side_by_side
from evalcore.analysis.read.trial_values import question_values_sql, trial_counts
from evalcore.analysis.comparison.verdict import minimum_detectable_effect, span
from evalcore.schemas.ids import id_sql, match_name
from evalcore.store import RunStore, query_df, wide_columns
from evalcore.store.wide import value_expr

EPS = 1e-12
_QID = id_sql("question_id")  # questions pair under the id rule (evalcore.schemas.ids)
ALPHA = 0.05  # compare's default significance level (the Compare page uses it)


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
            stored = match_name(method, methods)  # the id rule: "alpha " / NFD name the stored method
            if stored is None:
                raise EvalcoreError(f"run {run_id} has no method {method!r}; it has: {', '.join(methods)}")
            out.append(Selection(run_id, stored))
        else:
            out.extend(Selection(run_id, m) for m in methods)
    if len(out) < 2:
        raise EvalcoreError("compare needs at least two selections (RUN:METHOD, or a run with several methods)")
    if len(set(out)) != len(out):
        raise EvalcoreError("the same run:method is selected twice")
    return out


def _answered_apart(store: RunStore, base: Selection, cand: Selection) -> tuple[list[str], list[str], int]:
    """(questions only the baseline answered, only the candidate answered, questions either
    answered), from SQL: two sets of 100,000 ids built in Python took a quarter of `compare`.
    Ids are compared under the id rule (evalcore.schemas.ids), as the pairs are."""
    rows = query_df(store, f"""
        WITH a AS (SELECT DISTINCT {_QID} AS question_id FROM responses WHERE run_id = $ra AND method = $ma),
             b AS (SELECT DISTINCT {_QID} AS question_id FROM responses WHERE run_id = $rb AND method = $mb)
        SELECT coalesce(a.question_id, b.question_id) AS question_id, a.question_id IS NOT NULL AS in_a,
               b.question_id IS NOT NULL AS in_b, count(*) OVER () AS n_union
        FROM a FULL JOIN b USING (question_id)
        QUALIFY NOT (in_a AND in_b) OR row_number() OVER () = 1
        ORDER BY question_id""",
        {"ra": base.run_id, "ma": base.method, "rb": cand.run_id, "mb": cand.method},
        runs=sorted({base.run_id, cand.run_id}))
    if rows.empty:
        return [], [], 0
    apart = rows[~(rows.in_a & rows.in_b)]
    return (apart.question_id[apart.in_a].tolist(), apart.question_id[apart.in_b].tolist(),
            int(rows.n_union.iloc[0]))


def _scored(store: RunStore, sels: Sequence[Selection]) -> dict[Selection, dict[str, bool]]:
    """Per selection, each metric with a stored row (a value or NaN) -> whether it has a value,
    from the run summaries (a few hundred rows, not the metric rows)."""
    rows = query_df(store, """SELECT run_id, method, metric, n_scored > 0 AS valued FROM summary_metrics
                              WHERE list_contains($runs, run_id)""",
                    {"runs": sorted({s.run_id for s in sels})}, runs=sorted({s.run_id for s in sels}))
    out: dict[Selection, dict[str, bool]] = {s: {} for s in sels}
    for run_id, method, metric, valued in rows.itertuples(index=False, name=None):
        sel = Selection(run_id, method)
        if sel in out:
            out[sel][metric] = bool(valued)
    return out


def _pairs(store: RunStore, base: Selection, cand: Selection,
           metrics: Sequence[str]) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, tuple[int, int]]]:
    """Per metric, the (baseline, candidate) values of the questions both scored, in question_id
    order (seeded resampling draws the same pairs wherever a comparison is computed); and per
    metric how many questions have a value on each side (what the gate's coverage rule reads)."""
    both = side_by_side(store, base.label, cand.label, metrics)
    valued = {m: (int(np.sum(~np.isnan(both.a[m]))), int(np.sum(~np.isnan(both.b[m])))) for m in metrics}
    return {m: both.pairs(m) for m in metrics}, valued


def compare_pair(a: np.ndarray, b: np.ndarray, higher_is_better: bool, n_boot: int, n_perm: int,
                 seed: int, binary: bool | None = None, ci: tuple[float, float] | None = None) -> dict[str, Any]:
    """Statistics for aligned, NaN-free paired values of one metric. McNemar for metrics
    declared binary (or, for unregistered metrics, whose values are all 0/1). `ci`: the CI
    already computed by paired_mean_cis with the same n_boot and seed (tested_rows does)."""
    n = len(a)
    if n == 0:
        return {"n_pairs": 0, "mean_a": np.nan, "mean_b": np.nan, "delta": np.nan, "ci_low": np.nan,
                "ci_high": np.nan, "p_value": np.nan, "test": "none", "improved": 0, "regressed": 0,
                "unchanged": 0, "sd_diff": np.nan, "span": np.nan}
    diff = b - a
    better = diff if higher_is_better else -diff
    lo, hi = ci if ci is not None else paired_mean_ci(a, b, n_boot=n_boot, seed=seed)
    if (binary if binary is not None else is_binary(a, b)) and is_binary(a, b):
        p, _, _ = mcnemar_exact(a, b)
        test = "mcnemar_exact"
    else:
        p, kind = randomization_test(diff, n_perm=n_perm, seed=seed)
        test = f"randomization_{kind}"
    return {"n_pairs": n, "mean_a": float(a.mean()), "mean_b": float(b.mean()), "delta": float(diff.mean()),
            "ci_low": lo, "ci_high": hi, "p_value": p, "test": test,
            "improved": int(np.sum(better > EPS)), "regressed": int(np.sum(better < -EPS)),
            "unchanged": int(np.sum(np.abs(diff) <= EPS)),
            "sd_diff": float(diff.std(ddof=1)) if n > 1 else np.nan, "span": span(a, b)}


def tested_rows(pairs: dict[str, tuple[np.ndarray, np.ndarray]], base: str, cand: str, n_boot: int, n_perm: int,
                seed: int, alpha: float) -> list[dict[str, Any]]:
    """Per metric, its aligned pairs (a, b: NaN-free, in question_id order) -> compare_pair's
    statistics, with Holm-adjusted p, significance and MDE over the metrics given (one family).
    `compare` and the Compare page's `pair_table` both end here: the same numbers."""
    names = list(pairs)
    pending = (math.nan, math.nan)  # each CI is filled in below, from the batch

    def one(metric: str) -> dict[str, Any]:
        hib, binary = direction(metric)
        stats = compare_pair(*pairs[metric], hib, n_boot, n_perm, seed, binary, ci=pending)
        return {"baseline": base, "candidate": cand, "metric": metric, "higher_is_better": hib, **stats}

    # each metric's resampling is seeded on its own, so running them side by side (numpy
    # releases the GIL for the heavy parts) gives the same numbers, sooner; the CIs are one task
    # (paired_mean_cis: metrics over the same questions share their bootstrap draws) beside the tests
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        cis = pool.submit(paired_mean_cis, [pairs[m] for m in names], n_boot=n_boot, seed=seed)
        out = list(pool.map(one, names))
        for r, (lo, hi) in zip(out, cis.result()):
            if r["n_pairs"]:  # compare_pair's own empty row keeps its NaNs
                r["ci_low"], r["ci_high"] = lo, hi
    family = sum(1 for r in out if r["p_value"] == r["p_value"])  # Holm's m: a metric on 0 pairs is not tested
    for r, p in zip(out, holm([r["p_value"] for r in out])):
        r["p_holm"] = p
        r["significant"] = bool(p == p and p < alpha)
        r["mde"] = minimum_detectable_effect(r["sd_diff"], r["n_pairs"], family, alpha)
    return out


def compare(store: RunStore, refs: Sequence[str] | Sequence[Selection], metrics: Sequence[str] | None = None,
            n_boot: int = DEFAULT_BOOT, n_perm: int = DEFAULT_PERM, seed: int = 0,
            alpha: float = 0.05, with_run_level: bool = True, gated: Sequence[str] = ()) -> Comparison:
    """Compare every selection after the first with the first (the baseline).

    A metric of `metrics` not stored on both sides is an error, unless it is `gated` and a
    known metric: then it is compared on 0 pairs, and the gate says it compared nothing
    (evalcore.analysis.comparison.regression_gate). An unknown name is an error either way; so is an
    alpha outside (0, 1) or a negative seed, whoever calls (the CLI, `report`, the pytest gate)."""
    alpha = check_alpha(alpha, "alpha")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise EvalcoreError(f"seed: {seed!r} must be a whole number, 0 or more")
    sels = list(refs) if refs and isinstance(refs[0], Selection) else parse_selections(store, refs)  # type: ignore[arg-type]
    base, cands = sels[0], sels[1:]
    # which metrics each side has rows for, from the summaries; the pairs from metric_wide
    scored = _scored(store, sels)
    rows, unpaired = [], {}
    for cand in cands:
        if metrics is None:
            # every metric stored on both sides; one with no value on either has nothing to compare
            names = sorted(m for m in set(scored[base]) & set(scored[cand]) if scored[base][m] or scored[cand][m])
        else:
            names = list(metrics)
            stored = set(scored[base]) | set(scored[cand])
            missing_names = [m for m in names if (m not in scored[base] or m not in scored[cand])
                             and not (m in gated and known_metric(m, stored))]
            if missing_names:
                raise EvalcoreError(missing_metrics_message(missing_names, set(scored[base]) | set(scored[cand]),
                                                            base.label, cand.label))
        pairs, valued = _pairs(store, base, cand, names)
        only_base, only_cand, n_union = _answered_apart(store, base, cand)
        unpaired[cand.label] = {"only_in_baseline": only_base, "only_in_candidate": only_cand}
        cand_rows = tested_rows(pairs, base.label, cand.label, n_boot, n_perm, seed, alpha)
        for r in cand_rows:
            r["missing"] = n_union - r["n_pairs"]
            r["n_baseline"], r["n_candidate"] = valued[r["metric"]]  # questions with a value, per side
        rows.extend(cand_rows)
    cols = ["baseline", "candidate", "metric", "higher_is_better", "n_pairs", "mean_a", "mean_b", "delta",
            "ci_low", "ci_high", "test", "p_value", "p_holm", "significant", "improved", "regressed",
            "unchanged", "missing", "sd_diff", "span", "mde", "n_baseline", "n_candidate"]
    table = pd.DataFrame(rows, columns=cols)
    return Comparison(base, cands, table, unpaired, run_level=run_level(store, sels) if with_run_level else None,
                      alpha=alpha)


def run_level(store: RunStore, sels: Sequence[Selection], weights: dict[str, float] | None = None) -> pd.DataFrame:
    """Per selection: weighted_score (the mean of its stored per-question values, the leaderboard's
    number: fixed budgets make it independent of what else is selected), its quality-only part
    (the non-cost objectives on run means), cost per query and median latency (the Pareto axes,
    by the leaderboard's definitions in evalcore.analysis.runs.leaderboard)."""
    from evalcore.analysis.runs.leaderboard import system_rows

    rows = system_rows(store, [(s.run_id, s.method) for s in sels], metrics=None)
    by_key = {(r["run_id"], r["method"]): r for r in rows.to_dict("records")} if not rows.empty else {}
    weights = weights or WEIGHTS
    out = []
    for s in sels:
        means = dict(query_df(store, """SELECT metric, mean FROM summary_metrics
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


# ---- per-question views of one pair (the Compare page; the CLI prints `compare`) ------------
def _pair_params(base: str, cand: str) -> dict[str, Any]:
    """`run_id:method` keys -> bound parameters (run ids cannot contain ':')."""
    ra, _, ma = base.partition(":")
    rb, _, mb = cand.partition(":")
    return {"ra": ra, "ma": ma, "rb": rb, "mb": mb}


def metric_deltas(store: RunStore, base: str, cand: str) -> pd.DataFrame:
    """Per metric scored on either side: paired n, means over the pairs, Δ = cand - base, and
    improved / regressed / unchanged / missing question counts in the metric's better direction.
    Metrics scored on neither side are absent by construction."""
    return _deltas(side_by_side(store, base, cand))


def _deltas(both: SideBySide) -> pd.DataFrame:
    """metric_deltas' table from the two systems' aligned values (numpy over each metric's
    column: the figures aggregating the long rows gave, without joining two sides of 3,000,000
    rows each at 100,000 questions x 30 metrics)."""
    rows = []
    for metric in both.metrics:
        a, b = both.a[metric], both.b[metric]
        has_a, has_b = ~np.isnan(a), ~np.isnan(b)
        if not (has_a.any() or has_b.any()):
            continue  # no value on either side: nothing to say
        paired = has_a & has_b
        pa, pb = a[paired], b[paired]
        diff = pb - pa
        n = int(paired.sum())
        rows.append((metric, n, pa.mean() if n else np.nan, pb.mean() if n else np.nan,
                     diff.mean() if n else np.nan, int(np.sum(diff > EPS)), int(np.sum(diff < -EPS)),
                     int(np.sum(np.abs(diff) <= EPS)), int(np.sum(has_a != has_b))))
    if not rows:
        return _NO_DELTAS.assign(higher_is_better=[], improved=[], regressed=[])
    out = pd.DataFrame(rows, columns=list(_NO_DELTAS.columns))
    higher = out["metric"].map(lambda m: direction(m)[0])
    out["higher_is_better"] = higher
    out["improved"] = out["up"].where(higher, out["down"])
    out["regressed"] = out["down"].where(higher, out["up"])
    return out.drop(columns=["up", "down"])


# metric_deltas with no metric at all (the columns and types it has always had when empty)
_NO_DELTAS = pd.DataFrame({"metric": pd.Series([], dtype=object),
                           **{c: pd.Series([], dtype="int64" if c in ("n_pairs", "up", "down", "unchanged", "missing")
                                           else "float64")
                              for c in ("n_pairs", "mean_a", "mean_b", "delta", "up", "down", "unchanged", "missing")}})


def paired_values(store: RunStore, base: str, cand: str, metrics: tuple[str, ...]) -> pd.DataFrame:
    """(question_id, metric, a, b) for questions scored (non-NaN) on both sides, by metric name
    and question_id."""
    both = side_by_side(store, base, cand, sorted(set(metrics)))
    parts = []
    for metric in both.metrics:
        keep = both.both(metric)
        if keep.any():
            parts.append(pd.DataFrame({"question_id": both.question_id[keep], "metric": metric,
                                       "a": both.a[metric][keep], "b": both.b[metric][keep]}))
    if not parts:
        return pd.DataFrame({"question_id": pd.Series([], dtype=object), "metric": pd.Series([], dtype=object),
                             "a": pd.Series([], dtype="float64"), "b": pd.Series([], dtype="float64")})
    return pd.concat(parts, ignore_index=True)


def _changed_sql(value: str, top: bool, tried: tuple[bool, bool] = (False, False)) -> str:
    """The rows changed_questions lists (CTE `c`); `value` is the metric's metric_wide column
    (value_expr), `tried` whether each side has trials. `picked`: the questions whose change
    matches the outcome, numbers only. With `top` (no text to search), `c` joins the question
    texts to the first $limit of them only, not to every changed question (tens of thousands at
    100,000 questions)."""
    return f"""
    WITH a AS ({question_values_sql(value, "a", tried[0])}),
         b AS ({question_values_sql(value, "b", tried[1])}),
         j AS (SELECT question_id, a.value AS base, b.value AS cand, (b.value - a.value) AS delta
               FROM a FULL JOIN b USING (question_id)),
         picked AS (SELECT * FROM j
                    WHERE CASE $outcome
                            WHEN 'improved' THEN $sign * delta > $eps
                            WHEN 'regressed' THEN $sign * delta < -$eps
                            WHEN 'unchanged' THEN abs(delta) <= $eps
                            ELSE delta IS NULL END),
         top AS (SELECT * FROM picked {_BIGGEST_FIRST} LIMIT coalesce($limit, 9223372036854775807)),
         c AS (SELECT p.question_id, q.category, q.question_type, p.base, p.cand, p.delta,
                      left(q.question, 120) AS question
               FROM {'top' if top else 'picked'} p
               LEFT JOIN questions q ON q.run_id = $ra AND {id_sql("q.question_id")} = p.question_id
               WHERE $text IS NULL OR strpos(lower(concat_ws(' ', p.question_id, q.question)), lower($text)) > 0)
"""


_BIGGEST_FIRST = "ORDER BY abs(delta) DESC NULLS LAST, question_id"


def _changed(store: RunStore, base: str, cand: str, metric: str, outcome: str, text: str | None,
             limit: int | None) -> tuple[str, dict, list[str]]:
    """(the changed rows' SQL, its parameters, the runs it reads)."""
    if outcome not in ("improved", "regressed", "unchanged", "missing"):
        raise EvalcoreError(f"unknown outcome {outcome!r}")
    sign = 1.0 if direction(metric)[0] else -1.0
    p = _pair_params(base, cand)
    runs = sorted({p["ra"], p["rb"]})
    value = value_expr(metric, wide_columns(store, runs))
    params = {**p, "outcome": outcome, "sign": sign, "eps": EPS, "text": text or None, "limit": limit}
    counts = trial_counts(store, [base, cand])
    tried = (counts[base] > 1, counts[cand] > 1)
    if any(tried):
        params["metric"] = metric
    return _changed_sql(value, top=not text, tried=tried), params, runs


def changed_questions(store: RunStore, base: str, cand: str, metric: str, outcome: str,
                      limit: int | None = None, text: str | None = None) -> pd.DataFrame:
    """Questions whose `metric` improved / regressed / stayed / is missing on one side, in the
    metric's better direction, biggest change first; the first `limit` of them (all when None)
    whose id or question text contains `text` (any case)."""
    sql, p, runs = _changed(store, base, cand, metric, outcome, text, limit)
    return query_df(store, sql + f"SELECT * FROM c {_BIGGEST_FIRST} LIMIT coalesce($limit, 9223372036854775807)",
                    p, runs=runs)


def changed_count(store: RunStore, base: str, cand: str, metric: str, outcome: str,
                  text: str | None = None) -> int:
    """How many questions changed_questions lists without a limit (a page shows the first few
    and says how many more there are)."""
    sql, p, runs = _changed(store, base, cand, metric, outcome, text, None)
    counted = "c" if text else "picked"  # no text to search: the questions' texts are not needed
    return int(query_df(store, sql + f"SELECT count(*) AS n FROM {counted}", p, runs=runs)["n"].iloc[0])


def answers(store: RunStore, keys: tuple[str, ...], question_id: str) -> pd.DataFrame:
    """The question, its ground truth and each system's answer to it."""
    runs = sorted({k.partition(":")[0] for k in keys})
    return query_df(store, f"""
        SELECT r.run_id || ':' || r.method AS system, r.answer, q.question, q.ground_truth
        FROM responses r LEFT JOIN questions q USING (run_id, question_id)
        WHERE {id_sql("r.question_id")} = {id_sql("$q")} AND list_contains($keys, r.run_id || ':' || r.method)""",
        {"q": question_id, "keys": list(keys)}, runs=runs)


def pair_table(store: RunStore, base: str, cand: str, tested: tuple[str, ...],
               n_boot: int = DEFAULT_BOOT, n_perm: int = DEFAULT_PERM, seed: int = 0) -> pd.DataFrame:
    """The Compare page's table: every metric's deltas and counts, plus CI, p and Holm-adjusted p
    for the `tested` metrics — computed by `compare`, exactly as `evalcore compare --metrics`
    computes them (same statistics, same defaults, same Holm family)."""
    both = side_by_side(store, base, cand)  # one read serves the table and the tested pairs
    table = _deltas(both)
    # `tested` marks the rows the verdict speaks about: a tested metric on 0 pairs has no
    # statistics, and its verdict is "not compared" (evalcore.analysis.comparison.verdict)
    table = table.assign(tested=table.metric.isin(set(tested)))
    chosen = [m for m in tested if m in set(table.metric) and
              table.loc[table.metric == m, "n_pairs"].iloc[0] > 0]
    if not chosen:
        return table.assign(ci_low=np.nan, ci_high=np.nan, test="", p_value=np.nan, p_holm=np.nan,
                            significant=False, sd_diff=np.nan, span=np.nan, mde=np.nan)
    # numbers only (no question ids or unpaired lists, which the page does not show), in
    # question_id order like `compare`'s, so the seeded bootstrap draws the same pairs
    pairs = {m: both.pairs(m) for m in chosen}
    stats = pd.DataFrame(tested_rows(pairs, base, cand, n_boot, n_perm, seed, ALPHA))
    stats = stats[["metric", "ci_low", "ci_high", "test", "p_value", "p_holm", "significant", "sd_diff", "span",
                   "mde"]]
    return table.merge(stats, on="metric", how="left")
