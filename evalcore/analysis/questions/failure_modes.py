"""Where a system's wrong answers come from: a diagnosis per answer, from metrics that exist.

Why: a mean says how often a system is right, not why it is wrong, and the fix differs —
better retrieval, a more faithful generator, or a generator that reads its contexts better.
RAGChecker's diagnosis separates retriever and generator errors; this does the same with the
metrics a run has, and leaves a question undiagnosed rather than guessing when one is missing.

Buckets, decided per answered question (an answer with a target error is not diagnosed) on top
of the one answer-class rule (evalcore.analysis.read.correctness), so a diagnosis never contradicts
the answer's class:
  correct               class CORRECT
  correct abstention    class DONT_KNOW on an unanswerable question (abstaining is the right
                        answer there, although answer_correct, which scores the class CORRECT, is 0)
  wrong abstention      class DONT_KNOW on an answerable question
  should have abstained WRONG on an unanswerable question: it answered where it should have abstained
                        (not a retrieval or generation fault of the answer's content)
  retrieval miss        WRONG, and nothing relevant was retrieved: hit_rate@5 (or recall@5) is 0
                        when gold passages exist (basis: gold passages), else no context the judge
                        found relevant: context_precision is 0 (basis: judge)
  unfaithful            WRONG, relevant context retrieved, but the answer makes claims the
                        contexts do not support (faithfulness < 1)
  faithful but wrong    WRONG, relevant context retrieved, every claim supported
  wrong, cause unknown  WRONG, but the metrics that would tell the cause were not scored
  unscored              class UNSCORED: no metric decides right or wrong
The metrics named here are the registry's, by their specs' positions: the first of
MetricSpec.retrieval_miss_evidence with a value is a miss's evidence, the first of
MetricSpec.unfaithful_evidence is read; a metric registered ahead of them is read first.
`explained` gives each answer's bucket with its basis in words (the Questions page's story).

Written once, as SQL generated from those metrics' names (`diagnosed_sql`, on top of
correctness.classified_sql): the counts of the pages run it in the store as a GROUP BY
(`outcome_counts`), one answer or a frame in memory runs the same SQL over that frame
(`explained`, through evalcore.store.query_frame).
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from evalcore.analysis.read.correctness import (
    class_metrics,
    classified_sql,
    correct_metrics,
    dont_know_metrics,
    frame_rows,
    number_sql,
    outcome_sql,
    runs_of,
)
from evalcore.analysis.read.recent_frames import RecentFrames
from evalcore.store import RunStore, query_df, query_frame
from evalcore.store.wide import literal, value_expr

BUCKETS = ("correct", "correct abstention", "wrong abstention", "should have abstained", "retrieval miss",
           "unfaithful", "faithful but wrong", "wrong, cause unknown", "unscored")
EPS = 1e-9


def miss_evidence() -> tuple[str, ...]:
    """The metrics whose value near 0 is a retrieval miss's evidence, first read first: gold-
    passage measures, then the judge's relevance (MetricSpec.retrieval_miss_evidence)."""
    from evalcore.metrics.registry import retrieval_miss_evidence

    return retrieval_miss_evidence()


def faithfulness_metric() -> str | None:
    """The metric whose value below 1 makes a wrong answer "unfaithful" (MetricSpec.unfaithful_evidence)."""
    from evalcore.metrics.registry import unfaithful_evidence

    return unfaithful_evidence()


def judged_evidence(metric: str | None) -> bool:
    """Whether a miss's evidence is the judge's (a judged metric), not the gold passages'."""
    from evalcore.metrics.registry import METRICS

    return metric in METRICS and "judge" in METRICS[metric].needs


def diagnosis_metrics() -> tuple[str, ...]:
    """What the diagnosis reads beyond the correctness rule's metrics."""
    faith = faithfulness_metric()
    return (*([faith] if faith else []), *miss_evidence())


def input_metrics() -> tuple[str, ...]:
    """Every metric the diagnosis reads (to name the judges behind its counts)."""
    return (*diagnosis_metrics(), *class_metrics())


