"""A run's metric values one row per answer: written beside its canonical files at compaction.

Why: the metrics table has one row per (answer, metric), so every question that reads several
metrics of one answer — is it correct (the answer-class rule reads up to eleven), how did two
systems differ on every metric — first pivots millions of rows. At 100,000 questions and 30
metrics that pivot alone took 0.7 s per page, on every cold page. The pivot is the same every
time, so compaction does it once per run and readers read a few columns of it.

Layout of the `metric_wide` table (derived data: recomputed from the canonical metrics rows
whenever they change, so it can never disagree with them):
  run_id, method, question_id   one row per answer that has at least one metric row
  "v:<metric>"                  the metric's value, DOUBLE; NULL where it is missing or NaN
                                (the NaN's reason stays in the metrics table)
  "l:<metric>"                  the metric's categorical label (grades, answer classes),
                                VARCHAR, only for metrics that carry labels in the run
Columns differ between runs (each run has its own metrics); readers union them by name and
ask `columns()` which exist. Metric names are data: they reach SQL only through `ident` and
`literal`, which quote every character.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # the module's names are needed by the store's layout, which must not load DuckDB
    import duckdb

WIDE_TABLE = "metric_wide"
KEY_COLUMNS = ("run_id", "method", "question_id")
# how the file is written: groups of 16k answers (a system's rows decode on every core, and a
# read of one method skips the other's groups), floats without a dictionary (74 vs 86 MB at
# 100,000 questions, reads ~20% faster)
WIDE_WRITE = {"row_group_size": 16_384, "dictionary_floats": False}
VALUE_PREFIX = "v:"
LABEL_PREFIX = "l:"


def ident(name: str) -> str:
    """A SQL identifier for any column name (double quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """A SQL string literal for any text (single quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def value_column(metric: str) -> str:
    return VALUE_PREFIX + metric


def label_column(metric: str) -> str:
    return LABEL_PREFIX + metric


def wide_sql(metrics: Sequence[str], labelled: Sequence[str], where: str = "true") -> str:
    """The pivot of the `metrics` view (rows matching `where`) into one row per answer.

    `metrics`: the metric names to make value columns of; `labelled`: those that get a label
    column too. The rows come ordered by (run_id, method, question_id), so a read of one
    system's rows skips the other system's row groups."""
    cols = [f"max(CASE WHEN isnan(value) THEN NULL ELSE value END) FILTER (WHERE metric = {literal(m)}) "
            f"AS {ident(value_column(m))}" for m in metrics]
    cols += [f"any_value(label) FILTER (WHERE metric = {literal(m)}) AS {ident(label_column(m))}" for m in labelled]
    select = ", ".join(["run_id", "method", "question_id", *cols])
    return (f"SELECT {select} FROM metrics WHERE {where} GROUP BY run_id, method, question_id "
            "ORDER BY run_id, method, question_id")


def names_in(con: "duckdb.DuckDBPyConnection", where: str = "true") -> tuple[list[str], list[str]]:
    """(every metric name, those carrying a label) among the `metrics` view's rows matching
    `where`, sorted: the columns `wide_sql` makes."""
    rows = con.execute(f"SELECT metric, bool_or(label IS NOT NULL) FROM metrics WHERE {where} "
                       "GROUP BY metric ORDER BY metric").fetchall()
    return [m for m, _ in rows], [m for m, labelled in rows if labelled]


def compute_sql(con: "duckdb.DuckDBPyConnection", where: str = "true") -> str:
    """`wide_sql` over the metrics the `metrics` view holds (rows matching `where`)."""
    metrics, labelled = names_in(con, where)
    return wide_sql(metrics, labelled, where)


def value_expr(metric: str, present: "set[str] | frozenset[str]", table: str = "") -> str:
    """SQL for a metric's value column of metric_wide, or a typed NULL when no run read has it
    (columns differ between runs: naming an absent one is a binder error)."""
    col = value_column(metric)
    return f"{table + '.' if table else ''}{ident(col)}" if col in present else "NULL::DOUBLE"


def label_expr(metric: str, present: "set[str] | frozenset[str]", table: str = "") -> str:
    """SQL for a metric's label column of metric_wide, or a typed NULL (see value_expr)."""
    col = label_column(metric)
    return f"{table + '.' if table else ''}{ident(col)}" if col in present else "NULL::VARCHAR"
