"""How noisy a judge is, from K independent verdicts per answer (`score --repeats K`).

The figures, per metric and system:
- within-answer SD: sqrt(mean over answers of the sample variance of their K values), the
  pooled within-group SD of a one-way layout (answers are the groups);
- flip rate: the share of answers whose repeats disagree (their labels, for a metric that
  states one: an answer class, a grade letter; else their values);
- for a paired Δ (candidate − baseline, one difference per question of per-question means), the
  share of its variance that is judge noise. By the law of total variance
      Var(d̄_i) = Var(E[d̄_i | question i]) + E[Var(d̄_i | question i)],
  and the second term, the judge's, is estimated per question as Var(d_ir)/K from the K
  per-repeat differences when both sides have the same K repeats (repeat r of two methods of one
  run share work, e.g. the reference statements, so their noise partly cancels), else as
  s²_a/K_a + s²_b/K_b. The share is its mean over the mean of the first (the sample variance of
  the d̄_i), clipped to [0, 1]; `noise_sd` = sqrt(E[Var(d̄_i | i)] / n) is the SD of Δ that
  judge noise alone produces (Miller 2024, "Adding Error Bars to Evals", arXiv:2411.00640,
  sections 2-3, derives the same split for resampled answers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

SAME = 1e-9  # two values of one answer closer than this are the same verdict


@dataclass(frozen=True)
class Answer:
    """One answer's K repeats: their values (NaN: no value) and labels (None: none stated)."""

    values: tuple[float, ...]
    labels: tuple[str | None, ...] = ()

    def valued(self) -> np.ndarray:
        arr = np.asarray(self.values, dtype=float)
        return arr[~np.isnan(arr)]

    def variance(self) -> float:
        """The sample variance of its values (NaN with fewer than 2)."""
        v = self.valued()
        return float(v.var(ddof=1)) if v.size >= 2 else math.nan

    def flips(self) -> bool | None:
        """Whether its repeats disagree (None: fewer than 2 repeats with a value)."""
        kept = [i for i, x in enumerate(self.values) if not math.isnan(x)]
        if len(kept) < 2:
            return None
        labels = [self.labels[i] for i in kept] if self.labels else []
        if labels and all(label is not None for label in labels):
            return len(set(labels)) > 1
        v = np.asarray([self.values[i] for i in kept])
        return bool(v.max() - v.min() > SAME)


@dataclass(frozen=True)
class Within:
    n_answers: int  # answers with >= 2 repeats with a value
    k: int  # the most repeats any answer has
    within_sd: float
    flip_rate: float


def within(answers: Sequence[Answer]) -> Within:
    """The within-answer SD and flip rate over `answers` (those with >= 2 valued repeats)."""
    variances = [a.variance() for a in answers]
    used = [v for v in variances if not math.isnan(v)]
    flips = [f for f in (a.flips() for a in answers) if f is not None]
    k = max((len(a.values) for a in answers), default=0)
    if not used:
        return Within(0, k, math.nan, math.nan)
    return Within(len(used), k, math.sqrt(float(np.mean(used))), float(np.mean(flips)))


def judge_variance(a: Answer | None, b: Answer | None) -> float:
    """E[Var(d̄_i | i)] estimated for one question: the judge's variance of the difference of
    the two sides' repeat means (0 for a side without repeats: not measurable, not counted)."""
    if a is not None and b is not None and len(a.values) == len(b.values) >= 2:
        d = np.asarray(b.values, dtype=float) - np.asarray(a.values, dtype=float)
        if not np.isnan(d).any():
            return float(d.var(ddof=1)) / d.size
    total = 0.0
    for side in (a, b):
        if side is not None:
            v = side.variance()
            if not math.isnan(v):
                total += v / side.valued().size
    return total


@dataclass(frozen=True)
class DeltaNoise:
    n: int
    judge_share: float  # share of Var(d̄_i) that is judge noise, in [0, 1]
    noise_sd: float  # SD of Δ from judge noise alone: sqrt(mean judge variance / n)


def delta_noise(diffs: Sequence[float], judge_vars: Sequence[float]) -> DeltaNoise:
    """The judge's share of a paired Δ's variance, from the per-question differences of the
    stored means (`diffs`) and each question's judge variance (`judge_variance`)."""
    d = np.asarray(diffs, dtype=float)
    jv = np.asarray(judge_vars, dtype=float)
    n = int(d.size)
    if n < 2:
        return DeltaNoise(n, math.nan, math.nan)
    noise = float(jv.mean())
    total = float(d.var(ddof=1))
    share = math.nan if total <= 0 else min(1.0, max(0.0, noise / total))
    return DeltaNoise(n, share, math.sqrt(noise / n))
