"""The run as one flat table, one row per (question, method): what `evalcore export` writes.

Columns: the question (id, text, ground truth, category, type), the answer and its operational
fields (abstained, latency, error), the retrieved contexts as one JSON list of texts, then one
column per metric. A metric named like an operational column (latency_ms) replaces it: the
values are the same, and one name must mean one column.
"""

from __future__ import annotations

import pandas as pd

from evalcore.store import RunStore, open_db


def wide_results(store: RunStore, run_id: str) -> pd.DataFrame:
    """One row per (question, method): question, ground truth, answer, then one column per metric."""
    base_sql = """
        SELECT q.question_id, r.method, q.question, q.ground_truth, r.answer,
               q.category, q.question_type, r.abstained, r.latency_ms, r.error,
               to_json(list_transform(CAST(json_extract(r.record, '$.retrieved') AS JSON[]),
                                      lambda c: json_extract_string(c, '$.text'))) AS contexts
        FROM questions q JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
        WHERE q.run_id = ? ORDER BY r.method, q.question_id
    """
    metrics_sql = "SELECT question_id, method, metric, value FROM metrics WHERE run_id = ?"
    with open_db(store, runs=[run_id]) as con:
        base = con.execute(base_sql, [run_id]).df()
        values = con.execute(metrics_sql, [run_id]).df()
    if values.empty:
        return base
    wide = values.pivot_table(index=["question_id", "method"], columns="metric", values="value",
                              aggfunc="first", dropna=False).reset_index()
    wide.columns.name = None
    base = base.drop(columns=[c for c in wide.columns if c in base.columns and c not in ("question_id", "method")])
    return base.merge(wide, on=["question_id", "method"], how="left")


