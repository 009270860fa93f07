"""A comparison as a Markdown report, for a pull-request comment or a CI job summary.

Why: the regression gate (`evalcore compare --fail-on-regression`) runs in CI, and the people
reading its outcome are in the pull request. GitHub renders Markdown tables there and in
$GITHUB_STEP_SUMMARY, so the same numbers as the terminal table, plus a verdict per metric
that only says "better"/"worse" when the Holm-adjusted test says so (the outcomes of
evalcore.analysis.comparison.verdict: not significant, too few questions, no significant difference
otherwise, and "not compared" for a metric no question has a value for on both sides). Every name comes from
users (run names, methods, metrics), so cells go through evalcore.common.inert_text.markdown_cell (control
characters shown as escapes, Markdown syntax and HTML inert).
"""

from __future__ import annotations

import math

from evalcore.analysis.comparison.compare import Comparison
from evalcore.common.inert_text import markdown_cell


def _num(value: float, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def comparison_markdown(result: Comparison, labels: dict[str, str] | None = None) -> str:
    """The comparison as Markdown: a heading line, then one table row per (candidate, metric)."""
    labels = labels or {}
    name = lambda label: markdown_cell(labels.get(label, label))  # noqa: E731
    lines = [f"**evalcore compare** · baseline {markdown_cell(result.baseline.label)} · "
             f"95% paired bootstrap CI · Holm-adjusted p, α = {result.alpha:g}", "",
             "| candidate | metric | baseline | candidate | Δ | 95% CI | p (Holm) | verdict | better / worse / same | n |",
             "|---|---|--:|--:|--:|---|--:|---|---|--:|"]
    from evalcore.analysis.comparison.verdict import verdict_lines

    # the verdict's outcome (evalcore.analysis.comparison.verdict: the terminal's and the page's words)
    outcome = {}
    for cand, rows in result.table.groupby("candidate", sort=False):
        said = verdict_lines(rows, "baseline", "candidate", result.alpha)
        outcome.update({(cand, m): o for m, o in zip(said.metric, said.outcome)})
    for r in result.table.itertuples():
        found = outcome.get((r.candidate, r.metric), "–")  # every row has one: compare's rows are the tested ones
        mark = {"better": "▲ better", "worse": "▼ worse"}.get(found, found)
        lines.append(
            f"| {name(r.candidate)} | {markdown_cell(r.metric)} | {_num(r.mean_a)} | {_num(r.mean_b)} | "
            f"{_num(r.delta, 4)} | [{_num(r.ci_low, 4)}, {_num(r.ci_high, 4)}] | {_num(r.p_holm, 4)} | {mark} | "
            f"{r.improved} / {r.regressed} / {r.unchanged} | {r.n_pairs} |")
    for label, ids in result.unpaired.items():
        if ids["only_in_baseline"] or ids["only_in_candidate"]:
            lines.append(f"\n{name(label)}: {len(ids['only_in_baseline'])} questions only in the baseline, "
                         f"{len(ids['only_in_candidate'])} only in the candidate (not compared).")
    return "\n".join(lines) + "\n"
