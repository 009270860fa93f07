"""Annotate page: review judge verdicts one at a time and measure judge-human agreement.

An annotator takes the next unreviewed verdict of a kind (claim, context relevance, answer
class, grade), agrees or corrects it with an optional note. Each decision is appended as an
Annotation with who/when; nothing is ever overwritten.
"""

from __future__ import annotations

import streamlit as st

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.questions import claim_evidence as CE
from evalcore.analysis.questions import highlight as HL
from evalcore.analysis.runs import leaderboard as L
from evalcore.ui import corrected_view, pairwise_view
from evalcore.ui import safe_widgets as widgets
from evalcore.ui.wording import judged_by

KINDS = list(A.LABELS)


BATCH = 20  # items per batch: progress reads "k of 20 in this batch"


def _focus(item: dict, ctx) -> tuple[str | None, list]:
    """What the annotator checks against the evidence, and the ranks of the passages the judge
    cited for it: a claim (and its cited passage), the question (a context's relevance), or the
    answer (a whole-answer label: every passage cited for its claims)."""
    run, method, qid = item["run_id"], item["method"], item["question_id"]
    if item["target_kind"] == "claim":
        ref = CE.claim_ref(item["target_ref"])
        cited = widgets.call(CE.cited_ranks, run, method, qid, ref[0], ref[2]) if ref else []
        return item.get("target_text"), cited
    if item["target_kind"] == "context":
        return (ctx["question"].iloc[0] if len(ctx) else None), []
    answer = ctx["answer"].iloc[0] if len(ctx) else None
    if item["target_kind"] == "answer":  # a random-sample label: target_ref is the metric
        return answer, widgets.call(CE.cited_ranks, run, method, qid, str(item["target_ref"]))
    return answer, []


def _evidence(item: dict) -> None:
    """What the judge saw, so the annotator decides on the same evidence: the question, the
    reference, the answer, and the retrieved contexts (the one judged, for a context verdict,
    right under the question). The words matching what is checked are marked
    (analysis.highlight.word_spans) and the passages the judge cited come first."""
    ctx = widgets.call(A.item_context, item["run_id"], item["method"], item["question_id"])
    focus, cited = _focus(item, ctx)
    widgets.highlighted("Question", ctx["question"].iloc[0] if len(ctx) else None)
    if item["target_kind"] == "context":
        _contexts(item, ctx, focus, cited)
    truth = ctx["ground_truth"].iloc[0] if len(ctx) else None
    focus_is_answer = item["target_kind"] not in ("claim", "context")
    marks = _claim_source(item) != "ground_truth" and isinstance(truth, str)  # not a statement in its own source
    widgets.highlighted("Ground truth", truth, HL.word_spans(truth, focus) if marks else [])
    if _claim_source(item) != "answer":  # an answer claim's answer is shown beside the claim itself
        answer = ctx["answer"].iloc[0] if len(ctx) else None
        widgets.highlighted("Answer", answer, HL.word_spans(answer, focus)
                           if isinstance(answer, str) and not focus_is_answer else [])
    if item["target_kind"] != "context":
        _contexts(item, ctx, focus, cited)


def _contexts(item: dict, ctx, focus: str | None, cited: list) -> None:
    chunks = sorted(widgets.call(A.retrieved_contexts, item["run_id"], item["method"], item["question_id"]),
                    key=lambda c: c.get("rank") or 0)
    if item["target_kind"] == "context":
        rank = item["target_ref"].rpartition(":")[2]
        chunks = [c for c in chunks if str(c.get("rank")) == rank] or chunks
    first = {r: i for i, r in enumerate(cited)}
    chunks.sort(key=lambda c: first.get(c.get("rank"), len(first)))
    st.caption(f"Retrieved contexts the judge checked ({len(chunks)})"
               + (": the passage it cited first; words of what is checked marked" if cited else
                  ": words of what is checked marked" if focus else ""))
    if not chunks:
        st.text("(no retrieved context stored for this answer)")
    for c in chunks:
        text = c.get("text") or ""
        label = f"Context rank {c.get('rank')}" + (" · cited by the judge" if c.get("rank") in first else "")
        widgets.highlighted(label, text or "(no text stored)", HL.word_spans(text, focus) if text else [])


def _claim_source(item: dict) -> str | None:
    """Where a claim was taken from: 'answer' (faithfulness and kin: the model's answer) or
    'ground_truth' (context_recall: a statement of the reference); None for other kinds.
    A claim's target_ref is `metric:source:idx`."""
    if item["target_kind"] != "claim":
        return None
    parts = str(item["target_ref"]).rsplit(":", 2)
    return parts[1] if len(parts) == 3 else "answer"


