"""Where a leaderboard ranking means something, and which systems a reader must not trust.

Why its own step: a mean over 3 questions can be 1.000 by luck and used to rank first; a
system whose every answer failed used to rank second. Rows keep their figures, but
- a system with fewer answers than the CI minimum (`MIN_N_FOR_CI`, the n from which the
  leaderboard shows an interval at all) is not ranked: `ranked` False, `rank_note` "too few
  questions to rank (n=3)", and it is listed after every ranked system;
- `error_rate` is the share of its answers that failed, and `failure_flag` says
  "40/40 failed: HTTP 400 unknown method 'default'" when more than half did;
- `<score>_ci_low` (the score, weighted_score, minus its interval's half-width) lets a reader
  sort by what the score is at least, not by a lucky mean.
The Runs page and anything else that ranks systems call `rank_rows`.
"""

from __future__ import annotations

import pandas as pd

from evalcore.analysis.runs.progress import answer_failures
from evalcore.store import RunStore

FLAG_SHARE = 0.5  # flag a system when more than this share of its answers failed


def rank_note(n: int, min_n: int) -> str | None:
    return None if n >= min_n else f"too few questions to rank (n={n})"


def failure_flag(n: int, n_failed: int, first_error: str | None) -> str | None:
    if not n or n_failed <= FLAG_SHARE * n:
        return None
    first = " ".join(str(first_error or "").split())[:200]
    return f"{n_failed}/{n} failed" + (f": {first}" if first else "")


def add_rank_columns(store: RunStore, rows: pd.DataFrame, min_n: int, score: str) -> pd.DataFrame:
    """`ranked`, `rank_note`, `error_rate`, `failure_flag` and `<score>_ci_low` added to
    leaderboard rows (`n`, `n_errors`, `<score>`, `<score>_ci95`; `score` the ranking metric)."""
    rows = rows.copy()
    n = rows["n"].fillna(0).astype(int)
    errors = rows["n_errors"].fillna(0).astype(int)
    rows["ranked"] = n >= min_n
    rows["rank_note"] = [rank_note(int(k), min_n) for k in n]
    rows["error_rate"] = (errors / n.where(n > 0)).astype(float)
    flagged = errors > FLAG_SHARE * n
    first: dict[tuple[str, str], str | None] = {}
    for run_id in dict.fromkeys(rows.loc[flagged, "run_id"]):
        for method, figures in answer_failures(store, run_id)["methods"].items():
            first[(run_id, method)] = figures["first_error"]
    rows["failure_flag"] = [failure_flag(int(k), int(e), first.get((r, m))) if f else None
                            for r, m, k, e, f in zip(rows["run_id"], rows["method"], n, errors, flagged)]
    if score in rows and f"{score}_ci_low" not in rows:  # the leaderboard's own bound wins
        rows[f"{score}_ci_low"] = rows[score] - rows[f"{score}_ci95"]
    return rows


def ranked_order(rows: pd.DataFrame, by: str, ascending: bool = False) -> pd.DataFrame:
    """Ranked systems first, sorted by `by` (missing last), then the unranked ones the same
    way: a tiny run never sorts above a ranked one, whatever the column."""
    keys = ["ranked", by] + (["created_at"] if by != "created_at" and "created_at" in rows else [])
    order = [False, ascending] + ([False] if len(keys) == 3 else [])
    return rows.sort_values(keys, ascending=order, na_position="last", kind="stable").reset_index(drop=True)