def diagnosed_sql(source: str, present: frozenset[str] | set[str]) -> str:
    """THE diagnosis: `SELECT *, cls, decided_by, diagnosis, hit_by` over the rows of `source`
    (as correctness.classified_sql, whose class it starts from). `diagnosis` is the bucket (NULL
    for a target error: not diagnosed); `hit_by` the retrieval evidence a miss would rest on (the
    first retrieval metric with a value, else context_precision)."""
    present = frozenset(present)
    evidence, faith_metric = miss_evidence(), faithfulness_metric()
    hit = f"coalesce({', '.join(value_expr(m, present) for m in evidence)}, NULL::DOUBLE)"
    hit_by = " ".join(f"WHEN {value_expr(m, present)} IS NOT NULL THEN {literal(m)}" for m in evidence) \
        or "WHEN false THEN NULL"
    faith = value_expr(faith_metric, present) if faith_metric else "NULL::DOUBLE"
    near_zero, below_one = number_sql(EPS), number_sql(1 - EPS)
    return f"""
        SELECT * EXCLUDE (_hit, _faith, _answerable),
               CASE WHEN cls = 'ERROR' THEN NULL
                    WHEN cls = 'DONT_KNOW' AND _answerable THEN 'wrong abstention'
                    WHEN cls = 'DONT_KNOW' THEN 'correct abstention'
                    WHEN cls = 'UNSCORED' THEN 'unscored'
                    WHEN cls = 'CORRECT' THEN 'correct'
                    WHEN NOT _answerable THEN 'should have abstained'
                    WHEN _hit <= {near_zero} THEN 'retrieval miss'
                    WHEN _faith IS NULL THEN 'wrong, cause unknown'
                    WHEN _faith < {below_one} THEN 'unfaithful'
                    ELSE 'faithful but wrong' END AS diagnosis
        FROM (SELECT *, {hit} AS _hit, CASE {hit_by} ELSE NULL::VARCHAR END AS hit_by, {faith} AS _faith,
                     coalesce(answerable, true) AS _answerable
              FROM ({classified_sql(source, present)}))"""


def _store_sql(store: RunStore, keys: Sequence[str]) -> tuple[str, dict]:
    """The diagnosis of every answer of the systems, run in the store (one row per answer)."""
    source, params, present = outcome_sql(store, keys, input_metrics())
    return diagnosed_sql(source, present), params


def diagnose_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """cls, decided_by, diagnosis and hit_by of every row of a frame of answers (diagnosed_sql run
    over the frame: the rule the store's counts use)."""
    rows = frame_rows(frame, (*dont_know_metrics(), *correct_metrics(), *diagnosis_metrics()))
    out = query_frame(f"SELECT cls, decided_by, diagnosis, hit_by FROM ({diagnosed_sql('frame', set(rows.columns))}) "
                      "ORDER BY _row", frame=rows)
    return pd.DataFrame({c: [v if isinstance(v, str) else None for v in out[c]] for c in out.columns},
                        index=frame.index, dtype=object)


def source(bucket: str | None, basis: str) -> str:
    """The short name of what a diagnosis rests on, for a badge: `gold passages` or `judge` for
    a retrieval miss, else the deciding metric (`by token_f1`)."""
    if bucket == "retrieval miss":
        return "judge" if "from judge" in basis else "gold passages"
    head = basis.split(";")[0]
    if bucket == "should have abstained":
        head = head.partition("(")[2]
    for word in ("correct by ", "wrong by "):
        if head.startswith(word):
            return "by " + head[len(word):].split(" = ")[0]
    if "abstained" in basis:
        return "judge" if "judge's class" in basis else "by dont_know"
    return ""


def explained(frame: pd.DataFrame) -> pd.DataFrame:
    """Per row of a frame of answers (one answer each, frame_rows' columns): cls, decided_by,
    bucket (None for a target error) and the bucket's basis in words — the rule of `diagnoses`,
    run once over the frame, plus what each bucket rests on: the deciding metric and its value,
    and whether a retrieval miss comes from the gold passages or from the judge's relevance
    verdicts."""
    rules = diagnose_frame(frame)
    basis = [_basis(values, bucket, by, decided) for (_, values), bucket, by, decided
             in zip(frame.iterrows(), rules["diagnosis"], rules["hit_by"], rules["decided_by"])]
    return pd.DataFrame({"cls": rules["cls"], "decided_by": rules["decided_by"], "bucket": rules["diagnosis"],
                         "basis": basis}, index=frame.index, dtype=object)


