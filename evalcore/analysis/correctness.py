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
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.recent_frames import RecentFrames
from evalcore.store import query_df

CORRECT_THRESHOLD = 0.5
CLASSES = ("CORRECT", "WRONG", "DONT_KNOW", "ERROR", "UNSCORED")
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


# The last few outcome frames, keyed by the store's state token (it changes whenever anything
# readers see changes, so an entry is never stale): Charts' answer classes and its diagnosis, and
# Compare's diagnosis and its question list, read the same frame, ~1 s to build at 100,000
# questions per system.
_RECENT = RecentFrames(4)


def outcome_frame(store, keys: Sequence[str], extra: Sequence[str] = (), by: str | None = None) -> pd.DataFrame:
    """One row per answer (system = `run_id:method`, question_id[, bucket]) with the target's
    error, whether the question is answerable, the judge's class label, and the values (NaN as
    missing) of the metrics the rule reads plus `extra`. `by` (an allow-listed dimension of
    evalcore.analysis.sql.BY) adds a `bucket` column; a question counts in every tag it has."""
    return _RECENT.get(store, (tuple(keys), tuple(extra), by), lambda: _outcome_frame(store, keys, extra, by))


def _outcome_frame(store, keys: Sequence[str], extra: Sequence[str], by: str | None) -> pd.DataFrame:
    from evalcore.analysis.sql import _by

    expr, join = _by(by)
    runs = sorted({k.partition(":")[0] for k in keys})
    needed = list(dict.fromkeys([*correct_metrics(), *dont_know_metrics(), *extra]))
    # One row per answer straight from SQL (a column per metric, the names bound as parameters
    # and aliased m0, m1, ...): returning long rows and pivoting them in pandas cost seconds of
    # string conversion on a run of 100,000 questions.
    columns = ", ".join(f"any_value(CASE WHEN isnan(m.value) THEN NULL ELSE m.value END) "
                        f"FILTER (WHERE m.metric = $m{i}) AS m{i}" for i in range(len(needed)))
    out = query_df(store, f"""
        SELECT r.run_id || ':' || r.method AS system, r.question_id, {expr} AS bucket,
               any_value(q.answerable) AS answerable, any_value(r.error) AS error,
               any_value(m.label) FILTER (WHERE m.metric = 'answer_class') AS {CLASS_LABEL}, {columns}
        FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
        {join}
        LEFT JOIN metrics m ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
                            AND list_contains($needed, m.metric)
        WHERE list_contains($keys, r.run_id || ':' || r.method)
        GROUP BY ALL ORDER BY system, r.question_id, bucket""",
             {"keys": list(keys), "needed": needed, **{f"m{i}": m for i, m in enumerate(needed)}}, runs=runs)
    index = ["system", "question_id", "bucket"]
    cols = [*index, "answerable", "error", CLASS_LABEL, *needed]
    if out.empty:
        return pd.DataFrame(columns=cols)
    out = out.rename(columns={f"m{i}": m for i, m in enumerate(needed)})
    for name in needed:
        out[name] = out[name].astype(float)
    out["answerable"] = out["answerable"].fillna(True).astype(bool)
    if by is None:
        out["bucket"] = None
    else:
        out["bucket"] = out["bucket"].where(out["bucket"].notna() & (out["bucket"] != ""), None)
    return out.reset_index(drop=True)


def first_of(wide: pd.DataFrame, names: Sequence[str]) -> tuple[pd.Series, pd.Series]:
    """Per row, the value of the first of `names` that has one, and that metric's name (NaN /
    None when none has)."""
    value = pd.Series(np.nan, index=wide.index, dtype=float)
    name = pd.Series(None, index=wide.index, dtype=object)
    for metric in reversed(names):
        col = pd.to_numeric(wide[metric], errors="coerce") if metric in wide else pd.Series(np.nan, index=wide.index)
        has = col.notna()
        value = col.where(has, value)
        name = name.mask(has, metric)
    return value, name


def classify(wide: pd.DataFrame, deciders: Sequence[str] | None = None,
             threshold: float = CORRECT_THRESHOLD) -> pd.DataFrame:
    """The class of every answer of an outcome frame (the module's rule): columns `cls` and
    `decided_by` (the metric that decided CORRECT/WRONG, or what made it DONT_KNOW/ERROR).
    `deciders`: the metrics that decide CORRECT / WRONG, first first (default: the registry's)."""
    error = wide["error"].notna()  # the target's error text (VARCHAR, or None / NaN when it answered)
    dk = pd.Series(False, index=wide.index)
    dk_by = pd.Series(None, index=wide.index, dtype=object)
    for metric in dont_know_metrics():
        if metric in wide:
            hit = pd.to_numeric(wide[metric], errors="coerce").fillna(0) >= 0.5
            dk_by = dk_by.mask(hit & ~dk, metric)
            dk |= hit
    if CLASS_LABEL in wide:
        hit = wide[CLASS_LABEL].eq("DONT_KNOW")
        dk_by = dk_by.mask(hit & ~dk, "answer_class")
        dk |= hit
    value, name = first_of(wide, correct_metrics() if deciders is None else deciders)
    cls = np.select([error, dk, value.isna(), value >= threshold],
                    ["ERROR", "DONT_KNOW", "UNSCORED", "CORRECT"], default="WRONG")
    decided = np.where(error, "target error", np.where(dk, dk_by, name))
    return pd.DataFrame({"cls": cls, "decided_by": decided}, index=wide.index)


def classify_row(row: pd.Series | dict) -> tuple[str, str | None]:
    """(class, decided_by) of one answer: `classify` on a one-row frame (the same rule)."""
    frame = pd.DataFrame([dict(row)])
    for col in ("error", CLASS_LABEL):
        if col not in frame:
            frame[col] = None
    out = classify(frame).iloc[0]
    return str(out["cls"]), (out["decided_by"] if isinstance(out["decided_by"], str) else None)
