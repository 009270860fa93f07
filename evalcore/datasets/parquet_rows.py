"""The rows of a user's Parquet file, read in bounded memory whatever its compression.

Why: Parquet's bytes say little about what they decode to. A 1.9 KB file whose answer column
was one 1 MB string, dictionary-encoded and repeated in 300 rows, became 1.5 GB and then an
"unexpected ArrowMemoryError": the reader decoded 2048 rows at a time into plain strings. So:

* the footer (parsed whole by Arrow) is at most MAX_FOOTER_BYTES;
* a column chunk that decompresses to more than the record bound at more than MAX_RATIO to 1
  is refused, naming the row group and column (a page is decompressed whole, so such a chunk
  could cost its inflated size before a single row is seen);
* text columns stored with a dictionary are read as dictionaries (`read_dictionary`), so a
  value repeated in every row is held once, not once per row;
* each row group is read in batches whose row count comes from its metadata: about
  BATCH_BYTES of decoded column data per batch (at most MAX_BATCH_ROWS rows);
* before a row becomes Python values, its decoded size and its values are computed from the
  Arrow buffers (`row_costs`, vectorised), and a row over the record bound (32 MB,
  EVALCORE_MAX_RECORD_MB) or the value budget (50 000, EVALCORE_MAX_RECORD_VALUES) is refused
  naming it; rows become Python values in slices of at most BATCH_BYTES.

Rows are yielded with their RecordSize (bytes decoded, values), so an importer can batch them
by what they cost. Arrow values become JSON-like Python values (`plain`).
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from evalcore.errors import InputError
from evalcore.common.text_input import JSON_SIX_CHARS, JSON_TWO_CHARS, LIMIT_ENV, record_limit, shown_mb
from evalcore.common.value_budget import VALUES_ENV, RecordSize, value_limit

MAX_FOOTER_BYTES = 16 * 2 ** 20
MAX_RATIO = 100
BATCH_BYTES = 16 * 2 ** 20
MAX_BATCH_ROWS = 2048
STORED_SIZE_FROM = 2 ** 20  # past this, a row is measured as stored (row_costs)
DICTIONARY_ENCODINGS = {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}


def plain(value: Any) -> Any:
    """Arrow values -> JSON-like Python: NaN -> None (pandas writes NaN for missing values),
    binary -> text (it must be UTF-8: records are text)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _refuse(path: Path, message: str, record: int | None = None) -> InputError:
    return InputError(str(path), message, record=record)


def _check_footer(path: Path) -> None:
    """Refuse a footer larger than MAX_FOOTER_BYTES before Arrow parses it whole."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() < 12:
            return  # Arrow says what is wrong with it
        fh.seek(-8, 2)
        tail = fh.read(8)
    size = struct.unpack("<I", tail[:4])[0]
    if tail[4:] == b"PAR1" and size > MAX_FOOTER_BYTES:
        raise _refuse(path, f"not a readable Parquet file: its metadata takes {size / 2 ** 20:,.1f} MB; "
                      f"at most {MAX_FOOTER_BYTES // 2 ** 20} MB is read")


def _dictionary_columns(metadata: Any) -> list[str]:
    """Leaf paths of text columns stored with a dictionary in any row group."""
    found: list[str] = []
    for c in range(metadata.num_columns):
        if metadata.schema.column(c).physical_type != "BYTE_ARRAY":
            continue
        if any(DICTIONARY_ENCODINGS & set(metadata.row_group(r).column(c).encodings)
               for r in range(metadata.num_row_groups)):
            found.append(metadata.schema.column(c).path)
    return found


def _batch_rows(path: Path, metadata: Any, group: int) -> int:
    """Rows per batch for one row group, from what its column chunks decode to (at least)."""
    rg = metadata.row_group(group)
    rows = max(rg.num_rows, 1)
    bound = record_limit()
    cost = 0
    for c in range(rg.num_columns):
        chunk = rg.column(c)
        inflated, packed = chunk.total_uncompressed_size, max(chunk.total_compressed_size, 1)
        if inflated > bound and inflated > MAX_RATIO * packed:
            raise _refuse(path, f"row group {group + 1}, column {chunk.path_in_schema!r}: {packed:,} bytes "
                          f"decompress to {inflated / 2 ** 20:,.0f} MB (more than {MAX_RATIO} to 1, and more than "
                          f"the {shown_mb(bound)} bound on one record); write it with dictionary encoding or "
                          "smaller pages")
        each = max(inflated, chunk.num_values * 8)
        if "DELTA_BYTE_ARRAY" in chunk.encodings:  # a value may repeat the one before it: each <= the chunk
            each = max(each, chunk.num_values * min(inflated, bound))
        cost += each
    return int(max(1, min(MAX_BATCH_ROWS, BATCH_BYTES * rows // max(cost, 1))))


def sized_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any], RecordSize]]:
    import pyarrow.parquet as pq

    try:
        _check_footer(path)
        metadata = pq.ParquetFile(path).metadata
        pf = pq.ParquetFile(path, metadata=metadata, read_dictionary=_dictionary_columns(metadata))
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise _refuse(path, f"not a readable Parquet file: {_said(exc)}") from exc
    recno = 0
    for group in range(metadata.num_row_groups):
        batches = pf.iter_batches(batch_size=_batch_rows(path, metadata, group), row_groups=[group],
                                  use_threads=False)
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:  # a corrupt row group, an unsupported type, memory
                raise _refuse(path, f"unreadable Parquet data: {_said(exc)}", record=recno + 1) from exc
            if batch is None:
                break
            yield from _rows(path, batch, recno)
            recno += batch.num_rows


def _said(exc: BaseException) -> str:
    """What an Arrow error says; its type when it says nothing, and plain words for memory."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "ArrowMemoryError":
        return f"it does not fit in memory when decoded ({type(exc).__name__}: {exc})".replace(": )", ")")
    return str(exc).strip() or type(exc).__name__


