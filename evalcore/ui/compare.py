"""Compare page: which system is better, and is it real?

Above the fold, a verdict: one coloured sentence per tested metric (better / worse / no
significant difference, Δ with its CI and the Holm-adjusted p). Then improved / regressed /
unchanged counts per metric, each a link to those questions; the full metric table; where the
wrong answers come from (failure-mode diagnosis per system); and question by question: a
scatter of one metric and a word diff of two answers.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis import compare as C
from evalcore.analysis import leaderboard as L
from evalcore.analysis import means as M
from evalcore.analysis import verdict as V
from evalcore.ui import common, corrected_view, diagnosis, entry
from evalcore.ui.helpers import diff_text, judges_text, word_diff

OUTCOMES = ["regressed", "improved", "unchanged", "missing"]



def _judges(keys: list[str], metrics: list[str]) -> dict[str, str]:
    """metric -> the judges of its values on either side, in words (judged metrics only)."""
    rows = common.call(M.metric_judges, tuple(keys), tuple(metrics))
    return {m: judges_text(g.judge_id) for m, g in rows.groupby("metric")}


def _metric_table(base: str, cand: str, stat_metrics: list[str]) -> pd.DataFrame:
    with st.spinner("Paired bootstrap and tests..."):
        table = common.call(C.pair_table, base, cand, tuple(stat_metrics))
    if table.empty:
        return table
    table = table.assign(judged_by=table.metric.map(_judges([base, cand], list(table.metric))))
    st.caption("CI: paired bootstrap 95%. p: exact McNemar (0/1 metrics) or paired randomization, "
               "Holm-adjusted across the tested metrics — the numbers `evalcore compare --metrics` prints. "
               "Tested metrics are listed first.")
    return _reading_order(table.rename(columns={"mean_a": "mean_base", "mean_b": "mean_cand"}),
                          [m for m in stat_metrics if m in set(table.metric)])


# What a reader scans first: the effect and its uncertainty, then the counts, then the test used.
_COLUMN_ORDER = ["metric", "n_pairs", "mean_base", "mean_cand", "delta", "ci_low", "ci_high", "p_holm",
                 "significant", "judged_by", "improved", "regressed", "unchanged", "missing", "test", "p_value",
                 "higher_is_better"]


def _reading_order(table: pd.DataFrame, tested: list[str]) -> pd.DataFrame:
    """Tested metrics first (in the order picked), then the rest alphabetically; columns in
    reading order, so Δ, CI and p are visible without scrolling the table sideways."""
    rank = {m: i for i, m in enumerate(tested)}
    order = table["metric"].map(lambda m: (0, rank[m], "") if m in rank else (1, 0, m))
    table = table.iloc[sorted(range(len(table)), key=lambda i: order.iloc[i])].reset_index(drop=True)
    cols = [c for c in _COLUMN_ORDER if c in table.columns]
    return table[cols + [c for c in table.columns if c not in cols]]


def _scatter(pairs: pd.DataFrame, metric: str, base: str, cand: str) -> go.Figure:
    g = pairs[pairs.metric == metric]
    fig = go.Figure(go.Scattergl(x=g["a"], y=g["b"], mode="markers", text=g["question_id"],
                                 marker={"size": 5, "opacity": 0.5}, name="question",
                                 hovertemplate="%{text}<br>baseline %{x:.3f}<br>candidate %{y:.3f}"))
    if len(g):
        lo, hi = float(min(g["a"].min(), g["b"].min())), float(max(g["a"].max(), g["b"].max()))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="no change",
                                 line={"dash": "dot", "color": "grey"}))
    fig.update_layout(title=f"{metric}: each question, baseline vs candidate",
                      xaxis_title=f"baseline {base.partition(':')[2]} ({metric})",
                      yaxis_title=f"candidate {cand.partition(':')[2]} ({metric})",
                      height=420)
    return fig


def _question_diff(base: str, cand: str, metric: str) -> None:
    outcome = common.url_select("Show questions that", OUTCOMES, "out")
    rows = common.call(C.changed_questions, base, cand, metric, outcome)
    st.text(f"{len(rows)} questions {outcome} on {metric}")
    if rows.empty:
        return
    common.show_table(rows, f"compare-{outcome}-{metric}", height=250)
    qid = common.url_select("Question to diff", rows["question_id"].tolist(), "cq")
    ans = common.call(C.answers, (base, cand), qid)
    by_sys = dict(zip(ans["system"], ans["answer"].fillna("")))
    if len(ans):
        common.untrusted("Question", ans["question"].iloc[0])
        common.untrusted("Ground truth", ans["ground_truth"].iloc[0])
    a, b = by_sys.get(base, ""), by_sys.get(cand, "")
    c1, c2 = st.columns(2)
    with c1:
        common.untrusted("Baseline answer", a)
    with c2:
        common.untrusted("Candidate answer", b)
    rows = word_diff(a, b)
    st.caption("Word diff ([-only in baseline-] {+only in candidate+})")
    st.text(diff_text(rows))
    st.page_link(entry.page("questions"), label="Open this question on the Questions page",
                 query_params={"run": cand.partition(":")[0], "method": cand.partition(":")[2], "qid": qid})


_OUTCOME_COLOURS = {"better": "#d9f2e3", "worse": "#f8d7d4", "not significant": "#fdf1d6",
                    "too few questions": "#fdf1d6", "no significant difference": "#eeeeee"}


def _verdict(table: pd.DataFrame, base: str, cand: str, labels: dict[str, str], tested: list[str]) -> None:
    """Above the fold: the comparability warnings, the one-line summary, then one sentence per
    tested metric, coloured by what it means for the candidate (green better, red worse, amber
    not significant after Holm or too few questions, grey no significant difference)."""
    names = common.short_labels([base, cand], labels)
    lines = C.verdict_lines(table, names[base], names[cand])
    with st.container(key="verdict"):
        st.subheader("Verdict")
        for warning in common.call(V.comparability, base, cand, tuple(tested)):
            st.warning("Not comparable as scored: " + common.md(warning), icon=":material/warning:")
        st.text(f"{names[cand]} against {names[base]} (baseline)")
        if lines.empty:
            st.info("Pick metrics to test (below) to get a verdict.")
            return
        st.text(V.verdict_summary(lines, table, names[base], names[cand]))
        st.caption(f"α = 0.05 after Holm over the {len(lines)} tested metrics; Δ = candidate − baseline.")
        # every judged score names its judge (computed metrics: none, shown as "–")
        # (filled here: a Styler's cells show its own text for a missing value, not the placeholder)
        lines["judged by"] = lines.metric.map(dict(zip(table.metric, table.judged_by))).fillna(common.MISSING)
        styled = lines[["outcome", "verdict", "judged by"]].style.apply(
            lambda row: [f"background-color: {_OUTCOME_COLOURS[row['outcome']]}"] * len(row), axis=1)
        common.dataframe(styled, hide_index=True, width="stretch",
                     column_config={"verdict": st.column_config.TextColumn(
                         "verdict", width="large", help="Δ = candidate − baseline. The CI is the paired bootstrap's, per metric "
                                         "(unadjusted); the verdict follows the Holm-adjusted p, which accounts for "
                                         "testing several metrics: a CI that excludes 0 with Holm p ≥ 0.05 is not "
                                         "a difference after multiple testing."),
                                    "outcome": st.column_config.TextColumn(
                                        "outcome", width="small", help="The candidate against the baseline: "
                                        "better or worse (significant after Holm); not significant (the CI excludes 0 "
                                        "but not after Holm's correction); too few questions (only a very large Δ "
                                        "could be detected at this n); no significant difference."),
                                    "judged by": st.column_config.TextColumn(
                                        "judged by", width="medium", help="The judge whose verdicts produced this metric's "
                                        "values (both systems); heuristic = the offline word-overlap judge.")})


def _count_links(table: pd.DataFrame, picked: list[str]) -> None:
    """Improved / regressed / unchanged per metric, each a link that lists those questions."""
    def link(metric: str, outcome: str, n: int) -> str:
        return "compare?" + urlencode([("sys", k) for k in picked] + [("cm", metric), ("out", outcome), ("n", n)])

    rows = pd.DataFrame({
        "metric": table.metric, "paired": table.n_pairs,
        **{o: [link(m, o, int(n)) for m, n in zip(table.metric, table[o])] for o in ("improved", "regressed", "unchanged")},
        "missing": table.missing})
    cfg = {o: st.column_config.LinkColumn(o, display_text=r"n=(\d+)$", help=f"questions {o} on this metric: open the list")
           for o in ("improved", "regressed", "unchanged")}
    common.dataframe(rows, hide_index=True, column_config=cfg, width="stretch")


def render() -> None:
    common.header("Compare", "Which system is better, and is it real? Systems (run / method) are paired on "
                  "question_id; the first one is the baseline.")
    chosen = common.pick_systems("Systems (first = baseline)", 2)
    if chosen is None:
        return
    picked, labels = chosen
    if len(picked) < 2:
        common.empty_state("Pick at least two systems.", "The first one is the baseline.")
        return
    base, cands = picked[0], picked[1:]
    metrics = common.call(L.metric_names, tuple(sorted({k.partition(":")[0] for k in picked})))
    if not metrics:
        common.empty_state("These runs have no metric values.", "Score them first (`evalcore score`).")
        return
    cand = cands[0] if len(cands) == 1 else common.url_select(
        "Candidate", cands, "cand", format_func=lambda k: labels[k])
    verdict_slot = st.empty()
    stat_metrics = common.url_multi("Metrics to test (CI, p)", metrics, "tm",
                                    default=common.call(V.default_tested_metrics, (base, cand)))
    table = _metric_table(base, cand, stat_metrics)
    if table.empty:
        common.empty_state("No metric is scored on both sides.", "Pick systems scored with the same metrics.")
        return
    with verdict_slot.container():
        _verdict(table, base, cand, labels, [m for m in stat_metrics if m in set(table.metric)])
    st.subheader("Questions that changed, per metric")
    _count_links(table, picked)
    with st.expander("All metrics: means, Δ, CI, p"):
        common.show_table(table, "compare-metrics")
    corrected_view.render_compare(base, cand)  # judge vs human-corrected Δ, where labels exist
    diagnosis.render([base, cand], labels, chart=False)

    st.subheader("Question by question")
    metric = common.url_select("Metric for questions and scatter", list(table.metric), "cm",
                               default=stat_metrics[0] if stat_metrics else None)
    _question_diff(base, cand, metric)
    # the scatter draws every paired question: on request, so the verdict comes up fast
    if common.url_select("Scatter of every question", ["hidden", "shown"], "scatter") == "shown":
        pairs = common.call(C.paired_values, base, cand, (metric,))
        st.plotly_chart(common.inert_figure(_scatter(pairs, metric, base, cand)), key="scatter")


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
