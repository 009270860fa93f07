"""Whether an answer is correct: the one rule every page, table and the CLI use.

Why one place: the answer classes of `evalcore show`/exports (means.answer_classes), the
failure-mode diagnosis (Compare, Charts, Questions) and the Charts' correct / wrong / don't-know
bars each decided "correct" on their own, and disagreed (a judge's DONT_KNOW counted WRONG in
one and not in another). The rule, per answer:

  ERROR      the target returned an error (the answer is a failure, not diagnosed further)
  DONT_KNOW  it abstained: the dont_know metric, or the judge's class DONT_KNOW
             (answer_dont_know, or answer_class labelled DONT_KNOW), is set
  CORRECT /  otherwise the first deciding metric with a value decides: >= 0.5 is CORRECT
  WRONG      (a judge's class verdict beats a judge's score beats declarative checks beats
             token F1: MetricSpec.decides_correct orders them); `decided_by` names it
  UNSCORED   no metric decides

Whether abstaining was right depends on the question: an abstention on an unanswerable
question is the right answer (the diagnosis calls it a correct abstention), on an answerable
one it is a wrong abstention.

The rule is written once, as SQL generated from the registry (`classified_sql`), over rows
shaped like the store's metric_wide table (a `"v:<metric>"` value column per metric, NULL when
missing or NaN; `"l:answer_class"`; `error`; `answerable`). Counting pages run it in the store
(`outcome_sql`: 200,000 answers counted by a GROUP BY, never a pandas frame); one answer, or a
frame already in memory, runs the very same SQL over that frame (`classify`, via
evalcore.store.query_frame). There is no second copy of the rule in pandas.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.store import query_frame, wide_columns
from evalcore.store.wide import ident, label_column, label_expr, literal, value_column, value_expr

CORRECT_THRESHOLD = 0.5
DONT_KNOW_SET = 0.5  # a don't-know metric at or above this says the answer abstained (they are 0 / 1)
CLASSES = ("CORRECT", "WRONG", "DONT_KNOW", "ERROR", "UNSCORED")
CLASS_METRIC = "answer_class"  # the judge's class: its label DONT_KNOW makes an answer DONT_KNOW
# the label column of answer_class (the judge's class) rides along as its own column
CLASS_LABEL = "answer_class_label"


def correct_metrics() -> tuple[str, ...]:
    """The metrics that decide CORRECT / WRONG, first decider first (MetricSpec.decides_correct)."""
    from evalcore.metrics.registry import correct_deciders

    return correct_deciders()


def dont_know_metrics() -> tuple[str, ...]:
    """The metrics whose set value makes an answer DONT_KNOW (MetricSpec.decides_dont_know)."""
    from evalcore.metrics.registry import dont_know_deciders

    return dont_know_deciders()


def class_metrics() -> tuple[str, ...]:
    """Every metric an answer's class is read from (don't-know deciders, then correct deciders):
    the judges behind a class count are the judges of these."""
    return (*dont_know_metrics(), *correct_metrics())


def number_sql(x: float) -> str:
    """A float as a SQL DOUBLE (nan and inf included): numbers only, never names."""
    return f"{literal(repr(float(x)))}::DOUBLE"


def _first(metrics: Sequence[str], present: frozenset[str]) -> tuple[str, str]:
    """(the value of the first of `metrics` with one, that metric's name) as SQL: coalesce."""
    if not metrics:
        return "NULL::DOUBLE", "NULL::VARCHAR"
    values = [value_expr(m, present) for m in metrics]
    name = " ".join(f"WHEN {v} IS NOT NULL THEN {literal(m)}" for m, v in zip(metrics, values))
    return f"coalesce({', '.join(values)}, NULL::DOUBLE)", f"CASE {name} ELSE NULL::VARCHAR END"


def classified_sql(source: str, present: frozenset[str] | set[str], deciders: Sequence[str] | None = None,
                   threshold: float = CORRECT_THRESHOLD) -> str:
    """THE answer-class rule: `SELECT *, cls, decided_by` over the rows of `source` (a table
    name or a parenthesised query with metric_wide's columns `present`, plus `error` and
    `answerable`). A metric whose column is absent reads as NULL. `deciders`: the metrics that
    decide CORRECT / WRONG, first first (default: the registry's); `threshold`: CORRECT at or above."""
    present = frozenset(present)
    deciders = correct_metrics() if deciders is None else tuple(deciders)
    abstained = " ".join(f"WHEN {value_expr(m, present)} >= {number_sql(DONT_KNOW_SET)} THEN {literal(m)}"
                         for m in dont_know_metrics())
    abstained += f" WHEN {label_expr(CLASS_METRIC, present)} = 'DONT_KNOW' THEN {literal(CLASS_METRIC)}"
    value, name = _first(deciders, present)
    return f"""
        SELECT * EXCLUDE (_dk_by, _value, _name),
               CASE WHEN error IS NOT NULL THEN 'ERROR' WHEN _dk_by IS NOT NULL THEN 'DONT_KNOW'
                    WHEN _value IS NULL THEN 'UNSCORED' WHEN _value >= {number_sql(threshold)} THEN 'CORRECT'
                    ELSE 'WRONG' END AS cls,
               CASE WHEN error IS NOT NULL THEN 'target error' ELSE coalesce(_dk_by, _name) END AS decided_by
        FROM (SELECT *, CASE {abstained} ELSE NULL::VARCHAR END AS _dk_by, {value} AS _value, {name} AS _name
              FROM {source})"""


def runs_of(keys: Sequence[str]) -> list[str]:
    return sorted({k.partition(":")[0] for k in keys})


def outcome_sql(store, keys: Sequence[str], metrics: Sequence[str], by: str | None = None
                ) -> tuple[str, dict[str, Any], frozenset[str]]:
    """(a parenthesised query, its parameters, the metric_wide columns it has): one row per
    answer of the systems `keys` (`run_id:method`) with system, method, question_id, bucket (the
    value of the allow-listed dimension `by` of evalcore.analysis.read.sql.BY; a question counts in
    every tag it has), error, answerable (a question without the flag is answerable) and the
    value columns of `metrics` that some run has, plus answer_class's label. Run it through
    query_df with runs=sorted run ids of `keys`."""
    from evalcore.analysis.read.sql import by_expression

    expr, join = by_expression(by)
    present = wide_columns(store, runs_of(keys))
    wanted = [value_column(m) for m in dict.fromkeys([*metrics, CLASS_METRIC])] + [label_column(CLASS_METRIC)]
    cols = [c for c in wanted if c in present]
    picked = "".join(f", w.{ident(c)}" for c in cols)
    # by a dimension: one row per (answer, value), even where a question repeats a tag
    distinct = "DISTINCT " if by is not None else ""
    sql = f"""(
        SELECT {distinct}r.run_id || ':' || r.method AS system, r.method, r.question_id,
               nullif({expr}, '') AS bucket, r.error, coalesce(q.answerable, true) AS answerable{picked}
        FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
        {join}
        LEFT JOIN metric_wide w ON w.run_id = r.run_id AND w.method = r.method AND w.question_id = r.question_id
        WHERE list_contains($keys, r.run_id || ':' || r.method))"""
    return sql, {"keys": list(keys)}, frozenset(cols)


def frame_rows(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The rows of a frame of answers (any frame with `error`, `answerable`, answer_class_label and
    a column per metric, each optional) in metric_wide's shape, the shape the rule's SQL reads,
    with `_row` its position. Values that are not numbers count as missing."""
    rows = pd.DataFrame({"_row": np.arange(len(frame))})
    error = frame["error"] if "error" in frame else pd.Series(None, index=frame.index, dtype=object)
    rows["error"] = error.astype(object).where(error.notna(), None).to_numpy()
    if "answerable" in frame:
        answerable = frame["answerable"].astype(object)
        rows["answerable"] = answerable.where(answerable.notna(), None).map(
            lambda a: None if a is None else bool(a)).to_numpy()
    else:
        rows["answerable"] = True
    if CLASS_LABEL in frame:
        label = frame[CLASS_LABEL].astype(object)
        rows[label_column(CLASS_METRIC)] = label.where(label.notna(), None).to_numpy()
    for metric in dict.fromkeys(metrics):
        if metric in frame:
            rows[value_column(metric)] = pd.to_numeric(frame[metric], errors="coerce").astype(float).to_numpy()
    return rows


def classify(wide: pd.DataFrame, deciders: Sequence[str] | None = None,
             threshold: float = CORRECT_THRESHOLD) -> pd.DataFrame:
    """The class of every answer of a frame (frame_rows' columns; the module's rule, its one
    SQL run over the frame): columns `cls` and `decided_by` (the metric that decided
    CORRECT/WRONG, or what made it DONT_KNOW/ERROR; missing when UNSCORED). `deciders`: the
    metrics that decide CORRECT / WRONG, first first (default: the registry's)."""
    deciders = correct_metrics() if deciders is None else tuple(deciders)
    rows = frame_rows(wide, [*dont_know_metrics(), *deciders])
    sql = classified_sql("frame", set(rows.columns), deciders, threshold)
    out = query_frame(f"SELECT cls, decided_by FROM ({sql}) ORDER BY _row", frame=rows)
    return pd.DataFrame({"cls": out["cls"].to_numpy(), "decided_by": out["decided_by"].to_numpy()}, index=wide.index)

