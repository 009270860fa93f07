"""The columns of every table in the store and how its rows are keyed: names and DuckDB type
names, in plain Python.

Why apart from tables.py: readers need a table's columns (a typed empty view where no run has a
file of it yet, the check that a file holds the table its name says) but never build an Arrow
table, and importing pyarrow (numpy with it) took a third of `evalcore runs`' start. tables.py
builds the Arrow schemas that writers use from these same lists (`arrow_schema`), so what is
written and what a reader expects cannot drift apart.

Types are DuckDB's names for what the Arrow schemas hold: VARCHAR (string), VARCHAR[] (list of
strings), BOOLEAN, INTEGER (int32), BIGINT (int64), DOUBLE (float64) and TIMESTAMPTZ (UTC
microseconds).
"""

from __future__ import annotations

Column = tuple[str, str]  # (name, DuckDB type)
TS = "TIMESTAMPTZ"

COLUMNS: dict[str, tuple[Column, ...]] = {
    "questions": (
        ("run_id", "VARCHAR"), ("question_id", "VARCHAR"), ("question", "VARCHAR"),
        ("ground_truth", "VARCHAR"), ("category", "VARCHAR"), ("question_type", "VARCHAR"),
        ("difficulty", "VARCHAR"), ("tags", "VARCHAR[]"), ("answerable", "BOOLEAN"),
        ("n_gold", "INTEGER"), ("record", "VARCHAR"), ("written_at", TS),
    ),
    "responses": (
        ("run_id", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("answer", "VARCHAR"), ("abstained", "BOOLEAN"), ("latency_ms", "DOUBLE"),
        ("error", "VARCHAR"), ("error_kind", "VARCHAR"), ("input_tokens", "BIGINT"),
        ("output_tokens", "BIGINT"), ("cost_usd", "DOUBLE"), ("n_retrieved", "INTEGER"),
        ("record", "VARCHAR"), ("written_at", TS), ("trial", "INTEGER"),
    ),
    "metrics": (
        ("run_id", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("metric", "VARCHAR"), ("value", "DOUBLE"), ("group", "VARCHAR"),
        ("version", "VARCHAR"), ("reason", "VARCHAR"), ("details", "VARCHAR"),
        ("judge_id", "VARCHAR"), ("computed_at", TS), ("label", "VARCHAR"), ("trial", "INTEGER"),
    ),
    "judge_calls": (
        ("run_id", "VARCHAR"), ("call_key", "VARCHAR"), ("judge_id", "VARCHAR"),
        ("judge", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("purpose", "VARCHAR"), ("request", "VARCHAR"), ("response_raw", "VARCHAR"),
        ("parsed", "VARCHAR"), ("input_tokens", "BIGINT"), ("output_tokens", "BIGINT"),
        ("cost_usd", "DOUBLE"), ("latency_ms", "DOUBLE"), ("cache_hit", "BOOLEAN"),
        ("error", "VARCHAR"), ("created_at", TS),
    ),
    "claims": (
        ("run_id", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("source", "VARCHAR"), ("idx", "INTEGER"), ("text", "VARCHAR"),
        ("verdict", "VARCHAR"), ("reason", "VARCHAR"), ("metric", "VARCHAR"),
        ("judge_id", "VARCHAR"), ("computed_at", TS), ("trial", "INTEGER"),
    ),
    "context_verdicts": (
        ("run_id", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("metric", "VARCHAR"), ("rank", "INTEGER"), ("verdict", "VARCHAR"), ("score", "DOUBLE"),
        ("reason", "VARCHAR"), ("judge_id", "VARCHAR"), ("computed_at", TS), ("trial", "INTEGER"),
    ),
    # the K judge verdicts behind a judged value (`score --repeats K`); runs scored with K = 1
    # have none (read as one repeat: the value). `value_at` = the value's computed_at
    "metric_repeats": (
        ("run_id", "VARCHAR"), ("method", "VARCHAR"), ("question_id", "VARCHAR"),
        ("metric", "VARCHAR"), ("repeat", "INTEGER"), ("value", "DOUBLE"), ("label", "VARCHAR"),
        ("judge_id", "VARCHAR"), ("reason", "VARCHAR"), ("value_at", TS), ("computed_at", TS),
        ("trial", "INTEGER"),
    ),
}

ANNOTATION_COLUMNS: tuple[Column, ...] = (
    ("annotation_id", "VARCHAR"), ("who", "VARCHAR"), ("when", TS), ("run_id", "VARCHAR"),
    ("method", "VARCHAR"), ("question_id", "VARCHAR"), ("target_kind", "VARCHAR"),
    ("target_ref", "VARCHAR"), ("judge_label", "VARCHAR"), ("label", "VARCHAR"),
    ("note", "VARCHAR"), ("sample_id", "VARCHAR"), ("inclusion_prob", "DOUBLE"),
    ("shown_left", "VARCHAR"),  # preferences only; NULL in part files written before it existed
)

# Key columns per table: compaction keeps the newest row per key, so re-writing a row
# (re-scoring, a resumed run) replaces it instead of duplicating it. `trial` (which of a
# question's T trials the answer is, `run --trials T`) ends the key of every table of answers
# and what was judged of them; a file written before trials has no such column, and its rows
# are trial 0 (KEY_DEFAULTS), so nothing stored changes meaning.
KEYS: dict[str, tuple[str, ...]] = {
    "questions": ("run_id", "question_id"),
    "responses": ("run_id", "method", "question_id", "trial"),
    "metrics": ("run_id", "method", "question_id", "metric", "trial"),
    "judge_calls": ("run_id", "call_key"),
}
# A key column added after files without it were written, and the value such a file's rows have.
KEY_DEFAULTS: dict[str, int] = {"trial": 0}
# The tables whose rows belong to one trial of an answer: readers see trial 0 under the table's
# own name (store/views.py), every trial under `trial_<table>` where one is offered.
TRIAL_TABLES = ("responses", "metrics", "claims", "context_verdicts", "metric_repeats")
# Set tables: rows written in one call form one set per key (they share a timestamp), and
# compaction keeps the newest set whole, so a re-score with fewer claims leaves no stale ones.
SET_KEYS: dict[str, tuple[str, ...]] = {
    "claims": ("run_id", "method", "question_id", "metric", "trial"),
    "context_verdicts": ("run_id", "method", "question_id", "metric", "trial"),
    "metric_repeats": ("run_id", "method", "question_id", "metric", "trial"),  # a re-score with fewer K leaves none
}
# An empty set is written as one marker row whose column here is negative: it wins like any
# newer set (so a re-score that found no claims replaces the old ones) and compaction drops it.
EMPTY_SET_MARKER = {"claims": "idx", "context_verdicts": "rank"}
ORDER_COLUMN = {"questions": "written_at", "responses": "written_at", "metrics": "computed_at",
                "judge_calls": "created_at", "claims": "computed_at", "context_verdicts": "computed_at",
                "metric_repeats": "computed_at"}
# Sort order of a compacted file: what readers filter on first.
SORT_COLUMNS = {**KEYS, **SET_KEYS}


def column_names(table: str) -> list[str]:
    """The columns of run table `table`, in order."""
    return [name for name, _ in COLUMNS[table]]


def create_table_sql(name: str, columns: tuple[Column, ...]) -> str:
    """CREATE TABLE of `name` with `columns` (every column name quoted: `group`, `when` and
    `rank` are SQL words)."""
    defined = ", ".join('"' + column.replace('"', '""') + '" ' + sql_type for column, sql_type in columns)
    return f"CREATE TABLE {name} ({defined})"
