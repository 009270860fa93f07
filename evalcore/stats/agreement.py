"""Agreement between two raters (a judge and a person, or two people): rate, CI and Cohen's kappa.

Why here (pure functions, no store): the judge layer's spot checks, the Annotate page and the
CLI report agreement; with one definition they cannot disagree on the same annotations.
"""

from __future__ import annotations

from collections import Counter
from typing import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement and p_e the agreement
    expected from each rater's label frequencies. None when undefined: no items, or both raters
    used one and the same single label (chance agreement is then 1)."""
    if len(a) != len(b):
        raise ValueError("kappa needs two ratings per item")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    if pe == 1.0:
        return None
    return (po - pe) / (1 - pe)


def agreement_rate(a: Sequence[Hashable], b: Sequence[Hashable],
                   confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """(share of items both raters labelled alike, Wilson CI low, high); Nones with no items.

    Wilson's interval rather than the normal one: annotation batches are small and agreement
    rates sit near 1, where the normal interval overshoots [0, 1]."""
    if len(a) != len(b):
        raise ValueError("agreement needs two ratings per item")
    n = len(a)
    if n == 0:
        return None, None, None
    from scipy.stats import binomtest  # ~0.5 s to import: only when agreement is computed

    k = sum(x == y for x, y in zip(a, b))
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return k / n, float(ci.low), float(ci.high)
