"""store/wide_arrow.py: the pivot compaction computes in Arrow is the table the SQL pivot
(store/wide.py) gives — columns, types, row order and values — on generated rows, and it
declines (the SQL runs) exactly when it says it does."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.store.wide import compute_sql
from evalcore.store.wide_arrow import wide_from_file, wide_table

ROWS = pa.schema([("run_id", pa.string()), ("method", pa.string()), ("question_id", pa.string()),
                  ("metric", pa.string()), ("value", pa.float64()), ("label", pa.string())])
# text DuckDB and Arrow must order alike: accents, other scripts, characters beyond U+FFFF,
# quotes, a NUL-free empty string, case
TEXT = st.sampled_from(["", "a", "B", "b", "é", "z", "ア", "😀", "q10", "q9", "it's", 'say "x"', "a b", "Z"])
VALUE = st.one_of(st.none(), st.just(math.nan), st.just(math.inf), st.just(-0.0),
                  st.floats(allow_nan=False, allow_infinity=False, width=64))
LABEL = st.one_of(st.none(), st.sampled_from(["CORRECT", "WRONG", "", "部分"]))


_CON = duckdb.connect()  # one database for the module: a new one costs ~35 ms an example


def _sql(rows: pa.Table) -> pa.Table:
    con = _CON.cursor()
    try:
        con.register("metrics", rows)
        return con.sql(compute_sql(con)).to_arrow_table()
    finally:
        con.close()


def _table(records: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ROWS.names, r)) for r in records], schema=ROWS)


@st.composite
def _rows(draw, unique: bool) -> list[tuple]:
    keys = draw(st.lists(st.tuples(TEXT, TEXT, TEXT, TEXT), min_size=1, max_size=40, unique=unique))
    return [(*k, draw(VALUE), draw(LABEL)) for k in keys]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows(unique=True))
def test_equal_to_the_sql_pivot_when_every_answer_has_one_row_per_metric(records):
    rows = _table(records)
    got = wide_table(rows)
    assert got is not None
    expected = _sql(rows)
    assert got.schema == expected.schema
    assert got.equals(expected), (got.to_pylist(), expected.to_pylist())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rows(unique=False))
def test_declines_only_when_an_answer_has_two_rows_for_a_metric(records):
    rows = _table(records)
    got = wide_table(rows)
    repeated = len({r[:4] for r in records}) < len(records)
    assert (got is None) == repeated
    if got is not None:
        assert got.equals(_sql(rows))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_rows(unique=True), _rows(unique=False), st.integers(1, 7))
def test_a_files_trial_zero_rows_read_as_parquet_stores_them(tmp_path_factory, records, later, row_group):
    """Through a file: text read dictionary-encoded, row groups with dictionaries of their own,
    and trial 1's rows, whose names (in those dictionaries) must not become columns."""
    rows = pa.concat_tables([_table(records), _table(later)])
    path = tmp_path_factory.mktemp("wide") / "metrics.parquet"
    pq.write_table(rows.append_column("trial", pa.array([0] * len(records) + [1] * len(later), type=pa.int32())),
                   path, row_group_size=row_group)
    got = wide_from_file(path)
    expected = _sql(_table(records))
    assert got.schema == expected.schema
    assert got.equals(expected), (got.to_pylist(), expected.to_pylist())


def test_declines_null_keys_and_no_rows():
    assert wide_table(_table([])) is None
    assert wide_table(_table([("r", "m", None, "f1", 1.0, None)])) is None
    assert wide_table(_table([("r", "m", "q", None, 1.0, None)])) is None


def test_nan_and_missing_values_are_null_labels_only_for_metrics_that_carry_them():
    rows = _table([("r", "m", "q1", "f1", math.nan, None), ("r", "m", "q1", "grade", 1.0, "CORRECT"),
                   ("r", "m", "q2", "f1", 0.5, None)])
    got = wide_table(rows).to_pylist()
    assert got == [{"run_id": "r", "method": "m", "question_id": "q1", "v:f1": None, "v:grade": 1.0, "l:grade": "CORRECT"},
                   {"run_id": "r", "method": "m", "question_id": "q2", "v:f1": 0.5, "v:grade": None, "l:grade": None}]


def _file(tmp_path, rows: pa.Table, trial: list[int] | None = None):
    if trial is not None:
        rows = rows.append_column("trial", pa.array(trial, type=pa.int32()))
    path = tmp_path / "metrics.parquet"
    pq.write_table(rows, path)
    return path


def test_a_file_reads_trial_zero_rows_only(tmp_path):
    rows = _table([("r", "m", "q1", "f1", 0.5, None), ("r", "m", "q1", "f1", 0.9, None)])
    got = wide_from_file(_file(tmp_path, rows, trial=[0, 1]))
    assert got.to_pylist() == [{"run_id": "r", "method": "m", "question_id": "q1", "v:f1": 0.5}]


def test_a_file_without_trials_holds_trial_zero_and_one_without_labels_is_declined(tmp_path):
    rows = _table([("r", "m", "q1", "f1", 0.5, None)])
    assert wide_from_file(_file(tmp_path, rows)).to_pylist() == [
        {"run_id": "r", "method": "m", "question_id": "q1", "v:f1": 0.5}]
    assert wide_from_file(_file(tmp_path, rows.drop_columns(["label"]))) is None  # (an old file: the SQL says)


