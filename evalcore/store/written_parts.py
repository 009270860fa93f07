"""Small part files this process wrote, kept in memory as written until a compaction absorbs them.

Why: a live run's final publish merges every part file its answers were written to (one per 16
answers), and reading them back cost ~1.2 ms each (open, footer, decode: ~75 ms of the ~0.3 s
the user waits after the last answer for 1,000 answers, bench/bench_runner.py). The process
that wrote them still has their rows as Arrow tables: the merge takes them from here instead.

When a file is taken from memory: only when the file now at that path is still the one written
there (same device, inode, size, modification and change time, recorded right after its rename:
any write, rename or utime changes the change time, which nobody can set back). A part
replaced, truncated, rewritten or moved in by hand, or written by another process, is read from
disk as before, with every check the disk path applies. Held: a run's parts (RunWriter's; not
the dashboard's labels, which no merge of a run reads) of at most PART_BYTES each, MEMO_BYTES in
all, each charged ENTRY_BYTES more than its Arrow buffers (a held table costs ~13 KB of objects
however few its rows: a hostile review's 4,000 one-row labels held 52 MB while counting 0.6 MB);
the oldest go first. Local stores only (object storage has no inode).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import pyarrow as pa

MEMO_BYTES = 8 * 2**20  # held in all, as charged (1,000 live answers and their values: ~2 MB)
PART_BYTES = 2**20  # a part larger than this is not held (imports' large parts: read back)
ENTRY_BYTES = 16 * 2**10  # what holding one part costs beyond its buffers (schema, arrays, chunks)

_lock = threading.Lock()
_held: OrderedDict[str, tuple[tuple[int, ...], pa.Table, int, int]] = OrderedDict()  # (identity, rows, number, bytes)
_bytes = 0
_count = 0  # parts remembered so far: `mark` and `hand_over` use it


def _identity(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def remember(path: Path, rows: pa.Table) -> None:
    """`rows` were just written to the local file `path` (renamed into place)."""
    identity = _identity(path)
    if identity is not None:
        _hold(str(path), identity, rows)


def _hold(key: str, identity: tuple[int, ...], rows: pa.Table) -> None:
    global _bytes, _count
    buffers = rows.nbytes  # (computed over every buffer: once)
    if buffers > PART_BYTES:
        return
    size = buffers + ENTRY_BYTES
    with _lock:
        _drop(key)
        _count += 1
        _held[key] = (identity, rows, _count, size)
        _bytes += size
        while _bytes > MEMO_BYTES and _held:
            _drop(next(iter(_held)))


def mark() -> int:
    """Where the parts remembered from now on start (for `hand_over`)."""
    return _count


def hand_over(since: int) -> list[tuple[str, tuple[int, ...], bytes]]:
    """The parts remembered after `mark()` returned `since`, as (path, identity, Arrow IPC
    bytes), let go here: a live run's scoring child writes its values' parts, and the process
    that compacts the run takes them (`adopt`) instead of reading them back."""
    with _lock:
        taken = [(key, entry) for key, entry in _held.items() if entry[2] > since]
        for key, _ in taken:
            _drop(key)
    out = []
    for key, (identity, rows, _, _) in taken:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as stream:
            stream.write_table(rows)
        out.append((key, identity, sink.getvalue().to_pybytes()))
    return out


def adopt(parts: list[tuple[str, tuple[int, ...], bytes]]) -> None:
    """Hold parts another process of this run wrote (see `hand_over`); each is still taken
    from memory only while the file at its path is the one that process wrote."""
    for key, identity, data in parts:
        try:
            rows = pa.ipc.open_stream(data).read_all()
        except (pa.ArrowException, TypeError, ValueError):
            continue  # read from disk instead
        _hold(key, tuple(identity), rows)


def recall(path: Path) -> pa.Table | None:
    """The rows written to `path` by this process, if the file there is still the one written."""
    key = str(path)
    with _lock:
        found = _held.get(key)
    if found is None:
        return None
    if _identity(path) != found[0]:
        forget([path])
        return None
    return found[1]


def forget(paths: list[Path]) -> None:
    """Parts absorbed (and removed) by a compaction: their rows are not needed any more."""
    with _lock:
        for path in paths:
            _drop(str(path))


def clear() -> None:
    """Hold nothing (for tests)."""
    with _lock:
        for key in list(_held):
            _drop(key)


def held_bytes() -> int:
    """Arrow bytes held now (for tests and benchmarks)."""
    return _bytes


def _drop(key: str) -> None:
    global _bytes
    found = _held.pop(key, None)
    if found is not None:
        _bytes -= found[3]