def _rows(path: Path, batch: Any, recno: int) -> Iterator[tuple[int, dict[str, Any], RecordSize]]:
    """The batch's rows as records, each checked against the bounds before it is built."""
    sizes, values = row_costs(batch)
    byte_bound, value_bound = record_limit(), value_limit()
    for i in np.flatnonzero((sizes > byte_bound) | (values > value_bound))[:1]:
        what = (f"decodes to {sizes[i] / 2 ** 20:,.1f} MB, more than {shown_mb(byte_bound)} (the bound on one record, "
                f"its text counted as stored: a control character as six characters; set {LIMIT_ENV} to raise it)"
                if sizes[i] > byte_bound else
                f"holds {values[i]:,} values, more than {value_bound:,} (the bound on one record; set {VALUES_ENV} "
                "to raise it)")
        raise _refuse(path, f"the row {what}", record=recno + int(i) + 1)
    start = 0
    ends = np.cumsum(sizes)
    while start < batch.num_rows:
        taken = int(np.searchsorted(ends, (ends[start - 1] if start else 0) + BATCH_BYTES, side="right"))
        stop = max(start + 1, min(taken, batch.num_rows))
        for offset, row in enumerate(batch.slice(start, stop - start).to_pylist()):
            i = start + offset
            yield recno + i + 1, _record(path, row, recno + i + 1), RecordSize(int(sizes[i]), int(values[i]))
        start = stop


def _record(path: Path, row: dict[str, Any], recno: int) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        try:
            out[k] = plain(v)
        except UnicodeDecodeError as exc:
            raise InputError(str(path), f"binary value is not UTF-8 text ({exc.reason})", record=recno,
                             field=k) from exc
    return out


def row_costs(batch: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per row of an Arrow record batch: the bytes its values decode to, and how many values
    it holds (the row itself, each column's value, each element of a list or struct). When a
    row passes STORED_SIZE_FROM bytes, its text is measured as JSON stores it instead (a control
    character as six: text_input.stored_size), which is what importing it will hold."""
    sizes, values = _row_costs(batch, stored=False)
    if len(sizes) and sizes.max() > STORED_SIZE_FROM:
        sizes, values = _row_costs(batch, stored=True)
    return sizes, values


def _row_costs(batch: Any, stored: bool) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    values = np.ones(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        b, v = _costs(column, stored)
        sizes += b
        values += v
    return sizes, values


def _text_sizes(arr: Any, stored: bool) -> np.ndarray:
    """Bytes of each string: as decoded, or (`stored`) plus what JSON's escapes add to it."""
    import pyarrow.compute as pc

    sizes = pc.binary_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if stored:
        for pattern, extra in ((JSON_SIX_CHARS, 5), (JSON_TWO_CHARS, 1)):
            found = pc.count_substring_regex(arr, pattern).fill_null(0)
            sizes += extra * found.to_numpy(zero_copy_only=False).astype(np.int64)
    return sizes


def _costs(arr: Any, stored: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, values) of each element of an Arrow array, nested types summed over their parts."""
    import pyarrow as pa

    kind = arr.type
    n = len(arr)
    ones = np.ones(n, dtype=np.int64)
    if pa.types.is_dictionary(kind):
        b, v = _costs(arr.dictionary, stored)
        index = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if not len(b):
            return np.zeros(n, dtype=np.int64), ones
        return b[index], v[index]
    if (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind) or pa.types.is_string_view(kind) or pa.types.is_binary_view(kind)):
        return _text_sizes(arr, stored), ones
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        b, v = _costs(arr.values, stored)
        return _summed(b, offsets) + 8, _summed(v, offsets) + 1
    if pa.types.is_fixed_size_list(kind):
        width = kind.list_size
        b, v = _costs(arr.flatten(), stored)
        offsets = np.arange(n + 1, dtype=np.int64) * width
        return _summed(b, offsets) + 8, _summed(v, offsets) + 1
    if pa.types.is_struct(kind):
        sizes, counts = np.zeros(n, dtype=np.int64), ones.copy()
        for child in arr.flatten():
            b, v = _costs(child, stored)
            sizes += b
            counts += v
        return sizes, counts
    if pa.types.is_null(kind):
        return np.zeros(n, dtype=np.int64), ones
    try:  # pyarrow raises, not returns None, for a type of no fixed width
        width = kind.bit_width
    except ValueError:
        width = None
    if isinstance(width, int) and width > 0:
        return np.full(n, max(1, width // 8), dtype=np.int64), ones
    return np.full(n, arr.nbytes, dtype=np.int64), ones  # another type: each row charged the whole


def _summed(each: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per list: the sum of its elements' figures (elements offsets[i]..offsets[i+1])."""
    total = np.concatenate(([0], np.cumsum(each, dtype=np.int64)))
    return total[offsets[1:]] - total[offsets[:-1]]
