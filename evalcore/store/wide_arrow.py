"""The one-row-per-answer pivot (store/wide.py) computed in Arrow, for compaction.

Why: the pivot's SQL took 20 ms for 1,000 answers on its own and 40-45 ms inside a live run's
final publish (beside the summaries' queries), the longest step of what the user waits for
after the last answer (bench/bench_runner.py). Here the rows are placed in a grid (answer x
metric) by the rank of each key, which is what the pivot is when every (answer, metric) has
one row: ~6.5 ms with the file's read.

The table is the one `wide_sql` gives, to the column, type and row order (tests compare the
two on generated rows): value columns in metric-name order, then label columns for the metrics
whose rows carry a label; NULL where a value is missing or NaN; rows ordered by (run_id,
method, question_id), byte-wise as DuckDB orders text. Rows it does not handle give None and
the SQL runs: two rows for one (answer, metric) (the SQL's max/any_value decide), a NULL key,
a metric name holding NUL, no row at all, more rows or cells than it holds in memory (counted
as decoded: a footer may lie), and any file evalcore did not write as it writes them: columns
missing (an old format) or of other types, names only case tells apart, text that is not
UTF-8, a dictionary page holding a value twice or indices past its end. The SQL then reads the
file its own way, and refuses what it refused before, naming the file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from evalcore.store import fs as _fs
from evalcore.store.fs import Location
from evalcore.store.tables import SCHEMAS
from evalcore.store.wide import KEY_COLUMNS, label_column, value_column

READ = (*KEY_COLUMNS, "metric", "value", "label")
DICTIONARY = (*KEY_COLUMNS, "metric")  # read as Parquet stores them: a few distinct values each
MAX_ROWS = 300_000  # metric rows pivoted here at most (~30 MB held: 10,000 answers x 30 metrics); more: the SQL
MAX_CELLS = 8_000_000  # answers x metrics placed in a grid at most (8 bytes a cell, as the output)
BATCH_ROWS = 65_536  # rows decoded at a time: rows are counted as decoded, not as the footer says
_UNREADABLE = (pa.ArrowException, KeyError, IndexError, TypeError, ValueError)


def wide_from_file(path: Location) -> pa.Table | None:
    """The pivot of a run's canonical metrics file, trial 0's rows, or None (the caller runs
    the SQL, which reads the file its own way and says what is wrong with it, if anything)."""
    where, filesystem = _fs.arrow(path)  # a FIFO or a device is refused, never opened
    try:
        return _wide_from_file(where, filesystem)
    except _UNREADABLE:  # (a damaged file, or one another writer made: the SQL's to judge)
        return None


def _wide_from_file(where: str, filesystem) -> pa.Table | None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    source = pq.ParquetFile(where, filesystem=filesystem, pre_buffer=False, read_dictionary=list(DICTIONARY))
    if not _as_written(source.schema_arrow) or source.metadata.num_rows > MAX_ROWS:
        return None
    trial = "trial" in source.schema_arrow.names
    batches, rows_read = [], 0
    for batch in source.iter_batches(batch_size=BATCH_ROWS, columns=[*READ, *(["trial"] if trial else [])],
                                     use_threads=False):
        rows_read += batch.num_rows
        if rows_read > MAX_ROWS:  # (a footer may say fewer rows than the file holds)
            return None
        batches.append(batch)
    if not batches:
        return None
    rows = pa.Table.from_batches(batches, schema=batches[0].schema)
    if trial:  # the `metrics` view: trial 0's rows (a file without trials holds only those)
        rows = rows.filter(pc.equal(rows.column("trial"), 0))
    return wide_table(rows)


def _as_written(schema: pa.Schema) -> bool:
    """Whether the columns read are as evalcore writes them (store/tables.py), so the pivot's
    types are the SQL's: another type (float32 values, large text, an integer key), a name
    twice, or two names only case tells apart (DuckDB binds either) leave the file to the SQL."""
    lowered = [name.lower() for name in schema.names]
    if len(set(lowered)) != len(lowered):
        return False
    for name in (*READ, "trial"):
        if name not in schema.names:
            if name == "trial":
                continue
            return False
        found, wanted = schema.field(name).type, SCHEMAS["metrics"].field(name).type
        if name in DICTIONARY and pa.types.is_dictionary(found):
            found = found.value_type
        if found != wanted:
            return False
    return True


def wide_table(rows: pa.Table) -> pa.Table | None:
    """`wide_sql` over `rows` (run_id, method, question_id, metric, value, label, in the types
    evalcore writes; the key and metric columns plain or dictionary-encoded), or None when they
    are not what this handles (see the module's docstring)."""
    n = rows.num_rows
    if (n == 0 or n > MAX_ROWS or not _as_written(rows.schema)
            or any(rows.column(c).null_count for c in (*KEY_COLUMNS, "metric"))):
        return None
    try:
        rows.validate(full=True)  # UTF-8 text, dictionary indices within their dictionary
    except pa.ArrowInvalid:  # (the SQL refuses such text, naming the file)
        return None
    keys = _answers(rows)
    if keys is None:
        return None
    answer, first, key_columns = keys
    ranked = _ranks(rows.column("metric"))
    if ranked is None:
        return None
    metric, names = ranked
    names_text = names.to_pylist()
    if any("\x00" in name for name in names_text):  # (DuckDB ends a column's name at a NUL)
        return None
    n_answers = len(first)
    if n_answers * len(names) > MAX_CELLS:
        return None
    at = np.full((n_answers, len(names)), -1, dtype=np.int64)  # the row of each (answer, metric)
    at[answer, metric] = np.arange(n, dtype=np.int64)
    if np.count_nonzero(at >= 0) != n:  # two rows for one (answer, metric)
        return None
    import pyarrow.compute as pc

    values = pc.fill_null(rows.column("value"), np.nan).to_numpy()
    labels = rows.column("label")
    columns = dict(key_columns)
    for j, name in enumerate(names_text):
        where = at[:, j]
        column = np.where(where >= 0, values[np.maximum(where, 0)], np.nan)
        columns[value_column(name)] = pa.array(column, mask=np.isnan(column), type=pa.float64())
    if labels.null_count < n:
        carried = np.zeros(len(names_text), dtype=bool)
        carried[metric[np.asarray(pc.is_valid(labels))]] = True
        for j in np.flatnonzero(carried):
            where = at[:, j]
            columns[label_column(names_text[j])] = labels.take(pa.array(where, mask=where < 0))
    return pa.table(columns)


def _answers(rows: pa.Table) -> tuple[np.ndarray, np.ndarray, dict[str, pa.Array]] | None:
    """(per row: its answer's number in (run_id, method, question_id) order, the first row of
    each answer, each key column's text per answer); None when the keys' ranks do not fit 63 bits."""
    combined = np.zeros(rows.num_rows, dtype=np.int64)
    scale = 1
    ranked: dict[str, tuple[np.ndarray, pa.Array]] = {}
    for column in reversed(KEY_COLUMNS):  # the last key varies fastest
        found = _ranks(rows.column(column))
        if found is None:
            return None
        rank, distinct = ranked[column] = found
        combined += rank * scale
        scale *= max(len(distinct), 1)
        if scale >= 2**62:
            return None
    _, first, answer = np.unique(combined, return_index=True, return_inverse=True)
    return answer, first, {c: ranked[c][1].take(pa.array(ranked[c][0][first])) for c in KEY_COLUMNS}


def _ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array] | None:
    """(per row: the rank of its value among the values the rows hold, those values sorted
    byte-wise, as DuckDB orders text); None for a dictionary holding a value twice (its rows
    would be two answers, or two metrics, where the SQL sees one). A dictionary read from
    Parquet may also hold values no kept row has (trial 1's): they get no rank."""
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        chunks = column.unify_dictionaries().chunks
        distinct = chunks[0].dictionary if chunks else pa.array([], type=column.type.value_type)
        codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in chunks]).astype(np.int64)
    else:
        encoded = pc.dictionary_encode(column.combine_chunks())
        distinct, codes = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if pc.count_distinct(distinct).as_py() != len(distinct):
        return None
    used = np.flatnonzero(np.bincount(codes, minlength=len(distinct)))  # codes some row holds
    held = distinct.take(pa.array(used))
    order = pc.array_sort_indices(held).to_numpy()
    rank = np.full(len(distinct), -1, dtype=np.int64)  # per code; -1 for a value no row holds
    rank[used[order]] = np.arange(len(order), dtype=np.int64)
    return rank[codes], held.take(pa.array(order))
