"""Charts page: grade and answer-class distributions, metrics by question facet, latency and
cost, and Pareto fronts of quality against cost and latency."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis import distributions as G
from evalcore.analysis import leaderboard as L
from evalcore.analysis import means as M
from evalcore.schemas.labels import GRADE_METRICS, AnswerClass, Grade
from evalcore.ui import common, diagnosis
from evalcore.ui.helpers import judged_by

GRADES = [g.value for g in Grade]
# One section at a time: each is what one question needs, and the page draws only its charts.
SECTIONS = {"overview": "grades, answer classes, where wrong answers come from",
            "facet": "a metric by question facet", "operations": "latency and cost per answer",
            "fronts": "Pareto fronts: quality vs cost and latency"}
CLASSES = [c.value for c in AnswerClass] + ["ERROR", "UNSCORED"]
# Ordered labels get an ordered, colour-blind-safe scale (good = blue-green, bad = red/orange),
# so "more red" always means worse; a qualitative palette would make grade C look like WRONG.
LABEL_COLOURS = {"A": "#1a9850", "B": "#91cf60", "C": "#fee08b", "D": "#fc8d59", "E": "#d73027",
                 "CORRECT": "#1a9850", "WRONG": "#d73027", "DONT_KNOW": "#9e9e9e", "ERROR": "#7f0000",
                 "UNSCORED": "#eeeeee"}


def _relabel(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Charts show short system labels; tables and downloads keep the full run:method keys."""
    return df.assign(system=df["system"].map(lambda k: labels.get(k, k))) if "system" in df else df


def _stacked(df: pd.DataFrame, order: list[str], title: str, missing: str) -> None:
    if df.empty:
        common.empty_state(f"No {title.lower()} for these systems.", missing)
        return
    fig = px.bar(df, x="system", y="share", color="label", text="n", barmode="stack",
                 category_orders={"label": order + sorted(set(df.label) - set(order))},
                 color_discrete_map=LABEL_COLOURS,
                 title=title, labels={"share": "share of answers", "system": "system"})
    fig.update_layout(yaxis_tickformat=".0%", height=380)
    st.plotly_chart(common.inert_figure(fig), key=f"bar_{title}")


def _pareto(points: pd.DataFrame, x: str, x_title: str, metric: str, labels: dict[str, str]) -> None:
    pts = G.front_2d(points, x)
    if pts.empty or (pts[x] == 0).all():
        # All-zero means nothing reported it (no token prices, no paid judge): a front drawn on
        # that axis would crown the best-quality system "free", which says nothing.
        common.empty_state(f"No {x_title} recorded.", "Targets or judges must report it.")
        return
    fig = go.Figure()
    for on_front, name, symbol in ((False, "dominated", "circle-open"), (True, "Pareto front", "star")):
        part = pts[pts.front == on_front]
        fig.add_trace(go.Scatter(x=part[x], y=part["quality"], mode="markers+text", name=name,
                                 text=part["system"].map(lambda k: labels.get(k, k)), textposition="top center",
                                 marker={"symbol": symbol, "size": 12},
                                 hovertemplate="%{text}<br>%{x}<br>quality %{y:.3f}<extra></extra>"))
    front = pts[pts.front].sort_values(x)
    fig.add_trace(go.Scatter(x=front[x], y=front["quality"], mode="lines", name="front",
                             line={"dash": "dot"}, hoverinfo="skip"))
    fig.update_layout(title=f"{metric} vs {x_title.split(' (')[0]}",
                      xaxis_title=x_title, yaxis_title=f"mean {metric}", height=400)
    st.plotly_chart(common.inert_figure(fig), key=f"pareto_{x}")
    common.show_table(pts, f"pareto-{x}", key=f"dl_pareto_{x}")


def render() -> None:
    common.header("Charts", "Distributions per system (run / method), by question facet, and quality "
                  "against cost and latency.")
    chosen = common.pick_systems("Systems", 4)
    if chosen is None:
        return
    picked, _ = chosen
    if not picked:
        common.empty_state("Pick at least one system.", "")
        return
    short = common.short_labels(picked)
    if len({k.partition(":")[0] for k in picked}) == 1:
        st.caption(f"All systems are methods of run {common.md(picked[0].partition(':')[0])}; "
                   "charts label them by method.")
    keys = tuple(picked)
    metrics = common.call(L.metric_names, tuple(sorted({k.partition(":")[0] for k in picked})))

    section = common.url_select("Section", list(SECTIONS), "section", format_func=SECTIONS.get)
    if section == "overview":
        _overview(keys, picked, short)
    elif section == "facet":
        _by_facet(keys, metrics, short)
    elif section == "operations":
        _latency_cost(keys, short)
    else:
        _fronts(keys, metrics, short)


