"""Annotate's random-sample mode, one drawn answer: label its items with one click or one key each.

Why this shape (issue 35, item 5): an annotator agrees with the judge far more often than not, so
the common case must cost one key, not a dropdown per claim. The answer's items are listed with
the judge's label and the person's (the judge's until changed); a marker names the current item
("▶ current", in words, not a colour). Keys, drawn by Streamlit beside each button:

  A  agree with the judge on the current item, then move to the next
  D  disagree: the other label of a two-label item (then move on); for a class, grade or rating,
     the first other label, left current so the box beside it can pick the one meant
  J / K  next / previous item
  Enter  save the whole answer (every item, as shown) and draw the next answer
  Shift+A  agree with the judge on every item and save, in one click

Every change goes through a button's callback (session state), so a key press never leaves a
half-made label; saving is one append of the whole answer (annotations.save_answer: all or
nothing) and the next draw follows in the same rerun.
"""

from __future__ import annotations

import streamlit as st

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.ui import safe_widgets as widgets

RATINGS = [f"{x / 10:.1f}" for x in range(11)]
ITEM_LABELS = {"claim": ("supported", "not_supported"), "context": ("relevant", "not_relevant"),
               "answer_class": tuple(A.LABELS["answer_class"]), "grade": tuple(A.LABELS["grade"])}
ITEMS_HEIGHT = 260  # px: the items scroll inside this box, so the buttons stay in view at 1400 x 1000


def options(kind: str) -> list[str]:
    """The labels a person may give an item of this kind."""
    return list(ITEM_LABELS.get(kind, RATINGS))


def judges_option(kind: str, judge_label: object) -> str:
    """The judge's label as one of the options (a judged value in [0, 1] rounds to a rating)."""
    opts = options(kind)
    if judge_label in opts:
        return str(judge_label)
    if kind == "metric":
        try:
            return f"{round(float(judge_label) * 10) / 10:.1f}"
        except (TypeError, ValueError):
            pass
    return opts[0]


def other_option(kind: str, label: str) -> str:
    """The label a disagreement gives: the other of two, else the first that is not `label`."""
    return next(x for x in options(kind) if x != label)


class _Answer:
    """The session-state keys of one drawn answer: each item's box and the current item."""

    def __init__(self, method: str, metric: str, question_id: str, n: int):
        self.base = f"lab_{method}_{metric}_{question_id}"
        self.n = n

    def box(self, i: int) -> str:
        return f"{self.base}_{i}"

    @property
    def cursor(self) -> str:
        return f"{self.base}_cursor"

    @property
    def note(self) -> str:
        return f"lab_note_{self.base[4:]}"


def _move(keys: _Answer, step: int) -> None:
    st.session_state[keys.cursor] = min(max(st.session_state.get(keys.cursor, 0) + step, 0), keys.n - 1)


def _set(keys: _Answer, kind: str, judge: list[str], agree: bool) -> None:
    i = st.session_state.get(keys.cursor, 0)
    st.session_state[keys.box(i)] = judge[i] if agree else other_option(kind, judge[i])
    if agree or len(options(kind)) == 2:
        _move(keys, 1)


def _save(keys: _Answer, rows: list[dict], judge: list[str], draw: S.Draw, who: str, all_agree: bool) -> None:
    labels = judge if all_agree else [st.session_state.get(keys.box(i), judge[i]) for i in range(keys.n)]
    A.save_answer(widgets.store(), rows, who, labels, st.session_state.get(keys.note) or None,
                  (draw.sample_id, draw.inclusion_prob))
    st.session_state["lab_done"] = st.session_state.get("lab_done", 0) + 1
    st.session_state["lab_saved"] = f"saved {len(rows)} label(s) of {rows[0]['question_id']}" if rows else ""


def render(run_id: str, method: str, metric: str, draw: S.Draw, who: str) -> None:
    """The drawn answer's items with the person's labels, and the buttons (keys) that set them."""
    kind = U.unit(metric).kind
    items = widgets.call(S.answer_items, run_id, method, metric, draw.question_id).to_dict("records")
    keys = _Answer(method, metric, draw.question_id, len(items))
    judge = [judges_option(kind, it["judge_label"]) for it in items]
    current = min(st.session_state.get(keys.cursor, 0), max(len(items) - 1, 0))
    if st.session_state.get("lab_saved"):
        st.success(st.session_state.pop("lab_saved"), icon=":material/check:")  # our words, no data
    with st.container(height=ITEMS_HEIGHT, border=False):
        for i, it in enumerate(items):
            _item(kind, i, it, keys, judge[i], i == current)
    rows = [{**it, "run_id": run_id, "method": method} for it in items]
    row = st.container(horizontal=True)
    off = not who or not items
    row.button("Agree", shortcut="A", on_click=_set, args=(keys, kind, judge, True), disabled=off,
               key=f"{keys.base}_agree", help="The judge is right on the current item (key A)")
    row.button("Disagree", shortcut="D", on_click=_set, args=(keys, kind, judge, False), disabled=off,
               key=f"{keys.base}_disagree", help="The judge is wrong on the current item (key D)")
    row.button("Previous item", shortcut="K", on_click=_move, args=(keys, -1), disabled=off or current == 0,
               key=f"{keys.base}_prev")
    row.button("Next item", shortcut="J", on_click=_move, args=(keys, 1), disabled=off or current >= len(items) - 1,
               key=f"{keys.base}_next")
    note_col, save_col, all_col = st.columns([3, 2, 2], vertical_alignment="bottom")
    note_col.text_input("Note (optional)", key=keys.note, max_chars=500)
    save_col.button("Label this whole answer", shortcut="Enter", type="primary", disabled=off,
                    on_click=_save, args=(keys, rows, judge, draw, who, False), key=f"{keys.base}_save",
                    help="Save every item's label as shown and draw the next answer (key Enter)")
    all_col.button("Agree with every item", shortcut="Shift+A", disabled=off,
                   on_click=_save, args=(keys, rows, judge, draw, who, True), key=f"{keys.base}_all",
                   help="The judge is right on the whole answer: save and draw the next (keys Shift+A)")
    if not who:
        st.text("Enter your name above to label.")


def _item(kind: str, i: int, it: dict, keys: _Answer, judge: str, current: bool) -> None:
    """One item: the claim (or context rank), the judge's label and the person's, in a box that
    the keys fill and the mouse may change."""
    st.caption(f"{'▶ current · ' if current else ''}item {i + 1} of {keys.n}")
    if kind == "claim":
        widgets.untrusted(f"Claim {i + 1}", it["text"])
    elif kind == "context":
        st.caption(f"Retrieved context rank {it['target_ref'].rpartition(':')[2]} (text in the evidence panel)")
    widgets.untrusted("Judge's verdict" if kind != "metric" else "Judge's value", it["judge_label"])
    opts = options(kind)
    if keys.box(i) not in st.session_state:
        st.session_state[keys.box(i)] = judge
    st.selectbox(f"Your label, item {i + 1}", opts, key=keys.box(i))
