"""The statistics behind aggregates and comparisons: bootstrap CIs, paired tests, Holm.

Why these: evaluation sets are small (tens to hundreds of questions) and metric values are
bounded, skewed or binary, so normal-theory intervals mislead. The percentile bootstrap makes no
shape assumption; the paired sign-flip randomization test is exact when every 2^n sign pattern
is enumerated (small n) and a seeded Monte Carlo estimate otherwise; binary metrics use the
exact McNemar test (a binomial test on the discordant pairs). Holm's step-down correction
controls the family-wise error over the metrics compared, without assuming independence.
All randomness is seeded: the same inputs always give the same numbers.

Large n: resampling costs n × resamples (100,000 pairs × 10,000 sign patterns is seconds per
metric), while above a few thousand pairs the central limit theorem has made both statistics
normal to well within their own Monte Carlo error. Above RESAMPLE_MAX_N values the CI is the
bootstrap's normal limit (mean ± z·sd/√n) and the randomization test's p is its normal limit
(z = |Σd| / √Σd², the sign-flip distribution's own variance), labelled "normal".
tests/stats/test_large_n.py checks that the two agree within Monte Carlo error at the switch.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

DEFAULT_BOOT = 2000
DEFAULT_PERM = 10000
EXACT_MAX_N = 16
# Above this many values (pairs), CIs and randomization p-values use their normal limits: at
# 5,000 they agree with 2,000 bootstrap draws / 10,000 sign patterns within Monte Carlo error
# (tests/stats/test_large_n.py), and resampling 5,000 pairs still takes < 0.1 s per metric.
RESAMPLE_MAX_N = 5000


def _clean(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[~np.isnan(arr)]


def bootstrap_ci(values: Sequence[float], n_boot: int = DEFAULT_BOOT, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (NaNs dropped). n < 2 -> (nan, nan): one value
    says nothing about spread, and a printed "[x, x]" would read as certainty."""
    arr = _clean(values)
    if arr.size < 2:
        return math.nan, math.nan
    if np.all(arr == arr[0]):
        return float(arr[0]), float(arr[0])
    means = _bootstrap_means(arr, n_boot, seed)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


BOOT_CHUNK_VALUES = 1 << 18  # index draws per block: 2 MB of indices, cache-sized
PERM_BLOCK_BYTES = 1 << 16  # random sign bytes per block of the randomization test


def _bootstrap_means(arr: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The means of `n_boot` resamples of `arr` (with replacement, seeded), drawn in blocks of
    resamples: the same draws, in the same order, as one (n_boot, n) index array, so the same
    numbers to the last bit (tests/stats/test_bootstrap_blocks.py), but the indices and the
    values they pick stay in the CPU's cache instead of two arrays of n_boot x n (32 MB each at
    2,000 x 2,000): ~30% faster and ~1/16 of the memory."""
    return _bootstrap_means_many([arr], n_boot, seed)[0]


def _bootstrap_means_many(arrays: Sequence[np.ndarray], n_boot: int, seed: int) -> list[np.ndarray]:
    """_bootstrap_means of several arrays of one size and one seed: their resamples pick the
    same positions, so the positions are drawn once (drawing them is most of the work)."""
    size = arrays[0].size
    rng = np.random.default_rng(seed)
    means = [np.empty(n_boot) for _ in arrays]
    step = max(1, BOOT_CHUNK_VALUES // size)
    for start in range(0, n_boot, step):
        rows = min(step, n_boot - start)
        idx = rng.integers(0, size, size=(rows, size))
        for arr, out in zip(arrays, means):
            out[start:start + rows] = arr[idx].mean(axis=1)
    return means


def normal_mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """mean ± z·sd/√n (sd with n − 1; NaNs dropped): the large-n limit of `bootstrap_ci`.
    n < 2 -> (nan, nan), as for the bootstrap."""
    from evalcore.stats.normal import interval_z

    arr = _clean(values)
    if arr.size < 2:
        return math.nan, math.nan
    mean = float(arr.mean())
    half = interval_z(confidence) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return mean - half, mean + half


def paired_mean_ci(a: Sequence[float], b: Sequence[float], n_boot: int = DEFAULT_BOOT, seed: int = 0,
                   confidence: float = 0.95, max_n: int | None = None) -> tuple[float, float]:
    """CI of mean(b - a): the paired bootstrap up to `max_n` pairs (default RESAMPLE_MAX_N, read
    at call time so bench/bench_app.py can time the all-resampling baseline), its normal limit above."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if _clean(diffs).size > (RESAMPLE_MAX_N if max_n is None else max_n):
        return normal_mean_ci(diffs, confidence)
    return bootstrap_ci(diffs, n_boot=n_boot, seed=seed, confidence=confidence)


def paired_mean_cis(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], n_boot: int = DEFAULT_BOOT,
                    seed: int = 0, confidence: float = 0.95) -> list[tuple[float, float]]:
    """paired_mean_ci of every (a, b), to the bit, computed together: the metrics of one
    comparison are resampled with one seed over the same questions, so pairs of one size share
    their bootstrap draws (`_bootstrap_means_many`) instead of each drawing them again."""
    out: list[tuple[float, float] | None] = [None] * len(pairs)
    groups: dict[int, list[tuple[int, np.ndarray]]] = {}
    for i, (a, b) in enumerate(pairs):
        diffs = _clean(np.asarray(b, dtype=float) - np.asarray(a, dtype=float))
        if diffs.size > RESAMPLE_MAX_N or diffs.size < 2 or np.all(diffs == diffs[0]):
            out[i] = paired_mean_ci(a, b, n_boot=n_boot, seed=seed, confidence=confidence)
        else:
            groups.setdefault(diffs.size, []).append((i, diffs))
    tail = (1 - confidence) / 2 * 100
    for members in groups.values():
        for (i, _), means in zip(members, _bootstrap_means_many([d for _, d in members], n_boot, seed)):
            lo, hi = np.percentile(means, [tail, 100 - tail])
            out[i] = (float(lo), float(hi))
    return out  # type: ignore[return-value]


