"""Human-corrected means and deltas: the judge's numbers, de-biased by randomly sampled labels.

Why: every judged mean a person reads is the judge's, and judges are biased (the heuristic one by
design). Prediction-powered inference (Angelopoulos et al. 2023; PPI++, Angelopoulos, Duchi &
Zrnic 2023) combines the judge's value on every answer with human values on a uniform random
sample into an estimate of the *human* mean with a valid confidence interval; PPI++ tunes how much
it leans on the judge (lambda), so it is never much wider than the labels alone and narrower when
the judge tracks people. The estimators are ppi-python's (`ppi_mean_ci`, `ppi_mean_pointestimate`
with lam=None, `classical_mean_ci`): this module only assembles their inputs from the store
(evalcore.analysis.labels.label_units) and reports them. One function feeds the CLI and every page.

Inputs per system x metric: Y = human values of the n sampled, fully labelled answers, Yhat = the
judge's values of the same answers, Yhat_unlabeled = the judge's values of the other N - n answers.
All N labelled: the labels are a census and the classical interval is reported. Below MIN_LABELS
sampled answers no estimate is shown ("n of 50 labels"): every estimator under-covers there.

Paired delta (Compare): on questions both systems answered, D = human_b - human_a where the same
question is labelled on both sides, Dhat = judge_b - judge_a; PPI++ on D estimates the human mean
difference. Assumes the doubly labelled questions are a uniform random sample of the paired ones,
which the shared seeded order (label_sampling) gives when both sides are labelled from the top.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import canonical_id
from evalcore.store import RunStore

MIN_LABELS = 50
ALPHA = 0.05
TARGET_HALF_WIDTH = 0.05
INSTALL_HINT = "corrected estimates need ppi-python: pip install 'evalcore[labels]'"

COLUMNS = ["method", "metric", "status", "n_labelled", "N", "judge_mean", "corrected", "ci_low", "ci_high",
           "classical_low", "classical_high", "bias", "bias_low", "bias_high", "rho", "width_ratio",
           "implied_width_ratio", "labels_to_target"]


def ppi():
    """ppi_py, imported on first use (it pulls numba and statsmodels: seconds to import)."""
    try:
        import ppi_py
    except ImportError as exc:
        raise EvalcoreError(INSTALL_HINT) from exc
    return ppi_py


def available() -> bool:
    """Whether ppi-python is installed (without importing it: the import takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("ppi_py") is not None


def sampled_systems(store: RunStore) -> set[tuple[str, str]]:
    """(run, method) pairs with any randomly sampled label: the only ones worth estimating."""
    from evalcore.store import query_df

    have = query_df(store, "SELECT DISTINCT run_id, method FROM annotations WHERE sample_id IS NOT NULL")
    return set(zip(have.run_id, have.method))


def labels_to_target(n: int, half_width: float | None, target: float = TARGET_HALF_WIDTH) -> int | None:
    """Roughly how many more labels bring the CI half-width to `target`: width shrinks as 1/sqrt(n)
    at the observed variance, so n_needed = n (half_width / target)^2."""
    if half_width is None or not math.isfinite(half_width) or n <= 0:
        return None
    return max(0, math.ceil(n * (half_width / target) ** 2) - n)


def correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def estimate(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float],
             alpha: float = ALPHA, min_labels: int = MIN_LABELS) -> dict[str, Any]:
    """PPI++ corrected mean and everything shown beside it, from arrays (no store).

    `y`, `yhat`: human and judge values of the labelled answers (same order); `yhat_unlabelled`: the
    judge on the rest of the population."""
    y, yhat, rest = (np.asarray(x, dtype=float) for x in (y, yhat, yhat_unlabelled))
    n, big_n = len(y), len(y) + len(rest)
    out: dict[str, Any] = {c: None for c in COLUMNS[2:]}
    out.update(n_labelled=n, N=big_n, judge_mean=float(np.concatenate([yhat, rest]).mean()) if big_n else None,
               status="ok" if n >= min_labels else "too_few")
    if n < 2:
        return out
    p = ppi()
    lo, hi = (float(v) for v in np.ravel(p.classical_mean_ci(y, alpha=alpha)))
    out.update(classical_low=lo, classical_high=hi)
    bl, bh = (float(v) for v in np.ravel(p.classical_mean_ci(yhat - y, alpha=alpha)))
    out.update(bias=float((yhat - y).mean()), bias_low=bl, bias_high=bh, rho=correlation(y, yhat))
    if len(rest):
        point = float(np.ravel(p.ppi_mean_pointestimate(y, yhat, rest, lam=None))[0])
        cl, ch = (float(v) for v in np.ravel(p.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=None)))
    else:  # every answer labelled: the labels are the population
        point, cl, ch = float(y.mean()), lo, hi
    out.update(corrected=point, ci_low=cl, ci_high=ch)
    out["width_ratio"] = (ch - cl) / (hi - lo) if hi > lo else None
    out["implied_width_ratio"] = math.sqrt(max(0.0, 1 - out["rho"] ** 2)) if out["rho"] is not None else None
    out["labels_to_target"] = labels_to_target(n, (ch - cl) / 2)
    return out


def system_estimate(store: RunStore, run_id: str, method: str, metric: str) -> dict[str, Any]:
    """The corrected mean of one system x metric from the store's sampled labels."""
    ans = U.answers(store, run_id, method, metric)
    lab = ans.sampled & ans.human.notna()
    out = estimate(ans.loc[lab, "human"], ans.loc[lab, "judge"], ans.loc[~lab, "judge"])
    return {"method": method, "metric": metric, **out}


