"""Charts page: grade and answer-class distributions, metrics by question facet, latency and
cost, and Pareto fronts of quality against cost and latency.

Drawn for a 1400 px window split in two columns, so nothing is cut off or overlaps: systems
sit on the y axis of horizontal bars and boxes (long method names stay level, never rotated),
share bars are fixed to 0-100% with their counts inside (a count too wide for its segment is
hidden and kept in the hover, never drawn above the bar), Pareto points are named in a legend
and the hover rather than by text beside the marker, and latency uses a log axis so one slow
answer cannot flatten every box. plotly.graph_objects only: plotly.express costs ~0.2 s more
to import on a cold page.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis.charts import distributions as G
from evalcore.analysis.questions import failure_modes as FM
from evalcore.analysis.charts.figures import LABEL_COLOURS, pareto_figure, stacked_figure, system_axis  # noqa: F401
from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.runs import means as M
from evalcore.analysis.read.correctness import class_metrics
from evalcore.schemas.labels import AnswerClass, Grade
from evalcore.ui import diagnosis
from evalcore.ui import safe_widgets as widgets
from evalcore.ui.wording import judged_by

GRADES = [g.value for g in Grade]
# One section at a time: each is what one question needs, and the page draws only its charts.
SECTIONS = {"overview": "grades, answer classes, where wrong answers come from",
            "facet": "a metric by question facet", "operations": "latency and cost per answer",
            "fronts": "Pareto fronts: quality vs cost and latency"}
CLASSES = [c.value for c in AnswerClass] + ["ERROR", "UNSCORED"]


def _relabel(df: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """Charts show short system labels; tables and downloads keep the full run:method keys."""
    return df.assign(system=df["system"].map(lambda k: labels.get(k, k))) if "system" in df else df


def _stacked(df: pd.DataFrame, order: list[str], title: str, missing: str, legend: str) -> None:
    if df.empty:
        widgets.empty_state(f"No {title.lower()} for these systems.", missing)
        return
    st.plotly_chart(widgets.inert_figure(stacked_figure(df, order, title, legend)), key=f"bar_{title}")


def _pareto(points: pd.DataFrame, x: str, x_title: str, metric: str, labels: dict[str, str]) -> None:
    if len(points) and x in points and points[x].isna().all():
        # NaN is unknown, not 0: a judge model without a price (or a target that reported none)
        widgets.empty_state(f"{x_title.capitalize()} unknown for every system.",
                           "A judge or target model has no price (add it to the prices), so no front can be drawn.")
        return
    pts = G.front_2d(points, x)
    if pts.empty or (pts[x] == 0).all():
        # All-zero means nothing reported it (no token prices, no paid judge): a front drawn on
        # that axis would crown the best-quality system "free", which says nothing.
        widgets.empty_state(f"No {x_title} recorded.", "Targets or judges must report it.")
        return
    st.plotly_chart(widgets.inert_figure(pareto_figure(pts, x, x_title, metric, labels)), key=f"pareto_{x}")
    left = len(points) - len(pts)
    if left:
        st.caption(f"{left} system(s) without a known {x_title} are not placed.")
    widgets.show_table(pts, f"pareto-{x}", key=f"dl_pareto_{x}")


def render() -> None:
    widgets.header("Charts", "Distributions per system (run / method), by question facet, and quality "
                  "against cost and latency.")
    chosen = widgets.pick_systems("Systems", 4)
    if chosen is None:
        return
    picked, _ = chosen
    if not picked:
        widgets.empty_state("Pick at least one system.", "")
        return
    short = widgets.short_labels(picked)
    if len({k.partition(":")[0] for k in picked}) == 1:
        st.caption(f"All systems are methods of run {widgets.md(picked[0].partition(':')[0])}; "
                   "charts label them by method.")
    keys = tuple(picked)
    metrics = widgets.call(L.metric_names, tuple(sorted({k.partition(":")[0] for k in picked})))

    section = widgets.url_select("Section", list(SECTIONS), "section", format_func=SECTIONS.get)
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
        _stacked(_relabel(widgets.call(G.label_counts, keys, "grade"), short), GRADES, "Grade distribution (A-E)",
                 "Grades come from factual_accuracy (or factual_grade) scores.", "grade")
        _judge_caption("Grades", keys, G.grade_metrics())
    with c2:
        classes = widgets.call(G.label_counts, keys, "answer_class")
        _stacked(_relabel(classes, short), CLASSES,
                 "Correct / wrong / don't know", "Score a correctness metric (answer_correct, token_f1...).", "class")
        st.caption("Answer classes: one rule for every page and the CLI — ERROR for a target error; DONT_KNOW "
                   "when dont_know or the judge's class says so; else the first of "
                   f"{', '.join(M.correct_deciders())} with a value (≥ 0.5 is CORRECT).")
        _judge_caption("Answer classes", keys, class_metrics())
        # the diagnosis below reads the same cached table (one computation per page run)
        differ = G.correct_differences(classes, widgets.call(FM.failure_modes, tuple(picked)))
        if differ["correct_abstention"] or differ["target_error"]:
            st.caption("Why these counts differ from the diagnosis below: "
                       + "; ".join(part for part in (
                           f"{differ['correct_abstention']} abstention(s) on unanswerable questions are DONT_KNOW "
                           "here and a right outcome there (correct abstention)" if differ["correct_abstention"] else "",
                           f"{differ['target_error']} answer(s) with a target error are ERROR here and left out "
                           "there (it diagnoses answered questions only)" if differ["target_error"] else "") if part)
                       + ".")
    diagnosis.render(picked, dict(zip(picked, picked)))


def _judge_caption(what: str, keys: tuple[str, ...], metrics) -> None:
    """Which judge produced the labels of a chart (every judge, when several did)."""
    judges = widgets.call(M.metric_judges, keys, tuple(metrics))
    if len(judges):
        st.caption(widgets.md(f"{what}: {judged_by(judges.judge_id)}"))
    else:
        st.caption(widgets.md(f"{what}: no judge recorded for these labels"))


def _by_facet(keys: tuple[str, ...], metrics: list[str], short: dict[str, str]) -> None:
    st.subheader("Metric by question facet")
    if not metrics:
        widgets.empty_state("No metric values for these systems.", "Score the runs first (`evalcore score`).")
        return
    c1, c2 = st.columns(2)
    metric = widgets.url_select("Metric", metrics, "metric", container=c1,
                               default=next((m for m in L.key_metric_names() if m in metrics), None))
    facet = widgets.url_select("Group by", list(G.FACETS), "facet", container=c2)
    values = _relabel(widgets.call(G.metric_by_facet, keys, metric, facet), short)
    if values.empty:
        widgets.empty_state(f"No {metric} values for these systems.", "Pick another metric.")
        return
    fig = go.Figure([go.Box(x=g["facet"], y=g["value"], name=system, boxpoints=False)
                     for system, g in values.groupby("system", sort=False)])
    fig.update_layout(boxmode="group", title=f"{metric} by {facet} (per question)", height=420,
                      xaxis={"title": facet, "automargin": True}, yaxis_title=metric, legend_title_text="system")
    st.plotly_chart(widgets.inert_figure(fig), key="box_facet")
    widgets.show_table(widgets.call(G.facet_means, keys, metric, facet), f"{metric}-by-{facet}")


def _latency_cost(keys: tuple[str, ...], short: dict[str, str]) -> None:
    st.subheader("Latency and cost")
    latency_cost_view(_relabel(widgets.call(G.latency_cost, keys), short))


def latency_cost_view(lc: pd.DataFrame) -> None:
    """Per-answer latency (log axis) and cost boxes; an unknown cost (NaN) is said to be unknown."""
    c1, c2 = st.columns(2)
    latency = lc[lc["latency_ms"] > 0]  # a log axis cannot place 0 ms
    if len(latency):
        fig = _boxes(latency, "latency_ms", "Latency per answer (log scale)", "latency (ms, log scale)")
        fig.update_xaxes(type="log", tickvals=_log_ticks(latency["latency_ms"]))
        c1.plotly_chart(widgets.inert_figure(fig), key="latency")
        zero = int((lc["latency_ms"] == 0).sum())
        c1.caption("Log scale: one slow answer would otherwise flatten every box; hover a box for its "
                   "median and quartiles in ms." + (f" {zero} answer(s) with 0 ms are not drawn." if zero else ""))
    else:
        c1.info("No latency recorded for these systems.")
    known = lc[lc["cost_usd"].notna()]
    if (known["cost_usd"] > 0).any():
        c2.plotly_chart(widgets.inert_figure(_boxes(known, "cost_usd", "Cost per answer (target + judge)",
                                                   "cost (USD)")), key="cost")
        if len(known) < len(lc):
            c2.caption(f"{len(lc) - len(known)} answer(s) of unknown cost (a judge or target model without a "
                       "price) are left out, not counted as free.")
    elif lc["cost_usd"].notna().any() or lc.empty:
        c2.info("No cost recorded (targets reported no token cost and no judge was paid).")
    else:
        c2.info("Cost unknown: a judge or target model of these answers has no price (add it to the prices); "
                "an unknown cost is not shown as 0.")


def _log_ticks(values: pd.Series) -> list[float]:
    """1-2-5 ticks across the values' range: a log axis's default minor digits (2 3 4 … 1000 2 3)
    crowd into each other in a half-width chart."""
    import math

    lo, hi = float(values.min()), float(values.max())
    ticks = [m * 10 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo / 2 <= t <= hi * 2]
    return inside if len(inside) >= 2 else ticks


def _boxes(df: pd.DataFrame, column: str, title: str, axis: str) -> go.Figure:
    """One horizontal box per system (names level on the y axis, never rotated)."""
    systems = list(dict.fromkeys(df["system"]))
    fig = go.Figure([go.Box(x=df.loc[df.system == s, column], name=s, orientation="h", boxpoints="outliers",
                            showlegend=False) for s in systems[::-1]])
    fig.update_layout(title=title, xaxis_title=axis, yaxis={"automargin": True}, **system_axis(len(systems)))
    return fig


def _fronts(keys: tuple[str, ...], metrics: list[str], short: dict[str, str]) -> None:
    st.subheader("Pareto fronts")
    if not metrics:
        widgets.empty_state("No metric values for these systems.", "Score the runs first (`evalcore score`).")
        return
    quality = widgets.url_select("Quality metric", metrics, "quality",
                                default=next((m for m in L.key_metric_names() if m in metrics), None))
    points = widgets.call(G.frontier_points, keys, quality)
    c1, c2 = st.columns(2)
    with c1:
        _pareto(points, "cost_per_query_usd", "cost per query (USD)", quality, short)
    with c2:
        _pareto(points, "latency_p50_ms", "latency p50 (ms)", quality, short)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