def randomization_test(diffs: Sequence[float], n_perm: int = DEFAULT_PERM, seed: int = 0,
                       exact_max_n: int = EXACT_MAX_N, max_n: int | None = None) -> tuple[float, str]:
    """Two-sided paired sign-flip test of mean(diffs) = 0. Returns (p, "exact"|"monte_carlo"|"normal").

    Under H0 each pair's difference is equally likely to have either sign. p = share of sign
    patterns whose |mean| is at least the observed |mean|. Zero differences cannot change sign
    and are left out of the enumeration (they do not change any pattern's sum).
    Exact: all 2^m patterns of the m non-zero differences when m <= exact_max_n.
    Monte Carlo: p = (1 + hits) / (1 + n_perm), which is never 0 and is valid as a p-value.
    Normal: more than `max_n` values (default RESAMPLE_MAX_N; zeros included): under H0 Σd has mean 0 and variance Σd²,
    so p = 2·(1 − Φ(|Σd| / √Σd²)), the limit the Monte Carlo estimate converges to.
    """
    d = _clean(diffs)
    if d.size > (RESAMPLE_MAX_N if max_n is None else max_n):
        square = float(np.sum(d * d))
        return (1.0 if square == 0 else math.erfc(abs(float(d.sum())) / math.sqrt(2 * square))), "normal"
    d = d[d != 0]
    m = d.size
    if m == 0:
        return 1.0, "exact"
    observed = abs(d.sum())
    tol = 1e-12 * max(1.0, observed)
    if m <= exact_max_n:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=m)))
        sums = np.abs(signs @ d)
        return float(np.mean(sums >= observed - tol)), "exact"
    # Each pattern's sum is total - 2 * (sum of the differences whose sign flips). Flips are random
    # bits, 8 per byte; a table per byte position holds the sum of its 8 differences for each of
    # the 256 bit patterns, so a pattern's flipped sum is m/8 look-ups instead of m products
    # (~20x faster than a random +-1 per difference; the same test, to rounding).
    rng = np.random.default_rng(seed)
    total = float(d.sum())
    nbytes = (m + 7) // 8
    padded = np.zeros(nbytes * 8)
    padded[:m] = d
    bit_of = ((np.arange(256)[:, None] >> (7 - np.arange(8))) & 1).astype(np.float64)  # MSB first
    table = padded.reshape(nbytes, 8) @ bit_of.T  # (byte position, byte value) -> flipped sum
    columns = np.arange(nbytes)[None, :]
    chunk = max(1, min(n_perm, 2_000_000 // nbytes))  # the draws' calls: this fixes the stream
    # each call is split into cache-sized blocks whose byte counts are multiples of 4: numpy hands
    # out random bytes four at a time (one 32-bit draw), so the blocks draw exactly the bytes the
    # one call did (tests/stats/test_bootstrap_blocks.py), ~1.5x faster than 16 MB at once
    block = max(4, PERM_BLOCK_BYTES // nbytes // 4 * 4)
    hits = 0
    for start in range(0, n_perm, chunk):
        size = min(chunk, n_perm - start)
        for at in range(0, size, block):
            rows = min(block, size - at)
            packed = rng.integers(0, 256, size=(rows, nbytes), dtype=np.uint8)
            flipped = table[columns, packed].sum(axis=1)
            hits += int(np.sum(np.abs(total - 2.0 * flipped) >= observed - tol))
    return (1 + hits) / (1 + n_perm), "monte_carlo"


def mcnemar_exact(a: Sequence[float], b: Sequence[float]) -> tuple[float, int, int]:
    """Exact McNemar test for paired 0/1 values. Returns (p, n_a_only, n_b_only):
    a binomial test of the discordant pairs against p = 0.5 (two-sided).

    scipy.stats is imported here, not at module level: importing it takes ~0.6 s, which the
    dashboard's Compare page would otherwise pay on its first render even when no tested
    metric is binary."""
    from scipy.stats import binomtest

    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a_only = int(np.sum((a_arr == 1) & (b_arr == 0)))
    b_only = int(np.sum((a_arr == 0) & (b_arr == 1)))
    n = a_only + b_only
    if n == 0:
        return 1.0, a_only, b_only
    return float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue), a_only, b_only


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (NaN stays NaN and is not counted in the family).

    Sorted ascending p_(1..m): adj_(i) = max over j <= i of min(1, (m - j + 1) * p_(j))."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, math.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    running = 0.0
    for rank, idx in enumerate(valid[np.argsort(p[valid], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        out[idx] = running
    return [float(x) for x in out]


def is_binary(*arrays: Sequence[float]) -> bool:
    """True when every value is 0 or 1 (McNemar applies)."""
    return all(np.isin(np.asarray(x, dtype=float), (0.0, 1.0)).all() for x in arrays)
