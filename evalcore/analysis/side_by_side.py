"""Two systems' metric values side by side, one row per question, read from metric_wide.

Why: a paired comparison needs, per metric, both systems' values of each question. Read from
the long `metrics` table (one row per answer and metric) that is a self-join of two sides of
3,000,000 rows each at 100,000 questions x 30 metrics: ~0.5 s for every metric's deltas on the
Compare page, ~0.3 s more for the tested metrics' pairs, paid on every cold page. metric_wide
(store/wide.py) holds each answer's values in one row, so one join of two 100,000-row sides gives
every metric's pairs at once, and the per-metric counts and means are numpy over its columns.

Missing is missing: metric_wide is NULL both where a metric has no row and where its value is
NaN (the reason stays in `metrics`). Every comparison treats the two alike — a question enters
a metric's pairs only with a number on both sides — so the answers are the ones the long table
gave. Metric names are data: they reach SQL only through store/wide.py's quoting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from evalcore.store import open_db, wide_columns
from evalcore.store.wide import VALUE_PREFIX, value_expr


def split_key(key: str) -> tuple[str, str]:
    """`run_id:method` -> (run_id, method) (run ids cannot contain ':', methods can)."""
    run_id, _, method = key.partition(":")
    return run_id, method


@dataclass
class SideBySide:
    """Per metric, the two systems' values over the questions either system has a metric row
    for, aligned (in the join's order: question_order() sorts them); NaN where a system has no
    value."""

    metrics: list[str]
    question_id: np.ndarray
    a: dict[str, np.ndarray]
    b: dict[str, np.ndarray]
    _order: np.ndarray | None = field(default=None, repr=False)

    def question_order(self) -> np.ndarray:
        """The positions that put the rows in question_id order (sorting the ids here is cheaper
        than an ORDER BY that carries every metric's values through DuckDB's sort)."""
        if self._order is None:
            self._order = np.argsort(self.question_id, kind="stable")
        return self._order

    def pairs(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(baseline, candidate) values of the questions scored on both sides, in question_id
        order: the order every seeded resampling of a comparison draws from."""
        order = self.question_order()
        a, b = self.a[metric][order], self.b[metric][order]
        keep = ~np.isnan(a) & ~np.isnan(b)
        return a[keep], b[keep]

    def paired_ids(self, metric: str) -> np.ndarray:
        """The question ids of `pairs(metric)`, in the same order."""
        order = self.question_order()
        keep = ~np.isnan(self.a[metric][order]) & ~np.isnan(self.b[metric][order])
        return self.question_id[order][keep]


def stored_metrics(columns: frozenset[str]) -> list[str]:
    """Every metric with a value column among metric_wide's `columns` (wide_columns), sorted."""
    return sorted(c[len(VALUE_PREFIX):] for c in columns if c.startswith(VALUE_PREFIX))


def _floats(column: np.ndarray) -> np.ndarray:
    """A fetched DOUBLE column as plain floats, NULL as NaN (DuckDB hands NULLs as a mask)."""
    if isinstance(column, np.ma.MaskedArray):
        return np.ma.filled(column.astype(float), np.nan)
    return np.asarray(column, dtype=float)


def side_by_side(store, base: str, cand: str, metrics: Sequence[str] | None = None) -> SideBySide:
    """The two systems' (`run_id:method`) values of `metrics` (every metric metric_wide has for
    their runs when None), from one FULL JOIN of their metric_wide rows on question_id."""
    (ra, ma), (rb, mb) = split_key(base), split_key(cand)
    runs = sorted({ra, rb})
    present = wide_columns(store, runs)
    names = stored_metrics(present) if metrics is None else list(dict.fromkeys(metrics))
    # columns are named by position: the metric names never need to be column names here
    cols_a = "".join(f", {value_expr(m, present)} AS a{i}" for i, m in enumerate(names))
    cols_b = "".join(f", {value_expr(m, present)} AS b{i}" for i, m in enumerate(names))
    picked = "".join(f", a{i}" for i in range(len(names))) + "".join(f", b{i}" for i in range(len(names)))
    sql = f"""
        WITH a AS (SELECT question_id{cols_a} FROM metric_wide WHERE run_id = $ra AND method = $ma),
             b AS (SELECT question_id{cols_b} FROM metric_wide WHERE run_id = $rb AND method = $mb)
        SELECT coalesce(a.question_id, b.question_id) AS question_id{picked}
        FROM a FULL JOIN b ON a.question_id = b.question_id"""
    with open_db(store, runs=runs) as con:
        got = con.execute(sql, {"ra": ra, "ma": ma, "rb": rb, "mb": mb}).fetchnumpy()
    return SideBySide(names, np.asarray(got["question_id"], dtype=object),
                      {m: _floats(got[f"a{i}"]) for i, m in enumerate(names)},
                      {m: _floats(got[f"b{i}"]) for i, m in enumerate(names)})
