"""How far a run has got: answers stored, published or not yet published.

Why its own function: a live run publishes what it has written every few seconds (compaction),
so the published count alone lags; the writer's pending part files say the rest.
"""

from __future__ import annotations

from evalcore.store import RunStore, query_df


def answers_stored(store: RunStore, run_id: str) -> int:
    """Answers of the run on disk: published (its summary) plus written since the last publish."""
    published = query_df(store, "SELECT coalesce(sum(n_responses), 0) AS n FROM summary_responses WHERE run_id = ?",
                   [run_id], runs=[run_id])
    return int(published["n"].iloc[0]) + store.pending_rows(run_id, "responses")


def answer_failures(store: RunStore, run_id: str) -> dict:
    """How many of the run's published answers (every trial's) failed, and the first error (in
    question order) overall and per method: what `evalcore run` and the Launch page end with.
    {"n": answers, "n_failed": ..., "first_error": text or None, "all_failed": bool,
     "methods": {method: {"n", "n_failed", "first_error"}}}. A run whose every answer failed
    is a failed run, whatever its manifest status says: it measured nothing."""
    rows = query_df(store, """
        SELECT method, count(*) AS n, count(error) AS n_failed,
               arg_min(error, question_id) FILTER (WHERE error IS NOT NULL) AS first_error
        FROM trial_responses WHERE run_id = ? GROUP BY method ORDER BY method""", [run_id], runs=[run_id])
    methods = {r.method: {"n": int(r.n), "n_failed": int(r.n_failed),
                          "first_error": r.first_error if isinstance(r.first_error, str) else None}
               for r in rows.itertuples(index=False)}
    n = sum(m["n"] for m in methods.values())
    failed = sum(m["n_failed"] for m in methods.values())
    first = next((m["first_error"] for m in methods.values() if m["first_error"]), None)
    return {"n": n, "n_failed": failed, "first_error": first, "all_failed": n > 0 and failed == n,
            "methods": methods}


def failure_line(failures: dict) -> str:
    """One line for a person: "40 of 40 answers failed; first: HTTP 400 unknown method
    'default'", or "no answer failed (40 answers)"."""
    if not failures["n_failed"]:
        return f"no answer failed ({failures['n']} answers)"
    first = " ".join(str(failures["first_error"] or "").split())[:300]
    return f"{failures['n_failed']} of {failures['n']} answers failed; first: {first}"
