"""Many small part files of one table read as one block, in a single scan.

Why: a live run writes an answers' part per 16 answers and a metrics' part per scored chunk,
so its final publish merges ~80 small files for 1,000 answers. Opened one by one (keys first,
then rows), each cost ~1.5 ms of Python around pyarrow: most of the merge, which is most of
the publish the user waits for after the last answer (bench/bench_runner.py). Arrow's dataset
scanner reads the same files once, in C++, in about a third of that (one thread: faster than
several for files this small, and no reader arenas kept), and counts what they decode to as it
goes: past BLOCK_BYTES it stops, and the files are read one by one.

The block is only a faster way to read: merge.py applies the very rules it applies to files
read one by one (which row wins, another run's rows, the table's schema), using each row's
file and position within it, which the block keeps (`sizes`). Anything unusual — object
storage, parts too large to hold at once, a schema other than the table's own, a file the
scanner cannot read — gives None, and the caller reads the files one by one as before, with
its own errors.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from evalcore.store import fs as _fs
from evalcore.store.tables import SCHEMAS

BLOCK_BYTES = 16 * 2**20  # decoded bytes of parts held at once (1,000 live answers: ~2 MB)
MIN_FILES = 4  # fewer files gain nothing from one scan
SCAN_ROWS = 1024  # rows decoded at a time while the block's size is counted


@dataclass
class PartBlock:
    """The rows of `paths`, in that order, each file's rows in its own order (`sizes`: rows per file)."""

    paths: list[Path]
    rows: pa.Table
    sizes: list[int]

    def path_of(self, row: int) -> Path:
        """The file the block's `row` came from."""
        for path, end in zip(self.paths, itertools.accumulate(self.sizes)):
            if row < end:
                return path
        raise IndexError(row)


def read_block(paths: list[Path], table: str) -> PartBlock | None:
    """Every row of `paths` (local part files of `table`, oldest first) in one scan, or None
    when they are better read one by one (see the module's docstring)."""
    if len(paths) < MIN_FILES or any(_fs.is_remote(p) for p in paths):
        return None
    try:
        for path in paths:
            _fs.arrow(path)  # a FIFO or a device is refused, never opened by the scanner
            if os.stat(path).st_size > BLOCK_BYTES:
                return None
        import pyarrow.dataset as ds

        schema = SCHEMAS[table]
        dataset = ds.dataset([str(p) for p in paths], format="parquet", schema=schema)
        fragments = list(dataset.get_fragments())
        if [f.path for f in fragments] != [str(p) for p in paths]:
            return None
        footers = [f.metadata for f in fragments]  # read once: the scan below uses them
        if any(not m.schema.to_arrow_schema().equals(schema) for m in footers):
            return None  # an older file, or another table's: conformed (or refused) file by file
        encoded = sum(m.row_group(g).total_byte_size for m in footers for g in range(m.num_row_groups))
        if encoded > BLOCK_BYTES:
            return None  # held at once: the merge of large parts streams them instead
        rows = _bounded_scan(dataset)
        sizes = [m.num_rows for m in footers]
    except (OSError, pa.ArrowException):
        return None
    if rows is None or sum(sizes) != rows.num_rows:
        return None
    return PartBlock(list(paths), rows, sizes)


def _bounded_scan(dataset) -> pa.Table | None:
    """The dataset's rows in order, or None as soon as they decode to more than BLOCK_BYTES.
    The footers' sizes cannot bound it: they count values after dictionary and run-length
    encoding, so a long text repeated on every row weighs little there (a hostile review's 16
    parts "488 KB" each decoded to 2.6 GB). Batches of SCAN_ROWS rows keep the overshoot small."""
    batches, held = [], 0
    # one thread (see above), and nothing read ahead: at most one row group is decoded beyond
    # what is held, as when the files are read one by one
    for batch in dataset.to_batches(batch_size=SCAN_ROWS, use_threads=False, batch_readahead=0,
                                    fragment_readahead=0):
        held += batch.nbytes
        if held > BLOCK_BYTES:
            return None
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=dataset.schema)
