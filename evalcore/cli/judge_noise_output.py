"""The judge's noise in the terminal: `show` and `compare` (runs scored with `--repeats K`), and
`compare RUN RUN --aa`. The numbers are evalcore.analysis.comparison.judge_noise's and aa_check's
(the report embeds the same), printed only when a run has repeats, so the output of runs scored
with K = 1 is what it always was."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import typer

from evalcore.cli.context import echo_line, print_table


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _pct(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}%"


def print_run_noise(table) -> None:
    """`show RUN`: per method x metric, K, the judge's within-answer SD and flip rate."""
    if table.empty:
        return
    print_table("judge noise (K independent verdicts per answer; within-answer SD, share of answers whose "
                "verdicts differ)", ["method", "metric", "K", "answers", "judge SD", "flip rate"],
                [[r.method, r.metric, str(r.k), str(r.n_answers), _f(r.within_sd), _pct(r.flip_rate)]
                 for r in table.itertuples(index=False)])


def print_comparison_noise(rows: list[dict[str, Any]], short: dict[str, str]) -> None:
    """`compare`: per candidate x metric with repeats on a side, each side's K, SD and flip
    rate, the judge's share of the Δ's variance and the Δ judge noise alone produces."""
    if not rows:
        return
    print_table("judge noise (already inside the CIs above: each answer's value is the mean of its K verdicts)",
                ["candidate", "metric", "K base/cand", "judge SD base/cand", "flip rate base/cand",
                 "judge share of Δ var", "± Δ from judge alone"],
                [[short.get(r["candidate"], r["candidate"]), r["metric"], f"{r['k_baseline']}/{r['k_candidate']}",
                  f"{_f(r['within_sd_baseline'])}/{_f(r['within_sd_candidate'])}",
                  f"{_pct(r['flip_rate_baseline'])}/{_pct(r['flip_rate_candidate'])}",
                  _pct(r["judge_share"]), _f(r["noise_delta"], 4)] for r in rows])
    for r in rows:
        if len(r["measured_on"]) == 1:
            echo_line(f"{short.get(r['candidate'], r['candidate'])} {r['metric']}: only the {r['measured_on'][0]} "
                      "has repeats; the other side's judge noise is in the CI but not in the share", err=True)


def print_aa(store, selections: Sequence[str], metrics: list[str] | None, seed: int, alpha: float,
             as_json: bool) -> None:
    """`compare RUN RUN --aa`: each system's repeats in two halves, compared as two systems."""
    from evalcore.analysis.comparison.aa_check import aa_check

    rows = aa_check(store, selections, metrics or None, seed=seed, alpha=alpha)
    if as_json:
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
        typer.echo(json.dumps({"aa": clean, "alpha": alpha}, indent=2, ensure_ascii=False, default=str))
        return
    print_table("A/A: each system against its own re-judging (first vs second half of its K verdicts)",
                ["system", "metric", "K", "n", "Δ halves", "95% CI", "p (Holm)", "± Δ from judge alone (K vs K)"],
                [[r["system"], r["metric"], str(r["k"]), str(r["n_pairs"]), _f(r["delta"], 4),
                  f"[{_f(r['ci_low'], 4)}, {_f(r['ci_high'], 4)}]", _f(r["p_holm"], 4) + (" *" if r["significant"] else ""),
                  _f(r["noise_delta"], 4)] for r in rows])
    for r in rows:
        said = "significant: a false positive of judge noise" if r["significant"] else "not significant"
        echo_line(f"{r['system']} {r['metric']}: judge noise alone moves Δ by up to ±{_f(r['noise_delta'], 4)} "
                  f"(95%) between two judgings with K = {r['k']} at n = {r['n_answers']}; halves Δ "
                  f"{_f(r['delta'], 4)}, {said}")
