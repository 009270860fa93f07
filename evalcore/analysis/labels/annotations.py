"""Spot-checking the judge: the queue of verdicts nobody has reviewed, and agreement.

A verdict's identity is (run, method, question, target_kind, target_ref):
  claim         target_ref = "<metric>:<source>:<idx>"   labels: ClaimVerdict (supported / not_supported)
  context       target_ref = "<metric>:<rank>"           labels: ContextVerdict (relevant / not_relevant)
  answer_class  target_ref = "answer_class"               labels: AnswerClass
  grade         target_ref = "<metric>"                   labels: Grade
All labels are evalcore.schemas.labels' words, the judge's own: a correction is comparable.
An annotation stores the judge's label beside the person's, so agreement needs no re-join.

Agreement rule (one, for the Annotate page, the CLI and the judge layer's reports): each
person's newest annotation per item counts once; judge-human agreement pairs it with the judge's
label; annotator agreement pairs two people's labels on the same item.

"Newest" (NEWEST_FIRST, the one ordering every reader uses): the latest `when`, a tie going to
the label that arrived later (the append order of the store's log). A label's time is never
taken to be later than its arrival (COUNTED_WHEN): new labels dated in the future are refused
(schemas.results.label_time), and one stored with such a date before that check counts as made
when it arrived instead of outranking every later label.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any, Sequence

import pandas as pd

from evalcore.schemas import Annotation
from evalcore.schemas.labels import RETRACTED, TARGET_LABELS
from evalcore.stats.agreement import agreement_rate, cohen_kappa
from evalcore.store import RunStore, query_df
from evalcore.store.wide import literal

LABELS = TARGET_LABELS

# The time a label counts from (its own, but never after it arrived) and the newest-first order.
COUNTED_WHEN = 'least("when", coalesce(arrived_at, "when"))'
NEWEST_FIRST = f"{COUNTED_WHEN} DESC, arrival DESC"

# The verdicts a person can review: every claim and context verdict, and the stored label of
# each metric whose label is a grade or an answer class (MetricSpec.label_kind; `_items` fills
# in the registry's lists on every call, so a metric registered later is offered).
_ITEMS = """
WITH items AS (
    SELECT run_id, method, question_id, 'claim' AS target_kind,
           metric || ':' || source || ':' || idx AS target_ref, verdict AS judge_label,
           text AS target_text, reason AS judge_reason, judge_id, metric
    FROM claims WHERE run_id = $run AND verdict IS NOT NULL
    UNION ALL
    SELECT run_id, method, question_id, 'context', metric || ':' || rank, verdict,
           NULL, reason, judge_id, metric
    FROM context_verdicts WHERE run_id = $run AND verdict IS NOT NULL
    UNION ALL
    SELECT run_id, method, question_id,
           CASE WHEN metric IN ({grades}) THEN 'grade' ELSE 'answer_class' END,
           metric, label, NULL, NULL, judge_id, metric
    FROM metrics WHERE run_id = $run AND label IS NOT NULL AND metric IN ({labelled})
)"""

# Items someone has reviewed: a person's newest annotation of the item, unless it retracts.
_REVIEWED = f""", reviewed AS (
    SELECT DISTINCT run_id, method, question_id, target_kind, target_ref FROM (
        SELECT * FROM annotations WHERE run_id = $run
        QUALIFY row_number() OVER (PARTITION BY who, run_id, method, question_id, target_kind, target_ref
                                   ORDER BY {NEWEST_FIRST}) = 1)
    WHERE label <> '{RETRACTED}')"""

_UNREVIEWED = """
WHERE i.target_kind = $kind AND ($method IS NULL OR i.method = $method)
  AND NOT EXISTS (SELECT 1 FROM reviewed a
                  WHERE a.run_id = i.run_id AND a.method = i.method AND a.question_id = i.question_id
                    AND a.target_kind = i.target_kind AND a.target_ref = i.target_ref)
  AND NOT list_contains($skip, i.method || '|' || i.question_id || '|' || i.target_ref)
