"""Merge a table's files into one, keeping the newest row per key, in bounded memory.

Why not one SQL window: it holds every row (answers, contexts, judge requests) in memory at
once; a 100 MB import grew the process by 550 MB. Here only the keys are held, as two 64-bit
hashes, a timestamp and a position per row (32 bytes); the rows themselves are streamed from
the source files to the output batch by batch.

Which row wins (the rule readers of format-1 runs apply in SQL, store/merge_sql.py):
- keyed tables (tables.KEYS): per key, the newest `ORDER_COLUMN`; a tie goes to the later file
  (the current canonical file comes first, then parts in name order: their names start with
  their write time), then to the later row of that file;
- set tables (tables.SET_KEYS): per set key, every row of the newest (timestamp, file).
Keys are compared by two independent 64-bit hashes of their columns (a collision of both is
~1e-28 for a million rows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.errors import StoreError
from evalcore.store.columns import EMPTY_SET_MARKER, KEY_DEFAULTS, KEYS, ORDER_COLUMN, SET_KEYS, SORT_COLUMNS
from evalcore.store.fs import arrow as _arrow
from evalcore.store.merge_sql import FORMAT1_LABELS
from evalcore.store.parquet_write import LARGE_TABLE_BYTES, PARQUET_WRITE, release_arrow_memory
from evalcore.store.part_block import PartBlock, read_block
from evalcore.store.quarantine import other_run
from evalcore.store.tables import SCHEMAS, dictionary_columns, statistics_columns

if TYPE_CHECKING:  # pandas is imported where rows are merged: reading the store never needs it
    import pandas as pd


def _compute():
    """pyarrow.compute, imported when a set table is merged (a fifth of a second that reading
    the store, which never merges, would otherwise pay at every start)."""
    import pyarrow.compute as pc

    return pc


BATCH_BYTES = 2 * 2**20  # rows are streamed in batches of about this many (uncompressed) bytes
PROBE_ROWS = 64  # rows decoded first to learn a file's decoded row size (see _probed_row_bytes)
MAX_BATCH_ROWS = 1024  # rows decoded at once whatever the probe said: later rows may be larger than its first
HELD_BYTES = 16 * 2**20  # decoded rows held for one output row group at most
HASH_ROWS = 65_536  # keys hashed per pandas pass: small files together, a large one alone
_NO_TIME = np.iinfo(np.int64).min


class ForeignRows(StoreError):
    """A file to be merged into a run holds rows of another run: its folder is a copy, or its
    files were put there by hand. Merging them would count that run's rows twice."""

    def __init__(self, path: Path, found: str):
        self.path = path
        self.found = found
        super().__init__(f"{path} holds rows of run {found!r}")


@dataclass
class Merged:
    rows_in: int
    rows_out: int


# A judge call answered from the cache records no cost; when it repeats a call of the same run
# (same request, same call key) it must not replace the row of the call that was paid for.
# Per table: a 0/1 column whose 1 outranks 0 before time does (real calls beat cache hits).
PRIORITY = {"judge_calls": "cache_hit"}


def _key_columns(path: Path, table: str, run_id: str | None) -> dict[str, object]:
    """One file's key columns (see _key_data), read from the file."""
    where, filesystem = _arrow(path)
    source = pq.ParquetFile(where, pre_buffer=False, filesystem=filesystem)
    have = set(source.schema_arrow.names)
    data = source.read(columns=[c for c in _read_columns(table) if c in have], use_threads=False)
    return _key_data(data, table, run_id, lambda row: path)


def _read_columns(table: str) -> list[str]:
    """The columns which row wins depends on: keys, the order column, the priority."""
    keys = list(KEYS.get(table) or SET_KEYS[table])
    return keys + [ORDER_COLUMN[table]] + ([PRIORITY[table]] if table in PRIORITY else [])


