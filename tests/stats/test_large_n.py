"""Above RESAMPLE_MAX_N pairs, compare's CI and test are the normal limits of the bootstrap and
the sign-flip randomization test; at the switch the two must agree within Monte Carlo error."""

import math

import numpy as np
import pytest

from evalcore.analysis.comparison import compare as C
from evalcore.stats import resample as R


def _diffs(seed: int, shift: float) -> np.ndarray:
    """Skewed, tied paired differences like real metric deltas: 40% ties (0), the rest a
    right-skewed (exponential) change centred on `shift`, rounded to 2 decimals."""
    rng = np.random.default_rng(seed)
    n = R.RESAMPLE_MAX_N
    change = np.round(shift + rng.exponential(0.2, n) - 0.2, 2)
    return np.where(rng.random(n) < 0.4, 0.0, change)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_normal_ci_agrees_with_the_bootstrap_at_the_switch(seed):
    d = _diffs(seed, 0.004)
    boot = R.bootstrap_ci(d, seed=seed)  # n = RESAMPLE_MAX_N: still resampled
    normal = R.normal_mean_ci(d)
    se = d.std(ddof=1) / math.sqrt(d.size)
    # a 2.5% percentile of 2,000 bootstrap means has a Monte Carlo sd of ~0.06 se; allow 4 of them
    assert abs(boot[0] - normal[0]) < 0.25 * se and abs(boot[1] - normal[1]) < 0.25 * se
    assert normal[0] < d.mean() < normal[1]


@pytest.mark.parametrize("shift", [0.0, 0.003, 0.006, 0.01])
def test_normal_p_agrees_with_the_randomization_test_at_the_switch(shift):
    d = _diffs(7, shift)
    p_mc, kind = R.randomization_test(d, n_perm=20000, seed=3)
    assert kind == "monte_carlo"  # n = RESAMPLE_MAX_N: still resampled
    p_normal, kind = R.randomization_test(np.append(d, 0.0))  # one more pair (a tie) crosses the switch
    assert kind == "normal"
    mc_sd = math.sqrt(max(p_mc * (1 - p_mc), 1e-4) / 20000)
    assert abs(p_mc - p_normal) < 4 * mc_sd + 0.005, (p_mc, p_normal)


def test_ci_switches_above_the_documented_n():
    d = _diffs(3, 0.01)
    big = np.append(d, d[:1])  # RESAMPLE_MAX_N + 1 values: normal, no resampling
    assert R.paired_mean_ci(np.zeros(big.size), big) == R.normal_mean_ci(big)
    assert R.paired_mean_ci(np.zeros(d.size), d, seed=4) == R.bootstrap_ci(d, seed=4)
    assert all(math.isnan(v) for v in R.normal_mean_ci([1.0]))


def test_compare_pair_above_the_switch_does_not_resample(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("resampled above RESAMPLE_MAX_N")

    monkeypatch.setattr(R, "bootstrap_ci", refuse)
    rng = np.random.default_rng(0)
    n = R.RESAMPLE_MAX_N + 1
    a = rng.random(n)
    b = np.clip(a + rng.normal(0.01, 0.2, n), 0, 1)
    row = C.compare_pair(a, b, True, n_boot=2000, n_perm=10000, seed=0, binary=False)
    assert row["test"] == "randomization_normal" and row["ci_low"] < row["delta"] < row["ci_high"]
    ab, bb = (rng.random(n) < 0.6).astype(float), (rng.random(n) < 0.62).astype(float)
    row = C.compare_pair(ab, bb, True, n_boot=2000, n_perm=10000, seed=0, binary=True)
    assert row["test"] == "mcnemar_exact" and row["ci_low"] < row["delta"] < row["ci_high"]


@pytest.mark.parametrize("kind", ["beta", "binary", "tied"])
def test_mean_ci_normal_limit_agrees_with_the_bootstrap_at_its_switch(kind):
    """A mean's CI (show, exports, the Runs page's ±) resamples up to BOOT_MAX_N values and uses
    mean ± z·sd/√n above: at the switch the two agree within Monte Carlo error (0.25 se)."""
    from evalcore.analysis.runs import means as M

    rng = np.random.default_rng(5)
    n = M.BOOT_MAX_N
    x = {"beta": rng.beta(2, 5, n), "binary": (rng.random(n) < 0.1).astype(float),
         "tied": np.round(rng.beta(0.5, 0.5, n), 1)}[kind]
    boot = M.mean_ci(x)  # n = BOOT_MAX_N: still the bootstrap
    assert boot == R.bootstrap_ci(x)
    normal = M.normal_ci(float(x.mean()), float(x.std(ddof=1)), n)
    se = x.std(ddof=1) / math.sqrt(n)
    assert abs(boot[0] - normal[0]) < 0.25 * se and abs(boot[1] - normal[1]) < 0.25 * se
    bigger = np.append(x, x[:1])  # one more value: the normal limit
    assert M.mean_ci(bigger) == M.normal_ci(float(bigger.mean()), float(bigger.std(ddof=1)), n + 1)
