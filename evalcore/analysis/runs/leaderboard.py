"""Leaderboard rows: one per system (run, method), from the runs' summaries only.

Why summaries: the Runs page and `evalcore runs` list every system in the store; the per-run
summary tables written at compaction (evalcore/store/summary.py) hold exactly the figures a
row needs, so a store of millions of answers lists in milliseconds.

Definitions used everywhere a system's cost or latency is shown (Runs, Charts, Compare, CLI):
- cost per query: evalcore.analysis.runs.cost (RAG cost per priced answer + judge cost per answer;
  missing on both sides -> missing, never 0; a judge call of an unpriced model records cost NaN,
  which makes its system's total unknown).
- latency = the target's p50 / p95 over answers, in ms.
- the score a row is ranked by is the mean of the per-question values of the metric whose spec
  says it ranks systems (MetricSpec.ranks_systems: weighted_score, whose fixed budgets make it
  comparable across runs); its column is named after it.
- ± = half the 95% CI of that score (evalcore.analysis.runs.means.mean_ci, the CI of every mean),
  only where n_scored >= MIN_N_FOR_CI, as `<score>_ci95`; `<score>_ci_low` / `_ci_high` are its bounds.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any, Sequence

import pandas as pd

from evalcore.analysis.runs.ranking import add_rank_columns, ranked_order
from evalcore.analysis.runs.run_listing import RunRow, run_rows
from evalcore.store import RunStore, query_df

MIN_N_FOR_CI = 10


def key_metric_names() -> list[str]:
    """The metrics the leaderboard (and the pages' pickers) show first when present, in order:
    those whose MetricSpec has a key_rank (others can be added by the user)."""
    from evalcore.metrics.registry import key_metric_names as from_registry

    return from_registry()


def ranking_metric() -> str:
    """The metric whose mean ranks systems (MetricSpec.ranks_systems): the leaderboard's score
    column and its CI columns are named after it."""
    from evalcore.metrics.registry import ranking_metric as from_registry

    return from_registry()


def metric_about(name: str) -> dict[str, str]:
    """A registered metric's group and description (what the Runs page says of its score)."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS[name]
    return {"group": spec.group, "description": spec.description}


_SYSTEMS_SQL = """
    SELECT r.run_id, r.name, s.method, r.status, r.kind, r.created_at, r.dataset, r.dataset_fingerprint,
           ws.mean AS _score, ws.n_scored AS _score_n,
           ws.std AS _ws_sd,
           s.n_responses AS n, s.n_errors,
           CASE WHEN c.n_scored > 0 THEN c.mean
                WHEN s.n_reported_cost > 0 THEN s.reported_cost_usd / s.n_reported_cost END AS rag_cost_per_query_usd,
           j.judge_cost_usd / nullif(s.n_responses, 0) AS judge_cost_per_query_usd,
           coalesce(isnan(j.judge_cost_usd), false) AS judge_cost_unknown,
           s.latency_p50_ms, s.latency_p95_ms, s.n_abstained,
           coalesce(j.judges, nullif(array_to_string(r.judges, ', '), '')) AS judges, j.n_calls AS judge_calls
    FROM runs r
    JOIN summary_responses s USING (run_id)
    LEFT JOIN summary_judges j ON j.run_id = s.run_id AND j.method = s.method
    LEFT JOIN summary_metrics ws ON ws.run_id = s.run_id AND ws.method = s.method AND ws.metric = $ranked
    LEFT JOIN summary_metrics c ON c.run_id = s.run_id AND c.method = s.method AND c.metric = 'cost_usd'
    WHERE ($runs IS NULL OR list_contains($runs, r.run_id))
"""


def _with_cost(rows: pd.DataFrame) -> pd.DataFrame:
    """cost_per_query_usd by the one definition (evalcore.analysis.runs.cost)."""
    from evalcore.analysis.runs.cost import cost_per_query

    rows["cost_per_query_usd"] = cost_per_query(rows["rag_cost_per_query_usd"],
                                                rows["judge_cost_per_query_usd"] * rows["n"], rows["n"],
                                                judge_unknown=rows.pop("judge_cost_unknown"))
    return rows


def system_rows(store: RunStore, systems: Sequence[tuple[str, str]] | None = None,
                metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Leaderboard figures of the given (run, method) systems (all when None), plus the means
    of `metrics` as columns."""
    runs = sorted({r for r, _ in systems}) if systems is not None else None
    score = ranking_metric()
    rows = query_df(store, _SYSTEMS_SQL + " ORDER BY r.created_at DESC, s.method",
              {"runs": runs, "ranked": score}, runs=runs).rename(columns={"_score": score, "_score_n": f"{score}_n"})
    if systems is not None:
        wanted = set(map(tuple, systems))
        rows = rows[[(r, m) in wanted for r, m in zip(rows.run_id, rows.method)]].reset_index(drop=True)
    rows = _with_ci(store, _with_cost(rows), score)
    return _add_means(store, rows, list(metrics or []), runs)


def _with_ci(store: RunStore, rows: pd.DataFrame, score: str) -> pd.DataFrame:
    """The score's 95% CI by the one definition (evalcore.analysis.runs.means.mean_ci: seeded
    bootstrap; its normal limit above BOOT_MAX_N, straight from the summary's sd), where
    n_scored >= MIN_N_FOR_CI; `<score>_ci95` is its half-width (the page's ±)."""
    from evalcore.analysis.runs.means import BOOT_MAX_N, mean_ci, normal_ci

    lo, hi = [float("nan")] * len(rows), [float("nan")] * len(rows)
    n = rows[f"{score}_n"].fillna(0).astype(int).tolist()
    small = [i for i, k in enumerate(n) if MIN_N_FOR_CI <= k <= BOOT_MAX_N]
    values = {}
    if small:
        runs = sorted({rows["run_id"].iloc[i] for i in small})
        got = query_df(store, """SELECT run_id, method, value FROM metrics
                           WHERE metric = $score AND NOT isnan(value) AND list_contains($runs, run_id)""",
                 {"runs": runs, "score": score}, runs=runs)
        values = {k: g["value"].to_numpy(float) for k, g in got.groupby(["run_id", "method"])}
        values.update(_trial_means(store, runs, score))
    for i, k in enumerate(n):
        if k < MIN_N_FOR_CI:
            continue
        key = (rows["run_id"].iloc[i], rows["method"].iloc[i])
        lo[i], hi[i] = (normal_ci(rows[score].iloc[i], rows["_ws_sd"].iloc[i], k) if k > BOOT_MAX_N
                        else mean_ci(values.get(key, [])))
    rows[f"{score}_ci95"] = (pd.Series(hi, index=rows.index) - pd.Series(lo, index=rows.index)) / 2
    rows[f"{score}_ci_low"], rows[f"{score}_ci_high"] = lo, hi
    return rows.drop(columns="_ws_sd")


def _trial_means(store: RunStore, runs: list[str], score: str) -> dict[tuple[str, str], Any]:
    """{(run, method): each question's mean over its trials} of the systems asked with
    `--trials T`: the values their summary's mean is over (store/summary.py), so the CI is of
    the score shown. Systems without trials are not here (their values are read as before)."""
    got = query_df(store, """
        WITH tried AS (SELECT DISTINCT run_id, method FROM trial_metrics WHERE trial > 0 AND list_contains($runs, run_id))
        SELECT m.run_id, m.method, m.question_id, avg(m.value) AS value
        FROM trial_metrics m JOIN tried USING (run_id, method)
        WHERE m.metric = $score AND NOT isnan(m.value) AND list_contains($runs, m.run_id)
        GROUP BY ALL ORDER BY ALL""", {"runs": runs, "score": score}, runs=runs)
    return {k: g["value"].to_numpy(float) for k, g in got.groupby(["run_id", "method"])}


def run_board(store: RunStore, run_id: str) -> pd.DataFrame:
    """One run's leaderboard, one row per method (the index), best score first: the ranking
    metric and the key metrics the run has (key_metric_names(), the Runs page's defaults) and n,
    errors, cost per query and p50 latency — the Runs page's figures, for `evalcore demo` to
    print. Sorted by the ranking metric (weighted_score), else by the first key metric shown."""
    have = set(metric_names(store, [run_id]))
    # the score and the Runs page's default metric columns (its first six other key metrics)
    score = ranking_metric()
    wanted = [score] * (score in have) + [m for m in key_metric_names() if m in have and m != score][:6]
    rows = system_rows(store, [(run_id, m) for m in query_df(store, "SELECT DISTINCT method FROM summary_responses "
                                                              "WHERE run_id = ?", [run_id], runs=[run_id])["method"]],
                       wanted)
    cols = [*wanted, "n", "n_errors", "cost_per_query_usd", "latency_p50_ms"]
    board = rows.set_index("method")[[c for c in cols if c in rows.columns]]
    sort_by = next((c for c in wanted if c in board.columns), None)
    return board.sort_values(sort_by, ascending=False, na_position="last") if sort_by else board


def _add_means(store: RunStore, rows: pd.DataFrame, metrics: list[str], runs: list[str] | None) -> pd.DataFrame:
    metrics = [m for m in metrics if m != ranking_metric()]  # the score has its own column
    if rows.empty or not metrics:
        return rows
    means = query_df(store, """SELECT run_id, method, metric, mean FROM summary_metrics
                         WHERE list_contains($m, metric) AND ($runs IS NULL OR list_contains($runs, run_id))""",
               {"m": metrics, "runs": runs}, runs=runs)
    if means.empty:
        return rows
    wide = means.pivot(index=["run_id", "method"], columns="metric", values="mean").reset_index()
    wide.columns.name = None
    cols = [m for m in metrics if m in wide.columns]
    return rows.merge(wide[["run_id", "method", *cols]], on=["run_id", "method"], how="left")


def leaderboard(store: RunStore, metrics: Sequence[str] = (), search: str | None = None,
                statuses: Sequence[str] | None = None, dataset: str | None = None) -> pd.DataFrame:
    """Every system, best score (ranking_metric()) first; filters on a search text (name, run id, method,
    dataset), statuses, and a dataset fingerprint (only comparable runs ranked together).
    Systems with fewer than MIN_N_FOR_CI answers come after the ranked ones, each row says
    its error rate and flags a majority of failed answers (analysis/runs/ranking.py)."""
    rows = system_rows(store, None, metrics)
    if rows.empty:
        return rows
    keep = pd.Series(True, index=rows.index)
    if search:
        text = (rows["name"].fillna("") + " " + rows["run_id"] + " " + rows["method"] + " "
                + rows["dataset"].fillna("")).str.lower()
        keep &= text.str.contains(search.lower(), regex=False)
    if statuses:
        keep &= rows["status"].isin(list(statuses))
    if dataset:
        keep &= dataset_key(rows) == dataset
    rows = add_rank_columns(store, rows[keep], MIN_N_FOR_CI, ranking_metric())
    return ranked_order(rows, ranking_metric())  # too few questions to rank: listed after every ranked system


def dataset_key(rows: pd.DataFrame) -> pd.Series:
    """What makes runs comparable: the dataset fingerprint, else its name (older runs)."""
    return rows["dataset_fingerprint"].fillna(rows["dataset"]).fillna("(unknown dataset)")


def datasets(store: RunStore) -> pd.DataFrame:
    """Datasets in the store (fingerprint key, a readable name, runs), newest first."""
    runs = query_df(store, "SELECT run_id, dataset, dataset_fingerprint, created_at FROM runs ORDER BY created_at DESC")
    if runs.empty:
        return pd.DataFrame(columns=["key", "name", "n_runs"])
    runs["key"] = dataset_key(runs)
    out = runs.groupby("key", sort=False).agg(name=("dataset", "first"), n_runs=("run_id", "count")).reset_index()
    out["name"] = out["name"].fillna(out["key"])
    return out


def runs_overview(store: RunStore) -> pd.DataFrame:
    """One row per run (newest first), as a DataFrame: analysis.runs.run_listing's rows (what `evalcore
    runs` prints; that command reads them without pandas)."""
    columns = [f.name for f in fields(RunRow)]
    frame = pd.DataFrame([asdict(row) for row in run_rows(store)], columns=columns)
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
    return frame


def systems(store: RunStore, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Every (run, method) with answers, newest run first; `label` is for pickers."""
    runs = list(run_ids) if run_ids is not None else None
    return query_df(store, """
        SELECT s.run_id, s.method, r.name, r.created_at, r.dataset, r.dataset_fingerprint,
               r.name || ' / ' || s.method || '  (' || s.run_id || ')' AS label,
               EXISTS (SELECT 1 FROM summary_metrics m WHERE m.run_id = s.run_id AND m.method = s.method)
                   AS has_metrics
        FROM summary_responses s JOIN runs r USING (run_id)
        WHERE $runs IS NULL OR list_contains($runs, s.run_id)
        ORDER BY r.created_at DESC, s.method""", {"runs": runs}, runs=runs)


def run_list(store: RunStore) -> pd.DataFrame:
    return query_df(store, "SELECT run_id, name, status, created_at, kind, dataset FROM runs ORDER BY created_at DESC")


def metric_names(store: RunStore, run_ids: Sequence[str] | None = None) -> list[str]:
    runs = list(run_ids) if run_ids is not None else None
    out = query_df(store, """SELECT DISTINCT metric FROM summary_metrics
                       WHERE $runs IS NULL OR list_contains($runs, run_id) ORDER BY metric""", {"runs": runs}, runs=runs)
    return out["metric"].tolist()


def facet_values(store: RunStore, run_id: str) -> dict[str, list[str]]:
    """Distinct categories and question types of a run (the filter allow-lists)."""
    out = query_df(store, """SELECT 'category' AS facet, category AS v FROM questions WHERE run_id = $r AND category IS NOT NULL
                       UNION SELECT 'question_type', question_type FROM questions
                       WHERE run_id = $r AND question_type IS NOT NULL ORDER BY 1, 2""", {"r": run_id}, runs=[run_id])
    return {f: out.loc[out.facet == f, "v"].tolist() for f in ("category", "question_type")}
