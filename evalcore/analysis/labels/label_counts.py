"""How the label counts and numbers of corrected estimates read, in one place for every page and the CLI.

Why a module of its own: the same few sentences ("12 of 50 labels", "about 40 more labels reach
±0.05", "Corrected CI now ±0.071") were written out separately on the Annotate page, the Runs
column, Compare and the CLI, and each copy had its own bugs: "0 of the 50 an estimate needs" for a
population of 25 answers (it can never reach 50: it needs all 25, and then the mean is exact),
"about 15 more" with 2 answers left, "±nan" and "about None more". Here every count is bounded
by the population and every number goes through `num`, which prints "–" for a missing value, so
no page can print nan or None.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

MIN_LABELS = 50  # sampled labels below which no estimate is shown (every estimator under-covers)
TARGET_HALF_WIDTH = 0.05  # the CI half-width Annotate counts labels towards


def num(x: Any, digits: int = 3, sign: bool = False) -> str:
    """A number as people read it: '–' when missing (None, NaN, infinite), never '-0.000'."""
    if x is None or isinstance(x, str):
        return "–"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "–"
    if not math.isfinite(x):
        return "–"
    x = 0.0 if round(x, digits) == 0 else x  # a tiny negative rounds to 0, not '-0.000'
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def interval(lo: Any, hi: Any, digits: int = 3) -> str:
    """'[lo, hi]', or '–' when either end is missing."""
    if num(lo, digits) == "–" or num(hi, digits) == "–":
        return "–"
    return f"[{num(lo, digits)}, {num(hi, digits)}]"


def _count(x: Any) -> int:
    """A count from a table cell (None or NaN reads 0)."""
    try:
        return int(x) if x is not None and float(x) == float(x) else 0
    except (TypeError, ValueError):
        return 0


def needed(population: Any) -> int:
    """Labels an estimate needs: MIN_LABELS, or every answer of a smaller population (then the
    labels are the population and its human mean is exact)."""
    return min(MIN_LABELS, _count(population))


def count_text(n: Any, population: Any) -> str:
    """The cell shown where no estimate is: '12 of 50 labels' ('6 of 25 labels' for a population
    of 25, which needs all of them)."""
    return f"{_count(n)} of {needed(population)} labels"


def more_labels_text(n: Any, population: Any, more: Any, target: float = TARGET_HALF_WIDTH) -> str:
    """What the next labels buy: 'about 40 more labels reach ±0.05', bounded by the answers left."""
    n, big_n = _count(n), _count(population)
    left = max(0, big_n - n)
    if left == 0:
        return "every answer is labelled: the human mean is exact"
    if more is None or num(more) == "–":
        return f"{left} answer{'s' if left != 1 else ''} left to label"
    more = _count(more)
    if more == 0:
        return f"already within ±{target:g}"
    if more >= left:
        return (f"labelling the {left} answer{'s' if left != 1 else ''} left makes the human mean exact "
                f"(±{target:g} needs them all)")
    return f"about {more} more labels reach ±{target:g}"


def progress_lines(est: Mapping[str, Any], shown: str) -> list[str]:
    """Annotate's lines on where a population's sample stands. `est`: the unwithheld estimate of
    evalcore.analysis.labels.corrected (numbers even below MIN_LABELS: the page marks them rough);
    `shown`: its one-cell text (corrected.shown)."""
    n, big_n = _count(est.get("n_labelled")), _count(est.get("N"))
    if big_n == 0:
        return ["This population has no answer to label."]
    need = needed(big_n)
    every = " (every answer: the population is smaller than 50)" if big_n < MIN_LABELS else ""
    lines = [f"{n} of {big_n} answers labelled at random · {min(n, need)} of the {need} an estimate needs{every}"]
    lo, hi = est.get("ci_low"), est.get("ci_high")
    if n < 2 or num(lo) == "–" or num(hi) == "–":
        lines.append("Corrected CI: needs at least 2 labelled answers")
        return lines
    rough = "" if n >= need else f" (rough until {need} labels)"
    reach = more_labels_text(n, big_n, est.get("labels_to_target"))
    lines.append(f"Corrected CI now ±{num((float(hi) - float(lo)) / 2)}{rough}; {reach}. "
                 f"Judge mean {num(est.get('judge_mean'))}, corrected {shown}")
    return lines


def progress_share(est: Mapping[str, Any]) -> float:
    """The progress bar's fill: labels so far over the labels an estimate needs (0 to 1)."""
    need = needed(est.get("N"))
    return 1.0 if need == 0 else min(1.0, _count(est.get("n_labelled")) / need)
