"""The regression gate's rule, one definition for `evalcore compare --fail-on-regression` and the
pytest plugin's baseline check (evalcore.outputs.gate): what fails it, and which thresholds it takes.

Why a module of its own: a gate that compared nothing used to pass. With the candidate's
token_f1 all NaN, or two runs whose question ids differed only in Unicode form (0 pairs), every
test had nothing to reject and `compare` exited 0; `token_f1:nan` as MIN_DELTA made every
comparison false and switched the gate off. A gate must say "I could not check this", not "fine".

A gated metric fails, for a candidate, when
  - it regressed: worse by more than MIN_DELTA in its better direction, Holm-adjusted p < alpha;
  - it compared nothing: no question has a value on both sides (the metric is not scored on a
    side, every value on a side is NaN, or the sides share no question id);
  - it compared too little: the pairs are fewer than `min_paired` (DEFAULT_MIN_PAIRED, 0.9) of
    the questions with a value on either side. Questions neither side has a value for (a retrieval
    metric on questions without gold passages) do not count against it.
MIN_DELTA is a finite number >= 0 and below the width of the metric's range (a 0-1 score: below
1; no change can exceed a MIN_DELTA of 1, so it would switch the gate off), alpha in (0, 1),
min_paired in (0, 1]; the pytest gate's thresholds lie within the metric's range. Every one is
typed as plain decimal notation (evalcore.schemas.numbers: `1_0` and full-width digits are not
numbers here); anything else is refused before anything is compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from evalcore.errors import EvalcoreError
from evalcore.metrics.gate_bounds import (  # noqa: F401 (the rules a gate is read by)
    Gate,
    check_alpha,
    check_min_paired,
    metric_range,
    parse_gate,
    threshold_bounds,
)

if TYPE_CHECKING:
    import pandas as pd

# `comparison` arguments are evalcore.analysis.comparison.compare.Comparison objects; not imported here,
# since compare imports this module (the import-cycle test counts TYPE_CHECKING imports too)
Comparison = Any

DEFAULT_MIN_PAIRED = 0.9  # share of the questions with a value on either side that must pair


@dataclass
class GateResult:
    """Why the gate failed, one line each (empty lists: it passed)."""

    regressions: list[str] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.not_compared)


def known_metric(name: str, stored: Iterable[str]) -> bool:
    """A registered metric, or one some compared side stored (custom or older names)."""
    from evalcore.metrics.registry import METRICS

    return name in METRICS or name in set(stored)


def missing_metrics_message(missing: list[str], scored: set[str], base: str, cand: str) -> str:
    """Why metrics cannot be compared: unknown names (with a 'did you mean'), or known metrics
    not scored on both sides (score them first)."""
    import difflib

    from evalcore.metrics.registry import METRICS

    known = set(METRICS) | scored
    parts = []
    for m in [m for m in missing if m not in known]:
        close = difflib.get_close_matches(m, sorted(known), n=3, cutoff=0.6)
        parts.append(f"no such metric {m!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    unscored = [m for m in missing if m in known]
    if unscored:
        parts.append(f"metric(s) {', '.join(unscored)} not scored for both {base} and {cand} "
                     f"(run `evalcore score` first)")
    return "; ".join(parts)


def regressions(comparison: Comparison, metric: str, min_delta: float = 0.0) -> "pd.DataFrame":
    """Rows where `metric` got worse by more than min_delta AND the Holm-adjusted p < alpha."""
    import numpy as np

    t = comparison.table
    rows = t[t.metric == metric]
    if rows.empty:
        raise EvalcoreError(f"metric {metric!r} was not compared (compared: {', '.join(sorted(set(t.metric)))})")
    worse = np.where(rows.higher_is_better, -rows.delta, rows.delta)
    mask = (worse > min_delta) & rows.significant.astype(bool)
    return rows[mask]


def coverage_problem(row: dict[str, Any], min_paired: float = DEFAULT_MIN_PAIRED) -> str | None:
    """Why one compared row (a candidate x metric of Comparison.table) compared nothing or too
    little to pass a gate; None when it compared enough."""
    pairs, a, b = int(row["n_pairs"]), int(row["n_baseline"]), int(row["n_candidate"])
    if pairs == 0:
        if a == 0 and b == 0:
            why = "neither side has a value (not scored, or every value NaN)"
        elif b == 0:
            why = f"the candidate has no value (not scored, or every value NaN; the baseline has {a})"
        elif a == 0:
            why = f"the baseline has no value (not scored, or every value NaN; the candidate has {b})"
        else:
            why = (f"the baseline's {a} values and the candidate's {b} are on different questions "
                   "(no question id in common)")
        return f"compared nothing: 0 questions with a value on both sides; {why}"
    either = a + b - pairs
    if pairs < min_paired * either:
        return (f"compared too little: {pairs} of the {either} questions with a value on either side "
                f"({pairs / either:.0%}; baseline {a}, candidate {b}); the gate needs {min_paired:.0%} "
                "(--min-paired)")
    return None


def gate_result(comparison: Comparison, gates: Iterable[Gate],
                min_paired: float = DEFAULT_MIN_PAIRED) -> GateResult:
    """Every gate checked against every candidate of the comparison."""
    out = GateResult()
    table = comparison.table
    for gate in gates:
        rows = table[table.metric == gate.metric]
        for cand in comparison.candidates:
            mine = rows[rows.candidate == cand.label]
            if mine.empty:
                out.not_compared.append(f"{cand.label}: {gate.metric} was not compared")
                continue
            problem = coverage_problem(mine.iloc[0].to_dict(), min_paired)
            if problem:
                out.not_compared.append(f"{cand.label}: {gate.metric} {problem}")
        bad = regressions(comparison, gate.metric, gate.min_delta) if not rows.empty else rows
        out.regressions.extend(f"{r.candidate}: {gate.metric} Δ={r.delta:+.4f} (p_holm={r.p_holm:.4g})"
                               for r in bad.itertuples())
    return out
