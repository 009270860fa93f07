"""evalcore.stats.bounded_mean's Wilson interval, held to statsmodels' (the reference) without
importing statsmodels in the product: on proportions of every size, fractional counts (a mean of
shares) and both edges, at three levels."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.stats import bounded_mean as B
from tests.optional import requires


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.025])
def test_wilson_equals_statsmodels(alpha):
    proportion = requires("statsmodels.stats.proportion", "the reference Wilson interval (dev extra)")
    rng = np.random.default_rng(7)
    cases = [(0.0, 50), (1.0, 50), (0.5, 1), (1.0, 1), (0.0, 3)]
    cases += [(float(rng.random()), int(rng.integers(1, 2000))) for _ in range(200)]
    for mean, n in cases:
        ref = proportion.proportion_confint(mean * n, n, alpha=alpha, method="wilson")
        assert B._wilson(mean, n, alpha) == pytest.approx(tuple(float(v) for v in ref), abs=1e-12), (mean, n)


def test_fifty_of_fifty_reaches_below_093():
    lo, hi = B.score_interval(np.ones(50))
    assert 0.92 < lo < 0.93 and hi == pytest.approx(1.0)