# Where each claim source comes from: the caption and the evidence column it is read from.
SOURCES = {"answer": ("Answer it comes from", "answer"),
           "ground_truth": ("Reference (ground truth) it comes from", "ground_truth")}


def _skip(key: str) -> None:
    st.session_state.setdefault("ann_skip", []).append(key)


def _decide(item: dict, who: str, label: str) -> None:
    note = st.session_state.get("ann_note") or None
    saved = A.save(widgets.store(), item, who, label, note)
    st.session_state.setdefault("ann_done", []).append(saved)
    st.session_state["ann_note"] = ""


def _undo() -> None:
    done = st.session_state.get("ann_done") or []
    if done:
        A.undo(widgets.store(), done.pop())


def _who() -> str:
    """Who is annotating: asked once per session (kept in the URL as ?who=), then shown."""
    who = (st.session_state.get("ann_who") or st.query_params.get("who") or "").strip()[:60]
    if who and not st.session_state.get("ann_change_who"):
        st.session_state["ann_who"] = who
        widgets.set_param("who", who)
        c1, c2 = st.columns([4, 1])
        c1.text(f"Annotating as {who}")
        if c2.button("Change name", key="ann_change"):
            st.session_state["ann_change_who"] = True
            st.rerun()
        return who
    name = st.text_input("Your name (asked once; stored with each decision)", key="ann_name", max_chars=60)
    if name.strip():
        st.session_state["ann_who"], st.session_state["ann_change_who"] = name.strip(), False
        st.rerun()
    return ""


def _verdict(item: dict) -> None:
    """The judge's verdict and which judge gave it (every judged score names its judge)."""
    st.text(f"Judge verdict: {item['judge_label']}")  # st.text: the label is data, shown inert
    judge = item.get("judge_id")
    st.text(judged_by([judge]) if isinstance(judge, str) and judge else "judged by: no judge recorded")


def _decision(item: dict, kind: str, who: str) -> None:
    """The verdict and the decision buttons, first on the page: A agree, S correct, N skip, U undo."""
    _verdict(item)
    if isinstance(item.get("judge_reason"), str):
        st.text(f"Judge reason: {item['judge_reason']}")
    others = [x for x in A.LABELS[kind] if x != item["judge_label"]]
    # Labels without "(A)": Streamlit draws each shortcut as a key badge beside the label. One row
    # sized to its content, so nothing is cut off in the half-width column of a 1400 px window.
    choice = others[0] if len(others) == 1 else st.selectbox("Correct label", others, key="ann_label")
    row = st.container(horizontal=True, gap="small")
    row.button("Agree", shortcut="A", type="primary", on_click=_decide, args=(item, who, item["judge_label"]),
               key="ann_agree", help="The judge is right (key A)")
    row.button(f"Correct → {choice}", shortcut="S", on_click=_decide, args=(item, who, choice),
               key="ann_correct", help="Replace the judge's label by this one (key S)")
    row.button("Skip", shortcut="N", on_click=_skip, key="ann_skip_btn", help="Next item, no decision (key N)",
               args=(f"{item['method']}|{item['question_id']}|{item['target_ref']}",))
    row.button("Undo", shortcut="U", on_click=_undo, key="ann_undo", help="Retract your last decision (key U)",
               disabled=not st.session_state.get("ann_done"))
    st.text_input("Note (optional, saved with the next decision)", key="ann_note", max_chars=500)


def render() -> None:
    widgets.header("Annotate", "Random sample: label answers drawn at random, so the labels correct the judge's "
                  "means. Pairwise: which of two answers is better, blind — A (1), B (2), tie (3). "
                  "Queue: spot-check any verdict — agree (A), correct (S), skip (N), undo (U). "
                  "Every decision is appended with who and when.")
    runs = widgets.call(L.run_list)
    if runs.empty:
        widgets.empty_state("No runs yet.", "Import or launch one first.")
        return
    names = dict(zip(runs.run_id, runs.name))
    # runs with judge verdicts first (newest first): the queue opens on work to do
    judged = widgets.call(A.runs_with_verdicts)
    ordered = judged + [r for r in runs.run_id if r not in judged]
    # one row of pickers (mode, run, and the sample's method and metric): the item, its evidence
    # and the decision must fit under them in a 1400 x 1000 window
    c0, c1, c2, c3 = st.columns([2, 3, 2, 2])
    mode = corrected_view.mode_select(c0)
    run_id = widgets.url_select("Run", ordered, "run", container=c1, format_func=lambda r: f"{names[r]} ({r})")
    methods = widgets.call(L.systems, (run_id,))["method"].tolist()
    if mode == "random sample":  # labels that feed the corrected estimates (docs/labels.md)
        who = _who()
        corrected_view.render_sample(run_id, methods, who, _evidence, pickers=(c2, c3))
    elif mode == "pairwise":  # which of two answers is better, blind (docs/labels.md)
        pairwise_view.render_pairwise(run_id, methods, _who(), pickers=(c2, c3))
    else:
        _queue(run_id, methods, (c2, c3))
    _agreement(run_id)
    corrected_view.render_calibration(run_id)


