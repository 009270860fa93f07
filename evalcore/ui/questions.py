"""Questions page: one question end to end with every method side by side, a grid of questions x
methods, or the plain list of answers.

What a researcher comes for: for one question, each method's answer next to the others (side
by side for two, one tab each for more: narrow columns truncated every claim), with its claims
marked inline by verdict, its key scores and diagnosis, every claim in full with the judge's
reason and the passage and sentence it cited, the retrieved contexts with their relevance
verdicts, one short badge for who judged (full prompt ids in an expander), the judge's K verdicts
side by side when it was asked K times (ui/repeat_verdicts.py), and the raw judge calls one click
away. Everything shown from a run is untrusted text: st.text / st.dataframe /
st.code, or widgets.highlighted / widgets.inert_html where words are marked (every character
escaped; our <mark> the only markup).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.analysis.questions import claim_evidence as CE
from evalcore.analysis.labels import judge_labels as JL
from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.runs import means as M
from evalcore.analysis.questions import question_story as QS
from evalcore.analysis.questions import question_drilldown as Qn
from evalcore.schemas.ids import match_name
from evalcore.ui import human_labels, repeat_verdicts, trials_view
from evalcore.ui import safe_widgets as widgets
from evalcore.ui.wording import judged_by

VIEWS = {"question": "one question, methods side by side", "grid": "grid: questions x methods",
         "list": "list of answers"}
# How the methods of one question are laid out: side by side reads best for two; beyond that
# columns get too narrow for claims and contexts, so one tab (or one full-width block) each.
LAYOUTS = {"columns": "side by side", "tabs": "one tab per method", "stacked": "one under another"}
BADGE = {"correct": "green", "correct abstention": "green", "wrong abstention": "gray",
         "should have abstained": "red", "retrieval miss": "red", "unfaithful": "orange",
         "faithful but wrong": "orange", "wrong, cause unknown": "gray", "unscored": "gray"}


def _filters() -> tuple[Qn.QuestionFilter, list[str], dict] | None:
    runs = widgets.call(L.run_list)
    if runs.empty:
        widgets.empty_state("No runs yet.", "Import or launch one first.")
        return None
    names = dict(zip(runs.run_id, runs.name))
    with st.sidebar:
        st.header("Filters")
        run_id = widgets.url_select("Run", list(runs.run_id), "run", container=st.sidebar,
                                   format_func=lambda r: f"{names[r]} ({r})")
        methods_all = widgets.call(L.systems, (run_id,))["method"].tolist()
        methods = widgets.url_multi("Methods", methods_all, "method", container=st.sidebar)
        facets = widgets.call(L.facet_values, run_id)
        category = widgets.url_select("Category", ["(any)", *facets["category"]], "cat", container=st.sidebar)
        qtype = widgets.url_select("Question type", ["(any)", *facets["question_type"]], "qt", container=st.sidebar)
        text = widgets.url_text("Text search", "q", container=st.sidebar)
        metrics = Qn.metric_order(widgets.call(L.metric_names, (run_id,)))
        metric = widgets.url_select("Metric threshold on", ["(none)", *metrics], "metric", container=st.sidebar)
        lo = hi = None
        if metric != "(none)":
            lo = widgets.url_number("min value", "min", lo=-1e9, hi=1e9, default=0.0, container=st.sidebar)
            hi = widgets.url_number("max value", "max", lo=-1e9, hi=1e9, default=1.0, container=st.sidebar)
        unsupported = widgets.url_select("Verdict", ["(any)", "answers with an unsupported claim"], "verdict",
                                        container=st.sidebar)
        delta_metric = widgets.url_select("Sort by Δ of", ["(question id)", *metrics], "dm_sort", container=st.sidebar)
        pair = None
        if delta_metric != "(question id)" and len(methods_all) >= 2:
            a = widgets.url_select("Δ from", methods_all, "da", container=st.sidebar)
            b = widgets.url_select("Δ to", [m for m in methods_all if m != a], "db", container=st.sidebar)
            pair = (delta_metric, a, b)
        shown = widgets.url_multi("Metric columns (list view)", metrics, "show", container=st.sidebar,
                                 default=[m for m in L.key_metric_names() if m in metrics][:4])
    f = Qn.QuestionFilter(run_id=run_id, methods=tuple(methods) or None,
                          category=None if category == "(any)" else category,
                          question_type=None if qtype == "(any)" else qtype, text=text or None,
                          metric=None if metric == "(none)" else metric, min_value=lo, max_value=hi)
    return f, shown, {"unsupported": unsupported != "(any)", "pair": pair}


def _question_ids(f: Qn.QuestionFilter, table: pd.DataFrame, extra: dict) -> list[str]:
    qids = list(dict.fromkeys(table["question_id"]))
    if extra["unsupported"]:
        flagged = set(widgets.call(Qn.questions_with_unsupported_claims, f.run_id)["question_id"])
        qids = [q for q in qids if q in flagged]
    if extra["pair"]:
        order = widgets.call(Qn.question_deltas, f.run_id, *extra["pair"])["question_id"].tolist()
        rank = {q: i for i, q in enumerate(order)}
        qids.sort(key=lambda q: rank.get(q, len(rank)))
    return qids


PICKER_SPAN = 100  # questions listed either side of the current one in the picker


def picker_window(i: int, n: int, span: int = PICKER_SPAN) -> range:
    """The picker's options: question positions within `span` of position i. Why not all n: a
    browser draws every option of a select (each with its question text), and a run of 100,000
    questions sent 12 MB of options to show one question."""
    lo = max(0, min(i - span, n - 2 * span - 1))
    return range(lo, min(n, lo + 2 * span + 1))


def _step(delta: int, n: int) -> None:
    st.session_state["q_index"] = max(0, min(n - 1, st.session_state.get("q_index", 0) + delta))


def _nav(qids: list[str], texts: dict[str, str]) -> str:
    """Previous/next (keyboard K and J) and a picker that shows the question text; ?qid= / ?i= in the URL."""
    n = len(qids)
    wanted = st.query_params.get("qid")
    if wanted is not None:  # the id rule (evalcore.schemas.ids): a link's NFC id finds an NFD-stored one
        wanted = match_name(wanted, qids)
    if "q_index" not in st.session_state or st.session_state.pop("q_jump", None):
        st.session_state["q_index"] = qids.index(wanted) if wanted in qids else widgets.url_int("i", 0, n - 1)
    st.session_state["q_index"] = max(0, min(n - 1, st.session_state["q_index"]))
    c1, c2, c3 = st.columns([1.3, 1.1, 5.6])
    c1.button("Previous (K)", on_click=_step, args=(-1, n), shortcut="K", disabled=st.session_state["q_index"] == 0)
    c2.button("Next (J)", on_click=_step, args=(1, n), shortcut="J", disabled=st.session_state["q_index"] >= n - 1)

    def label(i: int) -> str:
        text = " ".join(str(texts.get(qids[i]) or "").split())
        return f"{i + 1}/{n} · {qids[i]} · {text[:90]}{'…' if len(text) > 90 else ''}"
    c3.selectbox("Question", picker_window(st.session_state["q_index"], n), key="q_index", format_func=label,
                 label_visibility="collapsed",
                 help=f"The {PICKER_SPAN} questions either side of this one; Previous/Next, the text search "
                      "or a link with ?qid= reach any other.")
    i = st.session_state["q_index"]
    widgets.set_param("i", i)
    widgets.set_param("qid", qids[i])
    return qids[i]


HEURISTIC_HELP = ("These verdicts come from the offline heuristic judge, a lexical approximation "
                  "that counts words shared with the contexts and gold answers. It is not a "
                  "language model and cannot see meaning: paraphrases count as unsupported or "
                  "wrong, negated copies as supported. Its claim verdicts are strict (one "
                  "paraphrased word can fail a claim), and its faithfulness is a mean word-support "
                  "score fitted on one dataset (HaluEval QA), not a share of claims: compare "
                  "methods under the same judge only. Use it for quick looks and tests; re-judge "
                  "with an LLM before trusting the numbers (docs/judges.md, 'The heuristic judge').")


def _judges(metrics: pd.DataFrame) -> list[str]:
    return sorted({j for j in metrics["judge_id"].dropna() if isinstance(j, str)})


VERDICT_TEXT = {"supported": "supported", "not_supported": "not supported"}
VERDICT_MARK = {"supported": "supported", "not_supported": "unsupported"}
CLAIM_KEY = ('Claims marked in the answer: <b class="chip supported">supported</b> '
             '<b class="chip unsupported">not supported</b> <b class="chip unjudged">not judged</b>; '
             "hover a mark for its claim number.")


def _html(body: str) -> None:
    """One block of our markup around text that went through widgets.inert_html (never raw data)."""
    st.html(f'{widgets.HIGHLIGHT_CSS}<div class="ec-text">{body}</div>')


def _judge_badge(badges, metrics: pd.DataFrame) -> None:
    """One short badge for who judged (the model, or the heuristic judge), full ids one click away."""
    who = _judges(metrics)
    label = JL.short_judge_label(who)
    if not label:
        badges.badge("no judge: computed scores only", color="gray")
    elif any(j.startswith("heuristic") for j in who):
        badges.badge(widgets.md(label), color="orange", icon=":material/warning:", help=HEURISTIC_HELP)
    else:
        badges.badge(widgets.md(label), color="blue", icon=":material/gavel:")


def _claims_html(claims: list[dict]) -> str:
    """Each claim in full: number and verdict, its text, the judge's reason, and the passage the
    judge cited with its sentence closest to the claim (the claim's words marked)."""
    parts = []
    for c in claims:
        verdict = c["verdict"] if isinstance(c["verdict"], str) else None
        head = (f'<b class="chip {VERDICT_MARK.get(verdict or "", "unjudged")}">'
                f'{c["idx"] + 1} · {VERDICT_TEXT.get(verdict or "", "not judged")}</b> ')
        lines = [head + widgets.inert_html(c["text"])]
        if isinstance(c["reason"], str) and c["reason"]:
            lines.append("<small>Judge&#39;s reason: " + widgets.inert_html(c["reason"]) + "</small>")
        if c["sentence"]:
            lines.append(f"<small>Passage rank {int(c['rank'])}, cited by the judge; its sentence closest to "
                         "the claim (shared words marked):</small>")
            lines.append("&#8220;" + widgets.inert_html(c["sentence"], c["sentence_spans"]) + "&#8221;")
        elif verdict == "supported":
            lines.append("<small>No passage number recorded by the judge.</small>")
        else:
            lines.append("<small>No passage cited by the judge.</small>")
        if not c["placed"]:
            lines.append("<small>(not found in the answer&#39;s wording: not marked above)</small>")
        parts.append("<br>".join(lines))
    return '<div style="margin-bottom:.6rem"></div>'.join(parts)


def _contexts_html(ctx: pd.DataFrame, spans: dict) -> str:
    """Each retrieved context in full, with its two relevance readings and the sentences the
    judge cited for a claim marked."""
    parts = []
    for row in ctx.itertuples(index=False):
        rank = row[0]
        verdict = row[2] if isinstance(row[2], str) and row[2] else "no judge verdict"
        score = f" ({row[5]:.0f})" if isinstance(row[5], float) and row[5] == row[5] else ""
        gold = {"yes": " · gold passage", "no": " · not a gold passage"}.get(row[1], "")
        where = " · ".join(str(x) for x in (row.rel_path, row.chunk_id) if isinstance(x, str) and x)
        head = f"<b>Rank {widgets.inert_html(rank)}</b> · judge: {widgets.inert_html(verdict + score)}{gold}"
        if where:
            head += " · <small>" + widgets.inert_html(where) + "</small>"
        lines = [head]
        if isinstance(row.reason, str) and row.reason:
            lines.append("<small>Judge&#39;s reason: " + widgets.inert_html(row.reason) + "</small>")
        text = row.text if isinstance(row.text, str) else ""
        lines.append(widgets.inert_html(text, spans.get(rank, [])) if text else "<small>(no text stored)</small>")
        parts.append("<br>".join(lines))
    return '<hr style="margin:.5rem 0">'.join(parts)


def _method_column(detail: dict, method: str, story: dict) -> None:
    """One method's answer, made for reading: its diagnosis (the badge names its basis) and one
    short judge badge; the answer with its claims marked by verdict; key scores; every claim in
    full with the passage and sentence the judge cited; the contexts with their relevance."""
    resp = detail["responses"][detail["responses"].method == method].iloc[0]
    metrics = detail["metrics"][detail["metrics"].method == method]
    evidence = CE.answer_evidence(detail, method)
    widgets.untrusted_heading(method)
    badges = st.container(horizontal=True)
    bucket = story.get("bucket")
    if bucket:
        label = f"{bucket} · {story['source']}" if story.get("source") else bucket
        badges.badge(widgets.md(label), color=BADGE.get(bucket, "gray"), help=story["basis"])
    _judge_badge(badges, metrics)
    if bucket:
        st.caption("Diagnosis: " + widgets.md(story["basis"]))
    for note in story.get("notes", []):
        st.info(widgets.md(note), icon=":material/info:")
    if isinstance(resp["error"], str):
        widgets.highlighted("Target error", resp["error"])
    widgets.highlighted("Answer", resp["answer"], evidence["answer_spans"])
    if evidence["answer_spans"]:
        _html(f"<small>{CLAIM_KEY}</small>")
    widgets.dataframe(story.get("scores", pd.DataFrame()), hide_index=True, key=f"scores_{method}",
                 column_config={"value": st.column_config.NumberColumn("value", format="%.3f"),
                                "basis": st.column_config.TextColumn(
                                    "basis", help="judge: the judge's verdict; gold passages: the dataset's gold "
                                                  "passages (retrieval metrics); computed: from the answer and "
                                                  "ground truth")})
    asked = detail["question"].iloc[0]
    repeat_verdicts.render(asked["run_id"], asked["question_id"], method)  # K verdicts side by side (K > 1)
    human_labels.render(asked["run_id"], asked["question_id"], method)  # what people said of this answer
    claims = evidence["claims"]
    st.caption(f"Claims in the answer ({len(claims)}), with the judge's reasons and cited evidence")
    with st.container(key=f"claims_{method}"):
        if not claims:
            st.text(f"({story['claims_note']})" if story.get("claims_note") else "(no claims stored)")
        else:
            _html(_claims_html(claims))
    ctx = story.get("contexts", pd.DataFrame())
    with st.expander(f"Retrieved contexts ({len(ctx)}): relevance by the gold passages and by the judge; "
                     "cited sentences marked", expanded=True):
        with st.container(key=f"contexts_{method}"):
            if ctx.empty:
                st.text("(no retrieved contexts recorded)")
            else:
                _html(_contexts_html(ctx, evidence["context_spans"]))
    who = _judges(metrics)
    with st.expander(f"Judge prompt ids ({len(who)})"):
        st.text("\n".join(who) if who else "no judge (deterministic metrics only)")


def _judge_calls(detail: dict) -> None:
    calls = detail["judge_calls"]
    # drawn only when opened (a stateful expander): its table and code blocks cost the browser
    # more than the rest of the question
    with st.expander(f"Raw judge calls ({len(calls)})", key="raw_calls", on_change="rerun") as box:
        if not box.open:
            return
        if calls.empty:
            st.text("No judge calls recorded for this question.")
            return
        labels = [f"{c.method} · {c.purpose} · {c.judge_id}" + (" · cache hit" if c.cache_hit else "")
                  for c in calls.itertuples()]
        i = st.selectbox("Call", range(len(calls)), format_func=lambda k: labels[k], key="judge_call")
        call = calls.iloc[i]
        widgets.dataframe(pd.DataFrame([{k: call[k] for k in ("purpose", "judge_id", "input_tokens", "output_tokens",
                                                        "cost_usd", "latency_ms", "cache_hit", "error")}]),
                     hide_index=True)
        st.caption("Request")
        st.code(call["request"] or "", language="json", wrap_lines=True)
        st.caption("Raw response")
        st.code(call["response_raw"] or "", language=None, wrap_lines=True)


def _all_metrics(detail: dict) -> None:
    m = detail["metrics"]
    if m.empty:
        return
    with st.expander("All metrics, every method (importance order), and their details", key="all_metrics",
                     on_change="rerun") as box:
        if not box.open:  # drawn when opened, like the raw calls
            return
        wide = m.pivot_table(index="metric", columns="method", values="value", aggfunc="first", dropna=False)
        wide = wide.loc[Qn.metric_order(list(wide.index))].reset_index()
        wide.columns.name = None
        widgets.dataframe(wide, hide_index=True)
        metric = st.selectbox("Details of", Qn.metric_order(sorted(set(m.metric))), key="details_metric")
        widgets.dataframe(Qn.metric_details(detail, metric), hide_index=True)


def _show_question(run_id: str, qid: str, methods: tuple[str, ...] | None) -> None:
    detail = widgets.call(Qn.question_detail, run_id, qid)
    if detail["question"].empty:
        st.error("This question is not in the run.")
        return
    q = detail["question"].iloc[0]
    top_q, top_r = st.columns(2)
    with top_q:
        widgets.highlighted("Question", q["question"])
    with top_r:
        widgets.highlighted("Reference answer (ground truth)", q["ground_truth"])
    facts = ("question_id", "category", "question_type", "difficulty", "answerable")
    st.text(" · ".join(f"{k}: {widgets.shown_name(q[k])}" for k in facts if q[k] is not None and q[k] == q[k]))
    shown = [m for m in detail["responses"]["method"] if methods is None or m in methods]
    if not shown:
        st.info("No selected method answered this question.")
        return
    stories = widgets.call(QS.stories, run_id, qid)
    layout = widgets.url_select("Methods laid out", list(LAYOUTS), "layout", format_func=LAYOUTS.get,
                               default="columns" if len(shown) <= 2 else "tabs", container=st.sidebar)
    with st.container(key="answers"):
        if layout == "columns":
            slots = st.columns(len(shown), gap="medium")
        elif layout == "tabs":
            slots = st.tabs([widgets.md(m) for m in shown])
        else:
            slots = [st.container(border=True) for _ in shown]
        for slot, method in zip(slots, shown):
            with slot:
                _method_column(detail, method, stories.get(method, {}))
    trials_view.render(run_id, qid, methods)  # a run asked with --trials T: each trial's answer and verdicts
    _judge_calls(detail)
    _all_metrics(detail)


def _select_from_grid(table: pd.DataFrame) -> None:
    rows = st.session_state["grid_table"].selection.rows
    if rows:
        st.session_state["q_pick"] = table["question_id"].iloc[rows[0]]


def _grid(f: Qn.QuestionFilter, qids: list[str], metrics: list[str]) -> None:
    """Questions x methods, each cell one metric coloured from bad to good; a row opens the question."""
    if not metrics:
        widgets.empty_state("No metric values in this run.", "Score it first.")
        return
    c1, c2 = st.columns([2, 2])
    metric = widgets.url_select("Metric in the cells", metrics, "gm", container=c1,
                               default=next((m for m in L.key_metric_names() if m in metrics), None))
    differ = widgets.url_select("Rows", ["all questions", "only rows where the methods differ"], "rows",
                               container=c2) != "all questions"
    table = widgets.call(Qn.grid, f.run_id, metric, f.methods)
    table = table[table.question_id.isin(set(qids))]
    if differ:
        table = table[table.spread > 1e-9]
    table = table.reset_index(drop=True)
    method_cols = [c for c in table.columns if c not in ("question_id", "question", "spread")]
    st.text(f"{len(table)} questions · {metric} per method · select a row to open the question")
    judges = widgets.call(M.metric_judges, tuple(f"{f.run_id}:{m}" for m in method_cols), (metric,))
    if len(judges):  # every judged score names its judge
        st.caption(widgets.md(f"{metric}: {judged_by(judges.judge_id)}"))
    from evalcore.analysis.read.catalog import higher_is_better

    cmap = "RdYlGn" if higher_is_better(metric) else "RdYlGn_r"
    shown, shown_cols = widgets.shown_frame(table), [widgets.shown_name(c) for c in method_cols]  # names as shown
    styled = shown.style.background_gradient(cmap=cmap, subset=shown_cols, vmin=float(table[method_cols].min().min())
                                             if len(table) else 0, vmax=float(table[method_cols].max().max())
                                             if len(table) else 1).format("{:.3f}", subset=[*shown_cols, "spread"],
                                                                          na_rep=widgets.MISSING)
    widgets.dataframe(styled, hide_index=True, key="grid_table", on_select=lambda: _select_from_grid(table),
                 selection_mode="single-row", height=480)


def render() -> None:
    widgets.header("Questions", "One question end to end, every method side by side; a grid of questions × methods; "
                  "or the list of answers.")
    picked = _filters()
    if picked is None:
        return
    f, shown, extra = picked
    table = widgets.call(Qn.question_table, f, tuple(shown))
    qids = _question_ids(f, table, extra) if len(table) else []
    if "q_pick" in st.session_state:  # a grid row was picked: open it
        qid = st.session_state.pop("q_pick")
        st.query_params["qid"] = qid
        st.session_state["url_view"] = "question"
        st.session_state["q_jump"] = True
    view = widgets.url_select("View", list(VIEWS), "view", format_func=VIEWS.get)
    st.text(f"{len(qids)} questions match ({len(table)} answers)")
    if not qids:
        widgets.empty_state("Nothing matches these filters.", "Loosen the filters in the sidebar.")
        return
    if view == "grid":
        _grid(f, qids, Qn.metric_order(widgets.call(L.metric_names, (f.run_id,))))
    elif view == "list":
        widgets.show_table(table[table.question_id.isin(set(qids))], "questions", height=500)
    else:
        texts = dict(zip(table.question_id, table.question))
        qid = _nav(qids, texts)
        _show_question(f.run_id, qid, f.methods)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
