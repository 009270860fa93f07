"""Read side of the store: DuckDB views over every run, and the query functions the CLI,
exports and the app use. Nothing outside store.py/queries.py touches the files.

Views (one connection = a consistent set of views):
  runs           one row per run (from run.json manifests)
  questions, responses, metrics, judge_calls
                 newest row per key across all part files (re-writes replace, never duplicate)
  claims         the newest claim set per (run, method, question, metric)
  annotations    every human annotation (append-only, never deduplicated)
  raw_<table>    every row of every part file, for audits
User-supplied values only ever reach SQL as bound parameters.

NaN: Parquet min/max statistics ignore NaN, and DuckDB's statistics propagation then folds
`isnan(value)` to false for a file it believes has no NaN. Every connection disables that
optimizer (and the store writes no statistics for NaN-bearing columns), so NaN filters hold.
"""

from __future__ import annotations

import glob
import json
from contextlib import contextmanager
from typing import Any, Iterator

import duckdb
import pandas as pd
import pyarrow as pa

from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.store import RunStore
from evalcore.tables import ANNOTATIONS_SCHEMA, KEYS, ORDER_COLUMN, SCHEMAS


def _source(con: duckdb.DuckDBPyConnection, name: str, pattern: str, schema: pa.Schema) -> str:
    """SQL for a table's rows: the Parquet glob, or an empty typed table when nothing exists."""
    if glob.glob(pattern):
        quoted = pattern.replace("'", "''")
        return f"read_parquet('{quoted}', union_by_name = true)"
    con.register(f"_empty_{name}", schema.empty_table())
    return f"_empty_{name}"


def _manifest_table(store: RunStore) -> pa.Table:
    rows = []
    for m in store.manifests():
        rows.append({
            "run_id": m.run_id, "name": m.name, "kind": m.kind, "status": m.status,
            "created_at": m.created_at, "finished_at": m.finished_at,
            "methods": m.methods, "judges": m.judges,
            "dataset": m.dataset.get("name") or m.dataset.get("path"),
            "n_questions": m.counts.get("questions"), "evalcore_version": m.evalcore_version,
            "manifest": m.model_dump_json(),
        })
    schema = pa.schema([
        ("run_id", pa.string()), ("name", pa.string()), ("kind", pa.string()), ("status", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")), ("finished_at", pa.timestamp("us", tz="UTC")),
        ("methods", pa.list_(pa.string())), ("judges", pa.list_(pa.string())),
        ("dataset", pa.string()), ("n_questions", pa.int64()), ("evalcore_version", pa.string()),
        ("manifest", pa.string()),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


@contextmanager
def open_db(store: RunStore) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection with the store's views defined."""
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET disabled_optimizers = 'statistics_propagation'")
        con.register("runs_manifest", _manifest_table(store))
        con.execute("CREATE VIEW runs AS SELECT * FROM runs_manifest")
        for table, schema in SCHEMAS.items():
            src = _source(con, table, store.table_glob(table), schema)
            con.execute(f"CREATE VIEW raw_{table} AS SELECT * FROM {src}")
            order = ORDER_COLUMN[table]
            if table in KEYS:
                keys = ", ".join(KEYS[table])
                con.execute(
                    f"CREATE VIEW {table} AS SELECT * FROM raw_{table} "
                    f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY {order} DESC) = 1")
            else:  # claims: keep the newest set per (run, method, question, metric)
                con.execute(
                    f"CREATE VIEW {table} AS SELECT * FROM raw_{table} QUALIFY {order} = "
                    f"max({order}) OVER (PARTITION BY run_id, method, question_id, metric)")
        ann_glob = str(store.annotations_dir().resolve() / "*.parquet")
        src = _source(con, "annotations", ann_glob, ANNOTATIONS_SCHEMA)
        con.execute(f"CREATE VIEW annotations AS SELECT * FROM {src}")
        yield con
    finally:
        con.close()


def query_df(store: RunStore, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
    with open_db(store) as con:
        return con.execute(sql, params or []).df()


def runs_overview(store: RunStore) -> pd.DataFrame:
    """One row per run with question/response/error counts, newest first."""
    sql = """
        SELECT r.run_id, r.name, r.kind, r.status, r.created_at, r.dataset,
               array_to_string(r.methods, ',') AS methods,
               coalesce(q.n_questions, 0) AS n_questions,
               coalesce(s.n_responses, 0) AS n_responses,
               coalesce(s.n_errors, 0) AS n_errors,
               coalesce(m.n_metric_values, 0) AS n_metric_values,
               s.latency_p50_ms
        FROM runs r
        LEFT JOIN (SELECT run_id, count(*) AS n_questions FROM questions GROUP BY run_id) q USING (run_id)
        LEFT JOIN (SELECT run_id, count(*) AS n_responses, count(error) AS n_errors,
                          quantile_cont(latency_ms, 0.5) AS latency_p50_ms
                   FROM responses GROUP BY run_id) s USING (run_id)
        LEFT JOIN (SELECT run_id, count(*) AS n_metric_values FROM metrics GROUP BY run_id) m USING (run_id)
        ORDER BY r.created_at DESC
    """
    return query_df(store, sql)


def run_questions(store: RunStore, run_id: str) -> list[EvalQuestion]:
    df = query_df(store, "SELECT record FROM questions WHERE run_id = ? ORDER BY question_id", [run_id])
    return [EvalQuestion.model_validate_json(r) for r in df["record"]]


def run_responses(store: RunStore, run_id: str, method: str | None = None) -> list[EvalResponse]:
    sql = "SELECT record FROM responses WHERE run_id = ? AND (? IS NULL OR method = ?) ORDER BY method, question_id"
    df = query_df(store, sql, [run_id, method, method])
    return [EvalResponse.model_validate_json(r) for r in df["record"]]


def metric_summary(store: RunStore, run_id: str) -> pd.DataFrame:
    """Per method and metric: mean over scored values, n_scored / n, NaN reasons."""
    sql = """
        SELECT method, metric, "group",
               avg(value) FILTER (WHERE NOT isnan(value)) AS mean,
               count(*) FILTER (WHERE NOT isnan(value)) AS n_scored,
               count(*) AS n,
               string_agg(DISTINCT reason, '; ') FILTER (WHERE isnan(value)) AS not_scored_reasons,
               any_value(judge_id) AS judge_id
        FROM metrics WHERE run_id = ?
        GROUP BY method, metric, "group" ORDER BY method, "group", metric
    """
    return query_df(store, sql, [run_id])


def wide_results(store: RunStore, run_id: str) -> pd.DataFrame:
    """One row per (question, method): question, ground truth, answer, then one column per metric."""
    base_sql = """
        SELECT q.question_id, r.method, q.question, q.ground_truth, r.answer,
               q.category, q.question_type, r.abstained, r.latency_ms, r.error
        FROM questions q JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
        WHERE q.run_id = ? ORDER BY r.method, q.question_id
    """
    metrics_sql = "SELECT question_id, method, metric, value FROM metrics WHERE run_id = ?"
    with open_db(store) as con:
        base = con.execute(base_sql, [run_id]).df()
        values = con.execute(metrics_sql, [run_id]).df()
    if values.empty:
        return base
    wide = values.pivot_table(index=["question_id", "method"], columns="metric", values="value",
                              aggfunc="first", dropna=False).reset_index()
    wide.columns.name = None
    return base.merge(wide, on=["question_id", "method"], how="left")


def manifest_json(store: RunStore, run_id: str) -> dict[str, Any]:
    return json.loads(store.manifest(run_id).model_dump_json())
