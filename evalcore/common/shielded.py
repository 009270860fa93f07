"""Bounded work that must end once begun, which a Ctrl-C cannot cut short.

Why: a run stopped by Ctrl-C records how it ended (status `cancelled`, its counts) with one
last publish. A second Ctrl-C during that publish used to cut it: Python raised it wherever the
main thread was, and DuckDB turns it into "Query interrupted" in a query of the main thread, so
the run stayed `running` and the command ended on an unexpected RuntimeError (session 15's
hostile review). While the work runs, Ctrl-C is noted instead of raised (the work is bounded:
one publish). Only the main thread ever gets a Ctrl-C: elsewhere the work just runs.

(A first version ran the work in a thread while the main thread waited: a Ctrl-C landing while
that thread was being started left the wait early, and the process's exit then killed the
publish midway. Noting the signal has no such window once the note is in place.)
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def shielded(work: Callable[[], T], interrupt_after: bool = False) -> T:
    """`work()`, finished whatever Ctrl-C comes meanwhile; raises what it raised.
    `interrupt_after`: a Ctrl-C that came meanwhile is raised once the work has ended (a run
    that was complete is recorded complete, and nothing after it starts)."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    noted: list[int] = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        result = work()
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if noted and interrupt_after:
        raise KeyboardInterrupt
    return result
