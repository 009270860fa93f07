"""A frame of answers read from the store, for tests that run the answer-class rule and the
diagnosis over a frame (correctness.classify, failure_modes.explained) beside the same rules run
in the store (diagnoses, failure_modes, label_counts).

The rows are those of correctness.outcome_sql, the query the store's counts run on; each
metric_wide column is named the way question_story hands an answer to the rules: a value column
by its metric's name, answer_class's label as answer_class_label. (The library's own builder of
such frames, correctness.outcome_frame, went, and so did the one-answer forms classify_row,
explain and diagnose: nothing but tests called them.)
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from evalcore.analysis.read import correctness as CO
from evalcore.store import query_df
from evalcore.store.wide import label_column, value_column


def answer_frame(store, keys: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per answer of the systems `keys` (`run_id:method`), by system and question id:
    system, method, question_id, error, answerable and the values of `metrics` (a metric no run
    has is no column, which the rules read as missing)."""
    source, params, _ = CO.outcome_sql(store, keys, metrics)
    out = query_df(store, f"SELECT * FROM {source} ORDER BY system, question_id", params, runs=CO.runs_of(keys))
    names = {value_column(m): m for m in (*metrics, CO.CLASS_METRIC)}
    names[label_column(CO.CLASS_METRIC)] = CO.CLASS_LABEL
    return out.drop(columns="bucket").rename(columns=names).reset_index(drop=True)


def class_of(row: pd.Series | dict) -> tuple[str, str | None]:
    """(class, decided_by) of one answer: correctness.classify over a one-row frame."""
    out = CO.classify(pd.DataFrame([dict(row)])).iloc[0]
    return str(out["cls"]), (out["decided_by"] if isinstance(out["decided_by"], str) else None)


def explained_row(row: pd.Series | dict) -> tuple[str | None, str]:
    """(bucket, its basis in words) of one answer: failure_modes.explained (what the Questions
    page's story of one question runs) over a one-row frame."""
    from evalcore.analysis.questions.failure_modes import explained

    out = explained(pd.DataFrame([dict(row)]))
    return out["bucket"].iloc[0], out["basis"].iloc[0]


def bucket_of(row: pd.Series | dict) -> str | None:
    """The diagnosis of one answer (explained_row's bucket)."""
    return explained_row(row)[0]
