"""Prediction-powered inference for one mean (PPI++), and the classical interval beside it.

What it computes (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
Inference", the mean case with the power-tuned lambda), for human values Y and judge values Yhat
on n labelled answers, and judge values Yhat_u on the N others:

    lambda = clip( Cov(Y, Yhat) / ((1 + n/N) Var(Yhat, Yhat_u)), 0, 1 )   (Cov over the n, 1/n;
                                                                         Var over all n + N, 1/(n+N-1))
    theta  = mean(lambda Yhat_u) + mean(Y - lambda Yhat)
    se     = sqrt( sd(lambda Yhat_u)^2 / N + sd(Y - lambda Yhat)^2 / n )   (sd with 1/len)
    CI     = theta -/+ z se,  z = the normal quantile of 1 - alpha/2

and the classical interval of the labels alone, mean(Y) -/+ z sd(Y)/sqrt(n). These are exactly
ppi-python's `ppi_mean_pointestimate` / `ppi_mean_ci` (lam=None) and `classical_mean_ci`, to
~1e-15 (tests/stats/test_ppi_mean.py holds them to 1e-12 against the package).

Why not the package itself: the mean is these few lines, and importing ppi-python pulls numba,
statsmodels and scikit-learn, 1.3 s (4 s on a busy machine) before `show --corrected` or the
Annotate page printed a number. One difference, deliberate: a judge that gives every answer the
same value has no variance, and ppi-python's lambda is then 0/0 (NaN, and every number after it).
Any lambda gives the same interval there; lambda = 0, the labels alone, is reported.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Sequence

import numpy as np


def normal_z(alpha: float) -> float:
    """The z of a two-sided (1 - alpha) interval, norm.ppf(1 - alpha/2) as ppi-python takes it.
    The standard library's quantile (no scipy import) for every usual level; the tail form of
    evalcore.stats.normal where 1 - alpha/2 would round to 1."""
    if 1e-10 <= alpha < 1:
        return NormalDist().inv_cdf(1 - alpha / 2)
    from evalcore.stats.normal import two_sided_z

    return two_sided_z(alpha)


def _array(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=float).ravel()


def classical_mean_ci(y: Sequence[float], alpha: float) -> tuple[float, float]:
    """The labels' own (1 - alpha) interval by the central limit theorem."""
    y = _array(y)
    half = normal_z(alpha) * y.std() / math.sqrt(len(y))
    return float(y.mean() - half), float(y.mean() + half)


def power_tuned_lambda(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float]) -> float:
    """PPI++'s lambda for a mean: how far to lean on the judge (0 = labels alone, 1 = plain PPI)."""
    y, yhat, rest = _array(y), _array(yhat), _array(yhat_unlabelled)
    n, big_n = len(y), len(rest)
    point = rest.mean() + (y - yhat).mean()  # plain PPI's estimate (ppi-python centres on it too)
    grads, grads_hat = y - point, yhat - point
    cov = 2 * float(np.dot(grads - grads.mean(), grads_hat - grads_hat.mean())) / n
    var = float(np.var(np.concatenate([grads_hat, rest - point]), ddof=1))
    if not var > 0:  # a constant judge: every lambda gives the same interval; take the labels' own
        return 0.0
    return float(np.clip(cov / (2 * (1 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float],
             lam: float | None = None) -> float:
    """The prediction-powered estimate of the human mean (`lam` None: power-tuned)."""
    y, yhat, rest = _array(y), _array(yhat), _array(yhat_unlabelled)
    lam = power_tuned_lambda(y, yhat, rest) if lam is None else lam
    return float((lam * rest).mean() + (y - lam * yhat).mean())


def ppi_mean_ci(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float], alpha: float,
                lam: float | None = None) -> tuple[float, float]:
    """The (1 - alpha) prediction-powered interval of the human mean (`lam` None: power-tuned)."""
    y, yhat, rest = _array(y), _array(yhat), _array(yhat_unlabelled)
    lam = power_tuned_lambda(y, yhat, rest) if lam is None else lam
    point = ppi_mean(y, yhat, rest, lam)
    imputed = (lam * rest).std() / math.sqrt(len(rest))
    rectifier = (y - lam * yhat).std() / math.sqrt(len(y))
    half = normal_z(alpha) * math.sqrt(imputed ** 2 + rectifier ** 2)
    return point - half, point + half
