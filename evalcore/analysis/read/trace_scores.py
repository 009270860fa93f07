"""A run's metric values next to the trace each answer came from: what `export --to phoenix://` sends.

Answers imported from OpenInference traces keep their root span's id in
`raw.openinference.span_id` (evalcore/traces/trace_import.py); one row per (answer, metric) with
that span id, the value, the judge's reason and the judge's label.
"""

from __future__ import annotations

import pandas as pd

from evalcore.store import RunStore, open_db


def trace_metric_values(store: RunStore, run_id: str) -> pd.DataFrame:
    """Columns: method, question_id, trace_id, span_id, project, metric, value, reason, judge_id,
    label, version. span_id is null for an answer that did not come from a trace."""
    sql = """
        SELECT r.method, r.question_id,
               json_extract_string(r.record, '$.raw.openinference.trace_id') AS trace_id,
               json_extract_string(r.record, '$.raw.openinference.span_id') AS span_id,
               json_extract_string(r.record, '$.raw.openinference.project') AS project,
               m.metric, m.value, m.reason, m.judge_id, m.label, m.version
        FROM responses r JOIN metrics m
          ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
        WHERE r.run_id = ? ORDER BY r.method, r.question_id, m.metric
    """
    with open_db(store, runs=[run_id]) as con:
        return con.execute(sql, [run_id]).df()
