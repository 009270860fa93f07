"""Every corrected number is honest at any size (issue 35, item 2), on arrays.

- a proportion's interval never has zero width and never leaves the scale: 50 of 50 CORRECT
  includes 0.93; a paired Δ of identical labels is not [0, 0]; nor is the bias of a judge that
  agrees every time;
- lambda is PPI++'s (equal to ppi-python's lam=None), 0 for a judge that does not vary; whenever
  it clips to 0 the implied width factor is 1.0 and the measured ratio (labels-alone width over
  corrected width) is what the row reports;
- below 50 labels a row withholds every number but the counts (JSON null), unless the labels
  are the whole population: then its human mean is exact and shown;
- the progress words never print nan/None, and their counts are bounded by the population.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.optional import requires

from evalcore.analysis.labels import corrected as C
from evalcore.analysis.labels import label_counts as LC
from evalcore.analysis.labels import ppi_estimate as P
from evalcore.stats import bounded_mean as B


@pytest.fixture(scope="module")
def ppi_py():
    """The reference (ppi-python), imported by the test that compares with it: at this module's
    import it cost every xdist worker ~2 s of the suite's collection (statsmodels, numba...)."""
    return requires("ppi_py", "the labels extra: prediction-powered inference")


def _width(row, lo="ci_low", hi="ci_high"):
    return row[hi] - row[lo]


@pytest.mark.parametrize("judge", ["agrees", "random", "constant"])
def test_fifty_of_fifty_correct_is_not_certain(judge):
    rng = np.random.default_rng(1)
    y = np.ones(50)
    yhat = {"agrees": np.ones(50), "random": rng.integers(0, 2, 50).astype(float), "constant": np.ones(50)}[judge]
    rest = np.ones(200) if judge != "random" else rng.integers(0, 2, 200).astype(float)
    out = C.estimate(y, yhat, rest)
    assert out["status"] == "ok"
    assert out["ci_low"] < 0.93 <= out["ci_high"] <= 1.0  # the Wilson bound at 50/50 is 0.9287
    assert out["classical_low"] < 0.93 and _width(out, "classical_low", "classical_high") > 0
    assert _width(out, "bias_low", "bias_high") > 0  # "exactly unbiased" is not what 50 answers show
    assert all(v is None or math.isfinite(v) for v in out.values() if isinstance(v, float))


def test_all_wrong_and_tiny_samples_keep_a_width_inside_the_scale():
    for y in (np.zeros(50), np.zeros(3), np.ones(2), np.array([1.0, 0.0]), np.full(60, 0.9)):
        out = C.estimate(y, y, np.full(40, y.mean()), withhold=False)
        assert 0.0 <= out["ci_low"] < out["ci_high"] <= 1.0, (y, out)
        assert out["ci_low"] <= out["corrected"] <= out["ci_high"]


def test_a_paired_delta_of_identical_labels_is_not_zero_width():
    d = np.zeros(60)
    rest = np.random.default_rng(2).integers(-1, 2, 100).astype(float)
    out = C.estimate(d, np.zeros(60), rest, signed=True)
    assert out["ci_low"] < 0 < out["ci_high"] and -1 <= out["ci_low"] and out["ci_high"] <= 1
    assert out["ci_high"] == pytest.approx(-out["ci_low"])  # no side favoured
    every_gain = C.estimate(np.ones(60), np.ones(60), np.ones(10), signed=True)
    assert every_gain["ci_low"] < 1 and every_gain["ci_high"] == 1.0


def test_away_from_the_edge_the_interval_is_ppi_pythons_own(ppi_py):
    rng = np.random.default_rng(3)
    y = rng.binomial(1, 0.4, 120).astype(float)
    yhat = np.clip(0.25 * y + 0.4 + rng.normal(0, 0.25, 120), 0, 1)
    rest = np.clip(0.25 * rng.binomial(1, 0.4, 600) + 0.4 + rng.normal(0, 0.25, 600), 0, 1)
    assert not B.near_edge(y)
    lam = P.power_tuning(y, yhat, rest)
    got = C.estimate(y, yhat, rest)
    tuned = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=None))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(tuple(tuned), abs=1e-12)
    assert tuple(np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=lam))) == pytest.approx(tuple(tuned))
    assert got["lam"] == pytest.approx(lam) and 0 < lam < 1


