"""Where a system's wrong answers come from (Compare and Charts): the failure-mode diagnosis of
evalcore.analysis.questions.failure_modes as a stacked bar per system, and the questions of one bucket,
each linking to its drill-down."""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from evalcore.analysis.questions import failure_modes as FM
from evalcore.analysis.charts.figures import FAILURE_COLOURS, failure_figure
from evalcore.ui import safe_widgets


def render(picked: list[str], labels: dict[str, str], chart: bool = True) -> None:
    """The failure-mode breakdown of the picked systems, and the questions of one bucket. As a
    stacked bar chart (Charts), or as a coloured table (Compare: no charting library to load
    before the verdict page is complete)."""
    modes = safe_widgets.call(FM.failure_modes, tuple(picked))
    st.subheader("Where the wrong answers come from")
    if modes.empty:
        safe_widgets.empty_state("No diagnosable answers.", "Score correctness, retrieval and faithfulness metrics.")
        return
    names = safe_widgets.short_labels(picked, labels)
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
    styled = safe_widgets.shown_frame(cells.reset_index()).style.apply(  # system names as shown
        lambda row: [f"background-color: {colours[row['bucket']]}55"] * len(row), axis=1)
    safe_widgets.dataframe(styled, hide_index=True, width="stretch",
                 column_config={"bucket": st.column_config.TextColumn("diagnosis")})


def _chart(shown: pd.DataFrame, n_systems: int) -> None:
    fig = failure_figure(shown, n_systems)
    st.plotly_chart(safe_widgets.inert_figure(fig), key="failure_modes")


BUCKET_SHOWN = 50  # questions of one diagnosis listed (a large run has tens of thousands)


def bucket_caption(total: int, shown: int, bucket: str) -> str:
    """'12345 questions: retrieval miss · the first 50 listed, 12295 more on the Questions page'."""
    text = f"{total} questions: {bucket}"
    if total > shown:
        text += f" · the first {shown} listed, {total - shown} more (filter them on the Questions page)"
    return text


def _bucket_questions(picked: list[str], names: dict[str, str]) -> None:
    c1, c2 = st.columns(2)
    key = safe_widgets.url_select("System", picked, "fs", format_func=lambda k: names.get(k, k), container=c1)
    bucket = safe_widgets.url_select("Diagnosis", [b for b in FM.BUCKETS if b != "correct"] + ["correct"], "fm",
                               container=c2)
    total, qids = safe_widgets.call(FM.bucket_questions, key, bucket, BUCKET_SHOWN, tuple(picked))
    st.text(bucket_caption(total, len(qids), bucket))
    if qids:
        run, _, method = key.partition(":")
        safe_widgets.dataframe(pd.DataFrame({"question_id": qids, "open": [
            "questions?" + urlencode({"run": run, "method": method, "qid": q}) for q in qids]}),
            hide_index=True, height=200, column_config={"open": st.column_config.LinkColumn("open", display_text="open")})