def _overview(keys: tuple[str, ...], picked: list[str], short: dict[str, str]) -> None:
    st.subheader("Grades and answer classes")
    c1, c2 = st.columns(2)
    with c1:
        _stacked(_relabel(common.call(G.label_counts, keys, "grade"), short), GRADES, "Grade distribution (A-E)",
                 "Grades come from factual_accuracy (or factual_grade) scores.")
        _judge_caption("Grades", keys, GRADE_METRICS)
    with c2:
        _stacked(_relabel(common.call(G.label_counts, keys, "answer_class"), short), CLASSES,
                 "Correct / wrong / don't know", "Score a correctness metric (answer_correct, token_f1...).")
        st.caption("Answer classes: one rule for every page and the CLI — ERROR for a target error; DONT_KNOW "
                   "when dont_know or the judge's class says so; else the first of "
                   f"{', '.join(M.correct_deciders())} with a value (≥ 0.5 is CORRECT).")
        _judge_caption("Answer classes", keys, ("answer_correct", "answer_class", "answer_dont_know",
                                                "answer_correctness"))
    diagnosis.render(picked, dict(zip(picked, picked)))


def _judge_caption(what: str, keys: tuple[str, ...], metrics) -> None:
    """Which judge produced the labels of a chart (every judge, when several did)."""
    judges = common.call(M.metric_judges, keys, tuple(metrics))
    if len(judges):
        st.caption(common.md(f"{what}: {judged_by(judges.judge_id)}"))
    else:
        st.caption(common.md(f"{what}: no judge recorded for these labels"))


def _by_facet(keys: tuple[str, ...], metrics: list[str], short: dict[str, str]) -> None:
    st.subheader("Metric by question facet")
    if not metrics:
        common.empty_state("No metric values for these systems.", "Score the runs first (`evalcore score`).")
        return
    c1, c2 = st.columns(2)
    metric = common.url_select("Metric", metrics, "metric", container=c1,
                               default=next((m for m in L.key_metric_names() if m in metrics), None))
    facet = common.url_select("Group by", list(G.FACETS), "facet", container=c2)
    values = _relabel(common.call(G.metric_by_facet, keys, metric, facet), short)
    if values.empty:
        common.empty_state(f"No {metric} values for these systems.", "Pick another metric.")
        return
    fig = px.box(values, x="facet", y="value", color="system", points=False,
                 title=f"{metric} by {facet} (per question)", labels={"facet": facet, "value": metric})
    fig.update_layout(height=420)
    st.plotly_chart(common.inert_figure(fig), key="box_facet")
    common.show_table(common.call(G.facet_means, keys, metric, facet), f"{metric}-by-{facet}")


def _latency_cost(keys: tuple[str, ...], short: dict[str, str]) -> None:
    st.subheader("Latency and cost")
    lc = _relabel(common.call(G.latency_cost, keys), short)
    c1, c2 = st.columns(2)
    if lc["latency_ms"].notna().any():
        fig = px.box(lc, x="system", y="latency_ms", title="Latency per answer",
                     labels={"latency_ms": "latency (ms)", "system": "system"})
        c1.plotly_chart(common.inert_figure(fig), key="latency")
    else:
        c1.info("No latency recorded for these systems.")
    if (lc["cost_usd"] > 0).any():
        fig = px.box(lc, x="system", y="cost_usd", title="Cost per answer (target + judge)",
                     labels={"cost_usd": "cost (USD)", "system": "system"})
        c2.plotly_chart(common.inert_figure(fig), key="cost")
    else:
        c2.info("No cost recorded (targets reported no token cost and no judge was paid).")


def _fronts(keys: tuple[str, ...], metrics: list[str], short: dict[str, str]) -> None:
    st.subheader("Pareto fronts")
    if not metrics:
        common.empty_state("No metric values for these systems.", "Score the runs first (`evalcore score`).")
        return
    quality = common.url_select("Quality metric", metrics, "quality",
                                default=next((m for m in L.key_metric_names() if m in metrics), None))
    points = common.call(G.frontier_points, keys, quality)
    c1, c2 = st.columns(2)
    with c1:
        _pareto(points, "cost_per_query_usd", "cost per query (USD)", quality, short)
    with c2:
        _pareto(points, "latency_p50_ms", "latency p50 (ms)", quality, short)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