def _basis(row: pd.Series, bucket: str | None, by: str | None, decided: str | None) -> str:
    """The words for one answer's bucket: what the diagnosis rests on, with the values read."""
    def value(name: str | None) -> str:
        v = row.get(name) if name else None
        return f"{name} = {float(v):.3g}" if v is not None and v == v and not isinstance(v, str) else str(name)

    if bucket is None:
        return "target error: not diagnosed"
    if bucket in ("correct abstention", "wrong abstention"):
        why = "the judge's class DONT_KNOW" if decided in ("answer_dont_know", "answer_class") else "dont_know = 1"
        where = "unanswerable question: abstaining is right" if bucket == "correct abstention" else "answerable question"
        return f"abstained ({why}) on an {where}"
    if bucket == "unscored":
        return "no metric decides right or wrong"
    if bucket == "correct":
        return f"correct by {value(decided)}"
    basis = f"wrong by {value(decided)}"
    if bucket == "should have abstained":
        return f"answered an unanswerable question ({basis}): the right answer was to abstain"
    if bucket == "retrieval miss":
        source = "judge: no retrieved context relevant" if judged_evidence(by) else "gold passages"
        return f"{basis}; retrieval miss from {source} ({value(by)})"
    faith = faithfulness_metric()
    if bucket == "wrong, cause unknown":
        return f"{basis}; {faith or 'faithfulness'} not scored, so the cause is unknown"
    found = f"relevant context retrieved ({value(by)})" if by else "retrieval not scored"
    return f"{basis}; {found}, {value(faith)}"


def diagnoses(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    """(system, question_id, bucket) for every answered question of the systems, by system and
    question id."""
    sql, params = _store_sql(store, keys)
    out = query_df(store, f"SELECT system, question_id, diagnosis AS bucket FROM ({sql}) "
                   "WHERE diagnosis IS NOT NULL ORDER BY system, question_id", params, runs=runs_of(keys))
    return out.reset_index(drop=True)


# The last few count tables, keyed by the store's state token (it changes whenever anything
# readers see changes, so an entry is never stale): the Charts page's class bars and its
# diagnosis breakdown and the first questions of its buckets read one table, one pass over every
# answer (~0.5 s at 400,000 answers).
_RECENT = RecentFrames(4)
FIRST_IDS = 50  # question ids kept per count (the smallest): a bucket's list on the pages


def outcome_counts(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    """Per system, answer class and bucket (None for a target error): answers (n) and the first
    FIRST_IDS of their question ids in order (`first`), counted in the store by the one rule and
    the one diagnosis. The class counts (distributions.label_counts), failure_modes and a bucket's
    first questions (bucket_questions with `among`) are read from it."""
    keys = tuple(sorted(set(keys)))
    return _RECENT.get(store, keys, lambda: _outcome_counts(store, keys))


def _outcome_counts(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    sql, params = _store_sql(store, keys)
    return query_df(store, f"""
        SELECT system, cls, diagnosis AS bucket, count(*) AS n, min(question_id, {FIRST_IDS}) AS first
        FROM ({sql}) GROUP BY ALL ORDER BY system, cls, bucket""", params, runs=runs_of(keys))


def failure_modes(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    """Per system and bucket: answers (n) and their share of the system's diagnosed answers."""
    counts = outcome_counts(store, keys)
    counts = counts[counts["bucket"].notna()]
    if counts.empty:
        return pd.DataFrame(columns=["system", "bucket", "n", "share"])
    out = counts.groupby(["system", "bucket"], sort=False)["n"].sum().reset_index()  # one cls per bucket
    out["share"] = out["n"] / out.groupby("system")["n"].transform("sum")
    out["_o"] = out["bucket"].map({b: i for i, b in enumerate(BUCKETS)})
    return out.sort_values(["system", "_o"]).drop(columns="_o").reset_index(drop=True)


def bucket_questions(store: RunStore, key: str, bucket: str, limit: int | None = None,
                     among: Sequence[str] = ()) -> tuple[int, list[str]]:
    """(how many of one system's answers are in one bucket, the first `limit` of their question
    ids in order; all when None): the breakdown's question list, without sending every id.
    `among`: the systems of the breakdown shown beside it (key one of them); up to FIRST_IDS
    ids are then read from its count table (outcome_counts) instead of diagnosing again."""
    if bucket not in BUCKETS:
        raise ValueError(f"unknown bucket {bucket!r}")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1 (the count rides on the rows listed)")
    if key in among and limit is not None and limit <= FIRST_IDS:
        counts = outcome_counts(store, among)
        mine = counts[(counts["system"] == key) & (counts["bucket"] == bucket)]
        ids = sorted(q for first in mine["first"] for q in first)[:limit]
        return int(mine["n"].sum()), ids
    sql, params = _store_sql(store, (key,))
    cap = "" if limit is None else f"LIMIT {int(limit)}"
    out = query_df(store, f"""
        SELECT question_id, count(*) OVER () AS total FROM ({sql})
        WHERE diagnosis = $bucket ORDER BY question_id {cap}""", {**params, "bucket": bucket}, runs=runs_of((key,)))
    return (int(out["total"].iloc[0]) if len(out) else 0), out["question_id"].tolist()