"""
_SPREAD_ORDER = "hash(i.method, i.question_id, i.target_ref)"

# How far the judge's K verdicts (`score --repeats K`) of the metric behind each item disagree:
# whether they differ (by the flip rate's rule, evalcore.stats.repeats.Answer.flips: their labels
# when every valued repeat states one, else their values) and their SD. Repeats are read through
# the value they belong to (value_at = its computed_at), as analysis.comparison.judge_noise does.
_DISAGREEMENT = """, repeats AS (
    SELECT r.method, r.question_id, r.metric, r.value, r.label FROM metric_repeats r JOIN metrics m
      ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
     AND m.metric = r.metric AND m.computed_at = r.value_at
    WHERE r.run_id = $run AND r.value IS NOT NULL AND NOT isnan(r.value)),
  spread AS (
    SELECT method, question_id, metric, count(*) AS repeats_valued,
           CASE WHEN count(label) = count(*) THEN count(DISTINCT label) > 1
                ELSE max(value) - min(value) > 1e-9 END AS verdicts_differ,
           coalesce(stddev_samp(value), 0) AS repeat_sd
    FROM repeats GROUP BY ALL)"""

# The hand-picked queue's orders (the Annotate page's "Order the queue by"): spread over
# questions (a stable pseudo-random order, identical for every annotator so two people do not
# split one question), or the answers whose judge disagreed with itself most first (the
# verdicts worth a person's look: a judge that cannot repeat itself is least likely right),
# ties and answers judged once in the spread order.
QUEUE_ORDERS = ("spread over questions", "judge disagreement")


def of_runs(store: RunStore, sql: str, params: dict[str, Any], runs: Sequence[str] | None = None) -> pd.DataFrame:
    """`sql` over the `annotations` view (it ends in a WHERE clause), bound to `params`. `runs`:
    the labels of those runs only, read on their database (the one a command about them has
    built already: every database defines the store's annotations), not the whole store's."""
    if runs is None:
        return query_df(store, sql, params)
    return query_df(store, sql + " AND list_contains($runs, run_id)", {**params, "runs": sorted(set(runs))}, runs=runs)


def _labelled_as(kind: str) -> list[str]:
    """The metrics a person labels as `kind` (MetricSpec.label_kind)."""
    from evalcore.metrics.registry import labelled_metrics

    return list(labelled_metrics(kind))


def _items() -> str:
    """_ITEMS with today's grade and answer-class metrics as literals (kept literal, not list
    parameters, so the scan of the metrics table can skip the row groups of other metrics)."""
    def names(metrics: list[str]) -> str:
        return ", ".join(literal(m) for m in metrics) or "NULL"

    grades, classes = _labelled_as("grade"), _labelled_as("answer_class")
    return _ITEMS.format(grades=names(grades), labelled=names([*grades, *classes]))


def queue(store: RunStore, run_id: str, kind: str, method: str | None, skip: tuple[str, ...] = (),
          limit: int = 1, order: str = QUEUE_ORDERS[0]) -> pd.DataFrame:
    """The next unreviewed verdicts of one kind, in one of QUEUE_ORDERS: spread over questions
    (stable pseudo-random), or judge disagreement (the items whose metric's K repeated verdicts
    of the answer differ first, the widest spread first; each row then also says how many
    repeats had a value, whether they differ and their SD: None for an answer judged once)."""
    if order not in QUEUE_ORDERS:
        raise ValueError(f"unknown queue order {order!r}; one of {', '.join(QUEUE_ORDERS)}")
    params = {"run": run_id, "kind": kind, "method": method, "skip": list(skip), "limit": limit}
    if order == QUEUE_ORDERS[0]:
        sql = f"SELECT i.* FROM items i {_UNREVIEWED} ORDER BY {_SPREAD_ORDER}"
    else:
        sql = _DISAGREEMENT + f"""
            SELECT i.*, s.repeats_valued, s.verdicts_differ, s.repeat_sd FROM items i
            LEFT JOIN spread s ON s.method = i.method AND s.question_id = i.question_id AND s.metric = i.metric
            {_UNREVIEWED}
            ORDER BY s.verdicts_differ DESC NULLS LAST, s.repeat_sd DESC NULLS LAST, {_SPREAD_ORDER}"""
    return query_df(store, _items() + _REVIEWED + sql + " LIMIT $limit", params, runs=[run_id])


def counts(store: RunStore, run_id: str) -> pd.DataFrame:
    """Per verdict kind: how many verdicts the run has and how many are reviewed."""
    return query_df(store, _items() + _REVIEWED + """
        SELECT i.target_kind, count(*) AS n_verdicts,
               count(*) FILTER (WHERE EXISTS (
                   SELECT 1 FROM reviewed a WHERE a.run_id = i.run_id AND a.method = i.method
                     AND a.question_id = i.question_id AND a.target_kind = i.target_kind
                     AND a.target_ref = i.target_ref)) AS n_reviewed
        FROM items i GROUP BY 1 ORDER BY 1""", {"run": run_id}, runs=[run_id])


def runs_with_verdicts(store: RunStore) -> list[str]:
    """Runs holding any judge verdict the queue can offer, newest first."""
    out = query_df(store, """
        SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM summary_labels l WHERE l.run_id = r.run_id)
           OR EXISTS (SELECT 1 FROM summary_metrics m WHERE m.run_id = r.run_id AND list_contains($verdicts, m.metric))
        ORDER BY r.created_at DESC""", {"verdicts": [*_labelled_as("claim"), *_labelled_as("context")]})
    return out["run_id"].tolist()


def item_context(store: RunStore, run_id: str, method: str, question_id: str) -> pd.DataFrame:
    return query_df(store, """
        SELECT q.question, q.ground_truth, r.answer, r.record
        FROM questions q LEFT JOIN responses r ON r.run_id = q.run_id AND r.question_id = q.question_id
                                               AND r.method = $method
        WHERE q.run_id = $run AND q.question_id = $q""", {"run": run_id, "method": method, "q": question_id},
              runs=[run_id])


def retrieved_contexts(store: RunStore, run_id: str, method: str, question_id: str) -> list[dict[str, Any]]:
    """The answer's retrieved chunks (rank, text, ...) as plain dicts, parsed from its stored
    response record here so the dashboard reads no stored format; [] when none is stored or
    the record is not readable JSON."""
    import json

    ctx = item_context(store, run_id, method, question_id)
    record = ctx["record"].iloc[0] if len(ctx) else None
    if not isinstance(record, str):
        return []
    try:
        data = json.loads(record)
    except ValueError:
        return []
    chunks = data.get("retrieved", []) if isinstance(data, dict) else []
    return [c for c in chunks if isinstance(c, dict)] if isinstance(chunks, list) else []


def build(item: dict, who: str, label: str, note: str | None, sample: tuple[str, float] | None = None) -> Annotation:
    """One annotation of an item, checked against its kind's labels. `sample` = (sample id,
    inclusion probability) when the item was drawn at random (None: hand-picked)."""
    allowed = LABELS.get(item["target_kind"])
    if allowed is not None and label not in (*allowed, RETRACTED):
        raise ValueError(f"label {label!r} is not one of {', '.join(allowed)}")
    sample_id, prob = sample if sample else (None, None)
    return Annotation(annotation_id=uuid.uuid4().hex, who=who, run_id=item["run_id"], method=item["method"],
                      question_id=item["question_id"], target_kind=item["target_kind"],
                      target_ref=item["target_ref"], judge_label=item["judge_label"], label=label,
                      note=note or None, sample_id=sample_id, inclusion_prob=prob)


def save(store: RunStore, item: dict, who: str, label: str, note: str | None,
         sample: tuple[str, float] | None = None) -> Annotation:
    """Append one annotation (never overwrites: a second opinion is a new row)."""
    a = build(item, who, label, note, sample)
    store.append_annotations([a])
    return a


def append_labels(store: RunStore, rows: list[Annotation]) -> None:
    """Append labels built elsewhere (a pairwise preference: analysis.labels.preferences) in one
    part file: the one place besides labels import that writes a person's labels."""
    store.append_annotations(rows)