def _key_data(data: pa.Table, table: str, run_id: str | None,
              path_of: Callable[[int], Path]) -> dict[str, object]:
    """Rows' key columns as Arrow: keys as text (nulls as a marker), the order column as
    microseconds, the priority; ForeignRows (naming `path_of(row)`) when `run_id` is given and
    a row is another run's."""
    keys = list(KEYS.get(table) or SET_KEYS[table])
    order = ORDER_COLUMN[table]
    have = set(data.column_names)
    n = data.num_rows
    if run_id is not None:  # the rule store check applies (quarantine.foreign_run)
        ids = _compute().unique(data.column("run_id")).to_pylist() if "run_id" in have else [None] * min(n, 1)
        found = other_run(ids, run_id)
        if found is not None:
            raise ForeignRows(path_of(_first_other(data, run_id) if "run_id" in have else 0), found)

    def column(name: str, kind: pa.DataType) -> pa.ChunkedArray:
        return data.column(name) if name in have else pa.chunked_array([pa.nulls(n, kind)])

    text = []
    for c in keys:
        values = column(c, pa.string())
        if c in KEY_DEFAULTS:  # a file from before the column: its rows are the default's (trial 0)
            values = _compute().fill_null(column(c, pa.int64()).cast(pa.int64()), KEY_DEFAULTS[c])
        text.append(_compute().fill_null(values.cast(pa.string()), "\x00<null>"))
    out: dict[str, object] = {"keys": text, "when": _micros(column(order, pa.null())), "rows": n}
    if table in PRIORITY:  # cache_hit True -> 0, anything else (a paid call) -> 1
        hit = data.column(PRIORITY[table]).to_pandas() if PRIORITY[table] in have else None
        out["prio"] = (np.ones(n, dtype=np.int64) if hit is None
                       else np.where(hit.fillna(False).astype(bool), 0, 1).astype(np.int64))
    else:
        out["prio"] = np.zeros(n, dtype=np.int64)
    return out


def _first_other(data: pa.Table, run_id: str) -> int:
    """The position of the first row that is not of run `run_id` (a null included)."""
    pc = _compute()
    same = pc.fill_null(pc.equal(data.column("run_id"), run_id), False)
    return int(pc.index(same, False).as_py())


def _micros(column: pa.ChunkedArray) -> np.ndarray:
    """Microseconds since the epoch (UTC) per row, _NO_TIME for a null: whatever unit the file
    stored (ns in a foreign file must not outrank us). Microsecond timestamps, which evalcore
    writes, are read as they are; anything else goes through pandas' parser."""
    import pandas as pd

    if pa.types.is_timestamp(column.type) and column.type.unit == "us":
        micros = _compute().fill_null(column.cast(pa.int64()), _NO_TIME)
        return np.asarray(micros.to_numpy(), dtype=np.int64)
    t = pd.to_datetime(column.to_pandas(), utc=True).dt.as_unit("us")
    return np.where(t.isna(), _NO_TIME, t.astype("int64").to_numpy(dtype="int64", na_value=_NO_TIME))


def _winners(sources: list[Path | PartBlock], table: str, run_id: str | None = None) -> list[np.ndarray]:
    """Per source (a file, or a block of part files read at once: store/part_block.py), a
    boolean mask of the rows that survive; ForeignRows when `run_id` is given and a file holds a
    row of another run (the key columns are read anyway). A block's rows keep their own file's
    place in the order, as if its files were read one by one.

    Files' keys are read as Arrow and hashed together, ~HASH_ROWS rows per pandas pass: a live
    run's publish merges a part file per 16 answers, and a pass per file cost ~10 ms each (1.5 s
    of 2,000 answers' 160 parts), while one pass over every file would hold all the keys' text.
    A merge of fewer rows than that holds them all anyway: its keys are compared as they are
    (`_exact_order`), which is faster and leaves no collision to rule out."""
    import pandas as pd

    per_source = []
    h1, h2 = [], []
    group: list[list[pa.ChunkedArray]] = []  # the text keys of sources not hashed yet
    held = 0
    files, rows_in_file = [], []  # per row: its file's place among every source's files, its row there

    def hash_group() -> None:
        """One pandas pass over the held sources' keys; only their two hashes are kept."""
        k = pd.DataFrame({i: pa.chunked_array([c for keys in group for c in keys[i].chunks],
                                              type=pa.string()).to_pandas().astype("string")
                          for i in range(len(group[0]))})
        h1.append(pd.util.hash_pandas_object(k, index=False, hash_key="evalcore-store-1").to_numpy())
        h2.append(pd.util.hash_pandas_object(k, index=False, hash_key="evalcore-store-2").to_numpy())
        group.clear()

    for source in sources:
        if isinstance(source, PartBlock):
            wanted = [c for c in _read_columns(table) if c in source.rows.column_names]
            one = _key_data(source.rows.select(wanted), table, run_id, source.path_of)
            sizes = source.sizes
        else:
            one = _key_columns(source, table, run_id)
            sizes = [one["rows"]]
        first = len(rows_in_file)  # files before this source's
        files.append(np.repeat(np.arange(first, first + len(sizes), dtype=np.int64), sizes))
        rows_in_file.extend(np.arange(n, dtype=np.int64) for n in sizes)
        group.append(one.pop("keys"))
        per_source.append(one)
        held += one["rows"]
        if held >= HASH_ROWS:  # the text of at most ~HASH_ROWS keys is held at once
            hash_group()
            held = 0
    sizes = [f["rows"] for f in per_source]
    if not sizes or sum(sizes) == 0:
        return [np.zeros(n, dtype=bool) for n in sizes]
    wa = np.concatenate([f["when"] for f in per_source])
    pa_ = np.concatenate([f["prio"] for f in per_source])
    fa = np.concatenate(files)
    ra = np.concatenate(rows_in_file)
    if not h1:  # fewer than HASH_ROWS rows: every key is still held, compared as it is
        order_idx, last = _exact_order(group, pa_, wa, fa, ra)
    else:
        if group:
            hash_group()
        h1a, h2a = np.concatenate(h1), np.concatenate(h2)
        # sort by key, then by (priority, time, file, row): the last entry of each key wins
        order_idx = np.lexsort((ra, fa, wa, pa_, h2a, h1a))
        h1s, h2s = h1a[order_idx], h2a[order_idx]
        last = np.ones(len(order_idx), dtype=bool)
        last[:-1] = (h1s[1:] != h1s[:-1]) | (h2s[1:] != h2s[:-1])
    keep = np.zeros(len(order_idx), dtype=bool)
    if table in KEYS:
        keep[order_idx[last]] = True
    else:  # sets: every row sharing the newest (time, file) of its set key
        ids = np.cumsum(np.concatenate(([True], last[:-1])))  # group id per sorted position
        newest_w = wa[order_idx][last][ids - 1]
        newest_f = fa[order_idx][last][ids - 1]
        keep[order_idx[(wa[order_idx] == newest_w) & (fa[order_idx] == newest_f)]] = True
    offsets = np.cumsum([0, *sizes])
    return [keep[offsets[i]:offsets[i + 1]] for i in range(len(sources))]


