"""pass@k and pass^k over repeated trials of a system (`evalcore run --trials T`).

For a pass/fail metric, a question asked n times passes c of them. Two questions a reader asks:
- pass@k: would at least one of k tries pass? Its unbiased estimate from n >= k tries is
      1 - C(n - c, k) / C(n, k)
  (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", arXiv:2107.03374,
  section 2.1): drawing k of the n tries without replacement, the chance that none passes.
  At k = n it is 1 when any try passed: the plain share of questions with a pass.
- pass^k: would all of k tries pass? Its unbiased estimate is C(c, k) / C(n, k) (Yao et al.
  2024, "τ-bench", arXiv:2406.12045, section 3); at k = n, 1 when every try passed.
The run-level figure is the mean over questions with at least k tries. Binomials are exact
integers (n is at most a few hundred), so the estimate has no cancellation to fear.

The flip rate (the share of questions whose tries disagree) is the judge repeats' own
(evalcore.stats.repeats.within), read over trials instead of repeats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one question with `c` passes among `n` tries (k <= n)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_all_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one question: the chance that k of its tries, drawn without
    replacement, all pass."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (1 <= k <= n and 0 <= c <= n):
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")


@dataclass(frozen=True)
class PassRates:
    k: int
    n_questions: int  # questions with at least k tries (the others are left out)
    pass_at_k: float  # mean over those questions; NaN when there is none
    pass_all_k: float


def pass_rates(tries: Sequence[tuple[int, int]], k: int) -> PassRates:
    """pass@k and pass^k over questions given as (tries, passes), each question with fewer than
    `k` tries left out."""
    used = [(n, c) for n, c in tries if n >= k]
    if not used or k < 1:
        return PassRates(k, len(used), math.nan, math.nan)
    return PassRates(k, len(used), sum(pass_at_k(n, c, k) for n, c in used) / len(used),
                     sum(pass_all_k(n, c, k) for n, c in used) / len(used))
