"""Many small part files of one table read as one block, their keys and rows read once.

Why: a live run writes an answers' part per 16 answers and a metrics' part per scored chunk,
so its final publish merges ~80 small files for 1,000 answers. Read file by file (keys first,
then rows, the merge streaming each in batches sized from its footer), each cost ~1.5 ms of
Python around pyarrow: most of the merge, which is most of the publish the user waits for after
the last answer (bench/bench_runner.py). Held together, each file is opened and decoded once.

What is held is counted as it is decoded, in batches of SCAN_ROWS rows, and the block is given
up past BLOCK_BYTES: footers cannot bound it (they count text after dictionary encoding: a long
text repeated on every row weighs little there; a hostile review's 16 parts of "488 KB" each
decoded to 2.6 GB). Arrow's dataset scanner was faster by little and decodes a whole row group
before its first batch (2.6 GB read at once; ~1 GB even when stopped at its first batch).

The block is only a faster way to read: merge.py applies the very rules it applies to files
read one by one (which row wins, another run's rows, the table's schema), using each row's
file and position within it, which the block keeps (`sizes`). Anything unusual — object
storage, parts too large to hold at once, a schema other than the table's own, a file that
cannot be read — gives None, and the caller reads the files one by one as before, with its
own errors. Parts this process wrote come from memory as written (store/written_parts.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from evalcore.store import fs as _fs
from evalcore.store.tables import SCHEMAS
from evalcore.store.written_parts import recall

BLOCK_BYTES = 16 * 2**20  # decoded bytes of parts held at once (1,000 live answers: ~2 MB)
MIN_FILES = 4  # fewer files gain nothing from being read together
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
    """Every row of `paths` (local part files of `table`, oldest first), or None when they are
    better read one by one (see the module's docstring)."""
    if len(paths) < MIN_FILES or any(_fs.is_remote(p) for p in paths):
        return None
    import pyarrow.parquet as pq

    schema = SCHEMAS[table]
    batches: list[pa.RecordBatch] = []
    sizes, held = [], 0
    try:
        for path in paths:
            written = recall(path)  # this process wrote it, and it is still that file: no read back
            if written is not None and written.schema.equals(schema):
                sizes.append(written.num_rows)
                held += written.nbytes
                if held > BLOCK_BYTES:
                    return None
                batches.extend(written.to_batches())
                continue
            where, _ = _fs.arrow(path)  # a FIFO or a device is refused, never opened
            source = pq.ParquetFile(where, pre_buffer=False)
            if not source.schema_arrow.equals(schema):
                return None  # an older file, or another table's: conformed (or refused) file by file
            sizes.append(source.metadata.num_rows)
            for batch in source.iter_batches(batch_size=SCAN_ROWS, use_threads=False):
                held += batch.nbytes
                if held > BLOCK_BYTES:
                    return None
                batches.append(batch)
    except (OSError, pa.ArrowException):
        return None
    rows = pa.Table.from_batches(batches, schema=schema)
    return PartBlock(list(paths), rows, sizes) if rows.num_rows == sum(sizes) else None