def save_answer(store: RunStore, items: list[dict], who: str, labels: list[str], note: str | None,
                sample: tuple[str, float] | None = None) -> list[Annotation]:
    """'Label this whole answer': every item of one answer in one append (all or nothing)."""
    rows = [build(item, who, label, note, sample) for item, label in zip(items, labels, strict=True)]
    store.append_annotations(rows)
    return rows


def undo(store: RunStore, annotation: Annotation) -> Annotation:
    """Take back one's own annotation: appends a retraction of the same item by the same person
    (the original row stays, as every annotation does)."""
    item = {"run_id": annotation.run_id, "method": annotation.method, "question_id": annotation.question_id,
            "target_kind": annotation.target_kind, "target_ref": annotation.target_ref,
            "judge_label": annotation.judge_label}
    return save(store, item, annotation.who, RETRACTED, f"undo of {annotation.annotation_id}")


def _newest(store: RunStore, run_id: str | None) -> pd.DataFrame:
    """Each person's newest annotation per item (an item whose newest is a retraction: none)."""
    out = query_df(store, f"""
        SELECT who, run_id, method, question_id, target_kind, target_ref, judge_label, label FROM annotations
        WHERE ($run IS NULL OR run_id = $run)
        QUALIFY row_number() OVER (PARTITION BY who, run_id, method, question_id, target_kind, target_ref
                                   ORDER BY {NEWEST_FIRST}) = 1""", {"run": run_id})
    return out[out.label != RETRACTED].reset_index(drop=True)


