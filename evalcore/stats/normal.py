"""Normal quantiles for any significance level in (0, 1), however small.

Why a module of its own: every interval and every minimum detectable effect needs z with
P(|Z| > z) = alpha (or alpha / m under Holm). Taken as `NormalDist().inv_cdf(1 - alpha / 2)`,
an alpha of 1e-17 makes 1 - alpha / 2 round to exactly 1.0 and the quantile raises, so
`evalcore compare --alpha 1e-17` ended as "unexpected StatisticsError"; and 5e-324 / 2 is 0.0
before any quantile is taken. Here the tail is handled by its logarithm (scipy's
`ndtri_exp`, the normal quantile of exp(x)), which holds down to the smallest positive double
and past it: log(5e-324) - log(2m) is an ordinary number.
"""

from __future__ import annotations

import math


def _level(alpha: float) -> float:
    value = float(alpha)
    if not 0.0 < value < 1.0:  # NaN fails this too
        raise ValueError(f"a significance level must lie strictly between 0 and 1, got {alpha!r}")
    return value


def upper_z_of_log_tail(log_tail: float) -> float:
    """z with P(Z > z) = exp(log_tail), for log_tail < 0 (a tail below one half gives z > 0)."""
    from scipy.special import ndtri_exp

    return -float(ndtri_exp(log_tail))


def two_sided_z(alpha: float, divisor: int = 1) -> float:
    """z with P(|Z| > z) = alpha / divisor (Holm's strictest level for `divisor` tests):
    the quantile of a two-sided test or a (1 - alpha) interval. ValueError unless 0 < alpha < 1."""
    level = _level(alpha)
    return upper_z_of_log_tail(math.log(level) - math.log(2.0 * max(1, int(divisor))))


def interval_z(confidence: float) -> float:
    """The z of a two-sided `confidence` interval (1.96 for 0.95)."""
    return two_sided_z(1.0 - _level(confidence))