def corrected_means(store: RunStore, run_id: str, methods: Sequence[str] | None = None,
                    metrics: Sequence[str] | None = None, labelled_only: bool = True) -> pd.DataFrame:
    """Per method x labellable metric of a run (COLUMNS). `labelled_only`: rows with any sampled
    label (a run nobody labelled has no rows)."""
    from evalcore.analysis.read.sql import run_methods

    methods = list(methods) if methods else run_methods(store, run_id)
    if labelled_only:
        have = sampled_systems(store)
        methods = [m for m in methods if (run_id, m) in have]
        if not methods:
            return pd.DataFrame(columns=COLUMNS)
    metrics = list(metrics) if metrics else U.estimable_metrics(store, run_id)
    rows = []
    for method in methods:
        for metric in metrics:
            row = system_estimate(store, run_id, method, metric)
            if row["n_labelled"] or not labelled_only:
                rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def corrected_texts(store: RunStore, systems: Sequence[tuple[str, str]]) -> dict[str, str]:
    """'run:method' -> one line of its corrected means ('faithfulness 0.61 [0.55, 0.67]; answer_class
    12 of 50 labels'), for the systems among `systems` with any randomly sampled label."""
    wanted = set(map(tuple, systems))
    out = {}
    for run_id, method in sorted(sampled_systems(store)):
        if (run_id, method) not in wanted:
            continue
        rows = corrected_means(store, run_id, methods=[method])
        if len(rows):
            out[f"{run_id}:{method}"] = "; ".join(f"{r['metric']} {shown(r, 2)}" for r in rows.to_dict("records"))
    return out


def _verdict(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "–"
    return "better" if lo > 0 else "worse" if hi < 0 else "no clear difference"


def corrected_delta(store: RunStore, base: tuple[str, str], cand: tuple[str, str], metric: str,
                    alpha: float = ALPHA) -> dict[str, Any]:
    """Judge Δ and corrected Δ (candidate - baseline) of one metric, paired on question id, with
    their 95% CIs and verdicts (better / worse / no clear difference: the CI's sign, unadjusted)."""
    a = U.answers(store, *base, metric)
    b = U.answers(store, *cand, metric)
    # paired under the id rule (evalcore.schemas.ids), as `compare` pairs
    m = a.assign(question_id=a.question_id.map(canonical_id)).merge(
        b.assign(question_id=b.question_id.map(canonical_id)), on="question_id", suffixes=("_a", "_b"))
    dhat = (m.judge_b - m.judge_a).to_numpy(float)
    both = (m.sampled_a & m.sampled_b & m.human_a.notna() & m.human_b.notna()).to_numpy()
    d = (m.human_b - m.human_a).to_numpy(float)[both]
    est = estimate(d, dhat[both], dhat[~both], alpha=alpha)
    judge_lo = judge_hi = None
    if len(dhat) >= 2:
        judge_lo, judge_hi = (float(v) for v in np.ravel(ppi().classical_mean_ci(dhat, alpha=alpha)))
    judge_verdict = _verdict(judge_lo, judge_hi)
    corrected_verdict = _verdict(est["ci_low"], est["ci_high"]) if est["status"] == "ok" else "–"
    return {"metric": metric, "status": est["status"], "n_labelled": est["n_labelled"], "N": est["N"],
            "judge_delta": est["judge_mean"], "judge_low": judge_lo, "judge_high": judge_hi,
            "judge_verdict": judge_verdict, "corrected_delta": est["corrected"], "ci_low": est["ci_low"],
            "ci_high": est["ci_high"], "corrected_verdict": corrected_verdict,
            "verdict_changes": corrected_verdict != "–" and corrected_verdict != judge_verdict}


DELTA_COLUMNS = ["candidate", "metric", "status", "n_labelled", "N", "judge_delta", "judge_low", "judge_high",
                 "judge_verdict", "corrected_delta", "ci_low", "ci_high", "corrected_verdict", "verdict_changes"]


def corrected_compare(store: RunStore, base: tuple[str, str], cands: Sequence[tuple[str, str]],
                      metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Corrected Δ per candidate x labellable metric with sampled labels on both sides (DELTA_COLUMNS)."""
    rows = []
    have = sampled_systems(store)
    for cand in cands:
        if tuple(base) not in have or tuple(cand) not in have:
            continue
        shared = [m for m in U.estimable_metrics(store, base[0]) if m in set(U.estimable_metrics(store, cand[0]))]
        for metric in metrics or shared:
            if metric not in shared:
                continue
            row = corrected_delta(store, base, cand, metric)
            if row["n_labelled"]:
                rows.append({"candidate": f"{cand[0]}:{cand[1]}", **row})
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def num(x: float | None, digits: int = 3, sign: bool = False) -> str:
    """A number as people read it: '–' when missing, never '-0.000'."""
    if x is None or x != x:
        return "–"
    x = 0.0 if round(x, digits) == 0 else x  # a tiny negative rounds to 0, not '-0.000'
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def interval(lo: float | None, hi: float | None, digits: int = 3) -> str:
    """'[lo, hi]' or '–'."""
    return "–" if lo is None or lo != lo else f"[{num(lo, digits)}, {num(hi, digits)}]"


def shown(row: dict[str, Any] | pd.Series, digits: int = 3) -> str:
    """The one-cell text of a corrected mean: '0.612 [0.550, 0.670]' or 'n of 50 labels'."""
    if row["status"] != "ok" or row["corrected"] is None:
        return f"{int(row['n_labelled'])} of {MIN_LABELS} labels"
    return f"{num(row['corrected'], digits)} {interval(row['ci_low'], row['ci_high'], digits)}"
