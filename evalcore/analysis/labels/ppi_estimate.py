"""One PPI++ estimate from arrays: the corrected mean, its interval and everything shown beside it.

Why apart from evalcore.analysis.labels.corrected (which reads the store): the rules that keep every
printed number honest live here, on plain arrays, where a test can hold them to ppi-python:

- the estimator is PPI++ for a mean (evalcore.stats.ppi_mean: ppi-python's `ppi_mean_pointestimate`
  / `ppi_mean_ci` at the power-tuning lambda and `classical_mean_ci` for the labels alone, to
  1e-12, without importing the package, whose numba and statsmodels cost seconds). Lambda is computed here by PPI++'s formula
  for a mean (Angelopoulos, Duchi & Zrnic 2023: cov(Y, Yhat) / ((1 + n/N) var(Yhat)), clipped to
  [0, 1]), the value ppi-python's `lam=None` computes, so it can be reported: when it clips to 0
  the corrected interval is the labels-alone one and the width the judge saves is none (1.0).
  A judge that gives every answer one value leaves that formula 0/0 (ppi-python then returns NaN
  everywhere); such a judge carries no information, so lambda is 0;
- an interval never has zero width and never leaves the scale: where the labels sit near its
  edge (50 of 50 CORRECT) it is widened to cover the Wilson score interval
  (evalcore.stats.bounded_mean);
- `status`: "ok" from MIN_LABELS sampled labels on; "all_labelled" when a smaller population is
  labelled in full (n = N: its human mean is exact and is shown, with the labels-alone interval
  for answers like these); else "too_few", and then every number but the counts and the judge's
  mean is withheld (None): JSON never carries a number the text does not show.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from evalcore.analysis.labels.label_counts import MIN_LABELS, TARGET_HALF_WIDTH
from evalcore.stats import ppi_mean as P
from evalcore.stats.bounded_mean import honest_interval

ALPHA = 0.05
OK, ALL_LABELLED, TOO_FEW = "ok", "all_labelled", "too_few"
SHOWN = (OK, ALL_LABELLED)  # statuses whose numbers are shown

COLUMNS = ["method", "metric", "status", "n_labelled", "N", "judge_mean", "corrected", "ci_low", "ci_high",
           "classical_low", "classical_high", "bias", "bias_low", "bias_high", "rho", "width_ratio",
           "implied_width_ratio", "labels_to_target", "lam"]
# what a "too_few" row withholds: everything but the counts and the judge's own mean
WITHHELD = tuple(c for c in COLUMNS[2:] if c not in ("status", "n_labelled", "N", "judge_mean"))


def status(n: int, population: int, min_labels: int = MIN_LABELS) -> str:
    if n >= min_labels and n > 0:
        return OK
    if n > 0 and n == population:
        return ALL_LABELLED
    return TOO_FEW


def labels_to_target(n: int, half_width: float | None, target: float = TARGET_HALF_WIDTH,
                     population: int | None = None) -> int | None:
    """Roughly how many more labels bring the CI half-width to `target`: width shrinks as 1/sqrt(n)
    at the observed variance, so n_needed = n (half_width / target)^2; never more than the answers
    left in the population (labelling them all makes the mean exact)."""
    if half_width is None or not math.isfinite(half_width) or n <= 0:
        return None
    more = max(0, math.ceil(n * (half_width / target) ** 2) - n)
    return more if population is None else min(more, max(0, population - n))


def corr(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson's correlation, None when it is undefined (fewer than 3 pairs, or a constant side)."""
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def power_tuning(y: np.ndarray, yhat: np.ndarray, rest: np.ndarray) -> float:
    """PPI++'s lambda for a mean, as ppi-python computes it for `lam=None`, in [0, 1]; 0 when the
    judge's values do not vary (the formula is 0/0 there) or nothing is unlabelled."""
    n, m = len(y), len(rest)
    if n < 2 or m == 0:
        return 0.0
    var = float(np.var(np.concatenate([yhat, rest]), ddof=1))
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    if not var > 0 or not math.isfinite(cov):
        return 0.0
    return float(np.clip(cov / ((1 + n / m) * var), 0.0, 1.0))


