"""One answer's K judge verdicts side by side (`evalcore score --repeats K`), disagreements marked.

Why: the stored value of a judged metric is the mean of its K verdicts, and its label their most
common one; a reader who wonders whether the judge's coin flips made a number needs to see the
K verdicts themselves. Each repeat's cell says the verdict in words (its label where the metric
states one, an answer class or a grade, with the value; else the value) and carries a "≠" when it
differs from the answer's most common verdict, and the row says in words whether the K agree, by
the rule the flip rate counts (evalcore.stats.repeats.Answer.flips), so a mark is never colour
alone and the page's "differ" is the flip rate's.

Repeats are read through the value they belong to (`value_at` = the value's `computed_at`, as
analysis.comparison.judge_noise reads them): a later K = 1 pass leaves its predecessor's repeats
nobody's. An answer scored with K = 1 has none, and the page shows nothing for it.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd

from evalcore.stats.repeats import SAME, Answer
from evalcore.store import RunStore, query_df

DIFFERS = "≠"  # the mark of a verdict that is not the answer's most common one


def _repeats(store: RunStore, run_id: str, question_id: str, method: str | None) -> pd.DataFrame:
    return query_df(store, """
        SELECT r.method, r.metric, r.repeat, r.value, r.label, m.value AS mean
        FROM metric_repeats r JOIN metrics m
          ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
         AND m.metric = r.metric AND m.computed_at = r.value_at
        WHERE r.run_id = $run AND r.question_id = $q AND ($method IS NULL OR r.method = $method)
          AND m.run_id = $run AND m.question_id = $q  -- said of both sides: the files' statistics skip the rest
        ORDER BY r.method, r.metric, r.repeat""", {"run": run_id, "q": question_id, "method": method}, runs=[run_id])


def _verdict(value: float, label: str | None) -> str:
    """A repeat's verdict in words: `CORRECT (1)`, `0.667`, or `no value`."""
    if math.isnan(value):
        return "no value"
    number = f"{value:.3g}"
    return f"{label} ({number})" if label else number


def _key(value: float, label: str | None, by_label: bool) -> object:
    """What two repeats must share to be the same verdict (the flip rate's rule)."""
    return label if by_label else round(value / SAME) if not math.isnan(value) else None


def _agreement(answer: Answer, shared: int) -> str:
    """The row's words: "all 3 agree", "differ: 2 of 3 give the most common verdict", or why
    it cannot say (`shared`: the repeats giving the most common verdict)."""
    flips = answer.flips()
    k = len(answer.values)
    if flips is None:
        return f"fewer than 2 of the {k} verdicts have a value"
    if not flips:
        return f"all {len(answer.valued())} agree"
    return f"differ: {shared} of {k} give the most common verdict"


def answer_repeats(store: RunStore, run_id: str, question_id: str, method: str | None = None) -> pd.DataFrame:
    """Per method and judged metric of one question with repeats: the stored value (their mean),
    K, whether the K verdicts agree (`verdicts`, in words), and `repeat 0` … `repeat K-1`: each
    verdict in words, "≠" after those that differ from the most common one (the earliest on a
    tie). Empty when the answer was judged once (K = 1) or not at all."""
    frame = _repeats(store, run_id, question_id, method)
    rows = []
    for (meth, metric), group in frame.groupby(["method", "metric"], sort=False):
        k = int(group["repeat"].max()) + 1
        values, labels = [math.nan] * k, [None] * k
        for r, v, label in zip(group["repeat"], group["value"], group["label"]):
            values[int(r)] = float(v) if v is not None and v == v else math.nan
            labels[int(r)] = label if isinstance(label, str) and label else None
        answer = Answer(tuple(values), tuple(labels))
        valued = [i for i in range(k) if not math.isnan(values[i])]
        by_label = bool(valued) and all(labels[i] is not None for i in valued)
        keys = [_key(values[i], labels[i], by_label) if i in valued else None for i in range(k)]
        counts = Counter(keys[i] for i in valued)
        top = max(counts, key=lambda key: (counts[key], -keys.index(key))) if counts else None
        row = {"method": meth, "metric": metric, "value (mean)": float(group["mean"].iloc[0]), "K": k,
               "verdicts": _agreement(answer, counts[top] if counts else 0)}
        flips = answer.flips()
        for i in range(k):
            mark = f" {DIFFERS}" if flips and i in valued and keys[i] != top else ""
            row[f"repeat {i}"] = _verdict(values[i], labels[i]) + mark
        rows.append(row)
    return pd.DataFrame(rows)
