"""Where a system's wrong answers come from: a diagnosis per answer, from metrics that exist.

Why: a mean says how often a system is right, not why it is wrong, and the fix differs —
better retrieval, a more faithful generator, or a generator that reads its contexts better.
RAGChecker's diagnosis separates retriever and generator errors; this does the same with the
metrics a run has, and leaves a question undiagnosed rather than guessing when one is missing.

Buckets, decided per answered question (an answer with a target error is not diagnosed):
  correct               judged right (the answer-class rule of evalcore.analysis.means), or a
                        correct abstention on an unanswerable question
  wrong abstention      said "I don't know" (dont_know) to an answerable question
  retrieval miss        wrong, and nothing relevant was retrieved: hit_rate@5 (or recall@5) is 0
                        when gold passages exist, else no context judged relevant
  unfaithful            wrong, relevant context retrieved, but the answer makes claims the
                        contexts do not support (faithfulness < 1)
  faithful but wrong    wrong, relevant context retrieved, every claim supported
  wrong, cause unknown  wrong, but the metrics that would tell the cause were not scored
  unscored              no metric decides right or wrong
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.means import CORRECT_METRICS, CORRECT_THRESHOLD
from evalcore.analysis.sql import df
from evalcore.store import RunStore

BUCKETS = ("correct", "wrong abstention", "retrieval miss", "unfaithful", "faithful but wrong",
           "wrong, cause unknown", "unscored")
RETRIEVAL_METRICS = ("hit_rate@5", "recall@5")
EPS = 1e-9
_NEEDED = (*CORRECT_METRICS, "dont_know", "faithfulness", "context_precision", *RETRIEVAL_METRICS)


def _wide(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    runs = sorted({k.partition(":")[0] for k in keys})
    values = df(store, """
        SELECT r.run_id || ':' || r.method AS system, r.question_id, q.answerable, r.error,
               m.metric, CASE WHEN isnan(m.value) THEN NULL ELSE m.value END AS value
        FROM responses r JOIN questions q USING (run_id, question_id)
        LEFT JOIN metrics m ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
                            AND list_contains($needed, m.metric)
        WHERE list_contains($keys, r.run_id || ':' || r.method)""",
                {"keys": list(keys), "needed": list(_NEEDED)}, runs=runs)
    if values.empty:
        return pd.DataFrame(columns=["system", "question_id", "answerable", "error", *_NEEDED])
    base = values[["system", "question_id", "answerable", "error"]].drop_duplicates(["system", "question_id"])
    wide = values.dropna(subset=["metric"]).pivot_table(index=["system", "question_id"], columns="metric",
                                                        values="value", aggfunc="first")
    wide.columns.name = None
    out = base.merge(wide.reset_index(), on=["system", "question_id"], how="left")
    for name in _NEEDED:
        if name not in out:
            out[name] = np.nan
    return out


def _first(row: pd.Series, names: Sequence[str]) -> float | None:
    for name in names:
        v = row.get(name)
        if v is not None and v == v:
            return float(v)
    return None


def diagnose(row: pd.Series) -> str | None:
    """The bucket of one answered question (None for a target error: not diagnosed)."""
    if isinstance(row.get("error"), str):
        return None
    dk = row.get("dont_know")
    if dk is not None and dk == dk and dk >= 0.5:
        return "wrong abstention" if bool(row.get("answerable", True)) else "correct"
    correct = _first(row, CORRECT_METRICS)
    if correct is None:
        return "unscored"
    if correct >= CORRECT_THRESHOLD:
        return "correct"
    hit = _first(row, RETRIEVAL_METRICS)
    if hit is None:
        cp = row.get("context_precision")
        hit = None if cp is None or cp != cp else float(cp)
    if hit is not None and hit <= EPS:
        return "retrieval miss"
    faith = row.get("faithfulness")
    if faith is None or faith != faith:
        return "wrong, cause unknown"
    return "unfaithful" if faith < 1 - EPS else "faithful but wrong"


def _first_of(wide: pd.DataFrame, names: Sequence[str]) -> pd.Series:
    """Per row, the value of the first of `names` that has one (NaN when none)."""
    out = pd.Series(np.nan, index=wide.index)
    for name in reversed(names):
        out = wide[name].where(wide[name].notna(), out)
    return out


def diagnoses(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    """(system, question_id, bucket) for every answered question of the systems: the rule of
    `diagnose`, vectorised (a test checks both agree)."""
    wide = _wide(store, keys)
    if wide.empty:
        return pd.DataFrame(columns=["system", "question_id", "bucket"])
    answered = wide["error"].isna()
    dk = wide["dont_know"].fillna(0) >= 0.5
    answerable = wide["answerable"].fillna(True).astype(bool)
    correct = _first_of(wide, CORRECT_METRICS)
    hit = _first_of(wide, RETRIEVAL_METRICS)
    hit = hit.where(hit.notna(), wide["context_precision"])
    faith = wide["faithfulness"]
    bucket = np.select(
        [dk & answerable, dk, correct.isna(), correct >= CORRECT_THRESHOLD, hit.notna() & (hit <= EPS),
         faith.isna(), faith < 1 - EPS],
        ["wrong abstention", "correct", "unscored", "correct", "retrieval miss", "wrong, cause unknown", "unfaithful"],
        default="faithful but wrong")
    out = pd.DataFrame({"system": wide["system"], "question_id": wide["question_id"], "bucket": bucket})
    return out[answered.to_numpy()].reset_index(drop=True)


def failure_modes(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    """Per system and bucket: answers (n) and their share of the system's diagnosed answers."""
    rows = diagnoses(store, keys)
    if rows.empty:
        return pd.DataFrame(columns=["system", "bucket", "n", "share"])
    counts = rows.groupby(["system", "bucket"]).size().rename("n").reset_index()
    counts["share"] = counts["n"] / counts.groupby("system")["n"].transform("sum")
    order = {b: i for i, b in enumerate(BUCKETS)}
    counts["_o"] = counts["bucket"].map(order)
    return counts.sort_values(["system", "_o"]).drop(columns="_o").reset_index(drop=True)


def questions_in_bucket(store: RunStore, key: str, bucket: str) -> list[str]:
    """The question ids of one system's answers in one bucket (the breakdown's links)."""
    if bucket not in BUCKETS:
        raise ValueError(f"unknown bucket {bucket!r}")
    rows = diagnoses(store, (key,))
    return sorted(rows.loc[rows.bucket == bucket, "question_id"])
