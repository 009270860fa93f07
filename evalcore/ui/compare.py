"""Compare page: two or more (run, method) systems paired on question_id.

The first system is the baseline; each other one gets a metric table (means, Δ, CI, Holm-
adjusted p), improved/regressed/unchanged counts that filter the question list, a word diff
of the answers to one question, and a head-to-head scatter for one metric.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis import compare as C
from evalcore.analysis import leaderboard as L
from evalcore.ui import common, entry
from evalcore.ui.helpers import diff_text, word_diff

OUTCOMES = ["regressed", "improved", "unchanged", "missing"]


def _metric_table(base: str, cand: str, stat_metrics: list[str]) -> pd.DataFrame:
    with st.spinner("Paired bootstrap and tests..."):
        table = common.call(C.pair_table, base, cand, tuple(stat_metrics))
    if table.empty:
        return table
    st.caption("CI: paired bootstrap 95%. p: exact McNemar (0/1 metrics) or paired randomization, "
               "Holm-adjusted across the tested metrics — the numbers `evalcore compare --metrics` prints. "
               "Tested metrics are listed first.")
    return _reading_order(table.rename(columns={"mean_a": "mean_base", "mean_b": "mean_cand"}),
                          [m for m in stat_metrics if m in set(table.metric)])


# What a reader scans first: the effect and its uncertainty, then the counts, then the test used.
_COLUMN_ORDER = ["metric", "n_pairs", "mean_base", "mean_cand", "delta", "ci_low", "ci_high", "p_holm",
                 "significant", "improved", "regressed", "unchanged", "missing", "test", "p_value",
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
                      xaxis_title=f"baseline ({base.partition(':')[2]})", yaxis_title=f"candidate ({cand.partition(':')[2]})",
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
    st.dataframe(pd.DataFrame(rows, columns=["op", "words"]), hide_index=True)
    st.page_link(entry.page("questions"), label="Open this question on the Questions page",
                 query_params={"run": cand.partition(":")[0], "method": cand.partition(":")[2], "qid": qid})


def render() -> None:
    common.header("Compare", "Pair systems (run / method) on question_id. The first one is the baseline.")
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
    stat_metrics = common.url_multi("Metrics to test (CI, p)", metrics, "tm",
                                    default=[m for m in L.KEY_METRICS if m in metrics][:4])
    cand = cands[0] if len(cands) == 1 else common.url_select(
        "Candidate", cands, "cand", format_func=lambda k: labels[k])
    table = _metric_table(base, cand, stat_metrics)
    if table.empty:
        common.empty_state("No metric is scored on both sides.", "Pick systems scored with the same metrics.")
        return
    common.show_table(table, "compare-metrics")

    metric = common.url_select("Metric for questions and scatter", list(table.metric), "cm",
                               default=stat_metrics[0] if stat_metrics else None)
    row = table[table.metric == metric].iloc[0]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("improved", int(row.improved))
    c2.metric("regressed", int(row.regressed))
    c3.metric("unchanged", int(row.unchanged))
    c4.metric("missing", int(row.missing))
    pairs = common.call(C.paired_values, base, cand, (metric,))
    st.plotly_chart(_scatter(pairs, metric, base, cand), key="scatter")
    _question_diff(base, cand, metric)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
