"""Where a system's wrong answers come from (Compare and Charts): the failure-mode diagnosis of
evalcore.analysis.failure_modes as a stacked bar per system, and the questions of one bucket,
each linking to its drill-down."""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis import failure_modes as FM
from evalcore.ui import common

FAILURE_COLOURS = {"correct": "#1a9850", "correct abstention": "#66bd63", "wrong abstention": "#9e9e9e",
                   "should have abstained": "#b2182b", "retrieval miss": "#d73027",
                   "unfaithful": "#fc8d59", "faithful but wrong": "#fee08b", "wrong, cause unknown": "#cccccc",
                   "unscored": "#eeeeee"}


def render(picked: list[str], labels: dict[str, str], chart: bool = True) -> None:
    """The failure-mode breakdown of the picked systems, and the questions of one bucket. As a
    stacked bar chart (Charts), or as a coloured table (Compare: no charting library to load
    before the verdict page is complete)."""
    modes = common.call(FM.failure_modes, tuple(picked))
    st.subheader("Where the wrong answers come from")
    if modes.empty:
        common.empty_state("No diagnosable answers.", "Score correctness, retrieval and faithfulness metrics.")
        return
    names = common.short_labels(picked, labels)
    shown = modes.assign(system=modes.system.map(lambda k: names.get(k, k)))
    if not chart:
        _table(shown)
    else:
        _chart(shown, len(picked))
    st.caption("Correct abstention: abstained on an unanswerable question. Should have abstained: answered an "
               "unanswerable question. Retrieval miss: nothing relevant retrieved (gold passages, else the judge). "
               "Unfaithful: relevant context, unsupported claims. Faithful but wrong: supported claims, wrong "
               "answer. Pick one to list its questions.")
    _bucket_questions(picked, names)


def _table(shown: pd.DataFrame) -> None:
    wide = shown.pivot_table(index="bucket", columns="system", values="share", aggfunc="first").reindex(
        [b for b in FM.BUCKETS if b in set(shown.bucket)])
    counts = shown.pivot_table(index="bucket", columns="system", values="n", aggfunc="first").reindex(wide.index)
    cells = wide.copy().astype(object)
    for col in wide.columns:
        cells[col] = [f"{int(n)} ({v:.0%})" if v == v else "–" for n, v in zip(counts[col].fillna(0), wide[col])]
    colours = {b: FAILURE_COLOURS[b] for b in wide.index}
    styled = cells.reset_index().style.apply(
        lambda row: [f"background-color: {colours[row['bucket']]}55"] * len(row), axis=1)
    common.dataframe(styled, hide_index=True, width="stretch",
                 column_config={"bucket": st.column_config.TextColumn("diagnosis")})


def _chart(shown: pd.DataFrame, n_systems: int) -> None:
    # plotly.graph_objects rather than plotly.express: ~0.2 s less to import
    # counts inside their segment or hidden (kept in the hover): never drawn past 100% or clipped
    fig = go.Figure([go.Bar(x=g["share"], y=g["system"], orientation="h", name=bucket, text=g["n"],
                            textposition="inside", insidetextanchor="middle", marker_color=FAILURE_COLOURS[bucket],
                            hovertemplate="%{y}: %{text} answers (%{x:.0%})<extra>" + bucket + "</extra>")
                     for bucket in FM.BUCKETS if len(g := shown[shown.bucket == bucket])])
    fig.update_layout(barmode="stack", title="Diagnosis of each answered question (counts on the bars)",
                      xaxis={"title": "share of answered questions", "tickformat": ".0%", "range": [0, 1]},
                      yaxis_automargin=True, uniformtext={"minsize": 10, "mode": "hide"},
                      height=160 + 60 * n_systems, legend_title_text="diagnosis")
    st.plotly_chart(common.inert_figure(fig), key="failure_modes")


BUCKET_SHOWN = 50  # questions of one diagnosis listed (a large run has tens of thousands)


def bucket_caption(total: int, shown: int, bucket: str) -> str:
    """'12345 questions: retrieval miss · the first 50 listed, 12295 more on the Questions page'."""
    text = f"{total} questions: {bucket}"
    if total > shown:
        text += f" · the first {shown} listed, {total - shown} more (filter them on the Questions page)"
    return text


def _bucket_questions(picked: list[str], names: dict[str, str]) -> None:
    c1, c2 = st.columns(2)
    key = common.url_select("System", picked, "fs", format_func=lambda k: names.get(k, k), container=c1)
    bucket = common.url_select("Diagnosis", [b for b in FM.BUCKETS if b != "correct"] + ["correct"], "fm",
                               container=c2)
    every = common.call(FM.questions_in_bucket, key, bucket, tuple(picked))
    qids = every[:BUCKET_SHOWN]
    st.text(bucket_caption(len(every), len(qids), bucket))
    if qids:
        run, _, method = key.partition(":")
        common.dataframe(pd.DataFrame({"question_id": qids, "open": [
            "questions?" + urlencode({"run": run, "method": method, "qid": q}) for q in qids]}),
            hide_index=True, height=200, column_config={"open": st.column_config.LinkColumn("open", display_text="open")})
