"""Compare page: which system is better, and is it real?

Above the fold, the verdict: comparability warnings, one headline ("X is better than Y on 2 of
4 tested metrics and worse on none, n = 40"), a forest plot (per tested metric Δ with its 95%
CI around zero, coloured better / worse / not significant in the metric's own direction, Holm
p and n in the row label and the hover) beside cards of the key metrics (candidate's mean and
Δ), then every verdict sentence in full, wrapped. Then improved / regressed / unchanged counts
per metric, each a link to those questions; the full metric table; where the wrong answers
come from (failure-mode diagnosis per system); and, when opened, question by question: the
changed questions, a word diff of two answers and a scatter of one metric.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from evalcore.analysis.comparison import compare as C
from evalcore.analysis.comparison import pair as P
from evalcore.analysis.comparison import forest as F
from evalcore.analysis.comparison import judge_noise as JN
from evalcore.analysis.comparison import trial_noise as TN
from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.comparison import verdict as V
from evalcore.analysis.charts.figures import forest_figure
from evalcore.errors import EvalcoreError
from evalcore.ui import corrected_view, diagnosis, entry, pairwise_view
from evalcore.ui import safe_widgets as widgets
from evalcore.ui.wording import diff_text, word_diff

OUTCOMES = ["regressed", "improved", "unchanged", "missing"]
# the question-by-question section's own URL parameters: any of them in a link opens it
QUESTION_PARAMS = ("cm", "out", "cq", "cqs", "scatter")





def _metric_table(base: str, cand: str, stat_metrics: list[str],
                  names: dict[str, str]) -> tuple[pd.DataFrame, V.PairVerdict] | None:
    """The pair table with its verdict (the one `evalcore compare` prints: verdict.pair_verdict),
    or None (said on the page) when the systems cannot be compared: a run stored before the id
    rule holding one question id twice (evalcore.analysis.read.id_collisions)."""
    try:
        with st.spinner("Paired bootstrap and tests..."):
            table, said = widgets.call(P.pair_comparison, base, cand, tuple(stat_metrics), names[base], names[cand])
    except EvalcoreError as exc:
        st.error(widgets.md(f"Not compared: {exc}"))
        return None
    if table.empty:
        return table, said
    # who judged each metric, each side's judge when they differ (the verdict sentences end in the same words)
    table = table.assign(judged_by=table.metric.map(widgets.call(V.pair_judges, base, cand, tuple(table.metric))))
    st.caption("CI: paired bootstrap 95%. p: exact McNemar (0/1 metrics) or paired randomization, "
               "Holm-adjusted across the tested metrics — the numbers `evalcore compare --metrics` prints. "
               "Tested metrics are listed first.")
    return _reading_order(table.rename(columns={"mean_a": "mean_base", "mean_b": "mean_cand"}),
                          [m for m in stat_metrics if m in set(table.metric)]), said


# What a reader scans first: the effect and its uncertainty, then the counts, then the test used.
_COLUMN_ORDER = ["metric", "n_pairs", "mean_base", "mean_cand", "delta", "ci_low", "ci_high", "p_holm",
                 "significant", "judged_by", "improved", "regressed", "unchanged", "missing", "test", "p_value",
                 "higher_is_better"]


def _reading_order(table: pd.DataFrame, tested: list[str]) -> pd.DataFrame:
    """Tested metrics first (in the order picked), then the rest alphabetically; columns in
    reading order, so Δ, CI and p are visible without scrolling the table sideways."""
    rank = {m: i for i, m in enumerate(tested)}
    order = table["metric"].map(lambda m: (0, rank[m], "") if m in rank else (1, 0, m))
    table = table.iloc[sorted(range(len(table)), key=lambda i: order.iloc[i])].reset_index(drop=True)
    cols = [c for c in _COLUMN_ORDER if c in table.columns]
    return table[cols + [c for c in table.columns if c not in cols]]


def _scatter(pairs: pd.DataFrame, metric: str, base: str, cand: str) -> go.Figure:
    g = pairs[pairs.metric == metric]
    fig = go.Figure(go.Scattergl(x=g["a"], y=g["b"], mode="markers", text=g["question_id"],
                                 marker={"size": 5, "opacity": 0.5}, name="question",
                                 hovertemplate="%{text}<br>baseline %{x:.3f}<br>candidate %{y:.3f}"))
    if len(g):
        lo, hi = float(min(g["a"].min(), g["b"].min())), float(max(g["a"].max(), g["b"].max()))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="no change",
                                 line={"dash": "dot", "color": "grey"}))
    fig.update_layout(title=f"{metric}: each question, baseline vs candidate",
                      xaxis_title=f"baseline {base.partition(':')[2]} ({metric})",
                      yaxis_title=f"candidate {cand.partition(':')[2]} ({metric})",
                      height=420)
    return fig


CHANGED_SHOWN = 50  # rows of the changed-question list (and options of its picker)


def changed_caption(total: int, shown: int, outcome: str, metric: str, search: str) -> str:
    """'1234 questions regressed on f1 · the 50 biggest changes shown, 1184 more: search by id or text'."""
    text = f"{total} questions {outcome} on {metric}" + (f" matching {search!r}" if search else "")
    if total > shown:
        text += f" · the {shown} biggest changes shown, {total - shown} more: search by id or text"
    return text


def _question_diff(base: str, cand: str, metric: str) -> None:
    """The changed questions, biggest change first, and a word diff of one. Capped at
    CHANGED_SHOWN rows with a search box: at 100,000 questions the full list (and a picker with
    as many options) took the browser longer than the rest of the page."""
    c1, c2 = st.columns([1, 2])
    outcome = widgets.url_select("Show questions that", OUTCOMES, "out", container=c1)
    search = widgets.url_text("Search them (question id or text)", "cqs", container=c2).strip()
    total = widgets.call(C.changed_count, base, cand, metric, outcome, search or None)
    rows = widgets.call(C.changed_questions, base, cand, metric, outcome, CHANGED_SHOWN, search or None)
    st.text(changed_caption(total, len(rows), outcome, metric, search))
    if rows.empty:
        return
    widgets.show_table(rows, f"compare-{outcome}-{metric}", height=250)
    qid = widgets.url_select("Question to diff", rows["question_id"].tolist(), "cq")
    ans = widgets.call(C.answers, (base, cand), qid)
    by_sys = dict(zip(ans["system"], ans["answer"].fillna("")))
    if len(ans):
        widgets.untrusted("Question", ans["question"].iloc[0])
        widgets.untrusted("Ground truth", ans["ground_truth"].iloc[0])
    a, b = by_sys.get(base, ""), by_sys.get(cand, "")
    c1, c2 = st.columns(2)
    with c1:
        widgets.untrusted("Baseline answer", a)
    with c2:
        widgets.untrusted("Candidate answer", b)
    rows = word_diff(a, b)
    st.caption("Word diff ([-only in baseline-] {+only in candidate+})")
    st.text(diff_text(rows))
    st.page_link(entry.page("questions"), label="Open this question on the Questions page",
                 query_params={"run": cand.partition(":")[0], "method": cand.partition(":")[2], "qid": qid})


# The metric cards' delta colours (our constants): green better, red worse, grey not significant
# (the forest plot's shades live with the figure, evalcore.analysis.charts.figures).
_CARD_COLOURS = {"better": "green", "worse": "red", "not significant": "grey", "not compared": "grey"}
N_CARDS = 4


def _card_number(value: float, sign: bool = False) -> str:
    """Three decimals for scores; whole numbers once a value reaches 100 (milliseconds, tokens)."""
    if value != value:
        return widgets.MISSING
    plus = "+" if sign else ""
    return f"{value:{plus},.0f}" if abs(value) >= 100 else f"{value:{plus}.3f}"


def _cards(forest: pd.DataFrame, table: pd.DataFrame) -> None:
    """One st.metric per key tested metric: the candidate's mean, Δ coloured by the verdict
    (green / red only when significant after Holm, grey otherwise)."""
    means = dict(zip(table.metric, table.mean_cand))
    shown = list(forest.head(N_CARDS).itertuples(index=False))
    cols = st.columns(2)
    for i, r in enumerate(shown):  # two per row: beside the forest plot
        cols[i % 2].metric(
            widgets.md(r.metric), _card_number(means.get(r.metric, float("nan"))), _card_number(r.delta, sign=True),
            delta_color=_CARD_COLOURS[r.shade], border=True,
            help=f"The candidate's mean; Δ = candidate − baseline ({'higher' if r.higher_is_better else 'lower'} "
                 f"is better): {r.outcome} after Holm.")


def _sentences(lines: pd.DataFrame) -> None:
    """Every verdict sentence in full, wrapped (a table cell would cut it at 1400 px), in a box
    coloured by its outcome (the words also say it); the text, `evalcore compare`'s sentence with
    its judge, is escaped for Markdown (method names are data)."""
    box = {"better": st.success, "worse": st.error, "not significant": st.warning,
           "too few questions": st.warning, "no significant difference": st.info, "not compared": st.warning}
    for line in lines.itertuples(index=False):
        box[line.outcome](widgets.md(line.verdict))


def _verdict(table: pd.DataFrame, said: V.PairVerdict, names: dict[str, str], base: str, cand: str) -> None:
    """Above the fold: the comparability warnings, the one-line headline, the key metrics' cards,
    then the forest plot beside the verdict sentences (green better, red worse, amber not
    significant after Holm or too few questions, blue no significant difference)."""
    lines = said.lines
    with st.container(key="verdict"):
        for warning in said.warnings:
            st.warning("Not comparable as scored: " + widgets.md(warning), icon=":material/warning:")
        if lines.empty:
            st.subheader("Verdict")
            st.text(f"{widgets.shown_name(names[cand])} against {widgets.shown_name(names[base])} (baseline)")
            st.info("Pick metrics to test (below) to get a verdict.")
            return
        st.subheader(widgets.md(said.summary), anchor=False)
        st.caption(widgets.md(f"Verdict: {names[cand]} against {names[base]} (baseline) · α = 0.05 after Holm "
                             f"over the {len(lines)} tested metrics · Δ = candidate − baseline · CI: paired "
                             "bootstrap 95%, unadjusted; the outcome follows the Holm-adjusted p."))
        forest = F.forest_rows(table, lines)
        left, right = st.columns([3, 2], vertical_alignment="center")
        with left, st.container(key="forest"):
            st.plotly_chart(widgets.inert_figure(forest_figure(forest)), key="forest_plot",
                            config={"displayModeBar": False})
        with right:
            _cards(forest, table)
        _sentences(lines)


def _judge_noise(base: str, cand: str, tested: list[str]) -> None:
    """The judge's noise per tested metric, when a side was scored with `--repeats K` (the numbers
    `evalcore compare` prints under "judge noise"); nothing for runs with one verdict per answer."""
    rows = widgets.call(JN.pair_noise, base, cand, tuple(tested))
    if not rows:
        return
    st.subheader("Judge noise")
    st.caption("Each answer was judged K times (independent samples) and its value is their mean, so this noise "
               "is already inside the CIs above. judge SD: the spread of one answer's verdicts; flip rate: the share "
               "of answers whose verdicts differ; judge_share: the judge's share of the Δ's variance; noise_delta: "
               "the Δ judge noise alone produces (± at 95%).")
    frame = pd.DataFrame(rows).drop(columns=["baseline", "candidate", "measured_on"])
    widgets.show_table(frame, "compare-judge-noise")


def _trials(base: str, cand: str, tested: list[str]) -> None:
    """The systems' spread over their trials per tested metric, when a side was asked with
    `--trials T` (the numbers `evalcore compare` prints under "trials"); nothing otherwise."""
    rows = widgets.call(TN.pair_trials, base, cand, tuple(tested))
    if not rows:
        return
    st.subheader("Trials")
    st.caption("Each question was asked T times per system and its value is the mean of its trials, so the "
               "system's own sampling is already inside the CIs above (they resample questions). within_sd: the "
               "spread of one question's trials; flip_rate: the share of questions whose trials disagree; for "
               "pass/fail metrics, pass_at_t: the share of questions passed at least once in T trials, "
               "pass_all_t: passed every time.")
    frame = pd.DataFrame(rows).drop(columns=["baseline", "candidate"])
    widgets.show_table(frame, "compare-trials")


def _count_links(table: pd.DataFrame, picked: list[str]) -> None:
    """Improved / regressed / unchanged per metric, each a link that lists those questions."""
    def link(metric: str, outcome: str, n: int) -> str:
        return "compare?" + urlencode([("sys", k) for k in picked] + [("cm", metric), ("out", outcome), ("n", n)])

    rows = pd.DataFrame({
        "metric": table.metric, "paired": table.n_pairs,
        **{o: [link(m, o, int(n)) for m, n in zip(table.metric, table[o])] for o in ("improved", "regressed", "unchanged")},
        "missing": table.missing})
    cfg = {o: st.column_config.LinkColumn(o, display_text=r"n=(\d+)$", help=f"questions {o} on this metric: open the list")
           for o in ("improved", "regressed", "unchanged")}
    widgets.dataframe(rows, hide_index=True, column_config=cfg, width="stretch")


def render() -> None:
    widgets.header("Compare", "Which system is better, and is it real? Systems (run / method) are paired on "
                  "question_id; the first one is the baseline.")
    chosen = widgets.pick_systems("Systems (first = baseline)", 2)
    if chosen is None:
        return
    picked, labels = chosen
    if len(picked) < 2:
        widgets.empty_state("Pick at least two systems.", "The first one is the baseline.")
        return
    base, cands = picked[0], picked[1:]
    metrics = widgets.call(L.metric_names, tuple(sorted({k.partition(":")[0] for k in picked})))
    if not metrics:
        widgets.empty_state("These runs have no metric values.", "Score them first (`evalcore score`).")
        return
    cand = cands[0] if len(cands) == 1 else widgets.url_select(
        "Candidate", cands, "cand", format_func=lambda k: labels[k])
    verdict_slot = st.empty()
    stat_metrics = widgets.url_multi("Metrics to test (CI, p)", metrics, "tm",
                                    default=widgets.call(V.default_tested_metrics, (base, cand)))
    names = widgets.short_labels([base, cand], labels)
    compared = _metric_table(base, cand, stat_metrics, names)
    if compared is None:
        return
    table, said = compared
    if table.empty:
        widgets.empty_state("No metric is scored on both sides.", "Pick systems scored with the same metrics.")
        return
    with verdict_slot.container():
        _verdict(table, said, names, base, cand)
    _judge_noise(base, cand, [m for m in stat_metrics if m in set(table.metric)])
    _trials(base, cand, [m for m in stat_metrics if m in set(table.metric)])
    st.subheader("Questions that changed, per metric")
    _count_links(table, picked)
    # drawn when opened (a stateful expander): a grid of every metric costs the browser ~0.2 s
    with st.expander("All metrics: means, Δ, CI, p", key="all_metrics", on_change="rerun") as box:
        if box.open:
            widgets.show_table(table, "compare-metrics")
    corrected_view.render_compare(base, cand, table)  # judge vs human-corrected Δ, where labels exist
    pairwise_view.render_win_rate(base, cand, table)  # judge vs corrected win rate, where preferences exist
    # drawn when opened: diagnosing every answer of both systems is the page's costliest query
    # (~1 s at 100,000 questions), and the verdict above does not need it
    with st.expander("Where the wrong answers come from (failure-mode diagnosis)", key="diagnosis",
                     on_change="rerun", expanded="fs" in st.query_params or "fm" in st.query_params) as box:
        if box.open:
            diagnosis.render([base, cand], labels, chart=False)

    # drawn when opened, like the diagnosis: its list, picker, answers and word diff were a
    # fifth of the page's first draw, all below the fold. The count links above (and any link
    # naming a metric, outcome or question here) open it.
    opened = any(k in st.query_params for k in QUESTION_PARAMS)
    with st.expander("Question by question: the changed questions, a word diff, a scatter", key="by_question",
                     on_change="rerun", expanded=opened) as box:
        if box.open:
            metric = widgets.url_select("Metric for questions and scatter", list(table.metric), "cm",
                                       default=stat_metrics[0] if stat_metrics else None)
            _question_diff(base, cand, metric)
            # the scatter draws every paired question: on request, so the verdict comes up fast
            if widgets.url_select("Scatter of every question", ["hidden", "shown"], "scatter") == "shown":
                pairs = widgets.call(C.paired_values, base, cand, (metric,))
                st.plotly_chart(widgets.inert_figure(_scatter(pairs, metric, base, cand)), key="scatter")
    # the file `evalcore report BASE CAND --metrics ...` writes, built (and imported) only on a click
    from evalcore.outputs.html_report import report_html

    tested, store = [m for m in stat_metrics if m in set(table.metric)], widgets.store()
    st.download_button("Download this comparison as one HTML file", key="report_html", file_name="evalcore-report.html",
                       data=lambda: report_html(store, [base, cand], tested), mime="text/html", on_click="ignore")


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
