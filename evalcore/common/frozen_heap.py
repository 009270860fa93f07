"""The objects alive when a long step starts, kept out of the collector's full passes during it.

Why: a full (generation-2) collection walks every object the collector tracks: ~100,000 once
evalcore's libraries are imported (pydantic, pyarrow, DuckDB, aiohttp), 60-75 ms on this
machine, and it finds nothing among them: they live as long as the process. During a live run
one comes every few seconds; it stops the event loop that asks (16 requests wait) or the
scoring child's chunk that the end of the run waits for (docs/benchmarks.md, runner, "Session
14"). `gc.freeze()` moves them to a generation the collector skips; `gc.unfreeze()` at the end
hands them back, so nothing that became garbage meanwhile is kept for good. Objects made
during the step are collected as always. The price: unreachable cycles that already existed
when the step began wait for its end to be collected (a collection first would cost the very
60-75 ms this saves, in the time before the first question is sent).

A process that freezes objects on its own (the dashboard's server: evalcore/ui/warm.py), or
whose collector is off, is left as it is. A block inside another (a live run's asking inside
the run) is told by a count of our own: `gc.get_freeze_count()` walks every frozen object
(5-12 ms of a live run's time before its first question, for a count it only compared to 0).
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_blocks = 0  # blocks of this module running now (in any thread)
_froze = False  # whether the heap is frozen by this module (handed back when the last block ends)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Within the block, full collections skip every object alive when it began.

    Ctrl-C may land between any two steps here: `_froze` is set before the heap is frozen and
    cleared after it is handed back, and the count of blocks goes up and down with a flag set
    alongside it, so an interrupted block leaves at worst `_froze` set with no block running,
    which the next block takes over (and hands the heap back at its end) instead of leaving the
    heap frozen for good."""
    global _blocks, _froze
    counted = False
    try:
        with _lock:
            if _blocks == 0 and not _froze and gc.isenabled() and not gc.get_freeze_count():
                _froze = True  # (first: the freeze below is then always known to be ours)
                gc.freeze()
            _blocks += 1
            counted = True
        yield
    finally:
        if counted:
            with _lock:
                _blocks -= 1
                if _blocks == 0 and _froze:
                    gc.unfreeze()
                    _froze = False
