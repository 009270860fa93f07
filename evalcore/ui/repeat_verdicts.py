"""An answer's K judge verdicts on the Questions page (runs scored with `score --repeats K`).

Why a module of its own: the Questions page shows one answer end to end, and with repeats the
judge gave each judged metric K verdicts whose mean is the number shown; this puts them side by
side, a "≠" beside each verdict that is not the most common one and the row saying in words
whether they agree (evalcore.analysis.questions.answer_repeats decides both), so disagreement is
read, not inferred from a colour. Nothing is drawn for an answer judged once.
"""

from __future__ import annotations

import streamlit as st

from evalcore.analysis.questions import answer_repeats as AR
from evalcore.ui import safe_widgets as widgets


def render(run_id: str, question_id: str, method: str) -> None:
    """The K verdicts of `method`'s answer to the question, per judged metric (nothing for K = 1)."""
    table = widgets.call(AR.answer_repeats, run_id, question_id, method)
    if table.empty:
        return
    split = int((table["verdicts"].str.startswith("differ")).sum())
    st.caption(f"The judge's {int(table['K'].max())} verdicts per judged metric (score --repeats K; the value is "
               f"their mean) · {AR.DIFFERS} marks a verdict that is not the most common one · "
               f"{split} of {len(table)} metrics differ")
    widgets.dataframe(table.drop(columns=["method"]), hide_index=True, key=f"repeats_{method}")
