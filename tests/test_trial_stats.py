"""store/trial_stats.py: whether a run has trials beyond the first, from its files' footers,
always the answer counting the rows gives (the question compaction asked DuckDB before), and
None whenever a footer cannot say."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.store import RunStore, query_df
from evalcore.store.layout import read_pointer
from evalcore.store.trial_stats import later_trials
from tests.analysis.trial_runs import trial_run


def _counted(paths) -> bool:
    """What compaction counted before: any row with trial > 0 (a file without the column: none)."""
    con = duckdb.connect()
    try:
        for path in paths:
            if "trial" in {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()}:
                if con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE trial > 0").fetchone()[0]:
                    return True
        return False
    finally:
        con.close()


@pytest.mark.parametrize("trials", [{"q1": ["yes"], "q2": ["no"]}, {"q1": ["yes", "no"], "q2": ["no"]}])
def test_the_footers_of_a_compacted_run_say_what_its_rows_say(tmp_path, trials):
    store = RunStore(tmp_path / "runs")
    run_id = trial_run(store, tmp_path, "t", trials)
    run_dir = store.run_dir(run_id)
    files = read_pointer(run_dir)["files"]
    paths = [run_dir / files[t] for t in ("responses", "metrics")]
    assert later_trials(paths) is _counted(paths) is (max(len(a) for a in trials.values()) > 1)
    has = query_df(store, "SELECT coalesce(max(trials), 1) AS t FROM summary_responses")["t"][0]
    assert bool(has > 1) is later_trials(paths)  # the summaries took the SQL the rows call for


def _write(path, table: pa.Table, **kwargs) -> None:
    pq.write_table(table, path, **kwargs)


def test_files_written_by_hand_many_row_groups_nulls_and_no_column(tmp_path):
    late = tmp_path / "late.parquet"  # the only trial above 0 sits in the last row group
    _write(late, pa.table({"trial": pa.array([0] * 10 + [None] * 5 + [2], pa.int32())}), row_group_size=4)
    zero = tmp_path / "zero.parquet"
    _write(zero, pa.table({"trial": pa.array([0, None, 0], pa.int32())}))
    nulls = tmp_path / "nulls.parquet"  # every trial null: no statistics' min/max, and no trial above 0
    _write(nulls, pa.table({"trial": pa.array([None, None], pa.int32())}))
    old = tmp_path / "old.parquet"  # written before the column existed: trial 0's rows
    _write(old, pa.table({"question_id": ["q1"]}))
    empty = tmp_path / "empty.parquet"
    _write(empty, pa.table({"trial": pa.array([], pa.int32())}))
    nested = tmp_path / "nested.parquet"  # a list column before it: leaf positions differ from fields'
    _write(nested, pa.table({"contexts": [[1, 2], [3]], "trial": pa.array([0, 1], pa.int32())}))
    for paths in ([late], [zero], [nulls], [old], [empty], [nested], [zero, old, nulls], [zero, late]):
        assert later_trials(paths) is _counted(paths), paths


def test_a_footer_that_cannot_say_leaves_the_rows_to_be_counted(tmp_path):
    bare = tmp_path / "bare.parquet"  # no statistics written
    _write(bare, pa.table({"trial": pa.array([0, 3], pa.int32())}), write_statistics=False)
    torn = tmp_path / "torn.parquet"
    torn.write_bytes(b"PAR1 not a parquet file")
    fifo = tmp_path / "fifo.parquet"
    import os

    os.mkfifo(fifo)  # never opened: it would block the reader
    text = tmp_path / "text.parquet"  # a file put in by hand, `trial` as text: min/max are no numbers
    _write(text, pa.table({"trial": ["0", "2"]}))
    floats = tmp_path / "floats.parquet"
    _write(floats, pa.table({"trial": [0.0, float("nan")]}))
    dates = []  # stored as INT32/INT64 too, their statistics dates and times (a hostile review)
    for kind in (pa.date32(), pa.time32("s"), pa.timestamp("s")):
        dates.append(tmp_path / f"{kind}.parquet".replace("[", "_").replace("]", "_"))
        _write(dates[-1], pa.table({"trial": pa.array([0, 2], pa.int32()).cast(pa.int64()).cast(kind)
                                    if kind == pa.timestamp("s") else pa.array([0, 2], pa.int32()).cast(kind)}))
    for path in (bare, torn, fifo, tmp_path / "missing.parquet", text, floats, *dates):
        assert later_trials([path]) is None, path
