"""Runs page: the leaderboard of every (run, method), with filters, sorting and links onward."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from evalcore.analysis import leaderboard as L
from evalcore.analysis.damage import damaged_runs
from evalcore.ui import common, corrected_view, entry

SORTABLE = ["weighted_score", "weighted_score_ci_low", "created_at", "n", "error_rate", "cost_per_query_usd",
            "latency_p50_ms", "name", "method"]
GREY, RED = "color: #8a8a8a", "color: #c62828; font-weight: 600"
STATUSES = ["complete", "running", "created", "failed", "cancelled"]
ALL = "(all datasets)"


def _links(df):
    """Relative links (resolved against the app's base URL) into the drill-down pages."""
    df = df.copy()
    df["questions"] = [f"questions?{urlencode({'run': r, 'method': m})}" for r, m in zip(df.run_id, df.method)]
    df["charts"] = [f"charts?{urlencode({'sys': f'{r}:{m}'})}" for r, m in zip(df.run_id, df.method)]
    return df


def _reading_order(board, metrics: list[str]):
    """Columns as a reader ranks: which system, how good, how many, how costly and slow,
    judged by whom, when; identifiers and links last (they are long and rarely read)."""
    first = ["name", "method", "failure_flag", "weighted_score", "weighted_score_ci95", "weighted_score_ci_low", "n",
             "error_rate", "judges", *metrics, "n_errors", "cost_per_query_usd", "latency_p50_ms", "latency_p95_ms", "created_at", "status", "dataset", "run_id"]
    cols = [c for c in first if c in board.columns]
    rest = [c for c in board.columns if c not in cols and c not in ("questions", "charts")]
    return board[cols + rest + [c for c in ("questions", "charts") if c in board.columns]]


def _damaged() -> None:
    """Runs the store left out because a file of theirs cannot be read: listed apart, each with
    its one-line reason as plain text (names and paths are data, never markdown)."""
    damaged = common.call(damaged_runs)
    if damaged.empty:
        return
    st.subheader(f"Damaged runs ({len(damaged)}), left out below")
    for row in damaged.itertuples(index=False):
        st.text(f"{row.run_id} ({row.name}): {row.reason}")
    st.text("`evalcore store check` lists every problem; `evalcore store repair RUN` rebuilds a lost pointer.")


def _visible(board):
    return board.drop(columns=["ranked", "rank_note"], errors="ignore").reset_index(drop=True)


def _styled(df, grey: bool):
    """Unranked rows in grey; a failure flag in red (the cell and the system's name)."""
    style = df.style
    if grey:
        style = style.map(lambda _: GREY)
    if "failure_flag" in df.columns:
        flagged = df["failure_flag"].notna()
        cols = [c for c in ("failure_flag", "name", "method") if c in df.columns]
        style = style.apply(lambda col: [RED if f else "" for f in flagged], subset=cols)
    return style


def render() -> None:
    common.header("Runs", "Every run and method in the store, ranked. Means are over scored questions.")
    all_metrics = common.call(L.metric_names)
    _damaged()
    if common.call(L.run_list).empty:
        common.empty_state("The store has no runs yet.",
                           "Start one on the Launch page, or run `evalcore import --example`.")
        return
    datasets = common.call(L.datasets)
    choices = [*datasets.key, ALL]
    names = {**dict(zip(datasets.key, datasets.name)), ALL: ALL}
    runs_per = dict(zip(datasets.key, datasets.n_runs))
    dataset = common.url_select("Dataset (only runs of one dataset are ranked together)", choices, "ds",
                                format_func=lambda k: k if k == ALL else f"{names[k]}  ({runs_per[k]} runs, {k[:12]})")
    if dataset == ALL:
        st.warning("Runs of different datasets are listed together: their scores are not comparable.")
    c1, c2, c3 = st.columns([2, 2, 3])
    search = common.url_text("Search (name, run id, method, dataset)", "q", container=c1)
    statuses = common.url_multi("Status", STATUSES, "status", container=c2)
    defaults = [m for m in L.key_metric_names() if m in all_metrics and m != "weighted_score"][:6]
    metrics = common.url_multi("Metric columns", [m for m in all_metrics if m != "weighted_score"], "cols",
                               default=defaults, container=c3)
    c4, c5 = st.columns([2, 1])
    sort_by = common.url_select("Sort by", SORTABLE + metrics, "sort", container=c4)
    order = common.url_select("Order", ["descending", "ascending"], "order", container=c5)

    board = common.call(L.leaderboard, tuple(metrics), search=search or None, statuses=tuple(statuses) or None,
                        dataset=None if dataset == ALL else dataset)
    if board.empty:
        common.empty_state("No run matches these filters.", "Clear the search or the status filter.")
        return
    if sort_by in board.columns:  # ranked systems stay above the unranked, whatever the sort
        board = L.ranked_order(board, sort_by, ascending=order == "ascending")
    if "weighted_score" in board.columns and board["weighted_score"].isna().all():
        board = board.drop(columns=["weighted_score", "weighted_score_ci95", "weighted_score_ci_low"], errors="ignore")
        st.caption("No weighted_score in these runs: score them with the composite metrics to rank by it.")
    board = corrected_view.corrected_column(_reading_order(_links(board), metrics))  # where labels exist
    for col in ("judges", "dataset", "name"):  # one convention for a missing value: "–"
        if col in board:
            board[col] = board[col].fillna("–")
    col_cfg = {
        "questions": st.column_config.LinkColumn("questions", display_text="open"),
        "charts": st.column_config.LinkColumn("charts", display_text="open"),
        "rag_cost_per_query_usd": st.column_config.NumberColumn("RAG cost/query (USD)", format="%.5f"),
        "judge_cost_per_query_usd": st.column_config.NumberColumn("judge cost/query (USD)", format="%.5f"),
        "cost_per_query_usd": st.column_config.NumberColumn("cost/query (USD)", format="%.5f"),
        "latency_p50_ms": st.column_config.NumberColumn("latency p50 (ms)", format="%.0f"),
        "latency_p95_ms": st.column_config.NumberColumn("latency p95 (ms)", format="%.0f"),
        "created_at": st.column_config.DatetimeColumn("date", format="YYYY-MM-DD HH:mm"),
        "weighted_score_ci95": st.column_config.NumberColumn(
            "± 95%", format="%.3f", help="Half-width of weighted_score's 95% CI (the seeded bootstrap every mean "
                                        "gets), shown from 10 scored questions on. Use Compare for paired tests."),
    }
    for m in metrics + ["weighted_score"]:
        col_cfg[m] = st.column_config.NumberColumn(m, format="%.3f")
    col_cfg["weighted_score_ci_low"] = st.column_config.NumberColumn(
        "at least (CI low)", format="%.3f", help="weighted_score minus the ± half-width: what the score is at "
                                                 "least, at 95%. Sort by it to rank by what the data support.")
    col_cfg["error_rate"] = st.column_config.NumberColumn(
        "errors", format="percent", help="Share of the system's answers that failed (target error or empty).")
    col_cfg["failure_flag"] = st.column_config.TextColumn(
        "failed", help="Set when more than half the answers failed: how many, and the first error.")
    ranked, unranked = board[board["ranked"]], board[~board["ranked"]]
    st.text(f"{len(board)} run/method rows: {len(ranked)} ranked, {len(unranked)} with too few questions to rank")
    if board["failure_flag"].notna().any():
        st.error(f"{int(board['failure_flag'].notna().sum())} system(s) failed on more than half their answers "
                 "(column 'failed', in red): their scores count every failed answer as wrong.")
    if not ranked.empty:
        common.show_table(_visible(ranked), "leaderboard", column_config=col_cfg,
                          style=lambda df: _styled(df, grey=False))
    if not unranked.empty:
        st.subheader("Too few questions to rank")
        st.caption(f"Fewer than {L.MIN_N_FOR_CI} questions: a mean this small can be 1.000 by luck, so these "
                   "systems are listed apart and never ranked above the others.")
        shown = _visible(unranked)
        shown.insert(0, "not ranked", unranked["rank_note"].to_numpy())
        common.show_table(shown, "leaderboard_unranked", column_config=col_cfg,
                          style=lambda df: _styled(df, grey=True))

    st.subheader("Open")
    labels = {f"{r}:{m}": f"{n} / {m}  ({r})" for r, m, n in zip(board.run_id, board.method, board.name)}
    keys = list(labels)
    picked = st.multiselect("Pick rows to open (two or more to compare)", keys, default=keys[:1],
                            format_func=labels.get, key="runs_pick")
    if picked:
        first_run, _, first_method = picked[0].partition(":")
        c1, c2, c3 = st.columns(3)
        c1.page_link(entry.page("questions"), label="Questions of the first pick",
                     query_params={"run": first_run, "method": first_method})
        c2.page_link(entry.page("charts"), label="Charts of the picks", query_params={"sys": picked})
        c3.page_link(entry.page("compare"), label="Compare the picks", query_params={"sys": picked},
                     disabled=len(picked) < 2)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
