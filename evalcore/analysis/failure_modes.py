"""Where a system's wrong answers come from: a diagnosis per answer, from metrics that exist.

Why: a mean says how often a system is right, not why it is wrong, and the fix differs —
better retrieval, a more faithful generator, or a generator that reads its contexts better.
RAGChecker's diagnosis separates retriever and generator errors; this does the same with the
metrics a run has, and leaves a question undiagnosed rather than guessing when one is missing.

Buckets, decided per answered question (an answer with a target error is not diagnosed) on top
of the one answer-class rule (evalcore.analysis.correctness), so a diagnosis never contradicts
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
`explain` gives the same bucket for one answer, with the basis in words.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.correctness import class_metrics, classify, first_of, outcome_frame
from evalcore.analysis.recent_frames import RecentFrames
from evalcore.store import RunStore

BUCKETS = ("correct", "correct abstention", "wrong abstention", "should have abstained", "retrieval miss",
           "unfaithful", "faithful but wrong", "wrong, cause unknown", "unscored")
RETRIEVAL_METRICS = ("hit_rate@5", "recall@5")
EPS = 1e-9
_EXTRA = ("faithfulness", "context_precision", *RETRIEVAL_METRICS)
DIAGNOSIS_METRICS = _EXTRA  # what the diagnosis reads beyond the correctness rule's metrics


def input_metrics() -> tuple[str, ...]:
    """Every metric the diagnosis reads (to name the judges behind its counts)."""
    return (*_EXTRA, *class_metrics())


def _wide(store: RunStore, keys: Sequence[str]) -> pd.DataFrame:
    """The outcome frame of the systems' answers with the metrics the diagnosis reads."""
    return outcome_frame(store, keys, extra=_EXTRA).drop(columns="bucket")


def _buckets(wide: pd.DataFrame) -> tuple[np.ndarray, pd.Series]:
    """(bucket per row, None for a target error; which retrieval evidence decided a miss:
    the metric name, or None)."""
    cls = classify(wide)["cls"]
    hit, hit_by = first_of(wide, RETRIEVAL_METRICS)
    cp = pd.to_numeric(wide["context_precision"], errors="coerce")
    hit_by = hit_by.mask(hit.isna() & cp.notna(), "context_precision")
    hit = hit.where(hit.notna(), cp)
    faith = pd.to_numeric(wide["faithfulness"], errors="coerce")
    answerable = wide["answerable"].astype(bool)
    bucket = np.select(
        [cls == "ERROR", (cls == "DONT_KNOW") & answerable, cls == "DONT_KNOW", cls == "UNSCORED", cls == "CORRECT",
         ~answerable, hit.notna() & (hit <= EPS), faith.isna(), faith < 1 - EPS],
        ["", "wrong abstention", "correct abstention", "unscored", "correct", "should have abstained",
         "retrieval miss", "wrong, cause unknown", "unfaithful"],
        default="faithful but wrong")
    return np.where(bucket == "", None, bucket), hit_by


def diagnose(row: pd.Series) -> str | None:
    """The bucket of one answered question (None for a target error: not diagnosed)."""
    return explain(row)[0]


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


def explain(row: pd.Series | dict) -> tuple[str | None, str]:
    """(bucket, its basis in words) for one answer: the rule of `diagnoses` on a one-row frame,
    plus what it rests on — the deciding metric and its value, and whether a retrieval miss
    comes from the gold passages or from the judge's relevance verdicts."""
    from evalcore.analysis.correctness import CLASS_LABEL, classify_row

    frame = pd.DataFrame([dict(row)])
    for col in ("error", CLASS_LABEL, "answerable", *_EXTRA):
        if col not in frame:
            frame[col] = None if col in ("error", CLASS_LABEL) else (True if col == "answerable" else np.nan)
    buckets, hit_by = _buckets(frame)
    bucket, by = buckets[0], hit_by.iloc[0]
    by = by if isinstance(by, str) else None
    cls, decided = classify_row(frame.iloc[0])

    def value(name: str | None) -> str:
        v = frame.iloc[0].get(name) if name else None
        return f"{name} = {float(v):.3g}" if v is not None and v == v and not isinstance(v, str) else str(name)

    if bucket is None:
        return None, "target error: not diagnosed"
    if bucket in ("correct abstention", "wrong abstention"):
        why = "the judge's class DONT_KNOW" if decided in ("answer_dont_know", "answer_class") else "dont_know = 1"
        where = "unanswerable question: abstaining is right" if bucket == "correct abstention" else "answerable question"
        return bucket, f"abstained ({why}) on an {where}"
    if bucket == "unscored":
        return bucket, "no metric decides right or wrong"
    if bucket == "correct":
        return bucket, f"correct by {value(decided)}"
    basis = f"wrong by {value(decided)}"
    if bucket == "should have abstained":
        return bucket, f"answered an unanswerable question ({basis}): the right answer was to abstain"
    if bucket == "retrieval miss":
        source = "judge: no retrieved context relevant" if by == "context_precision" else "gold passages"
        return bucket, f"{basis}; retrieval miss from {source} ({value(by)})"
    if bucket == "wrong, cause unknown":
        return bucket, f"{basis}; faithfulness not scored, so the cause is unknown"
    found = f"relevant context retrieved ({value(by)})" if by else "retrieval not scored"
    return bucket, f"{basis}; {found}, {value('faithfulness')}"


# The last few diagnoses, keyed by the store's state token (which changes whenever anything
# readers see changes, so an entry is never stale): the breakdown and its question list read the
# same frame, which takes ~1 s to build at 100,000 questions per system.
_RECENT = RecentFrames(4)


def diagnoses(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    """(system, question_id, bucket) for every answered question of the systems."""
    return _RECENT.get(store, tuple(keys), lambda: _diagnoses(store, keys))


def _diagnoses(store: RunStore, keys: tuple[str, ...]) -> pd.DataFrame:
    wide = _wide(store, keys)
    if wide.empty:
        return pd.DataFrame(columns=["system", "question_id", "bucket"])
    bucket, _ = _buckets(wide)
    out = pd.DataFrame({"system": wide["system"], "question_id": wide["question_id"], "bucket": bucket})
    return out[out["bucket"].notna()].reset_index(drop=True)


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


def questions_in_bucket(store: RunStore, key: str, bucket: str, among: tuple[str, ...] | None = None) -> list[str]:
    """The question ids of one system's answers in one bucket (the breakdown's links). `among`:
    the systems of the breakdown shown beside it (key one of them), so both read one diagnosis."""
    if bucket not in BUCKETS:
        raise ValueError(f"unknown bucket {bucket!r}")
    keys = among if among and key in among else (key,)
    rows = diagnoses(store, keys)
    return sorted(rows.loc[(rows.bucket == bucket) & (rows.system == key), "question_id"])
