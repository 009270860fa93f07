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
_froze = False  # whether the first of them froze the heap (undone when the last one ends)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Within the block, full collections skip every object alive when it began."""
    global _blocks, _froze
    with _lock:
        if _blocks == 0:  # (inside another block: frozen already, or left as it was by it)
            _froze = gc.isenabled() and not gc.get_freeze_count()  # walks only what another froze
            if _froze:
                gc.freeze()
        _blocks += 1
    try:
        yield
    finally:
        with _lock:
            _blocks -= 1
            if _blocks == 0 and _froze:
                _froze = False
                gc.unfreeze()
