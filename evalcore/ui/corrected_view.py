"""The dashboard's human-corrected estimates: random-sample labelling, calibration, corrected numbers.

Why one module: Annotate, Compare and Runs each show a piece of the same thing (docs/labels.md),
and keeping the pieces here leaves those pages one call each. Every number comes from
evalcore.analysis.labels.corrected / calibration — the functions `show --corrected` and `compare
--corrected` print — so page and CLI agree. Untrusted text (answers, claims, run names) only
through widgets.untrusted / st.dataframe, never Markdown.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import streamlit as st

from evalcore.analysis.labels import calibration as K
from evalcore.analysis.labels import corrected as C
from evalcore.analysis.labels import label_counts as LC
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.analysis.comparison.verdict import verdict_lines
from evalcore.ui import answer_labelling
from evalcore.ui import safe_widgets as widgets

MODES = ["random sample", "pairwise", "queue"]


def mode_select(container=st) -> str:
    """Annotate's mode: random sample (the default, for estimates) unless the URL asks for a
    verdict kind's queue (`?kind=`, the hand-picked queue's old links) or says `?mode=queue`."""
    default = "queue" if "kind" in st.query_params and "mode" not in st.query_params else "random sample"
    return widgets.url_select("Mode", MODES, "mode", default=default, container=container,
                             help="Random sample: answers drawn at random (seeded); only these labels correct "
                                  "the judge's means. Pairwise: which of two systems' answers is better, blind, "
                                  "on questions drawn at random. Queue: any verdict, hand-picked; counts for "
                                  "agreement only.")


def _progress(est: dict) -> None:
    """Where the population's estimate stands and what the next labels buy (the words and every
    bound on the counts: evalcore.analysis.labels.label_counts)."""
    lines = LC.progress_lines(est, C.shown(est))
    st.text(lines[0])
    st.progress(LC.progress_share(est))
    for line in lines[1:]:
        st.text(line)


EVIDENCE_HEIGHT = 440  # px: the evidence beside them, ending with the labelling buttons


def render_sample(run_id: str, methods: list[str], who: str, evidence: Callable[[dict], None],
                  pickers: tuple | None = None) -> None:
    """Annotate's random-sample mode for one run: method x metric population, next drawn answer.
    `pickers`: two containers for the method and metric pickers (the page's top row)."""
    metrics = widgets.call(U.estimable_metrics, run_id)
    if not metrics or not methods:
        widgets.empty_state("This run has no judged metric to label.", "Score it with judged metrics first.")
        return
    c1, c2 = pickers or st.columns([2, 2])
    method = widgets.url_select("Method (population)", methods, "smethod", container=c1)
    metric = widgets.url_select("Metric (population)", metrics, "metric", container=c2)
    seed = widgets.url_int("seed", 0, 10**9, default=S.DEFAULT_SEED)
    _drawn_answer(run_id, method, metric, seed, who, evidence)


@st.fragment
def _drawn_answer(run_id: str, method: str, metric: str, seed: int, who: str,
                  evidence: Callable[[dict], None]) -> None:
    """The population's progress and its next drawn answer, as a fragment: a label's keys and
    buttons rerun only this part, so the next answer does not wait for the page's calibration
    tables below to be recomputed (about two seconds of the four a click took)."""
    est = widgets.call(C.system_estimate, run_id, method, metric, withhold=False)  # rough numbers, marked so
    _progress(est)
    draw = widgets.call(S.next_answer, run_id, method, metric, seed)
    if draw.population == 0:  # the progress line above says so
        widgets.empty_state("Nothing to label here.", "Pick another method or metric.")
        return
    if draw.question_id is None:
        widgets.empty_state("Every answer of this population is labelled.", "Pick another method or metric.")
        return
    st.caption(f"Random sample {draw.sample_id}: answer {draw.position + 1} of {draw.population} in the seeded "
               f"order (inclusion probability {draw.inclusion_prob:.3f}); no skipping.",
               help="A skipped answer would make the sample depend on what was easy to label.")
    # the evidence panel shows the answer and every retrieved context for a whole-answer label
    item = {"run_id": run_id, "method": method, "question_id": draw.question_id, "target_kind": "answer",
            "target_ref": metric}
    left, right = st.columns([1, 1])
    with left:
        st.text(f"Answer labelled: {method} / {draw.question_id} / {metric}")  # names are data: st.text
        answer_labelling.render(run_id, method, metric, draw, who)
    with right, st.container(height=EVIDENCE_HEIGHT):
        evidence(item)


def _pm(lo, hi) -> str:
    return C.interval(lo, hi)


WIDTH = "width: labels alone / corrected"


def means_table(table: pd.DataFrame) -> pd.DataFrame:
    """corrected_means as people read it (the columns `show --corrected` prints)."""
    ok = table.status.isin(C.SHOWN)
    return pd.DataFrame({
        "method": table.method, "metric": table.metric, "judge mean": table.judge_mean,
        "corrected [95% CI]": [C.shown(r) for r in table.to_dict("records")],
        "labelled": [f"{n}/{N}" for n, N in zip(table.n_labelled, table.N)],
        "judge bias": table.bias.where(ok),
        "bias 95% CI": [_pm(a, b) if k else "–" for a, b, k in zip(table.bias_low, table.bias_high, ok)],
        "rho": table.rho.where(ok),
        WIDTH: table.width_ratio.where(ok)})


def render_calibration(run_id: str) -> None:
    """The run's corrected means, then judge calibration against sampled labels: one table of
    which judge to trust for what, the confusion matrix and reliability diagram of one metric."""
    means = widgets.call(C.corrected_means, run_id)
    if len(means):
        st.subheader("Human-corrected means (this run)")
        st.caption(f"PPI++ from randomly sampled labels ({C.MIN_LABELS}+ per method × metric, or every answer of a "
                   "smaller population: then its human mean is exact). Width: the labels-alone 95% CI's width over "
                   "the corrected one's, measured (1.40 = 1.4× narrower; 1.00 = the judge did not help).")
        widgets.show_table(means_table(means), "corrected-means", column_config={
            c: st.column_config.NumberColumn(c, format="%.3f") for c in ("judge mean", "judge bias", "rho")}
            | {WIDTH: st.column_config.NumberColumn(WIDTH, format="%.2f")})
    st.subheader("Judge calibration (randomly sampled labels only)")
    table = widgets.call(K.summary, run_id)
    if table.empty:
        widgets.empty_state("No randomly sampled labels in this run yet.",
                           "Label in random-sample mode (or `evalcore labels import`) to calibrate the judges.")
        return
    _calibration_table(table.drop(columns=["method"]), "calibration")
    metric = widgets.url_select("Calibration detail for", list(dict.fromkeys(table.metric)), "calm")
    c1, c2 = st.columns([1, 1])
    with c1:
        st.caption("Confusion matrix: judge's label (rows) × person's label (columns), sampled items")
        conf = widgets.call(K.confusion, run_id, metric)
        widgets.dataframe(conf.rename_axis("judge \\ person").reset_index() if not conf.empty else conf)
    with c2:
        rel = widgets.call(K.reliability, run_id, metric)
        if K.is_graded(metric) and len(rel):
            _reliability_chart(rel, metric)
        else:
            st.caption("Reliability diagram: for graded scores")


CALIBRATION_NOTE = ("kappa: item-level agreement beyond chance (bootstrap CI). bias: the judge's mean minus the "
                    "people's on the same answers. rho: answer-level correlation; PPI++ needs about (1 − rho²) of "
                    "the labels. Reading: trust its mean (no bias detected, kappa ≥ 0.6) · biased: use corrected "
                    "(rho ≥ 0.5) · weak: rely on labels · too few to say (under 30 sampled answers).")


def _calibration_table(table: pd.DataFrame, name: str) -> None:
    """calibration.summary's rows as people read them (Annotate per judge, Runs per run x method)."""
    lead = [c for c in ("run_id", "method") if c in table.columns]
    shown = pd.DataFrame({
        **{c: table[c] for c in lead},
        "judge": table.judge, "metric": table.metric, "reading": table.advice, "sampled answers": table.n_answers,
        "items": table.n_items,
        "kappa": table.kappa, "kappa 95% CI": [_pm(a, b) for a, b in zip(table.kappa_low, table.kappa_high)],
        "bias (judge − human)": table.bias, "bias 95% CI": [_pm(a, b) for a, b in zip(table.bias_low, table.bias_high)],
        "rho": table.rho})
    st.caption(CALIBRATION_NOTE)
    widgets.show_table(shown, name, column_config={
        c: st.column_config.NumberColumn(c, format="%.3f") for c in ("kappa", "bias (judge − human)", "rho")})


def calibration_summary(run_ids: list[str]) -> pd.DataFrame | None:
    """The read behind runs_calibration (also made by the Runs page's server-start prefetch)."""
    return widgets.call(K.runs_summary, tuple(dict.fromkeys(run_ids))) if run_ids else None


def runs_calibration(run_ids: list[str]) -> None:
    """Runs: the judge calibration of every listed run with randomly sampled labels, per method x
    metric (what `evalcore labels summary RUN` prints); nothing when no run has any."""
    table = calibration_summary(run_ids)
    if table is None or table.empty:
        return
    st.subheader("Judge calibration (runs with randomly sampled labels)")
    _calibration_table(table, "runs-calibration")


def _reliability_chart(rel: pd.DataFrame, metric: str) -> None:
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated", line={"dash": "dot"}))
    fig.add_trace(go.Scatter(x=rel.judge_mean, y=rel.human_mean, mode="markers+lines", name="judge",
                             text=[f"n={n}" for n in rel.n], marker={"size": [6 + min(n, 40) / 2 for n in rel.n]}))
    fig.update_layout(title=f"Reliability: {metric}", height=320, margin={"t": 40, "b": 30},
                      xaxis_title="judge value (bin mean)", yaxis_title="human value (mean)")
    st.plotly_chart(widgets.inert_figure(fig), key=f"reliability_{metric}")  # the title made inert once, here


def _judged(table: pd.DataFrame | None, cand: str) -> dict | None:
    """The Compare page's tested rows (compare.pair_table) as the corrected rows' judge side: Δ, CI
    and verdict exactly as the page's main table and verdict show them."""
    if table is None or "tested" not in table:
        return None
    tested = table[table["tested"].astype(bool)].assign(candidate=cand)
    lines = verdict_lines(table, "baseline", "candidate")
    outcome = dict(zip(lines.metric, lines.outcome))
    return C.main_table_judge(tested, {(cand, m): outcome.get(m, "–") for m in tested.metric})


def render_compare(base: str, cand: str, table: pd.DataFrame | None = None) -> None:
    """Compare: judge Δ and human-corrected Δ side by side for every metric labelled at random on
    both sides, with whether the verdict changes. `table`: the page's pair table, whose tested
    rows give the judge side (a labelled metric it did not test is tested apart)."""
    base_t, cand_t = tuple(base.split(":", 1)), tuple(cand.split(":", 1))
    rows = widgets.call(C.corrected_compare, base_t, (cand_t,), judged=_judged(table, cand))
    if rows.empty:
        return
    st.subheader("Judge vs human-corrected")
    st.caption(f"Judge Δ, CI and verdict: the main table's (a labelled metric it did not test is tested apart). "
               f"Corrected: paired PPI++ on per-question differences, from questions labelled at random on both "
               f"sides ({C.MIN_LABELS}+ needed, or every paired question); unadjusted 95% CIs. Width: the "
               "labels-alone CI's width over the corrected one's.")
    ok = rows.status.isin(C.SHOWN)
    shown = pd.DataFrame({
        "metric": rows.metric, "judge Δ": rows.judge_delta,
        "judge 95% CI": [_pm(a, b) for a, b in zip(rows.judge_low, rows.judge_high)],
        "judge verdict": [v + (" (tested apart)" if t == C.APART else "") for v, t in
                          zip(rows.judge_verdict, rows.judge_tested)],
        "corrected Δ": rows.corrected_delta.where(ok),
        "corrected 95% CI": [_pm(r["ci_low"], r["ci_high"]) if k else C.delta_shown(r)
                             for r, k in zip(rows.to_dict("records"), ok)],
        "corrected verdict": rows.corrected_verdict,
        "verdict changes": ["yes" if v else "no" for v in rows.verdict_changes],
        "rho": rows.rho.where(ok),
        "labels-alone 95% CI": [_pm(a, b) if k else "–" for a, b, k in zip(rows.classical_low, rows.classical_high, ok)],
        WIDTH: rows.width_ratio.where(ok),
        "labelled": [f"{n}/{N}" for n, N in zip(rows.n_labelled, rows.N)]})
    widgets.show_table(shown, "compare-corrected", column_config={
        **{c: st.column_config.NumberColumn(c, format="%+.3f") for c in ("judge Δ", "corrected Δ")},
        "rho": st.column_config.NumberColumn("rho", format="%.2f"),
        WIDTH: st.column_config.NumberColumn(WIDTH, format="%.2f")})


def corrected_column(board: pd.DataFrame) -> pd.DataFrame:
    """Runs: a 'corrected' column where a system has randomly sampled labels."""
    if board.empty or not {"run_id", "method"} <= set(board.columns):
        return board
    texts = widgets.call(C.corrected_texts, tuple(zip(board.run_id, board.method)))
    if not texts:
        return board
    out = board.copy()
    out.insert(min(len(out.columns), list(out.columns).index("method") + 1), "corrected",
               [texts.get(f"{r}:{m}") for r, m in zip(board.run_id, board.method)])
    return out
