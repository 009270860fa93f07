"""The Questions page's trials section, for a run asked with `--trials T`: the run's spread over
its trials (pass@T, pass^T, flip rate: evalcore.analysis.comparison.trial_noise, the numbers
`evalcore show` prints) and one question's T answers and verdicts per method side by side, the
metrics whose trials disagree marked. A run without trials draws nothing. Every answer, error,
method and metric name is untrusted text: st.dataframe / st.text only."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.analysis.comparison import trial_noise as TN
from evalcore.analysis.questions import question_trials as QT
from evalcore.ui import safe_widgets as widgets

FLIP = "⚑"  # marks a metric whose trials disagree on this question


def render(run_id: str, qid: str, methods: tuple[str, ...] | None) -> None:
    per_method = [m for m in widgets.call(QT.question_trials, run_id, qid)
                  if methods is None or m["method"] in methods]
    if not per_method:
        return
    st.subheader("Trials")
    st.caption(f"Each question was asked T times per method. {FLIP}: this question's trials disagree on the metric "
               "(their labels, or their values). The run's figures: flip_rate, the share of questions whose trials "
               "disagree; for pass/fail metrics pass_at_t (passed at least once in T trials) and pass_all_t "
               "(passed every time).")
    spread = widgets.call(TN.run_spread, run_id)
    if methods is not None:
        spread = spread[spread.method.isin(set(methods))]
    widgets.show_table(spread.drop(columns=["system"]), "trials-run")
    for i, item in enumerate(per_method):
        flipped = set(item["flipped"])
        table: pd.DataFrame = item["table"]
        columns = {f"{m} (metric)" if m in QT.FIXED else m: m for m in flipped}  # as question_trials names them
        table = table.rename(columns={c: f"{c} {FLIP}" for c in table.columns if c in columns})
        widgets.untrusted_heading(item["method"])
        st.text(f"{item['trials']} trials · " + (f"trials disagree on {len(flipped)} metric(s): "
                                                 + ", ".join(widgets.shown_name(m) for m in sorted(flipped))
                                                 if flipped else "every metric agrees across the trials"))
        widgets.dataframe(table, hide_index=True, key=f"trials_{i}")
