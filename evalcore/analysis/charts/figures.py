"""The Plotly figures that the dashboard and the HTML report both draw, defined once.

Why here: the Charts page, the Compare page and `evalcore report` must show the same picture of
the same numbers, and the report (which the CLI writes) may not import the dashboard. These
functions only shape what other analysis functions computed into figures; every string in them
may be data, so callers pass the result through evalcore.analysis.charts.inert.inert_figure.

Drawn for a half-width column of a 1400 px window: systems on the y axis of horizontal bars
(names level, never rotated), share bars fixed to 0-100% with their counts inside (a count too
wide for its segment is hidden and kept in the hover), Pareto points named in a legend and the
hover rather than beside the marker. plotly.graph_objects only: plotly.express costs ~0.2 s more
to import on a cold page.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from evalcore.analysis.questions.failure_modes import BUCKETS
from evalcore.analysis.charts.inert import plotly_text

# Ordered labels get an ordered, colour-blind-safe scale (good = blue-green, bad = red/orange),
# so "more red" always means worse; a qualitative palette would make grade C look like WRONG.
LABEL_COLOURS = {"A": "#1a9850", "B": "#91cf60", "C": "#fee08b", "D": "#fc8d59", "E": "#d73027",
                 "CORRECT": "#1a9850", "WRONG": "#d73027", "DONT_KNOW": "#9e9e9e", "ERROR": "#7f0000",
                 "UNSCORED": "#eeeeee"}
FAILURE_COLOURS = {"correct": "#1a9850", "correct abstention": "#66bd63", "wrong abstention": "#9e9e9e",
                   "should have abstained": "#b2182b", "retrieval miss": "#d73027",
                   "unfaithful": "#fc8d59", "faithful but wrong": "#fee08b", "wrong, cause unknown": "#cccccc",
                   "unscored": "#eeeeee"}


def system_axis(n_systems: int) -> dict:
    """Height for horizontal bars/boxes: one row per system plus room for title and axis."""
    return {"height": 150 + 50 * max(n_systems, 1), "margin": {"l": 10, "r": 10, "t": 50, "b": 40}}


def stacked_figure(df: pd.DataFrame, order: list[str], title: str, legend: str) -> go.Figure:
    """One horizontal 0-100% bar per system, a segment per label with its count inside."""
    labels = order + sorted(set(df.label) - set(order))
    systems = list(dict.fromkeys(df.system))
    fig = go.Figure([go.Bar(x=g["share"], y=g["system"], orientation="h", name=label, text=g["n"],
                            textposition="inside", insidetextanchor="middle", constraintext="both",
                            marker_color=LABEL_COLOURS.get(label),
                            hovertemplate="%{y}: %{text} answers (%{x:.0%})<extra>" + plotly_text(label) + "</extra>")
                     for label in labels if len(g := df[df.label == label])])
    fig.update_layout(barmode="stack", title=title, legend_title_text=legend, legend_traceorder="normal",
                      xaxis={"range": [0, 1], "tickformat": ".0%", "title": "share of answers"},
                      yaxis={"categoryorder": "array", "categoryarray": systems[::-1], "automargin": True},
                      uniformtext={"minsize": 10, "mode": "hide"}, **system_axis(len(systems)))
    return fig


def failure_figure(shown: pd.DataFrame, n_systems: int) -> go.Figure:
    """The failure-mode diagnosis (evalcore.analysis.questions.failure_modes) as one stacked bar per system."""
    fig = go.Figure([go.Bar(x=g["share"], y=g["system"], orientation="h", name=bucket, text=g["n"],
                            textposition="inside", insidetextanchor="middle", marker_color=FAILURE_COLOURS[bucket],
                            hovertemplate="%{y}: %{text} answers (%{x:.0%})<extra>" + bucket + "</extra>")
                     for bucket in BUCKETS if len(g := shown[shown.bucket == bucket])])
    fig.update_layout(barmode="stack", title="Diagnosis of each answered question (counts on the bars)",
                      xaxis={"title": "share of answered questions", "tickformat": ".0%", "range": [0, 1]},
                      yaxis_automargin=True, uniformtext={"minsize": 10, "mode": "hide"},
                      height=160 + 60 * n_systems, legend_title_text="diagnosis")
    return fig


def pareto_figure(pts: pd.DataFrame, x: str, x_title: str, metric: str, labels: dict[str, str]) -> go.Figure:
    """One marker per system (a star on the front), named in the legend below and in the hover,
    never by text beside the point: labels next to markers clip at the edges and overlap."""
    fig = go.Figure()
    colours = qualitative.Safe
    for i, row in enumerate(pts.itertuples(index=False)):
        name = labels.get(row.system, row.system)
        fig.add_trace(go.Scatter(
            x=[getattr(row, x)], y=[row.quality], mode="markers", name=name + (" ★" if row.front else ""),
            marker={"symbol": "star" if row.front else "circle", "size": 16 if row.front else 12,
                    "color": colours[i % len(colours)], "line": {"width": 1, "color": "#333"}},
            hovertemplate=f"{plotly_text(name)}<br>{x_title} %{{x}}<br>{plotly_text(metric)} %{{y:.3f}}<extra></extra>"))
    front = pts[pts.front].sort_values(x)
    fig.add_trace(go.Scatter(x=front[x], y=front["quality"], mode="lines", name="Pareto front",
                             line={"dash": "dot", "color": "#777"}, hoverinfo="skip"))
    fig.update_layout(title=f"{metric} vs {x_title.split(' (')[0]}",
                      xaxis={"title": x_title, "automargin": True}, yaxis={"title": f"mean {metric}", "automargin": True},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0},
                      height=420 + 22 * ((len(pts) + 1) // 2), margin={"l": 10, "r": 20, "t": 50})
    return fig


# The forest plot's shades (our constants): green better, red worse, grey not significant (the
# verdict sentence says which of the verdict's amber/grey outcomes), amber words for a metric
# not compared (0 pairs: no Δ, no CI, nothing to draw but the fact).
SHADE_COLOURS = {"better": "#2e7d32", "worse": "#c62828", "not significant": "#9e9e9e", "not compared": "#e65100"}
SHADE_NAMES = {"better": "candidate better", "worse": "candidate worse", "not significant": "not significant",
               "not compared": "not compared (0 pairs)"}
_NOT_COMPARED_HOVER = "<b>%{customdata[0]}</b>: not compared — no question has a value on both sides<extra></extra>"
_FOREST_HOVER = ("<b>%{customdata[0]}</b>: %{customdata[1]} (%{customdata[2]} is better)<br>Δ = %{customdata[3]:+.3g} "
                 "(candidate − baseline)<br>95% CI [%{customdata[4]:+.3g}, %{customdata[5]:+.3g}]<br>"
                 "Holm p = %{customdata[6]:.2g} · n = %{customdata[7]}<extra></extra>")


def _not_compared_rows(fig: go.Figure, rows: pd.DataFrame, panel: int, shown: set[str]) -> None:
    """Metrics compared on 0 pairs: their row holds the words "not compared" at Δ = 0, no bar
    and no dot (there is no Δ or CI to show, and a point would read as a finding)."""
    if rows.empty:
        return
    fig.add_trace(go.Scatter(
        x=[0.0] * len(rows), y=list(rows["label"]), mode="text", text=["not compared"] * len(rows),
        textposition="middle right", textfont={"color": SHADE_COLOURS["not compared"]},
        name=SHADE_NAMES["not compared"], legendgroup="not compared", showlegend="not compared" not in shown,
        customdata=[[plotly_text(m)] for m in rows["metric"]], hovertemplate=_NOT_COMPARED_HOVER), row=panel, col=1)
    shown.add("not compared")


def forest_figure(rows: pd.DataFrame) -> go.Figure:
    """The rows of evalcore.analysis.comparison.forest.forest_rows as a forest plot: per tested metric, Δ's
    95% CI as a horizontal bar (base = CI low, length = CI width) and Δ as a dot, around a zero
    line; one bar trace per shade (its legend entry). Metrics on another scale than 0–1 get their
    own panel and x axis. Row labels are stored metric names (pass the figure through
    inert_figure); the hover's names are escaped here."""
    from plotly.subplots import make_subplots

    panels = list(dict.fromkeys(rows["panel"]))
    sizes = [int((rows["panel"] == p).sum()) for p in panels]
    fig = make_subplots(rows=len(panels), cols=1, row_heights=sizes, vertical_spacing=0.25 / max(1, len(panels)))
    shown: set[str] = set()
    for i, panel in enumerate(panels, start=1):
        part = rows[rows["panel"] == panel].iloc[::-1]  # the first tested metric on top
        for shade in ("better", "worse", "not significant"):
            g = part[part["shade"] == shade]
            if g.empty:
                continue
            custom = [[plotly_text(m), o, "higher" if h else "lower", d, lo, hi, p, n]
                      for m, o, h, d, lo, hi, p, n in zip(g["metric"], g["outcome"], g["higher_is_better"],
                                                          g["delta"], g["ci_low"], g["ci_high"], g["p_holm"], g["n"])]
            shared = {"y": list(g["label"]), "legendgroup": shade, "customdata": custom, "hovertemplate": _FOREST_HOVER}
            fig.add_trace(go.Bar(
                x=list(g["ci_high"] - g["ci_low"]), base=list(g["ci_low"]), orientation="h", width=0.5,
                marker={"color": SHADE_COLOURS[shade]}, opacity=0.45, name=SHADE_NAMES[shade],
                showlegend=shade not in shown, **shared), row=i, col=1)
            shown.add(shade)
            fig.add_trace(go.Scatter(
                x=list(g["delta"]), mode="markers", showlegend=False, name="Δ",
                marker={"color": SHADE_COLOURS[shade], "size": 11, "symbol": "diamond",
                        "line": {"color": "#212121", "width": 1}}, **shared), row=i, col=1)
        _not_compared_rows(fig, part[part["shade"] == "not compared"], i, shown)
        lo = min(0.0, float(part[["ci_low", "delta"]].min().min()))
        hi = max(0.0, float(part[["ci_high", "delta"]].max().max()))
        pad = 0.08 * (hi - lo or 1.0)
        fig.update_xaxes(range=[lo - pad, hi + pad], zeroline=True, zerolinewidth=2, zerolinecolor="#424242",
                         title_text=f"Δ {panel}" if i == len(panels) or len(panels) > 1 else None, row=i, col=1)
        fig.update_yaxes(automargin=True, row=i, col=1)
    fig.update_layout(height=90 + 46 * len(rows) + 50 * (len(panels) - 1), barmode="overlay",
                      margin={"l": 10, "r": 10, "t": 10, "b": 40},
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}, title=None)
    return fig
