"""One question's trials side by side (the Questions page of a run asked with `--trials T`).

Why: with T answers per question and method, the question a reader brings to one question is
"do its answers agree, and on what?". Per method: each trial's answer (or error) and its value
of every metric (the label where the metric states one: a grade, an answer class), and which
metrics flip (their trials disagree, by the rule the flip rate counts: evalcore.stats.repeats).
A run without trials has nothing here (every method has one trial), and the page shows nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evalcore.analysis.read.trial_values import trial_counts, trial_frame
from evalcore.schemas.ids import id_sql
from evalcore.stats.repeats import Answer
from evalcore.store import RunStore, query_df


FIXED = ("trial", "answer", "error")  # the table's own columns, before one per metric


def _answers(store: RunStore, run_id: str, qid: str) -> pd.DataFrame:
    return query_df(store, f"""SELECT method, trial, answer, error FROM trial_responses
                               WHERE run_id = $run AND {id_sql("question_id")} = {id_sql("$q")}
                               ORDER BY method, trial""", {"run": run_id, "q": qid}, runs=[run_id])


def _cell(value: float, label: Any) -> Any:
    """A trial's verdict as shown: its label where the metric states one, else its value."""
    if isinstance(label, str):
        return label
    return None if value is None or np.isnan(value) else round(float(value), 4)


def _flips(rows: pd.DataFrame) -> bool:
    labels = tuple(x if isinstance(x, str) else None for x in rows["label"])
    return bool(Answer(tuple(rows["value"].to_numpy(dtype=float)), labels).flips())


def question_trials(store: RunStore, run_id: str, qid: str) -> list[dict[str, Any]]:
    """Per method of the run with trials: {"method", "trials": T, "table": one row per trial
    (trial, answer, error, then a column per metric), "flipped": the metrics whose trials
    disagree on this question}. [] for a run without trials."""
    methods = store.manifest(run_id).methods
    keys = [f"{run_id}:{m}" for m in methods]
    counts = trial_counts(store, keys)
    tried = [k for k in keys if counts[k] > 1]
    if not tried:
        return []
    answers = _answers(store, run_id, qid)
    values = trial_frame(store, tried, question_id=qid)
    out = []
    for key in tried:
        method = key.partition(":")[2]
        table = answers[answers.method == method].drop(columns="method").reset_index(drop=True)
        mine = values[values.system == key]
        flipped = []
        for metric, rows in mine.groupby("metric", sort=True):
            cells = dict(zip(rows["trial"], (_cell(v, lab) for v, lab in zip(rows["value"], rows["label"]))))
            column = metric if metric not in FIXED else f"{metric} (metric)"  # names are data
            table[column] = [cells.get(t) for t in table["trial"]]
            if _flips(rows):
                flipped.append(metric)
        out.append({"method": method, "trials": counts[key], "table": table, "flipped": flipped})
    return out
