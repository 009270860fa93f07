"""The bootstrap and the randomization test draw their resamples in cache-sized blocks
(stats/resample.py): the numbers must be those of drawing them all at once, bit for bit,
whatever the block size."""

import numpy as np
import pytest

from evalcore.stats import resample as R


def _plain_means(arr: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The textbook form: one (n_boot, n) array of indices, every resample's mean."""
    idx = np.random.default_rng(seed).integers(0, arr.size, size=(n_boot, arr.size))
    return arr[idx].mean(axis=1)


@pytest.mark.parametrize("n, n_boot, block", [(2000, 2000, 1 << 18), (37, 2000, 100), (500, 999, 3 * 500),
                                              (5000, 300, 1), (3, 10, 1 << 18), (37, 50, 37)])
def test_blocks_give_the_plain_bootstrap_to_the_bit(monkeypatch, n, n_boot, block):
    monkeypatch.setattr(R, "BOOT_CHUNK_VALUES", block)
    arr = np.round(np.random.default_rng(n).beta(2, 5, n), 3)
    assert np.array_equal(R._bootstrap_means(arr, n_boot, seed=7), _plain_means(arr, n_boot, seed=7))


def test_the_ci_is_the_plain_percentile_interval():
    arr = np.random.default_rng(1).exponential(0.3, 1500)
    lo, hi = np.percentile(_plain_means(arr, 2000, 4), [2.5, 97.5])
    assert R.bootstrap_ci(arr, n_boot=2000, seed=4) == (float(lo), float(hi))


def _one_call_hits(d: np.ndarray, n_perm: int, seed: int) -> float:
    """The randomization test's Monte Carlo p as it was written before blocks: each call of
    2,000,000 // nbytes patterns drawn at once."""
    d = d[d != 0]
    m, total = d.size, float(d.sum())
    observed = abs(total)
    tol = 1e-12 * max(1.0, observed)
    nbytes = (m + 7) // 8
    padded = np.zeros(nbytes * 8)
    padded[:m] = d
    bit_of = ((np.arange(256)[:, None] >> (7 - np.arange(8))) & 1).astype(np.float64)
    table = padded.reshape(nbytes, 8) @ bit_of.T
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_perm, 2_000_000 // nbytes))
    hits = 0
    for start in range(0, n_perm, chunk):
        packed = rng.integers(0, 256, size=(min(chunk, n_perm - start), nbytes), dtype=np.uint8)
        flipped = table[np.arange(nbytes)[None, :], packed].sum(axis=1)
        hits += int(np.sum(np.abs(total - 2.0 * flipped) >= observed - tol))
    return (1 + hits) / (1 + n_perm)


@pytest.mark.parametrize("n, n_perm, block", [(2000, 10000, 1 << 16), (2001, 10000, 1 << 16), (40, 10000, 8),
                                              (4999, 3000, 1 << 12), (900, 20000, 1), (130, 997, 1 << 16)])
def test_blocks_give_the_one_call_randomization_test_to_the_bit(monkeypatch, n, n_perm, block):
    monkeypatch.setattr(R, "PERM_BLOCK_BYTES", block)
    rng = np.random.default_rng(n)
    d = np.where(rng.random(n) < 0.3, 0.0, np.round(rng.normal(0.004, 0.2, n), 2))
    p, kind = R.randomization_test(d, n_perm=n_perm, seed=11)
    assert kind == "monte_carlo"
    assert p == _one_call_hits(d, n_perm, seed=11)


def test_cis_computed_together_are_each_ci_to_the_bit():
    """paired_mean_cis shares one seed's draws between pairs of one size: every CI must be the
    one paired_mean_ci gives alone (sizes mixed, NaN, constant, too few, above the switch)."""
    rng = np.random.default_rng(3)
    a = rng.random(400)
    pairs = [(a, a + rng.normal(0, 0.1, 400)),           # three of one size: shared draws
             (a, np.round(a + rng.normal(0.02, 0.2, 400), 1)),
             (a, (rng.random(400) < 0.5).astype(float)),
             (a[:250], a[:250] + 0.1 * rng.random(250)),  # another size
             (a[:1], a[:1] + 1),                          # too few: (nan, nan)
             (a[:50], a[:50] + 0.25),                     # constant difference
             (np.append(a[:99], np.nan), a[:100]),        # a NaN difference is dropped
             (rng.random(R.RESAMPLE_MAX_N + 1), rng.random(R.RESAMPLE_MAX_N + 1))]  # the normal limit
    together = R.paired_mean_cis(pairs, n_boot=700, seed=9)
    alone = [R.paired_mean_ci(x, y, n_boot=700, seed=9) for x, y in pairs]
    assert len(together) == len(alone)
    for got, want in zip(together, alone):
        assert got == want or all(g != g and w != w for g, w in zip(got, want)), (got, want)


def test_tested_rows_are_each_metrics_own_statistics():
    """tested_rows computes the CIs as one batch beside the tests: each row must equal
    compare_pair on that metric alone (CI, test, p), empty pairs included."""
    from evalcore.analysis.comparison import compare as C

    rng = np.random.default_rng(12)
    a = rng.random(300)
    pairs = {"token_f1": (a, np.clip(a + rng.normal(0.03, 0.1, 300), 0, 1)),
             "faithfulness": (a[:200], np.clip(a[:200] + rng.normal(0, 0.2, 200), 0, 1)),
             "exact_match": ((rng.random(300) < 0.4).astype(float), (rng.random(300) < 0.5).astype(float)),
             "rouge_l": (np.array([]), np.array([]))}
    rows = C.tested_rows(pairs, "b", "c", n_boot=500, n_perm=2000, seed=5, alpha=0.05)
    for row in rows:
        hib, binary = C.direction(row["metric"])
        alone = C.compare_pair(*pairs[row["metric"]], hib, 500, 2000, 5, binary)
        for key, want in alone.items():
            got = row[key]
            assert got == want or (got != got and want != want), (row["metric"], key, got, want)
