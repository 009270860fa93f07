"""Pairwise preferences on the dashboard: Annotate's pairwise mode and Compare's corrected win rate.

Why a module apart from corrected_view: a preference is about two systems at once, so its form
(two answers side by side, blind) and its numbers (a win rate, not a mean or a Δ) have their own
shape (docs/labels.md, "Pairwise preferences"). Numbers come from evalcore.analysis.labels.win_rate,
the function `compare --corrected` prints, and the questions from analysis.labels.preferences'
seeded order. Blind: the page never says which system an answer is; which one is on the left is
drawn per question from the seed and stored with the label (shown_left). Answers, questions and
references are untrusted text: widgets.untrusted only, never Markdown or HTML.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_counts as LC
from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels import win_rate as W
from evalcore.analysis.labels.sample_order import DEFAULT_SEED
from evalcore.ui import safe_widgets as widgets

# the page's buttons: what each says, its key, and which side it prefers
CHOICES = (("A is better", "1", "left"), ("B is better", "2", "right"), ("Tie", "3", "tie"))
ANSWER_HEIGHT = 320  # px: each answer scrolls inside a box this high, so the buttons stay in view


def _stored_label(draw: PF.PairDraw, side: str) -> str:
    """The pair's label (A, B or tie of the systems) for a choice of the left or right answer."""
    if side == "tie":
        return "tie"
    other = "B" if draw.left == "A" else "A"
    return draw.left if side == "left" else other


def _choose(pair: PF.Pair, draw: PF.PairDraw, who: str, side: str) -> None:
    note = st.session_state.get("pw_note") or None
    PF.save(widgets.store(), pair, draw, who, _stored_label(draw, side), note)
    st.session_state["pw_note"] = ""
    st.session_state["pw_saved"] = f"Saved: question {draw.position + 1}, {dict((s, t) for t, _, s in CHOICES)[side]}."


def _answer(run_id: str, method: str, question_id: str) -> object:
    ctx = widgets.call(A.item_context, run_id, method, question_id)
    return ctx["answer"].iloc[0] if len(ctx) else None


def _progress(draw: PF.PairDraw) -> None:
    need = LC.needed(draw.population)
    st.text(f"{draw.labelled} of {draw.population} questions labelled at random · "
            f"{min(draw.labelled, need)} of the {need} an estimate needs")
    st.progress(1.0 if need == 0 else min(1.0, draw.labelled / need))


def render_pairwise(run_id: str, methods: list[str], who: str, pickers: tuple) -> None:
    """Annotate's pairwise mode: the next question of the pair's random sample, its two answers
    side by side in the seed's left/right order, and A / B / tie (keys 1, 2, 3)."""
    if len(methods) < 2:
        widgets.empty_state("A preference compares two systems, and this run has one method.",
                            "Pick a run with two or more methods.")
        return
    c1, c2 = pickers
    first = widgets.url_select("System", methods, "pa", container=c1)
    second = widgets.url_select("Versus", [m for m in methods if m != first], "pb", container=c2)
    seed = widgets.url_int("seed", 0, 10**9, default=DEFAULT_SEED)
    pair, _ = PF.pair_of((run_id, first), (run_id, second))
    draw = widgets.call(PF.next_question, pair, seed)
    _progress(draw)
    if st.session_state.get("pw_saved"):
        st.text(st.session_state["pw_saved"])
    if draw.question_id is None:
        widgets.empty_state("Every question of this pair is labelled." if draw.population else
                            "The two systems answered no question in common.", "Pick another pair.")
        return
    st.caption(f"Random sample {draw.sample_id}: question {draw.position + 1} of {draw.population} in the seeded "
               f"order (inclusion probability {draw.inclusion_prob:.3f}); no skipping. Blind: which system wrote "
               "A or B is not shown, and the sides are drawn per question.")
    ctx = widgets.call(A.item_context, *pair.a, draw.question_id)
    widgets.untrusted("Question", ctx["question"].iloc[0] if len(ctx) else None)
    widgets.untrusted("Reference answer", ctx["ground_truth"].iloc[0] if len(ctx) else None)
    sides = {"A": (pair.a, draw.question_id), "B": (pair.b, draw.b_question_id)}
    shown = [sides[draw.left], sides["B" if draw.left == "A" else "A"]]
    for col, title, ((run, method), qid) in zip(st.columns(2), ("Answer A", "Answer B"), shown):
        with col, st.container(height=ANSWER_HEIGHT):
            widgets.untrusted(title, _answer(run, method, qid))
    row = st.container(horizontal=True, gap="small")
    for text, key, side in CHOICES:
        row.button(text, shortcut=key, type="primary" if side != "tie" else "secondary", disabled=not who,
                   on_click=_choose, args=(pair, draw, who, side), key=f"pw_{side}", help=f"key {key}")
    st.text_input("Note (optional, saved with the choice)", key="pw_note", max_chars=500)
    if not who:
        st.text("Enter your name above to label.")


def render_win_rate(base: str, cand: str, table: pd.DataFrame | None) -> None:
    """Compare: the judge's win rate of the candidate beside the human-corrected one, per tested
    metric, where the pair holds randomly sampled preference labels (nothing otherwise)."""
    if table is None or "tested" not in table:
        return
    metrics = tuple(table.loc[table["tested"].astype(bool), "metric"])
    if not metrics:
        return
    base_t, cand_t = tuple(base.split(":", 1)), tuple(cand.split(":", 1))
    rows = widgets.call(W.win_rates, base_t, (cand_t,), metrics)
    rows = rows[rows.N > 0]
    if rows.empty:
        return
    st.subheader("Win rate: judge vs human preferences")
    st.caption(f"How often people prefer the candidate's answer (ties count half), from pairwise preferences on "
               f"questions drawn at random: PPI++ with the judge's preference by each metric ({W.MIN_LABELS}+ "
               "labels, or every paired question). Judge: its own win rate by the metric. Better/worse: the "
               "95% CI is above/below 0.5 (unadjusted).")
    ok = rows.status.isin(W.SHOWN)
    shown = pd.DataFrame({
        "metric": rows.metric, "judge win rate [95% CI]": [W.judge_shown(r) for r in rows.to_dict("records")],
        "judge verdict": rows.judge_verdict.fillna("–"),
        "corrected win rate [95% CI]": [W.shown(r) for r in rows.to_dict("records")],
        "corrected verdict": rows.corrected_verdict.fillna("–"),
        "verdict changes": ["yes" if v else "no" for v in rows.verdict_changes],
        "rho": rows.rho.where(ok),
        "labels-alone 95% CI": [W.interval(a, b) if k else "–"
                                for a, b, k in zip(rows.classical_low, rows.classical_high, ok)],
        "labelled": [f"{n}/{N}" for n, N in zip(rows.n_labelled, rows.N)]})
    widgets.show_table(shown, "compare-win-rate", column_config={
        "rho": st.column_config.NumberColumn("rho", format="%.2f")})
