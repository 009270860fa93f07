"""A new in-memory DuckDB database for the store's views, begun in a background thread while the
caller does other work.

Why: creating a database (its catalog of built-in functions) costs ~25 ms of CPU, which DuckDB
spends without holding the interpreter lock. `evalcore runs` after a change to the store reads
every run's manifest first (pydantic's import and the validation: ~80 ms) and only then builds
the store's views on a new database; begun before the manifests are read, the database is ready
by the time the views need it (docs/benchmarks.md, "CLI start").

One database is begun at a time per process. `new_database` takes it when one was begun
(waiting for it if it is not ready yet) and otherwise creates one in the calling thread, as
before. A database begun but never taken (the views were already built, or the command failed
first) is closed by DuckDB at exit, as any other; the interpreter waits for it to be made
(~25 ms at most); one begun by a parent process is never used by a forked child.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

_LOCK = threading.Lock()
_BEGUN: list[tuple[int, threading.Event, dict[str, Any]]] = []  # (pid, done, {"con" | "error": ...})


def begin() -> None:
    """Begin making the next database (no-op when one is begun already). DuckDB is imported
    here, in the caller's thread: an import in a thread would contend with the caller's own."""
    import duckdb

    with _LOCK:
        if any(pid == os.getpid() for pid, _, _ in _BEGUN):
            return
        _BEGUN.clear()  # a parent's, inherited by a fork: its thread did not survive the fork
        done, box = threading.Event(), {}

        def make() -> None:
            try:
                box["con"] = duckdb.connect(":memory:")
            except BaseException as exc:  # noqa: BLE001 - the taker creates one itself, and meets it
                box["error"] = exc
            finally:
                done.set()

        try:  # not a daemon: the interpreter waits for it at exit. A daemon thread still inside
            # DuckDB then was stopped by the interpreter's end, which DuckDB's C++ code turned
            # into an abort (exit 134, "FATAL: exception not rethrown") once in ~30 quick exits
            threading.Thread(target=make, name="evalcore-database-start", daemon=False).start()
        except RuntimeError:  # no thread to be had (a process at its limit): made when needed
            return
        _BEGUN.append((os.getpid(), done, box))


def new_database() -> duckdb.DuckDBPyConnection:
    """The database `begin` made (once), else a new one made here."""
    import duckdb

    with _LOCK:
        begun = _BEGUN.pop() if _BEGUN and _BEGUN[-1][0] == os.getpid() else None
    if begun is not None:
        _, done, box = begun
        done.wait()
        if "con" in box:
            return box["con"]
    return duckdb.connect(":memory:")  # (a failure in the thread is met again here, and raised)