def implied_ratio(y: np.ndarray, yhat: np.ndarray, rest: np.ndarray, lam: float, rho: float | None) -> float | None:
    """The labels-alone width over the corrected width that rho implies at this lambda: 1.0 when
    lambda is 0 (the corrected interval is the labels alone); about 1/sqrt(1 - rho^2 N/(N + n))
    at the tuned lambda (from Var = Var(Y - lam Yhat)/n + lam^2 Var(Yhat)/N)."""
    if lam == 0 or not len(rest):
        return 1.0
    sy, sf = float(np.std(y)), float(np.std(np.concatenate([yhat, rest])))
    if rho is None or sy == 0:
        return None
    r = sf / sy
    shrink = 1 - 2 * lam * rho * r + lam ** 2 * r ** 2 * (1 + len(y) / len(rest))
    return 1 / math.sqrt(shrink) if shrink > 0 else None


def _mean_interval(values: np.ndarray, alpha: float, signed: bool) -> tuple[float, float]:
    """The labels-alone (classical) interval, made honest at the scale's edge."""
    normal = (math.nan, math.nan)
    if len(values) >= 2:
        normal = P.classical_mean_ci(values, alpha)
    return honest_interval(normal, values, alpha, signed)


def bias_interval(diff: np.ndarray, alpha: float) -> tuple[float, float]:
    """The CI of judge - human: a difference in [-1, 1] when the judge's values are on the 0-1
    scale (made honest at the edge: a judge agreeing on every answer is not 'exactly unbiased'),
    else the classical interval as it is."""
    if len(diff) and np.all(np.abs(diff) <= 1):
        return _mean_interval(diff, alpha, signed=True)
    if len(diff) < 2:
        return math.nan, math.nan
    return P.classical_mean_ci(diff, alpha)


def _numbers(y: np.ndarray, yhat: np.ndarray, rest: np.ndarray, alpha: float, signed: bool) -> dict[str, Any]:
    """Every number of a row (n >= 1), nothing withheld."""
    lo, hi = _mean_interval(y, alpha, signed)
    diff = yhat - y
    b_lo, b_hi = bias_interval(diff, alpha)
    rho = corr(y, yhat)
    lam = power_tuning(y, yhat, rest)
    if len(rest):
        point = P.ppi_mean(y, yhat, rest, lam)
        normal = P.ppi_mean_ci(y, yhat, rest, alpha, lam)
        if lam == 0:
            normal = (lo, hi)  # lambda 0: the corrected interval is the labels alone, as printed
        cl, ch = honest_interval(normal, y, alpha, signed)
        point = min(max(point, -1.0 if signed else 0.0), 1.0)  # inside the scale, like its interval
    else:  # every answer labelled: the labels are the population
        point, cl, ch = float(y.mean()), lo, hi
    half = (ch - cl) / 2
    return {"classical_low": lo, "classical_high": hi, "bias": float(diff.mean()), "bias_low": b_lo,
            "bias_high": b_hi, "rho": rho, "lam": lam, "corrected": point, "ci_low": cl, "ci_high": ch,
            "width_ratio": (hi - lo) / (ch - cl) if ch > cl else None,
            "implied_width_ratio": implied_ratio(y, yhat, rest, lam, rho),
            "labels_to_target": labels_to_target(len(y), half, population=len(y) + len(rest))}


def withheld(row: dict[str, Any]) -> dict[str, Any]:
    """The row with every number a "too_few" row does not show set to None (JSON prints null)."""
    if row.get("status") in SHOWN:
        return row
    return {**row, **{c: None for c in WITHHELD if c in row}}


def estimate(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float],
             alpha: float = ALPHA, min_labels: int = MIN_LABELS, signed: bool = False,
             withhold: bool = True) -> dict[str, Any]:
    """PPI++ corrected mean and everything shown beside it, from arrays (no store).

    `y`, `yhat`: human and judge values of the labelled answers (same order); `yhat_unlabelled`: the
    judge on the rest of the population. `signed`: the values are differences in [-1, 1] (a paired
    Δ), else values in [0, 1]. `withhold=False` keeps the numbers of a "too_few" row (Annotate
    shows them, marked rough)."""
    y, yhat, rest = (np.asarray(x, dtype=float) for x in (y, yhat, yhat_unlabelled))
    n, big_n = len(y), len(y) + len(rest)
    out: dict[str, Any] = {c: None for c in COLUMNS[2:]}
    out.update(n_labelled=n, N=big_n, judge_mean=float(np.concatenate([yhat, rest]).mean()) if big_n else None,
               status=status(n, big_n, min_labels))
    if n >= 1:
        out.update(_numbers(y, yhat, rest, alpha, signed))
    return withheld(out) if withhold else out
