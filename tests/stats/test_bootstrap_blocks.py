"""The bootstrap draws its resamples in blocks (stats/resample._bootstrap_means): the numbers
must be those of the plain one-array bootstrap, bit for bit, whatever the block size."""

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
