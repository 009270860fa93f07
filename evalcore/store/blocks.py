"""A run's published table read in blocks, for passes that must never hold it whole.

Why in the store: which file holds a table is the run's pointer (tables.json), and how a row is
kept (Parquet, the validated object as JSON in a `record` column) is the store's format; both
may change with the format. The Ray scoring engine reads millions of answers in blocks, on its
workers, local or s3://; it asks here for the table and gets back records, a row count or a Ray
dataset, never a path it would have to understand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow.parquet as pq

from evalcore.store import fs as _fs
from evalcore.store.fs import Location
from evalcore.store.layout import read_pointer

RECORD = "record"  # the column holding each row's validated object as JSON (tables.py)


@dataclass(frozen=True)
class PublishedTable:
    """One table of one run as it was published when `published_table` was called: a later
    publish writes a new file and leaves this one readable until it is retired."""

    run_id: str
    table: str
    path: Location

    def _file(self) -> pq.ParquetFile:
        where, filesystem = _fs.arrow(self.path)
        return pq.ParquetFile(filesystem.open_input_file(where) if filesystem is not None else where)

    @property
    def rows(self) -> int:
        return self._file().metadata.num_rows

    def records(self, batch_size: int) -> Iterator[list[str]]:
        """The rows' JSON records, `batch_size` at a time (the last batch may be shorter)."""
        for batch in self._file().iter_batches(batch_size=batch_size, columns=[RECORD]):
            yield batch.column(0).to_pylist()

    def ray_dataset(self, data: Any, **read_options: Any) -> Any:
        """A Ray dataset of the `record` column, read by Ray's workers themselves (local or
        s3://). `data` is the `ray.data` module (the store does not import Ray); `read_options`
        go to its reader (num_cpus...)."""
        where, filesystem = _fs.arrow(self.path)
        return data.read_parquet(where, filesystem=filesystem, **read_options).select_columns([RECORD])


def published_table(store: Any, run_id: str, table: str) -> PublishedTable | None:
    """The run's published `table`, or None when nothing of it is published yet. RunDamaged
    when the run's pointer is missing or unreadable (store check / store repair)."""
    run_dir = store.run_dir(run_id)
    rel = read_pointer(run_dir).get("files", {}).get(table)
    return PublishedTable(run_id, table, run_dir / rel) if rel else None