@pytest.mark.parametrize("case", ["anti", "constant_judge", "uncorrelated"])
def test_lambda_clipped_to_zero_means_a_factor_of_one_and_the_measured_ratio(case):
    rng = np.random.default_rng(4)
    y = rng.binomial(1, 0.5, 80).astype(float)
    yhat = {"anti": 1 - y, "constant_judge": np.full(80, 0.7), "uncorrelated": rng.permutation(y)}[case]
    rest = {"anti": rng.binomial(1, 0.5, 300).astype(float), "constant_judge": np.full(300, 0.7),
            "uncorrelated": rng.binomial(1, 0.5, 300).astype(float)}[case]
    out = C.estimate(y, yhat, rest)
    if case != "uncorrelated":
        assert out["lam"] == 0.0
    if out["lam"] == 0.0:
        assert out["implied_width_ratio"] == 1.0  # never sqrt(1 - rho^2) = 0.00 at rho = -1
        assert (out["ci_low"], out["ci_high"]) == (out["classical_low"], out["classical_high"])
    assert out["width_ratio"] == pytest.approx(_width(out, "classical_low", "classical_high") / _width(out))
    assert math.isfinite(out["corrected"])  # ppi-python alone gives NaN for a judge that never varies


def test_below_fifty_labels_every_number_but_the_counts_is_withheld():
    rng = np.random.default_rng(5)
    y = rng.binomial(1, 0.5, 30).astype(float)
    out = C.estimate(y, y, rng.binomial(1, 0.5, 100).astype(float))
    assert out["status"] == "too_few"
    assert {k for k, v in out.items() if v is not None} == {"status", "n_labelled", "N", "judge_mean"}
    assert C.shown(out) == "30 of 50 labels"
    rough = C.estimate(y, y, rng.binomial(1, 0.5, 100).astype(float), withhold=False)
    assert rough["ci_low"] is not None  # Annotate's rough half-width, never in a shown row


def test_a_small_population_labelled_in_full_shows_its_exact_mean():
    y = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    out = C.estimate(y, np.ones(6), [])
    assert out["status"] == "all_labelled" and out["corrected"] == pytest.approx(4 / 6)
    assert out["ci_low"] < 4 / 6 < out["ci_high"]  # for answers like these: the labels-alone interval
    assert C.shown(out).startswith("0.667 [") and C.shown(out).endswith("(all 6 labelled)")
    partly = C.estimate(y[:5], np.ones(5), [1.0])
    assert partly["status"] == "too_few" and C.shown(partly) == "5 of 6 labels"


def _grid():
    """Estimates a page may show: every population size and share labelled, labels that agree,
    disagree or vary, a judge that varies or not."""
    rng = np.random.default_rng(6)
    for big_n in (1, 2, 3, 5, 25, 49, 50, 51, 120):
        for n in sorted({0, 1, 2, 3, big_n // 2, big_n - 2, big_n - 1, big_n} & set(range(big_n + 1))):
            for kind in ("ones", "mixed", "zeros"):
                y = {"ones": np.ones(n), "zeros": np.zeros(n), "mixed": rng.integers(0, 2, n).astype(float)}[kind]
                for judge in (np.ones(big_n), rng.integers(0, 2, big_n).astype(float)):
                    yield C.estimate(y, judge[:n], judge[n:], withhold=False)


def test_progress_words_never_print_nan_or_none_and_counts_stay_inside_the_population():
    for est in _grid():
        n, big_n = est["n_labelled"], est["N"]
        lines = LC.progress_lines(est, C.shown(est))
        text = " ".join(lines)
        assert not re.search(r"\b(nan|None|inf)\b", text, re.I), text
        for more in re.findall(r"about (\d+) more labels", text):
            assert 0 < int(more) < big_n - n, text
        for need in re.findall(r"of the (\d+) an estimate needs", text):
            assert int(need) == min(50, big_n), text
        assert 0 <= LC.progress_share(est) <= 1
        assert re.fullmatch(r"\d+ of (\d+) labels", LC.count_text(n, big_n))
        assert int(LC.count_text(n, big_n).split()[2]) <= big_n


def test_the_counts_read_as_the_issue_asks():
    est = C.estimate(np.ones(2), np.ones(2), np.ones(23), withhold=False)  # 2 agreeing labels, N = 25
    lines = LC.progress_lines(est, C.shown(est))
    assert lines[0].startswith("2 of 25 answers labelled at random · 2 of the 25 an estimate needs")
    assert "±0." in lines[1] and "nan" not in lines[1] and "None" not in lines[1]
    two_left = LC.more_labels_text(48, 50, 15)
    assert "15" not in two_left and "2 answers left" in two_left
    assert LC.more_labels_text(10, 50, 5) == "about 5 more labels reach ±0.05"
    assert LC.more_labels_text(25, 25, None).startswith("every answer is labelled")
    assert P.labels_to_target(48, 0.2, population=50) == 2
    assert LC.num(float("nan")) == LC.num(None) == LC.num(float("inf")) == "–"
