"""The run as one flat table, one row per (question, method): what `evalcore export` writes.

Columns: the question (id, text, ground truth, category, type), the answer and its operational
fields (abstained, latency, error), the retrieved contexts as one JSON list of texts, then one
column per metric. A metric named like an operational column (latency_ms) replaces it: the
values are the same, and one name must mean one column. A run asked with `--trials T` has one
row per (question, method, trial), with a `trial` column after `method` (the column
`evalcore import` reads back); a run without trials has neither, exactly as before.
"""

from __future__ import annotations

import pandas as pd

from evalcore.store import RunStore, open_db


def wide_results(store: RunStore, run_id: str) -> pd.DataFrame:
    """One row per (question, method[, trial]): question, ground truth, answer, then one column
    per metric."""
    with open_db(store, runs=[run_id]) as con:
        trials = con.execute("SELECT coalesce(max(trial), 0) > 0 FROM trial_responses WHERE run_id = ?",
                             [run_id]).fetchone()[0]
        prefix, trial = ("trial_", "r.trial, ") if trials else ("", "")
        base_sql = f"""
            SELECT q.question_id, r.method, {trial}q.question, q.ground_truth, r.answer,
                   q.category, q.question_type, r.abstained, r.latency_ms, r.error,
                   to_json(list_transform(CAST(json_extract(r.record, '$.retrieved') AS JSON[]),
                                          lambda c: json_extract_string(c, '$.text'))) AS contexts
            FROM questions q JOIN {prefix}responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
            WHERE q.run_id = ? ORDER BY r.method, q.question_id{', r.trial' if trials else ''}
        """
        base = con.execute(base_sql, [run_id]).df()
        values = con.execute(f"SELECT question_id, method, {trial.replace('r.', '')}metric, value "
                             f"FROM {prefix}metrics WHERE run_id = ?", [run_id]).df()
    if values.empty:
        return base
    keys = ["question_id", "method", *(["trial"] if trials else [])]
    if trials:  # a metric named like the key column (names are data) keeps its values apart
        values["metric"] = values["metric"].replace({"trial": "trial (metric)"})
    wide = values.pivot_table(index=keys, columns="metric", values="value", aggfunc="first", dropna=False).reset_index()
    wide.columns.name = None
    base = base.drop(columns=[c for c in wide.columns if c in base.columns and c not in keys])
    return base.merge(wide, on=keys, how="left")