def _queue(run_id: str, methods: list[str], pickers: tuple) -> None:
    """The hand-picked queue: any unreviewed verdict of a kind, one at a time (agreement only)."""
    c2, c3 = pickers
    method = widgets.url_select("Method", ["(all)", *methods], "method", container=c2)
    kind = widgets.url_select("Verdict kind", KINDS, "kind", container=c3)
    method = None if method == "(all)" else method
    order = widgets.url_select("Order the queue by", list(A.QUEUE_ORDERS), "qorder",
                               help="judge disagreement: the answers whose K verdicts (score --repeats K) "
                                    "differ most come first")
    who = _who()

    skip = tuple(st.session_state.get("ann_skip", []))
    nxt = widgets.call(A.queue, run_id, kind, method, skip, order=order)
    counts = widgets.call(A.counts, run_id)
    row = counts[counts.target_kind == kind]
    total, reviewed = (int(row.n_verdicts.iloc[0]), int(row.n_reviewed.iloc[0])) if len(row) else (0, 0)
    done = len(st.session_state.get("ann_done", []))
    st.text(f"{done % BATCH} of {BATCH} in this batch · {reviewed} of {total} {kind} verdicts in this run reviewed")
    st.progress(min(1.0, (done % BATCH) / BATCH))
    if nxt.empty:
        widgets.empty_state(f"No unreviewed {kind} verdicts here.",
                           "Pick another kind or run; judged metrics create verdicts when a run is scored.")
    else:
        item = nxt.iloc[0].to_dict()
        left, right = st.columns([1, 1])
        with left:
            st.text(" / ".join(widgets.shown_name(item[k]) for k in ("method", "question_id", "target_ref")))
            if "verdicts_differ" in item:  # ordered by disagreement: say this item's
                st.text(_disagreement_text(item))
            if item["target_kind"] == "claim":
                widgets.highlighted("Claim", item["target_text"])
                ctx = widgets.call(A.item_context, item["run_id"], item["method"], item["question_id"])
                label, column = SOURCES.get(_claim_source(item), SOURCES["answer"])
                source = ctx[column].iloc[0] if len(ctx) else None
                where = HL.claim_spans(source, [(0, item["target_text"], None)])[0] if isinstance(source, str) else []
                widgets.highlighted(label, source,
                                   [s._replace(kind="cited", title="the claim") for s in where])
            if who:
                _decision(item, kind, who)
            else:
                _verdict(item)
        with right, st.container(height=440):  # ends inside a 1000 px window, beside the buttons
            _evidence(item)


def _disagreement_text(item: dict) -> str:
    """How the judge's repeated verdicts behind a queue item disagree, in words (never a colour
    alone): "judge disagreement: its 3 verdicts on faithfulness differ (SD 0.47)"."""
    k = item.get("repeats_valued")
    if k is None or k != k:
        return (f"judge disagreement: {item['metric']} was judged once for this answer (score --repeats K "
                "measures it); queued after the answers with repeats")
    if k < 2:
        return f"judge disagreement: only one of its verdicts on {item['metric']} has a value; nothing to compare"
    said = "differ" if item["verdicts_differ"] else "agree"
    return f"judge disagreement: its {int(k)} verdicts on {item['metric']} {said} (SD {item['repeat_sd']:.2g})"


def _agreement(run_id: str) -> None:
    st.divider()
    st.subheader("Judge-human agreement")
    scope = widgets.url_select("Agreement over", ["this run", "all runs"], "scope")
    agree = widgets.call(A.agreement, run_id if scope == "this run" else None)
    if agree.empty:
        widgets.empty_state("No annotations yet.", "Agreement appears after the first reviews.")
    else:
        st.caption("Agreement rate: share of verdicts the annotator kept (each person's newest label per item), "
                   "with a Wilson 95% interval. Cohen's kappa corrects it for agreement expected by chance "
                   "(1 = perfect, 0 = chance level). Annotator columns: items two people labelled.")
        widgets.show_table(agree, "agreement")
        with st.expander("Recent annotations"):
            widgets.show_table(widgets.call(A.recent, run_id if scope == "this run" else None), "annotations")


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
