"""Two systems' metric values side by side, one row per question, read from metric_wide.

Why: a paired comparison needs, per metric, both systems' values of each question. Read from
the long `metrics` table (one row per answer and metric) that is a self-join of two sides of
3,000,000 rows each at 100,000 questions x 30 metrics: ~0.5 s for every metric's deltas on the
Compare page, ~0.3 s more for the tested metrics' pairs, paid on every cold page. metric_wide
(store/wide.py) holds each answer's values in one row, so reading each system's 100,000 rows
(the two reads at once) and lining them up on question_id gives every metric's pairs, and the
per-metric counts and means are numpy over the columns.

Questions pair on their ids under the id rule (evalcore.schemas.ids: NFC, no outer spaces), in
SQL, so runs stored before the rule with the same ids in another Unicode form still pair. Two
stored ids of one system that are one id under the rule ("q0" and "q0 " in a run stored before
it) are refused, naming them (evalcore.analysis.read.id_collisions): which copy is meant cannot be
known, and keeping either one lied about the comparison.

A system asked T times per question (`evalcore run --trials T`) is read from its trials instead:
each question's value is the mean of its trials' values (evalcore.analysis.read.trial_values),
so the pairs, and every CI and test over them, are per question (clustered by question: n is
the questions, not T times them). A system without trials is read from metric_wide as before.

Missing is missing: metric_wide is NULL both where a metric has no row and where its value is
NaN (the reason stays in `metrics`). Every comparison treats the two alike — a question enters
a metric's pairs only with a number on both sides — so the answers are the ones the long table
gave. Metric names are data: they reach SQL only through store/wide.py's quoting.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from evalcore.analysis.read.trial_values import trial_counts, trial_means_sql
from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import id_sql
from evalcore.store import open_db, wide_columns
from evalcore.store.wide import VALUE_PREFIX, value_expr


def split_key(key: str) -> tuple[str, str]:
    """`run_id:method` -> (run_id, method) (run ids cannot contain ':', methods can)."""
    run_id, _, method = key.partition(":")
    return run_id, method


@dataclass(frozen=True)
class SideBySide:
    """Per metric, the two systems' values over the questions either system has a metric row
    for, aligned and in question_id order; NaN where a system has no value."""

    metrics: list[str]
    question_id: np.ndarray
    a: dict[str, np.ndarray]
    b: dict[str, np.ndarray]

    def both(self, metric: str) -> np.ndarray:
        """Which questions have a value on both sides."""
        return ~np.isnan(self.a[metric]) & ~np.isnan(self.b[metric])

    def pairs(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(baseline, candidate) values of the questions scored on both sides, in question_id
        order: the order every seeded resampling of a comparison draws from."""
        keep = self.both(metric)
        return self.a[metric][keep], self.b[metric][keep]


def stored_metrics(columns: frozenset[str]) -> list[str]:
    """Every metric with a value column among metric_wide's `columns` (wide_columns), sorted."""
    return sorted(c[len(VALUE_PREFIX):] for c in columns if c.startswith(VALUE_PREFIX))


def _floats(column: np.ndarray) -> np.ndarray:
    """A fetched DOUBLE column as plain floats, NULL as NaN (DuckDB hands NULLs as a mask)."""
    if isinstance(column, np.ma.MaskedArray):
        return np.ma.filled(column.astype(float), np.nan)
    return np.asarray(column, dtype=float)


def _repeats(ids: np.ndarray) -> bool:
    """Whether a side's canonical ids hold one id twice: free when they are in order (the usual
    case, metric_wide is written ordered by question_id), a set otherwise."""
    if len(ids) < 2 or bool(np.all(ids[1:] > ids[:-1])):
        return False
    return len(set(ids.tolist())) != len(ids)


def _union(ids_a: np.ndarray, ids_b: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(the question ids of either side, sorted; each side's rows' positions in it). None for
    both positions when the two sides hold the same questions already in order (the usual case:
    metric_wide is written ordered by question_id), so no row has to move."""
    if len(ids_a) == len(ids_b) and bool(np.all(ids_a[1:] > ids_a[:-1])) and np.array_equal(ids_a, ids_b):
        return ids_a, None, None
    either = np.concatenate([ids_a, ids_b])
    order = np.argsort(either, kind="stable")
    ranked = either[order]
    first = np.ones(len(ranked), dtype=bool)
    first[1:] = ranked[1:] != ranked[:-1]
    slot = np.empty(len(ranked), dtype=np.int64)
    slot[order] = np.cumsum(first) - 1
    return ranked[first], slot[:len(ids_a)], slot[len(ids_a):]


def _placed(column: np.ndarray, slots: np.ndarray | None, n: int) -> np.ndarray:
    """One side's values on the union's rows (NaN on the rows of questions it lacks)."""
    values = _floats(column)
    if slots is None:
        return values
    out = np.full(n, np.nan)
    out[slots] = values
    return out


def side_by_side(store, base: str, cand: str, metrics: Sequence[str] | None = None) -> SideBySide:
    """The two systems' (`run_id:method`) values of `metrics` (every metric metric_wide has for
    their runs when None), each system's metric_wide rows read by its own query, both at once."""
    (ra, ma), (rb, mb) = split_key(base), split_key(cand)
    runs = sorted({ra, rb})
    present = wide_columns(store, runs)
    names = stored_metrics(present) if metrics is None else list(dict.fromkeys(metrics))
    # columns are named by position: the metric names never need to be column names here
    cols = "".join(f", {value_expr(m, present)} AS v{i}" for i, m in enumerate(names))
    # questions pair on their ids under the id rule (evalcore.schemas.ids), so two runs stored by
    # an older evalcore with the same ids in NFC and NFD still pair
    sql = f"SELECT {id_sql('question_id')} AS question_id{cols} FROM metric_wide WHERE run_id = $run AND method = $method"
    tried = {key for key, t in trial_counts(store, [base, cand]).items() if t > 1}

    def read(side: tuple[str, str]) -> dict[str, np.ndarray]:
        own = trial_means_sql(names) if f"{side[0]}:{side[1]}" in tried else sql  # a system with trials
        with open_db(store, runs=runs) as con:
            return con.execute(own, {"run": side[0], "method": side[1]}).fetchnumpy()

    # Side by side because each read is mostly one thread decoding its Parquet row group: two
    # reads at once take the time of one on two cores (a FULL JOIN in one query took ~1.5x).
    with ThreadPoolExecutor(max_workers=2) as pool:
        got_a, got_b = pool.map(read, [(ra, ma), (rb, mb)])
    ids_a, ids_b = (np.asarray(got["question_id"], dtype=object) for got in (got_a, got_b))
    for (run, method), ids in (((ra, ma), ids_a), ((rb, mb), ids_b)):
        if _repeats(ids):
            from evalcore.analysis.read.id_collisions import refuse_collisions

            refuse_collisions(store, run, method)  # names them from the answers
            raise EvalcoreError(f"{run}:{method}: two stored metric rows' question ids are one id under the id "
                                "rule (NFC, no outer whitespace); the run is not compared")
    ids, slots_a, slots_b = _union(ids_a, ids_b)
    return SideBySide(names, ids, {m: _placed(got_a[f"v{i}"], slots_a, len(ids)) for i, m in enumerate(names)},
                      {m: _placed(got_b[f"v{i}"], slots_b, len(ids)) for i, m in enumerate(names)})
