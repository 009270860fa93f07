"""Questions page: filter a run's (question, method) rows, then drill into one question.

The drill-down shows what a reviewer needs to judge the judge: the answer beside the ground
truth, every retrieved context with its relevance verdict, each claim with its verdict and
reason, every metric value, and the raw judge request/response. All of it is untrusted
text and is shown with st.text / st.code / st.dataframe.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st

from evalcore.analysis import leaderboard as L
from evalcore.analysis import questions as Qn
from evalcore.ui import common


def _filters() -> tuple[Qn.QuestionFilter, list[str]] | None:
    runs = common.call(L.run_list)
    if runs.empty:
        common.empty_state("No runs yet.", "Import or launch one first.")
        return None
    names = dict(zip(runs.run_id, runs.name))
    with st.sidebar:
        st.header("Filters")
        run_id = common.url_select("Run", list(runs.run_id), "run", container=st.sidebar,
                                   format_func=lambda r: f"{names[r]} ({r})")
        methods_all = common.call(L.systems, (run_id,))["method"].tolist()
        methods = common.url_multi("Methods", methods_all, "method", container=st.sidebar)
        facets = common.call(L.facet_values, run_id)
        category = common.url_select("Category", ["(any)", *facets["category"]], "cat", container=st.sidebar)
        qtype = common.url_select("Question type", ["(any)", *facets["question_type"]], "qt", container=st.sidebar)
        text = common.url_text("Text search", "q", container=st.sidebar)
        metrics = common.call(L.metric_names, (run_id,))
        metric = common.url_select("Metric threshold on", ["(none)", *metrics], "metric", container=st.sidebar)
        lo = hi = None
        if metric != "(none)":
            lo = common.url_number("min value", "min", lo=-1e9, hi=1e9, default=0.0, container=st.sidebar)
            hi = common.url_number("max value", "max", lo=-1e9, hi=1e9, default=1.0, container=st.sidebar)
        shown = common.url_multi("Metric columns", metrics, "show", container=st.sidebar,
                                 default=[m for m in L.KEY_METRICS if m in metrics][:4])
    f = Qn.QuestionFilter(run_id=run_id, methods=tuple(methods) or None,
                         category=None if category == "(any)" else category,
                         question_type=None if qtype == "(any)" else qtype, text=text or None,
                         metric=None if metric == "(none)" else metric, min_value=lo, max_value=hi)
    return f, shown


def _step(delta: int, n: int) -> None:
    st.session_state["q_index"] = max(0, min(n - 1, st.session_state.get("q_index", 0) + delta))


def _nav(qids: list[str]) -> str:
    """Previous/next buttons (keyboard shortcuts K and J, st.button(shortcut=)) plus a jump box;
    the index lives in ?i=."""
    n = len(qids)
    if "q_index" not in st.session_state:
        wanted = st.query_params.get("qid")
        st.session_state["q_index"] = qids.index(wanted) if wanted in qids else common.url_int("i", 0, n - 1)
    st.session_state["q_index"] = max(0, min(n - 1, st.session_state["q_index"]))
    c1, c2, c3 = st.columns([1, 1, 4])
    c1.button("Previous (K)", on_click=_step, args=(-1, n), shortcut="K", disabled=st.session_state["q_index"] == 0)
    c2.button("Next (J)", on_click=_step, args=(1, n), shortcut="J",
              disabled=st.session_state["q_index"] >= n - 1)
    c3.selectbox("Question", range(n), key="q_index", format_func=lambda i: f"{i + 1}/{n}: {qids[i]}")
    i = st.session_state["q_index"]
    common.set_param("i", i)
    common.set_param("qid", None)
    return qids[i]


def _contexts(record: str, verdicts: pd.DataFrame) -> pd.DataFrame:
    """Retrieved contexts with the judge's relevance verdict beside each rank (typed rows of
    the context_verdicts table)."""
    retrieved = json.loads(record).get("retrieved", [])
    ctx = pd.DataFrame(retrieved, columns=["rank", "chunk_id", "rel_path", "heading_path", "score", "text"])
    verdicts = verdicts[["rank", "verdict", "score", "reason"]].rename(columns={"score": "judge_score"})
    if ctx.empty:
        return ctx
    # The verdict and its reason next to the rank, the long text last (the table truncates it).
    merged = ctx.merge(verdicts, on="rank", how="left")
    return merged[["rank", "verdict", "judge_score", "reason", "score", "chunk_id", "rel_path", "heading_path",
                   "text"]]


def _call_label(n: int, call) -> str:
    """`call 3 · support · heuristic:lexical-v1/support@1 · 12 ms`: what, by whom, how it went.

    Our own strings (task names, judge ids, numbers), with markdown characters escaped
    because expander labels are markdown."""
    how = "cache hit" if call.cache_hit else (f"{call.latency_ms:.0f} ms" if pd.notna(call.latency_ms) else "live")
    label = f"call {n} · {call.purpose} · {call.judge_id} · {how}" + (" · error" if isinstance(call.error, str) else "")
    return re.sub(r"([\\`*_{}\[\]()#+!|<>~.-])", r"\\\1", label)


def _method_detail(detail: dict, method: str) -> None:
    resp = detail["responses"][detail["responses"].method == method]
    metrics = detail["metrics"][detail["metrics"].method == method]
    if resp.empty:
        st.info("This method has no answer for this question.")
        return
    r = resp.iloc[0]
    usage = pd.DataFrame([{k: r[k] for k in ("latency_ms", "input_tokens", "output_tokens", "cost_usd",
                                             "abstained", "error_kind")}])
    st.dataframe(usage, hide_index=True)
    if isinstance(r["error"], str):
        common.untrusted("Error", r["error"])
    st.subheader("Retrieved contexts")
    verdicts = detail["contexts"][(detail["contexts"].method == method)]
    if len(verdicts):  # one metric's verdicts: context_precision when there, else the first judged
        chosen = "context_precision" if (verdicts.metric == "context_precision").any() else verdicts.metric.iloc[0]
        verdicts = verdicts[verdicts.metric == chosen]
    ctx = _contexts(r["record"], verdicts)
    if ctx.empty:
        st.info("No retrieved contexts were recorded.")
    else:
        if not len(verdicts):
            st.caption("No context relevance verdicts (context_precision was not judged).")
        common.show_table(ctx, f"contexts-{method}", key=f"dl_ctx_{method}")
        with st.expander("Context texts in full"):
            for row in ctx.itertuples(index=False):
                common.untrusted(f"rank {row.rank} · {row.chunk_id}", row.text)
    st.subheader("Claims")
    claims = detail["claims"][detail["claims"].method == method].drop(columns="method")
    if claims.empty:
        st.info("No claims stored (faithfulness / context recall were not judged).")
    else:
        common.show_table(claims, f"claims-{method}", key=f"dl_claims_{method}")
    st.subheader("Metrics")
    shown = metrics.drop(columns=["method"]).copy()
    shown["details"] = shown["details"].fillna("")
    common.show_table(shown, f"metrics-{method}", key=f"dl_metrics_{method}")
    st.subheader("Judge calls")
    calls = detail["judge_calls"][detail["judge_calls"].method == method]
    if calls.empty:
        st.info("No judge calls recorded for this answer.")
    for n, call in enumerate(calls.itertuples(index=False), start=1):
        with st.expander(_call_label(n, call), expanded=False):
            st.dataframe(pd.DataFrame([{"purpose": call.purpose, "judge": call.judge_id,
                                        "tokens in": call.input_tokens, "tokens out": call.output_tokens,
                                        "cost_usd": call.cost_usd, "latency_ms": call.latency_ms,
                                        "cache_hit": call.cache_hit, "error": call.error}]), hide_index=True)
            st.caption("Request")
            st.code(call.request or "", language="json", wrap_lines=True)
            st.caption("Raw response")
            st.code(call.response_raw or "", language=None, wrap_lines=True)


def _show_question(run_id: str, qid: str) -> None:
    detail = common.call(Qn.question_detail, run_id, qid)
    if detail["question"].empty:
        st.error("This question is not in the run.")
        return
    q = detail["question"].iloc[0]
    common.untrusted("Question id", q["question_id"])
    common.untrusted("Question", q["question"])
    common.untrusted("Ground truth", q["ground_truth"] if isinstance(q["ground_truth"], str) else "(none)")
    st.dataframe(pd.DataFrame([{k: q[k] for k in ("category", "question_type", "difficulty", "answerable")}]),
                 hide_index=True)
    st.subheader("Answers")
    for r in detail["responses"].itertuples(index=False):
        common.untrusted("Method", r.method)
        st.text(r.answer or "(empty answer)")
    methods = detail["responses"]["method"].tolist()
    if methods:
        st.divider()
        method = common.url_select("Details for method", methods, "dm")
        _method_detail(detail, method)


def render() -> None:
    common.header("Questions", "Filter the answers of one run, then inspect a question end to end.")
    picked = _filters()
    if picked is None:
        return
    f, shown = picked
    table = common.call(Qn.question_table, f, tuple(shown))
    st.text(f"{len(table)} answers match ({table['question_id'].nunique() if len(table) else 0} questions)")
    if table.empty:
        common.empty_state("Nothing matches these filters.", "Loosen the filters in the sidebar.")
        return
    with st.expander("Matching answers", expanded=True):
        common.show_table(table, "questions", height=300)
    qids = list(dict.fromkeys(table["question_id"]))
    st.divider()
    qid = _nav(qids)
    _show_question(f.run_id, qid)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
