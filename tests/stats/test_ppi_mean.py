"""evalcore.stats.ppi_mean: PPI++ for a mean, equal to ppi-python's estimators without importing them.

Parity: on seeded inputs of every shape the corrected views meet (binary labels and judges,
graded values, a judge that disagrees, one unlabelled answer, a few hundred labels), the point
estimate and both intervals equal ppi-python's to 1e-12. The one deliberate difference: a judge
with no variance (ppi-python: NaN) reports the labels' own estimate and interval.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.stats import ppi_mean as P
from tests.optional import requires


def _case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(2, 300)), int(rng.integers(1, 1500))
    if seed % 3 == 0:  # binary human labels, a graded judge that tracks them
        y = rng.binomial(1, 0.4, n).astype(float)
        yhat = np.clip(0.3 * y + 0.4 + rng.normal(0, 0.3, n), 0, 1)
        rest = np.clip(rng.normal(0.5, 0.3, big_n), 0, 1)
    elif seed % 3 == 1:  # a judge that says the opposite (lambda clipped at 0)
        y = rng.normal(3, 2, n)
        yhat, rest = -y + rng.normal(0, 1, n), rng.normal(-3, 2, big_n)
    else:  # binary on both sides, unrelated
        y, yhat, rest = (rng.binomial(1, 0.5, k).astype(float) for k in (n, n, big_n))
    return y, yhat, rest


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_equal_to_ppi_python_on_seeded_inputs(alpha):
    ppi_py = requires("ppi_py", "the reference implementation (dev extra)")
    for seed in range(60):
        y, yhat, rest = _case(seed)
        ref = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=None))
        assert P.ppi_mean_ci(y, yhat, rest, alpha) == pytest.approx(tuple(ref), abs=1e-12), seed
        point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None))[0])
        assert P.ppi_mean(y, yhat, rest) == pytest.approx(point, abs=1e-12), seed
        plain = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=1))
        assert P.ppi_mean_ci(y, yhat, rest, alpha, lam=1.0) == pytest.approx(tuple(plain), abs=1e-12), seed
        classical = np.ravel(ppi_py.classical_mean_ci(y, alpha=alpha))
        assert P.classical_mean_ci(y, alpha) == pytest.approx(tuple(classical), abs=1e-12), seed


def test_lambda_is_clipped_to_the_unit_interval():
    y, yhat, rest = _case(1)  # the judge says the opposite: leaning on it would only widen the interval
    assert P.power_tuned_lambda(y, yhat, rest) == 0.0
    y, rest = np.arange(100.0) % 2, 10 * (np.arange(400.0) % 2)  # judge = 10 x human: lambda = Cov / ((1 + n/N) Var)
    var = np.var(np.concatenate([10 * y, rest]), ddof=1)
    assert P.power_tuned_lambda(y, 10 * y, rest) == pytest.approx(2.5 / ((1 + 100 / 400) * var), rel=1e-12)


def test_a_constant_judge_gives_the_labels_own_interval_not_nan():
    """Every answer judged 1: Var(judge) = 0 and ppi-python's lambda is 0/0. The labels alone
    are the honest estimate (any lambda gives that interval here)."""
    y = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 6, dtype=float)
    yhat, rest = np.ones_like(y), np.ones(300)
    lo, hi = P.ppi_mean_ci(y, yhat, rest, 0.05)
    assert (lo, hi) == pytest.approx(P.classical_mean_ci(y, 0.05))
    assert P.ppi_mean(y, yhat, rest) == pytest.approx(y.mean())
    assert all(math.isfinite(v) for v in (lo, hi))


def test_z_is_the_normal_quantile_for_any_level():
    assert P.normal_z(0.05) == pytest.approx(1.959963984540054, abs=1e-15)
    from scipy.special import ndtri

    assert P.normal_z(1e-20) == pytest.approx(-ndtri(0.5e-20), rel=1e-12)  # past where 1 - alpha/2 rounds to 1
