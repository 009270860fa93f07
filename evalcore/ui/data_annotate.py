"""SQL for the Annotate page: the queue of judge verdicts nobody has reviewed, and
judge-human agreement from the (append-only) annotations.

A verdict's identity is (run, method, question, target_kind, target_ref):
  claim         target_ref = "<metric>:<source>:<idx>"   verdict supported / unsupported
  context       target_ref = "context_precision:<rank>"  verdict relevant / not_relevant
  answer_class  target_ref = "answer_class"               verdict CORRECT / WRONG / DONT_KNOW
  grade         target_ref = "<metric>"                   verdict A-E
An annotation stores the judge's label beside the human's, so agreement needs no re-join.
"""

from __future__ import annotations

import uuid

import pandas as pd

from evalcore.schemas import Annotation
from evalcore.store import RunStore
from evalcore.ui.helpers import cohen_kappa
from evalcore.ui.snapshot import Snapshot

LABELS: dict[str, list[str]] = {
    "claim": ["supported", "unsupported"],
    "context": ["relevant", "not_relevant"],
    "answer_class": ["CORRECT", "WRONG", "DONT_KNOW"],
    "grade": ["A", "B", "C", "D", "E"],
}

_QUEUE = """
WITH items AS (
    SELECT run_id, method, question_id, 'claim' AS target_kind,
           metric || ':' || source || ':' || idx AS target_ref,
           CASE lower(verdict) WHEN 'yes' THEN 'supported' WHEN 'no' THEN 'unsupported'
                ELSE lower(verdict) END AS judge_label,
           text AS target_text, reason AS judge_reason, judge_id
    FROM claims WHERE run_id = $run AND verdict IS NOT NULL
    UNION ALL
    SELECT run_id, method, question_id, 'context',
           'context_precision:' || json_extract_string(c, '$.rank'),
           CASE WHEN lower(json_extract_string(c, '$.verdict')) IN ('1', '1.0', 'true', 'yes', 'relevant')
                THEN 'relevant' ELSE 'not_relevant' END,
           NULL, json_extract_string(c, '$.reason'), judge_id
    FROM (SELECT run_id, method, question_id, judge_id,
                 unnest(CAST(json_extract(details, '$.contexts') AS JSON[])) AS c
          FROM metrics WHERE run_id = $run AND metric = 'context_precision' AND details IS NOT NULL)
    WHERE json_extract_string(c, '$.verdict') IS NOT NULL
    UNION ALL
    SELECT run_id, method, question_id, kind, metric, label, NULL, NULL, judge_id
    FROM labels WHERE run_id = $run AND label IS NOT NULL
)
SELECT i.*, (SELECT count(*) FROM items) AS n_total
FROM items i
WHERE i.target_kind = $kind AND ($method IS NULL OR i.method = $method)
  AND NOT EXISTS (SELECT 1 FROM annotations a
                  WHERE a.run_id = i.run_id AND a.method = i.method AND a.question_id = i.question_id
                    AND a.target_kind = i.target_kind AND a.target_ref = i.target_ref)
  AND i.target_ref IS NOT NULL
  AND NOT list_contains($skip, i.method || '|' || i.question_id || '|' || i.target_ref)
ORDER BY hash(i.method, i.question_id, i.target_ref)
"""


def queue(snap: Snapshot, run_id: str, kind: str, method: str | None, skip: list[str],
          limit: int = 1) -> pd.DataFrame:
    """The next unreviewed verdicts of one kind, in a stable pseudo-random order (spread over
    questions, identical for every annotator so two people do not split one question)."""
    return snap.df(_QUEUE + " LIMIT $limit",
                   {"run": run_id, "kind": kind, "method": method, "skip": skip, "limit": limit})


def remaining(snap: Snapshot, run_id: str, kind: str, method: str | None) -> int:
    df = snap.df(f"SELECT count(*) AS n FROM ({_QUEUE})",
                 {"run": run_id, "kind": kind, "method": method, "skip": []})
    return int(df["n"].iloc[0])


def item_context(snap: Snapshot, run_id: str, method: str, question_id: str) -> pd.DataFrame:
    return snap.df("""
        SELECT q.question, q.ground_truth, r.answer, r.record
        FROM questions q LEFT JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
                                               AND r.method = $method
        WHERE q.run_id = $run AND q.question_id = $q""", {"run": run_id, "method": method, "q": question_id})


def save(store: RunStore, item: dict, who: str, label: str, note: str | None) -> Annotation:
    """Append one annotation (never overwrites: a second opinion is a new row)."""
    a = Annotation(annotation_id=uuid.uuid4().hex, who=who, run_id=item["run_id"], method=item["method"],
                   question_id=item["question_id"], target_kind=item["target_kind"],
                   target_ref=item["target_ref"], judge_label=item["judge_label"], label=label,
                   note=note or None)
    store.append_annotations([a])
    return a


def agreement(snap: Snapshot, run_id: str | None) -> pd.DataFrame:
    """Per verdict kind: annotations, agreement rate and Cohen's kappa (judge vs human)."""
    counts = snap.df("""
        SELECT target_kind, judge_label, label, count(*) AS n FROM annotations
        WHERE judge_label IS NOT NULL AND ($run IS NULL OR run_id = $run)
        GROUP BY ALL ORDER BY ALL""", {"run": run_id})
    rows = []
    for kind, g in counts.groupby("target_kind", sort=True):
        pairs = [(j, h) for j, h, n in zip(g.judge_label, g.label, g.n) for _ in range(int(n))]
        agree = sum(1 for j, h in pairs if j == h)
        rows.append({"target_kind": kind, "annotations": len(pairs), "agreement_rate": agree / len(pairs),
                     "cohen_kappa": cohen_kappa(pairs)})
    return pd.DataFrame(rows, columns=["target_kind", "annotations", "agreement_rate", "cohen_kappa"])


def recent(snap: Snapshot, run_id: str | None, limit: int = 200) -> pd.DataFrame:
    return snap.df("""SELECT "when", who, run_id, method, question_id, target_kind, target_ref,
                             judge_label, label, note FROM annotations
                      WHERE $run IS NULL OR run_id = $run ORDER BY "when" DESC LIMIT $limit""",
                   {"run": run_id, "limit": limit})
