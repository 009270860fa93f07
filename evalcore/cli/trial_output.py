"""The system's own sampling in the terminal: `show` and `compare` of runs asked with
`--trials T`. The numbers are evalcore.analysis.comparison.trial_noise's (the report and the
pages show the same), printed only when a system has trials, so the output of every run
without them is what it always was."""

from __future__ import annotations

import math
from typing import Any

from evalcore.cli.context import print_table


def _f(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}%"


def print_run_trials(table) -> None:
    """`show RUN`: per method x metric, T, the within-question SD, the flip rate, and pass@T /
    pass^T for pass/fail metrics."""
    if table.empty:
        return
    print_table("trials (each question asked T times per method; the means above are each question's mean "
                "over its trials)", ["method", "metric", "T", "questions", "SD within question", "flip rate",
                                     "pass@T", "pass^T"],
                [[r.method, r.metric, str(r.trials), str(r.n_questions), _f(r.within_sd), _pct(r.flip_rate),
                  _pct(r.pass_at_t), _pct(r.pass_all_t)] for r in table.itertuples(index=False)])


def print_comparison_trials(rows: list[dict[str, Any]], short: dict[str, str]) -> None:
    """`compare`: per candidate x metric with trials on a side, each side's T, within-question SD,
    flip rate, and pass@T / pass^T for pass/fail metrics."""
    if not rows:
        return
    print_table("trials (already inside the CIs above: each question's value is the mean of its T trials, "
                "and the CIs resample questions)",
                ["candidate", "metric", "T base/cand", "SD within question base/cand", "flip rate base/cand",
                 "pass@T base/cand", "pass^T base/cand"],
                [[short.get(r["candidate"], r["candidate"]), r["metric"],
                  f"{r['trials_baseline']}/{r['trials_candidate']}",
                  f"{_f(r['within_sd_baseline'])}/{_f(r['within_sd_candidate'])}",
                  f"{_pct(r['flip_rate_baseline'])}/{_pct(r['flip_rate_candidate'])}",
                  f"{_pct(r['pass_at_t_baseline'])}/{_pct(r['pass_at_t_candidate'])}",
                  f"{_pct(r['pass_all_t_baseline'])}/{_pct(r['pass_all_t_candidate'])}"] for r in rows])
