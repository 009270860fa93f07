"""A 95% interval for the mean of values on a bounded scale, honest where the normal one is not.

Why: human labels are proportions (1 if CORRECT, the share of claims supported, a 0-1 rating) and
paired differences of them. The normal (Wald) interval a CLT estimator gives is mean ± z·sd/√n: on
50 labels all CORRECT it is [1.000, 1.000], a zero-width interval that claims certainty 50 answers
cannot give (the true share could well be 0.93), and near the edge of the scale it under-covers
and overshoots it. Where the data sit that close to an edge, the Wilson score interval is the
standard remedy (Brown, Cai & DasGupta, Statistical Science 2001); it never has zero width and
stays inside the scale. For values in [0, 1] that are not all 0/1 (shares, ratings) the Wilson
interval at their mean is conservative: their variance is at most mean·(1 − mean), the binomial's.

The rule here: a mean of values in [0, 1] is "near the edge" when fewer than MIN_EACH_SIDE
labels' worth of mass lies on one side (n·mean < 5 or n·(1 − mean) < 5, the textbook condition
for the normal approximation to a proportion). A difference d in [-1, 1] (Compare's paired Δ) is
split into its gains d⁺ = max(d, 0) and losses d⁻ = max(-d, 0), each a value in [0, 1]; it is
near the edge when either part is, and its score interval is [L⁺ − U⁻, U⁺ − L⁻] from the parts'
Wilson intervals at α/2 each (Bonferroni: both hold with probability ≥ 1 − α, so Δ does).

The Wilson interval is its closed form here (statsmodels' `proportion_confint(method="wilson")`,
which tests/stats/test_bounded_mean.py holds it equal to where statsmodels is installed); it takes
a fractional count, which a mean of shares needs. Not statsmodels itself: importing it costs about
a second before `show --corrected` prints anything, and nothing else of evalcore needs it.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

MIN_EACH_SIDE = 5  # labels' worth of mass each side of the mean for the normal interval to hold


def _parts(y: np.ndarray, signed: bool) -> list[np.ndarray]:
    """The [0, 1] parts the rule looks at: the values themselves, or a difference's gains and losses."""
    return [np.clip(y, 0, 1), np.clip(-y, 0, 1)] if signed else [np.clip(y, 0, 1)]


def near_edge(y: Sequence[float], signed: bool = False) -> bool:
    """Whether the normal interval is not to be trusted for the mean of `y` (see the module)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n == 0:
        return False
    for part in _parts(y, signed):
        m = float(part.mean())
        if n * m < MIN_EACH_SIDE or n * (1 - m) < MIN_EACH_SIDE:
            return True
    return False


def _wilson(mean: float, n: int, alpha: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion `mean` of `n` (Wilson 1927)."""
    from evalcore.stats.ppi_mean import normal_z

    z2 = normal_z(alpha) ** 2
    denom = 1 + z2 / n
    centre = (mean + z2 / (2 * n)) / denom
    half = math.sqrt(z2) * math.sqrt(mean * (1 - mean) / n + z2 / (4 * n * n)) / denom
    return float(centre - half), float(centre + half)


def score_interval(y: Sequence[float], alpha: float = 0.05, signed: bool = False) -> tuple[float, float]:
    """The Wilson score interval of the mean of `y` (values in [0, 1]; with `signed`, a difference
    in [-1, 1], by its gains and losses): never zero width, always inside the scale."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n == 0:
        raise ValueError("an interval needs at least one value")
    if not signed:
        return _wilson(float(np.clip(y, 0, 1).mean()), n, alpha)
    gains, losses = (float(p.mean()) for p in _parts(y, True))
    g_lo, g_hi = _wilson(gains, n, alpha / 2)
    l_lo, l_hi = _wilson(losses, n, alpha / 2)
    return g_lo - l_hi, g_hi - l_lo


def honest_interval(normal: tuple[float, float], y: Sequence[float], alpha: float = 0.05,
                    signed: bool = False) -> tuple[float, float]:
    """`normal` (a CLT interval for the mean of `y`, or of an estimator built on it), widened to
    cover the score interval where the data sit near the scale's edge, and kept inside the scale
    ([0, 1], or [-1, 1] for a difference): the interval evalcore prints."""
    lo, hi = normal
    if near_edge(y, signed) or not (hi > lo):
        s_lo, s_hi = score_interval(y, alpha, signed)
        lo, hi = (s_lo, s_hi) if not (lo == lo and hi == hi) else (min(lo, s_lo), max(hi, s_hi))
    floor = -1.0 if signed else 0.0
    return max(floor, lo), min(1.0, hi)
