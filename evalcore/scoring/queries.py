"""Small read helpers over the store's views (evalcore.store.query_df) used by the writers
themselves: scoring reads a run's questions and answers back, the live runner what is done.
Numbers people read are computed in evalcore.analysis, not here.
"""

from __future__ import annotations

from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.ids import STORED
from evalcore.store import RunStore


def run_questions(store: RunStore, run_id: str) -> list[EvalQuestion]:
    from evalcore.store import query_df  # DuckDB loads with the first read (a scoring child never reads)

    df = query_df(store, "SELECT record FROM questions WHERE run_id = ? ORDER BY question_id", [run_id], runs=[run_id])
    return [EvalQuestion.model_validate_json(r, context=STORED) for r in df["record"]]


def run_responses(store: RunStore, run_id: str, method: str | None = None,
                  every_trial: bool = False) -> list[EvalResponse]:
    """The run's answers (of `method`), trial 0's; with `every_trial`, every trial's (a run
    asked with `--trials T`: scoring scores each), each record carrying its trial."""
    from evalcore.store import query_df

    table = "trial_responses" if every_trial else "responses"
    sql = (f"SELECT record FROM {table} WHERE run_id = ? AND (? IS NULL OR method = ?) "
           "ORDER BY method, question_id, trial")
    df = query_df(store, sql, [run_id, method, method], runs=[run_id])
    return [EvalResponse.model_validate_json(r, context=STORED) for r in df["record"]]
