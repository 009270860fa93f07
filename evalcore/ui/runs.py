"""Runs page: the leaderboard of every (run, method), with filters, sorting and links onward."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.read.damage import damaged_annotations, damaged_runs
from evalcore.analysis.labels.judge_labels import full_judge_ids, short_judge_label
from evalcore.ui import corrected_view, entry, safe_widgets

# after the score and its CI low (named after the ranking metric, L.ranking_metric())
SORTABLE = ["created_at", "n", "error_rate", "cost_per_query_usd", "latency_p50_ms", "name", "method"]
GREY, RED = "color: #8a8a8a", "color: #c62828; font-weight: 600"
STATUSES = ["complete", "running", "created", "failed", "cancelled"]
ALL = "(all datasets)"
N_DEFAULT_METRICS = 2
# Shown by default: who, how good (± and n), how often it failed, judged by whom, the picked
# metrics, cost and latency; sized to fit a 1400 px window without scrolling sideways.
# Everything else the leaderboard has is one pick away ("More columns") and in the CSV.
MORE_COLUMNS = {"failure_flag": "failed (first error)", "{score}_ci_low": "at least (CI low)", "n_errors": "failed answers",
                "latency_p95_ms": "latency p95", "rag_cost_per_query_usd": "RAG cost/query",
                "judge_cost_per_query_usd": "judge cost/query", "judge_calls": "judge calls",
                "n_abstained": "abstentions", "created_at": "date", "status": "status", "dataset": "dataset",
                "run_id": "run id", "judges": "judge prompt ids", "questions": "questions link",
                "charts": "charts link"}


def _links(df):
    """Relative links (resolved against the app's base URL) into the drill-down pages."""
    df = df.copy()
    df["questions"] = [f"questions?{urlencode({'run': r, 'method': m})}" for r, m in zip(df.run_id, df.method)]
    df["charts"] = [f"charts?{urlencode({'sys': f'{r}:{m}'})}" for r, m in zip(df.run_id, df.method)]
    return df


def _more_columns(score: str) -> dict[str, str]:
    """MORE_COLUMNS with the score's column names filled in."""
    return {k.format(score=score): v for k, v in MORE_COLUMNS.items()}


def _shown_columns(board, score: str, metrics: list[str], more: list[str], ranked: bool = True) -> list[str]:
    """The columns drawn, in the order a reader ranks: which system, how good (± only where
    ranked: it is shown from MIN_N_FOR_CI questions, so always empty among the unranked), how
    many, how often it failed, judged by whom, the picked metrics, how costly and slow, then any
    extra picks. A failed system is flagged by colour (its name and errors in red) and in full
    above the table, not by a column too narrow to hold the first error."""
    first = ["system", score,
             *([f"{score}_ci95"] if ranked else []), "n", "error_rate", "judge", *metrics, "corrected",
             "cost_per_query_usd", "latency_p50_ms", *more]
    return [c for c in dict.fromkeys(first) if c in board.columns]


def _with_judge_label(board):
    """One short judge label per system (evalcore.analysis.labels.judge_labels), the full prompt ids
    kept in `judges` (a "More columns" pick, the CSV and the details below the table)."""
    board = board.copy()
    board["judge"] = [short_judge_label(j) or None for j in board["judges"]]
    board["system"] = [f"{n} / {m}" for n, m in zip(board["name"].fillna(board["run_id"]), board["method"])]
    return board


def _column_config(score: str, metrics: list[str]) -> dict:
    """Short headers and fixed widths for the default columns (so they fit 1400 px), counts as
    integers, and each header's tooltip saying what it holds."""
    num = st.column_config.NumberColumn
    cfg = {
        "system": st.column_config.TextColumn("system", width=172, help="Run name / method (the run id: More columns)."),
        "failure_flag": st.column_config.TextColumn(
            "failed", help="Set when more than half the answers failed: how many, and the first error "
                           "(also in full in the red box above the table)."),
        score: num("score", format="%.3f", width=62, help=f"{score}: the mean of its per-question values "
                   f"({L.metric_about(score)['description'].rstrip('.')})."),
        f"{score}_ci95": num(
            "± 95%", format="%.3f", width=56, help=f"Half-width of {score}'s 95% CI (the seeded bootstrap "
            "every mean gets), shown from 10 scored questions on. Use Compare for paired tests."),
        f"{score}_ci_low": num(
            "at least (CI low)", format="%.3f", help=f"{score} minus the ± half-width: what the score is at "
                                                     "least, at 95%. Sort by it to rank by what the data support."),
        "n": num("n", format="%d", width=48, help="Questions answered (scored questions for the means)."),
        "n_errors": num("failed answers", format="%d", help="Answers that failed (target error or empty)."),
        "n_abstained": num("abstentions", format="%d"),
        "judge_calls": num("judge calls", format="%d"),
        "error_rate": num("errors", format="percent", width=54,
                          help="Share of the system's answers that failed (target error or empty)."),
        "judge": st.column_config.TextColumn(
            "judge", width=160, help="Who judged: the model, or the offline heuristic judge (word overlap, not a "
                                     "model). Full prompt ids: 'Judges in full' below the table."),
        "judges": st.column_config.TextColumn("judge prompt ids"),
        "cost_per_query_usd": num("$/query", format="%.4f", width=70,
                                  help="RAG cost per priced answer + judge cost per answer (USD)."),
        "rag_cost_per_query_usd": num("RAG cost/query $", format="%.5f"),
        "judge_cost_per_query_usd": num("judge cost/query $", format="%.5f"),
        "latency_p50_ms": num("p50 ms", format="%.0f", width=62, help="Median latency of an answer (ms)."),
        "latency_p95_ms": num("p95 ms", format="%.0f", help="95th percentile latency of an answer (ms)."),
        "created_at": st.column_config.DatetimeColumn("date", format="YYYY-MM-DD HH:mm"),
        "questions": st.column_config.LinkColumn("questions", display_text="open"),
        "charts": st.column_config.LinkColumn("charts", display_text="open"),
    }
    for m in metrics:
        cfg[m] = num(m, format="%.3f", width=min(128, int(12 + 6.5 * len(m))))
    return cfg


def _judge_details(board) -> None:
    """The full judge prompt ids behind each short label, one system at a time (plain text)."""
    with st.expander("Judges in full (prompt ids per system)"):
        for row in board.itertuples(index=False):
            ids = full_judge_ids(row.judges)
            st.text(f"{row.name} / {row.method}: {row.judge}\n" + ("\n".join(f"  {i}" for i in ids.splitlines())
                                                                  or "  (no judge: every score computed)"))


def _damaged() -> None:
    """Runs the store left out because a file of theirs cannot be read: listed apart, each with
    its one-line reason as plain text (names and paths are data, never markdown)."""
    for row in safe_widgets.call(damaged_annotations).itertuples(index=False):
        st.warning(safe_widgets.md(f"Annotations file {row.file} cannot be read ({row.reason.rstrip('.')}): its labels are "
                                   "left out of agreement and corrected estimates; the file is kept."),
                   icon=":material/warning:")
    damaged = safe_widgets.call(damaged_runs)
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
        cols = [c for c in ("failure_flag", "system", "name", "method", "error_rate") if c in df.columns]
        style = style.apply(lambda col: [RED if f else "" for f in flagged], subset=cols)
    return style


def _default_metrics(all_metrics: list[str], score: str) -> list[str]:
    """The metric columns a visitor sees before picking any: the first key metrics stored."""
    return [m for m in L.key_metric_names() if m in all_metrics and m != score][:N_DEFAULT_METRICS]


def _board(score: str, metrics: list[str], *, search: str | None, statuses: tuple[str, ...] | None,
           dataset: str | None, sort_by: str, order: str):
    """The leaderboard as drawn: read, sorted (ranked systems above the unranked, whatever the
    sort), without the score's columns where no system has it, with links, judge labels and
    the corrected column (where labels exist), and one mark ("–") for a missing value."""
    board = safe_widgets.call(L.leaderboard, tuple(metrics), search=search, statuses=statuses, dataset=dataset)
    if board.empty:
        return board
    if sort_by in board.columns:
        board = L.ranked_order(board, sort_by, ascending=order == "ascending")
    if score in board.columns and board[score].isna().all():
        board = board.drop(columns=[score, f"{score}_ci95", f"{score}_ci_low"], errors="ignore")
    board = corrected_view.corrected_column(_with_judge_label(_links(board)))
    for col in ("judge", "judges", "dataset", "name"):
        if col in board:
            board[col] = board[col].fillna("–")
    return board


def prefetch() -> None:
    """Every read of this page as a visitor first sees it (no URL state: the first dataset, the
    default metric columns, sorted by the score), made into the pages' cache
    (ui/cached_reads.py) by the server-start warm-up (ui/warm.py), so the first visitor's
    first page draws without querying. The same calls render() makes, with the same
    arguments (tests/app/test_first_page_prefetch.py holds the two together); the cache is
    keyed on the store's state token, so a store changed since is simply read again."""
    all_metrics = safe_widgets.call(L.metric_names)
    safe_widgets.call(damaged_annotations)
    safe_widgets.call(damaged_runs)
    if safe_widgets.call(L.run_list).empty:
        return
    datasets = safe_widgets.call(L.datasets)
    dataset = [*datasets.key, ALL][0]
    score = L.ranking_metric()
    board = _board(score, _default_metrics(all_metrics, score), search=None, statuses=None,
                   dataset=None if dataset == ALL else dataset, sort_by=score, order="descending")
    if not board.empty:
        corrected_view.calibration_summary(list(board.run_id))


def render() -> None:
    safe_widgets.header("Runs", "Every run and method in the store, ranked. Means are over scored questions.")
    all_metrics = safe_widgets.call(L.metric_names)
    _damaged()
    if safe_widgets.call(L.run_list).empty:
        safe_widgets.empty_state("The store has no runs yet.",
                           "Start one on the Launch page, or run `evalcore import --example`.")
        return
    datasets = safe_widgets.call(L.datasets)
    choices = [*datasets.key, ALL]
    names = {**dict(zip(datasets.key, datasets.name)), ALL: ALL}
    runs_per = dict(zip(datasets.key, datasets.n_runs))
    dataset = safe_widgets.url_select("Dataset (only runs of one dataset are ranked together)", choices, "ds",
                                format_func=lambda k: k if k == ALL else f"{names[k]}  ({runs_per[k]} runs, {k[:12]})")
    if dataset == ALL:
        st.warning("Runs of different datasets are listed together: their scores are not comparable.")
    c1, c2, c3 = st.columns([2, 2, 3])
    search = safe_widgets.url_text("Search (name, run id, method, dataset)", "q", container=c1)
    statuses = safe_widgets.url_multi("Status", STATUSES, "status", container=c2)
    score = L.ranking_metric()  # its own column: never a metric column
    metrics = safe_widgets.url_multi("Metric columns", [m for m in all_metrics if m != score], "cols",
                               default=_default_metrics(all_metrics, score), container=c3)
    c4, c5, c6 = st.columns([2, 1, 3])
    sort_by = safe_widgets.url_select("Sort by", [score, f"{score}_ci_low", *SORTABLE, *metrics], "sort", container=c4)
    order = safe_widgets.url_select("Order", ["descending", "ascending"], "order", container=c5)
    more_columns = _more_columns(score)
    more = safe_widgets.url_multi("More columns", list(more_columns), "more", format_func=more_columns.get,
                            container=c6)

    board = _board(score, metrics, search=search or None, statuses=tuple(statuses) or None,
                   dataset=None if dataset == ALL else dataset, sort_by=sort_by, order=order)
    if board.empty:
        safe_widgets.empty_state("No run matches these filters.", "Clear the search or the status filter.")
        return
    if score not in board.columns:
        group = L.metric_about(score)["group"]
        st.caption(f"No {score} in these runs: score them with the {group} metrics to rank by it.")
    col_cfg = _column_config(score, metrics)
    ranked, unranked = board[board["ranked"]], board[~board["ranked"]]
    st.text(f"{len(board)} run/method rows: {len(ranked)} ranked, {len(unranked)} with too few questions to rank")
    flagged = board[board["failure_flag"].notna()]
    if not flagged.empty:
        st.error(f"{len(flagged)} system(s) failed on more than half their answers (in red below): their "
                 "scores count every failed answer as wrong.")
        for row in flagged.itertuples(index=False):  # the flag in full (the column is narrow)
            st.text(f"{row.name} / {row.method}: {row.failure_flag}")
    if not ranked.empty:
        safe_widgets.show_table(_visible(ranked), "leaderboard", column_config=col_cfg,
                          column_order=_shown_columns(ranked, score, metrics, more),
                          style=lambda df: _styled(df, grey=False))
    if not unranked.empty:
        st.subheader("Too few questions to rank")
        st.caption(f"Fewer than {L.MIN_N_FOR_CI} questions (column n): a mean this small can be 1.000 by luck, "
                   "so these systems are listed apart, in grey, and never ranked above the others.")
        shown = _visible(unranked)
        shown.insert(0, "not ranked", unranked["rank_note"].to_numpy())
        safe_widgets.show_table(shown, "leaderboard_unranked", column_config=col_cfg,
                          column_order=_shown_columns(unranked, score, metrics, more, ranked=False),
                          style=lambda df: _styled(df, grey=True))
    _judge_details(board)
    corrected_view.runs_calibration(list(board.run_id))  # kappa, bias, rho and a reading, where labels exist
    _open_links(board)


def _open_links(board) -> None:
    """Links that open the picked rows on the Questions, Charts and Compare pages."""
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
