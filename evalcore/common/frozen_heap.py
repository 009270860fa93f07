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
whose collector is off, is left as it is.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Within the block, full collections skip every object alive when it began."""
    if gc.get_freeze_count() or not gc.isenabled():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
