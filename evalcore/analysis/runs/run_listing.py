"""The list of runs `evalcore runs` prints: one row per run, from manifests and summaries.

Why a module without pandas: listing the runs is the command people type most, and pandas
alone took longer to import than the whole listing takes to compute (docs/benchmarks.md, "CLI
start"). The rows come straight from DuckDB as Python values; `runs --json` is written from
them with the keys, order and date format the DataFrame version printed. The leaderboard's
DataFrame of the same rows (analysis.runs.leaderboard.runs_overview) is built from these.

Latency is not pooled into one run figure: `latency_p50_ms` is {method: p50 ms} per system (the
slowest method's p50 described no system of the run).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalcore.store import RunStore

_RUNS_SQL = """
    SELECT r.run_id, r.name, r.kind, r.status, r.created_at, r.dataset,
           array_to_string(r.methods, ',') AS methods,
           CAST(coalesce(q.n_questions, r.n_questions, 0) AS BIGINT) AS n_questions,
           CAST(coalesce(s.n_responses, 0) AS BIGINT) AS n_responses,
           CAST(coalesce(s.n_errors, 0) AS BIGINT) AS n_errors,
           CAST(coalesce(m.n_metric_values, 0) AS BIGINT) AS n_metric_values
    FROM runs r
    LEFT JOIN (SELECT run_id, count(*) AS n_questions FROM questions GROUP BY run_id) q USING (run_id)
    LEFT JOIN (SELECT run_id, sum(n_responses) AS n_responses, sum(n_errors) AS n_errors
               FROM summary_responses GROUP BY run_id) s USING (run_id)
    LEFT JOIN (SELECT run_id, sum(n) AS n_metric_values FROM summary_metrics GROUP BY run_id) m USING (run_id)
    ORDER BY r.created_at DESC"""

_LATENCY_SQL = "SELECT run_id, method, latency_p50_ms FROM summary_responses ORDER BY run_id, method"


@dataclass(frozen=True)
class RunRow:
    """One run as listed (created_at in UTC)."""

    run_id: str
    name: str | None
    kind: str | None
    status: str | None
    created_at: datetime | None
    dataset: str | None
    methods: str | None
    n_questions: int
    n_responses: int
    n_errors: int
    n_metric_values: int
    latency_p50_ms: dict[str, float | None] = field(default_factory=dict)


def _utc(value: datetime | None) -> datetime | None:
    """DuckDB hands a TIMESTAMPTZ over in the session's time zone (the machine's): list it in UTC."""
    return value.astimezone(timezone.utc) if value is not None else None


def _number(value: object) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def run_rows(store: RunStore) -> list[RunRow]:
    """Every readable run, newest first (damaged runs are left out: the store lists them apart)."""
    from evalcore.store import open_db

    with open_db(store) as con:
        runs = con.execute(_RUNS_SQL).fetchall()
        latency: dict[str, dict[str, float | None]] = {}
        for run_id, method, p50 in con.execute(_LATENCY_SQL).fetchall():
            latency.setdefault(run_id, {})[method] = _number(p50)
    return [RunRow(run_id, name, kind, status, _utc(created), dataset, methods, int(nq), int(nr), int(ne), int(nm),
                   latency.get(run_id, {}))
            for run_id, name, kind, status, created, dataset, methods, nq, nr, ne, nm in runs]


def _iso_ms(value: datetime | None) -> str | None:
    """ISO 8601 in UTC to the millisecond with a Z ('2026-11-27T16:45:00.369Z'): what `runs
    --json` has always printed (pandas' to_json with date_format='iso')."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def rows_json(rows: list[RunRow]) -> str:
    """`evalcore runs --json`: a JSON array, one object per run, non-ASCII text as is."""
    records = [{**asdict(row), "created_at": _iso_ms(row.created_at)} for row in rows]
    return json.dumps(records, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