def _exact_order(group: list[list[pa.ChunkedArray]], prio: np.ndarray, when: np.ndarray, files: np.ndarray,
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions sorted by key, then priority, time, file and row; whether each sorted position
    is its key's last): the keys' text sorted and compared in Arrow, exactly. For a small merge
    (a live run's final publish: 23,000 keys) this is a third of the two pandas hashes' time."""
    pc = _compute()
    keys = {f"k{i}": pa.chunked_array([c for held in group for c in held[i].chunks], type=pa.string())
            for i in range(len(group[0]))}
    table = pa.table({**keys, "p": prio, "w": when, "f": files, "r": rows})
    order = pc.sort_indices(table, sort_keys=[(name, "ascending") for name in table.column_names]).to_numpy()
    last = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        differs = None
        for name in keys:
            ranked = table.column(name).take(order)
            step = pc.not_equal(ranked.slice(1), ranked.slice(0, len(order) - 1))
            differs = step if differs is None else pc.or_(differs, step)
        last[:-1] = differs.to_numpy(zero_copy_only=False)
    return order, last


def _labels_from_details(batch: pd.DataFrame) -> pd.Series:
    """Format-1 metric rows kept grades and classes only in details: lift them into `label`."""
    import pandas as pd

    def one(metric: str, details: object) -> str | None:
        if not isinstance(details, str) or metric not in FORMAT1_LABELS:
            return None
        try:
            d = json.loads(details)
        except ValueError:
            return None
        value = d.get(FORMAT1_LABELS[metric]) if isinstance(d, dict) else None
        return str(value).upper() if value is not None else None
    return pd.Series([one(m, d) for m, d in zip(batch["metric"], batch["details"])], index=batch.index, dtype=object)


def conform(batch: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
    """The table's fixed schema: columns in order, missing ones (older files) as nulls, but a
    key column added later (KEY_DEFAULTS: trial) as its default, so every merged row has it."""
    columns = []
    for f in schema:
        if f.name in batch.column_names and f.name in KEY_DEFAULTS and f.name in SORT_COLUMNS[table]:
            columns.append(_compute().fill_null(batch.column(f.name).cast(f.type), KEY_DEFAULTS[f.name]))
        elif f.name in batch.column_names:
            columns.append(batch.column(f.name).cast(f.type))
        elif table == "metrics" and f.name == "label" and batch.num_rows:
            columns.append(pa.array(_labels_from_details(batch.select(["metric", "details"]).to_pandas()),
                                    type=f.type))
        elif f.name in KEY_DEFAULTS and f.name in SORT_COLUMNS[table]:  # trial 0, written out
            columns.append(pa.array([KEY_DEFAULTS[f.name]] * batch.num_rows, type=f.type))
        else:
            columns.append(pa.nulls(batch.num_rows, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _row_bytes(source: pq.ParquetFile) -> float:
    """Uncompressed bytes per row of this file (answers are ~1 KB, metric rows ~0.2 KB)."""
    meta = source.metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return max(size / meta.num_rows if meta.num_rows else 1.0, 1.0)


def _batch_rows(per_row: float) -> int:
    """Rows per streamed batch: ~BATCH_BYTES of a file's rows, so memory stays flat whatever the table."""
    return int(min(65536, max(16, BATCH_BYTES / per_row)))


def _sources(paths: list[Path], table: str) -> list[Path | PartBlock]:
    """The files to merge, as read: the part files together as one block (store/part_block.py)
    after the run's canonical file (often the large one, streamed), or each file alone."""
    head = [] if paths and paths[0].name.startswith("part-") else paths[:1]
    block = read_block(paths[len(head):], table)
    return [*head, block] if block is not None else list(paths)


def _batches(source: Path | PartBlock) -> Iterator[tuple[pa.Table, float]]:
    """A source's rows in batches of at most ~BATCH_BYTES and MAX_BATCH_ROWS rows as decoded,
    with the bytes per row its footer gives (which sizes the output's row groups as before)."""
    if isinstance(source, PartBlock):
        per_row = max(source.rows.nbytes / source.rows.num_rows, 1.0) if source.rows.num_rows else 1.0
        step = _batch_rows(per_row)
        for start in range(0, source.rows.num_rows, step):
            yield source.rows.slice(start, step), per_row
        return
    # one thread, no pre-buffering: reader threads each keep an allocator arena, which
    # for a 100 MB import cost ~30 MB of resident memory more than this
    where, filesystem = _arrow(source)
    reader = pq.ParquetFile(where, pre_buffer=False, filesystem=filesystem)
    per_row = _row_bytes(reader)
    rows = min(_batch_rows(max(per_row, _probed_row_bytes(reader))), MAX_BATCH_ROWS)
    for batch in reader.iter_batches(batch_size=rows, use_threads=False):
        yield pa.Table.from_batches([batch]), per_row


def _probed_row_bytes(reader: pq.ParquetFile) -> float:
    """Decoded bytes per row of the file's first PROBE_ROWS rows. The footer counts text after
    dictionary encoding: a long text repeated on every row weighs almost nothing there, and a
    batch sized from it alone decoded 40,000 rows of 4,000 characters at once (~250 MB from a
    small file; a hostile review)."""
    for batch in reader.iter_batches(batch_size=PROBE_ROWS, use_threads=False):
        return batch.nbytes / max(batch.num_rows, 1)
    return 1.0


def merge_files(paths: list[Path], table: str, out: Path, run_id: str | None = None) -> Merged:
    """Write the surviving rows of `paths` (oldest first) to `out` (a temporary path the caller
    renames); returns row counts in and out. With `run_id`, every row must be that run's."""
    schema = SCHEMAS[table]
    sources = _sources(paths, table)
    masks = _winners(sources, table, run_id)
    stats = statistics_columns(schema)  # no NaN-blind float statistics, none of free text
    rows_in = rows_out = 0
    large = False
    held: list[pa.Table] = []  # kept rows of small sources with one schema, written together
    held_bytes = decoded = 0.0

    def write_held() -> None:
        nonlocal held_bytes, decoded
        if held:
            writer.write_table(conform(pa.concat_tables(held), schema, table))
            held.clear()
            held_bytes = decoded = 0.0

    with pq.ParquetWriter(out, schema, **PARQUET_WRITE, write_statistics=stats,
                          use_dictionary=dictionary_columns(schema)) as writer:
        for source, mask in zip(sources, masks):
            start = 0
            for part, per_row in _batches(source):
                n = part.num_rows
                kept = mask[start:start + n]
                large = large or part.nbytes >= LARGE_TABLE_BYTES
                if not kept.all():  # (filtering copies every row it keeps: only when one goes)
                    part = part.filter(pa.array(kept))
                if table in EMPTY_SET_MARKER and part.num_rows:  # empty sets won, and hold nothing
                    part = part.filter(_compute().greater_equal(part.column(EMPTY_SET_MARKER[table]), 0))
                start += n
                rows_in += n
                if part.num_rows:
                    # a live run's part holds 16 answers: one row group (and one conform) per
                    # part made its file 100+ tiny row groups, and cost most of its publish
                    if held and part.schema != held[0].schema:
                        write_held()
                    held.append(part)
                    held_bytes += part.num_rows * per_row  # the output's row groups, as before
                    decoded += part.nbytes  # what is held (a footer's estimate can be far off)
                    rows_out += part.num_rows
                    if held_bytes >= BATCH_BYTES or decoded >= HELD_BYTES:
                        write_held()
        write_held()
    if large:
        del part, sources
        release_arrow_memory()
    return Merged(rows_in, rows_out)
