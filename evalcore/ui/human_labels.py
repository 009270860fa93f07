"""The labels people gave an answer, on the Questions page beside the judge's verdicts.

Why: a person reading one answer end to end should see at once whether someone already checked
the judge on it, and where they disagreed; until now those labels were only on the Annotate
page's recent list and in the corrected estimates. One row per person and labelled item (their
newest label), the judge's label it was given against, "yes"/"no" in words (not a colour), and
how the answer was chosen (a random sample's id, or hand-picked). Nothing is drawn when nobody
labelled the answer. Labels are people's text: shown as plain cells, never as Markdown.
"""

from __future__ import annotations

import streamlit as st

from evalcore.analysis.labels import annotations as A
from evalcore.ui import safe_widgets as widgets


def render(run_id: str, question_id: str, method: str) -> None:
    """The human labels of `method`'s answer to the question (nothing when there are none)."""
    table = widgets.call(A.answer_labels, run_id, method, question_id)
    if table.empty:
        return
    differ = int((table["agrees"] == "no").sum())
    people = table["who"].nunique()
    st.caption(f"Human labels on this answer: {len(table)} from {people} "
               f"{'person' if people == 1 else 'people'} · {differ} disagree with the judge")
    widgets.dataframe(table, hide_index=True, key=f"human_labels_{method}")