def answer_labels(store: RunStore, run_id: str, method: str, question_id: str) -> pd.DataFrame:
    """The labels people gave one answer, for the Questions page: each person's newest label per
    item (a retraction removes it), beside the judge's label it was given against, whether they
    agree, and how the answer was chosen (a random sample's id, else hand-picked). Retracted items
    and other answers never show; newest first."""
    cols = ["item", "who", "label", "judge_label", "agrees", "chosen", "when"]
    rows = query_df(store, f"""
        SELECT who, "when", target_kind, target_ref, judge_label, label, sample_id FROM annotations
        WHERE run_id = $run AND method = $method AND question_id = $qid
        QUALIFY row_number() OVER (PARTITION BY who, target_kind, target_ref ORDER BY {NEWEST_FIRST}) = 1""",
                    {"run": run_id, "method": method, "qid": question_id}, runs=[run_id])
    rows = rows[rows.label != RETRACTED]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({
        "item": [f"{k} {r}" if k not in r else r for k, r in zip(rows.target_kind, rows.target_ref)],
        "who": rows.who, "label": rows.label, "judge_label": rows.judge_label,
        "agrees": ["–" if not isinstance(j, str) else ("yes" if _norm(j) == _norm(h) else "no")
                   for j, h in zip(rows.judge_label, rows.label)],
        "chosen": [s if isinstance(s, str) else "hand-picked" for s in rows.sample_id],
        "when": rows["when"]})
    return out.sort_values(["when", "item"], ascending=[False, True]).reset_index(drop=True)[cols]


def _norm(x: Any) -> str:
    return str(x).strip().casefold()


def agreement(store: RunStore, run_id: str | None) -> pd.DataFrame:
    """Per verdict kind: n, judge-human agreement rate with a Wilson 95% CI, Cohen's kappa, and
    agreement between annotators on items two people labelled (n_pairs, rate, kappa)."""
    cols = ["target_kind", "n", "agreement_rate", "ci_low", "ci_high", "cohen_kappa",
            "annotator_pairs", "annotator_agreement", "annotator_kappa"]
    ann = _newest(store, run_id)
    rows = []
    for kind, g in ann.groupby("target_kind", sort=True):
        judged = g[g.judge_label.notna()]
        j, h = [_norm(x) for x in judged.judge_label], [_norm(x) for x in judged.label]
        rate, lo, hi = agreement_rate(j, h)
        a, b = [], []
        for _, item in g.groupby(["run_id", "method", "question_id", "target_ref"], dropna=False):
            for (_, x), (_, y) in itertools.combinations(item.sort_values("who")[["who", "label"]].itertuples(index=False), 2):
                a.append(_norm(x))
                b.append(_norm(y))
        pair_rate = agreement_rate(a, b)[0]
        rows.append({"target_kind": kind, "n": len(j), "agreement_rate": rate, "ci_low": lo, "ci_high": hi,
                     "cohen_kappa": cohen_kappa(j, h), "annotator_pairs": len(a),
                     "annotator_agreement": pair_rate, "annotator_kappa": cohen_kappa(a, b)})
    return pd.DataFrame(rows, columns=cols)


def recent(store: RunStore, run_id: str | None, limit: int = 200) -> pd.DataFrame:
    return query_df(store, f"""SELECT "when", who, run_id, method, question_id, target_kind, target_ref,
                               judge_label, label, note FROM annotations
                        WHERE $run IS NULL OR run_id = $run ORDER BY {NEWEST_FIRST} LIMIT $limit""",
              {"run": run_id, "limit": limit})
