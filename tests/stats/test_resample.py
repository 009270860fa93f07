"""Bootstrap CIs, randomization test exactness, McNemar and Holm against independent references."""

import itertools
import math

import numpy as np
import pytest

from evalcore.stats.resample import (
    bootstrap_ci,
    holm,
    mcnemar_exact,
    paired_mean_ci,
    randomization_test,
)


def test_bootstrap_ci_contains_mean_and_is_seeded():
    rng = np.random.default_rng(7)
    x = rng.beta(2, 5, size=120)
    lo, hi = bootstrap_ci(x, seed=3)
    assert lo < x.mean() < hi and hi - lo < 0.1
    assert bootstrap_ci(x, seed=3) == (lo, hi)
    assert all(math.isnan(v) for v in bootstrap_ci([0.4])) and all(math.isnan(v) for v in bootstrap_ci([]))
    assert bootstrap_ci([1.0, math.nan, 1.0]) == (1.0, 1.0)  # NaN is dropped, not averaged


def test_bootstrap_ci_covers_true_mean_most_of_the_time():
    rng = np.random.default_rng(11)
    hits = 0
    for i in range(200):
        lo, hi = bootstrap_ci(rng.binomial(1, 0.3, size=60), n_boot=500, seed=i)
        hits += lo <= 0.3 <= hi
    assert 0.88 <= hits / 200 <= 0.99


def test_paired_bootstrap_is_ci_of_mean_difference():
    a = np.array([0.1, 0.4, 0.5, 0.9, 0.3])
    b = a + 0.2
    assert paired_mean_ci(a, b) == pytest.approx((0.2, 0.2))


def _brute_force_p(d):
    """Independent reference: loop over every sign vector, count |sum| >= observed."""
    obs = abs(sum(d))
    count = total = 0
    for signs in itertools.product([1, -1], repeat=len(d)):
        total += 1
        count += abs(sum(s * x for s, x in zip(signs, d))) >= obs - 1e-12
    return count / total


@pytest.mark.parametrize("seed", range(5))
def test_randomization_exact_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.1, 0.3, size=10), 3)
    p, kind = randomization_test(d)
    assert kind == "exact" and p == pytest.approx(_brute_force_p(list(d)), abs=1e-12)


def test_randomization_hand_case_and_monte_carlo():
    assert randomization_test([1, 1, 1, 1, 1]) == (2 / 32, "exact")  # only all-plus and all-minus reach 5
    assert randomization_test([0, 0, 0]) == (1.0, "exact")
    rng = np.random.default_rng(1)
    d = rng.normal(0.05, 0.3, size=17)
    p_mc, kind = randomization_test(d, n_perm=20000, seed=5)
    p_exact, _ = randomization_test(d, exact_max_n=17)
    assert kind == "monte_carlo" and abs(p_mc - p_exact) < 0.02


def test_mcnemar_against_the_binomial_formula():
    a = [1] * 10 + [0] * 3 + [1] * 20 + [0] * 7
    b = [0] * 10 + [1] * 3 + [1] * 20 + [0] * 7
    p, only_a, only_b = mcnemar_exact(a, b)
    n, k = 13, 3
    hand = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
    assert (only_a, only_b) == (10, 3) and p == pytest.approx(hand)
    assert mcnemar_exact([1, 0], [1, 0])[0] == 1.0


def test_holm_hand_worked_example():
    # p = .01, .04, .03, .005 -> sorted .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> monotone .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.2, math.nan, 0.01])
    assert out[0] == pytest.approx(0.2) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])


def test_continuous_comparisons_do_not_import_scipy_stats():
    """scipy.stats costs ~0.6 s to import; the dashboard's Compare page must not pay it for
    metrics that are not 0/1 (only the McNemar test needs it)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from evalcore.analysis.comparison.compare import compare_pair\n"
            "rng = np.random.default_rng(0)\n"
            "out = compare_pair(rng.random(50), rng.random(50), True, 200, 200, 0)\n"
            "assert out['test'].startswith('randomization'), out\n"
            "print('scipy.stats' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
