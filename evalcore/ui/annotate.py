"""Annotate page: review judge verdicts one at a time and measure judge-human agreement.

An annotator takes the next unreviewed verdict of a kind (claim, context relevance, answer
class, grade), agrees or corrects it with an optional note. Each decision is appended as an
Annotation with who/when; nothing is ever overwritten.
"""

from __future__ import annotations

import json

import streamlit as st

from evalcore.analysis import annotations as A
from evalcore.analysis import leaderboard as L
from evalcore.ui import common

KINDS = list(A.LABELS)


def _show_item(item: dict) -> None:
    ctx = common.call(A.item_context, item["run_id"], item["method"], item["question_id"])
    common.untrusted("Question", ctx["question"].iloc[0] if len(ctx) else "")
    common.untrusted("Ground truth", ctx["ground_truth"].iloc[0] if len(ctx) else "")
    common.untrusted("Answer", ctx["answer"].iloc[0] if len(ctx) else "")
    chunks = _retrieved(ctx)
    if item["target_kind"] == "claim":
        common.untrusted("Claim", item["target_text"])
        # The judge decided against these passages; the annotator needs the same evidence.
        with st.expander(f"Retrieved contexts the judge checked the claim against ({len(chunks)})",
                         expanded=True):
            if not chunks:
                st.text("(no retrieved context stored for this answer)")
            for c in sorted(chunks, key=lambda c: c.get("rank") or 0):
                common.untrusted(f"Context rank {c.get('rank')}", c.get("text") or "(no text stored)")
    elif item["target_kind"] == "context":
        rank = item["target_ref"].rpartition(":")[2]
        text = next((c.get("text") for c in chunks if str(c.get("rank")) == rank), "(context not stored)")
        common.untrusted("Retrieved context (rank, text)", f"rank {rank}: {text}")
    common.untrusted("Judge verdict", item["judge_label"])
    if isinstance(item.get("judge_reason"), str):
        common.untrusted("Judge reason", item["judge_reason"])


def _retrieved(ctx) -> list[dict]:
    """The answer's retrieved chunks from its stored response record ([] when not stored)."""
    if not len(ctx) or not isinstance(ctx["record"].iloc[0], str):
        return []
    return [c for c in json.loads(ctx["record"].iloc[0]).get("retrieved", []) if isinstance(c, dict)]


def _skip(key: str) -> None:
    st.session_state.setdefault("ann_skip", []).append(key)


def render() -> None:
    common.header("Annotate", "Spot-check judge verdicts. Every decision is appended with who and when.")
    runs = common.call(L.run_list)
    if runs.empty:
        common.empty_state("No runs yet.", "Import or launch one first.")
        return
    names = dict(zip(runs.run_id, runs.name))
    # runs with judge verdicts first (newest first): the queue opens on work to do
    judged = common.call(A.runs_with_verdicts)
    ordered = judged + [r for r in runs.run_id if r not in judged]
    c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
    run_id = common.url_select("Run", ordered, "run", container=c1,
                               format_func=lambda r: f"{names[r]} ({r})")
    methods = common.call(L.systems, (run_id,))["method"].tolist()
    method = common.url_select("Method", ["(all)", *methods], "method", container=c2)
    kind = common.url_select("Verdict kind", KINDS, "kind", container=c3)
    who = common.url_text("Your name", "who", max_len=60, container=c4).strip()
    method = None if method == "(all)" else method

    skip = tuple(st.session_state.get("ann_skip", []))
    nxt = common.call(A.queue, run_id, kind, method, skip)
    counts = common.call(A.counts, run_id)
    row = counts[counts.target_kind == kind]
    total, reviewed = (int(row.n_verdicts.iloc[0]), int(row.n_reviewed.iloc[0])) if len(row) else (0, 0)
    st.text(f"{reviewed} of {total} {kind} verdicts in this run reviewed")
    if nxt.empty:
        common.empty_state(f"No unreviewed {kind} verdicts here.",
                           "Pick another kind or run; judged metrics create verdicts when a run is scored.")
    elif not who:
        st.info("Enter your name to annotate (it is stored with each decision).")
        _show_item(nxt.iloc[0].to_dict())
    else:
        item = nxt.iloc[0].to_dict()
        common.untrusted("Item", f"{item['method']} / {item['question_id']} / {item['target_ref']}")
        _show_item(item)
        note = st.text_input("Note (optional)", key="ann_note", max_chars=500)
        c1, c2, c3 = st.columns(3)
        if c1.button("Agree with the judge (A)", shortcut="A", type="primary"):
            A.save(common.store(), item, who, item["judge_label"], note)
            st.rerun()
        options = [x for x in A.LABELS[kind] if x != item["judge_label"]]
        correction = c2.selectbox("Correct label", options, key="ann_label")
        if c2.button("Save correction (S)", shortcut="S"):
            A.save(common.store(), item, who, correction, note)
            st.rerun()
        c3.button("Skip for now (N)", shortcut="N", on_click=_skip,
                  args=(f"{item['method']}|{item['question_id']}|{item['target_ref']}",))

    st.divider()
    st.subheader("Judge-human agreement")
    scope = common.url_select("Agreement over", ["this run", "all runs"], "scope")
    agree = common.call(A.agreement, run_id if scope == "this run" else None)
    if agree.empty:
        common.empty_state("No annotations yet.", "Agreement appears after the first reviews.")
    else:
        st.caption("Agreement rate: share of verdicts the annotator kept (each person's newest label per item), "
                   "with a Wilson 95% interval. Cohen's kappa corrects it for agreement expected by chance "
                   "(1 = perfect, 0 = chance level). Annotator columns: items two people labelled.")
        common.show_table(agree, "agreement")
        with st.expander("Recent annotations"):
            common.show_table(common.call(A.recent, run_id if scope == "this run" else None), "annotations")


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