@pytest.mark.parametrize("answers, metrics", [(3, 2), (1, 5)])
def test_too_many_cells_are_left_to_the_sql(monkeypatch, answers, metrics):
    import evalcore.store.wide_arrow as wa

    rows = _table([("r", "m", f"q{a}", f"f{m}", 1.0, None) for a in range(answers) for m in range(metrics)])
    monkeypatch.setattr(wa, "MAX_CELLS", answers * metrics - 1)
    assert wide_table(rows) is None
    monkeypatch.setattr(wa, "MAX_CELLS", answers * metrics)
    assert wide_table(rows).equals(_sql(rows))


# Files evalcore did not write as it writes them (a hostile review): the pivot declines, and the
# SQL reads the file its own way (refusing what it refused before, with the same message).

def _written(tmp_path, table: pa.Table, name: str = "odd.parquet", **kwargs):
    path = tmp_path / name
    pq.write_table(table, path, **kwargs)
    return path


@pytest.mark.parametrize("column, cast", [("value", pa.float32()), ("label", pa.large_string()),
                                          ("label", pa.dictionary(pa.int32(), pa.string())),
                                          ("question_id", pa.large_string()), ("value", pa.int64())])
def test_other_column_types_are_left_to_the_sql(tmp_path, column, cast):
    rows = _table([("r", "m", "q1", "f1", 1.0, "A"), ("r", "m", "q2", "f1", 2.0, None)])
    odd = rows.set_column(rows.schema.get_field_index(column), column, rows.column(column).cast(cast))
    assert wide_table(odd) is None
    from_file = wide_from_file(_written(tmp_path, odd))
    if column in ("value", "label"):
        assert from_file is None
    else:  # a key's text is read dictionary-encoded whatever its width: the SQL's strings too
        assert from_file.equals(_sql(rows))
    assert wide_from_file(_written(tmp_path, rows, "plain.parquet")).equals(_sql(rows))


@pytest.mark.parametrize("extra", ["label", "Value"])
def test_a_name_twice_or_only_case_apart_is_left_to_the_sql(tmp_path, extra):
    """DuckDB binds `value` to `Value` too (and to the first of two `label`s): Arrow would not."""
    rows = _table([("r", "m", "q1", "f1", 1.0, None)])
    odd = rows.append_column(pa.field(extra, rows.schema.field(extra.lower()).type), rows.column(extra.lower()))
    assert wide_from_file(_written(tmp_path, odd)) is None


def test_text_that_is_not_utf8_is_left_to_the_sql(tmp_path):
    bad = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, 3], dtype=np.int32).tobytes()),
                                                 pa.py_buffer(b"q\xff\xfe")])
    rows = _table([("r", "m", "x", "f1", 1.0, None)])
    odd = rows.set_column(2, "question_id", bad)
    assert wide_table(odd) is None
    assert wide_from_file(_written(tmp_path, odd)) is None


def test_a_dictionary_holding_a_value_twice_is_left_to_the_sql():
    """Its rows would be two metrics (or two answers) here, and one in the SQL."""
    twice = pa.DictionaryArray.from_arrays(pa.array([0, 1], type=pa.int32()), pa.array(["f1", "f1"]))
    rows = _table([("r", "m", "q", "a", 1.0, None), ("r", "m", "q", "b", 2.0, None)])
    assert wide_table(rows.set_column(3, "metric", twice)) is None
    beyond = pa.DictionaryArray.from_arrays(pa.array([0, 1], type=pa.int32()), pa.array(["f1"]), safe=False)
    assert wide_table(rows.set_column(3, "metric", beyond)) is None  # an index past its dictionary


def test_a_metric_name_holding_nul_is_left_to_the_sql():
    assert wide_table(_table([("r", "m", "q", "f1\x00x", 1.0, None), ("r", "m", "q", "f1", 2.0, None)])) is None


def test_rows_are_counted_as_decoded_not_as_the_footer_says(tmp_path, monkeypatch):
    """A footer saying 5 rows over row groups holding 300: the decoding stops past MAX_ROWS."""
    import evalcore.store.wide_arrow as wa

    rows = _table([("r", "m", f"q{i:03d}", "f1", 1.0, None) for i in range(300)])
    path = _written(tmp_path, rows.append_column("trial", pa.array([0] * 300, type=pa.int32())), "lying.parquet",
                    row_group_size=100)
    raw = bytearray(path.read_bytes())
    footer = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    at = raw.index(b"\x16\xd8\x04", footer)  # FileMetaData.num_rows = 300 (zigzag varint)
    raw[at + 1:at + 3] = b"\x8a\x00"  # 5, in as many bytes
    path.write_bytes(raw)
    assert pq.ParquetFile(path).metadata.num_rows == 5
    monkeypatch.setattr(wa, "BATCH_ROWS", 50)
    monkeypatch.setattr(wa, "MAX_ROWS", 100)
    assert wide_from_file(path) is None
    monkeypatch.setattr(wa, "MAX_ROWS", 300)
    assert wide_from_file(path).num_rows == 300  # (what the counting alone declined)
