"""Bounded work that must end once begun, run where a Ctrl-C cannot cut it short.

Why: a run stopped by Ctrl-C records how it ended (status `cancelled`, its counts) with one
last publish. A second Ctrl-C during that publish used to cut it: Python raised it wherever the
main thread was, and DuckDB turns it into "Query interrupted" in a query of the main thread, so
the run stayed `running` and the command ended on an unexpected RuntimeError (session 15's
hostile review). Signals are handled by the main thread only: the work runs in a thread of its
own while the main thread waits for it, letting further Ctrl-Cs go (the work is bounded: one
publish). A process that cannot start a thread does the work where it is, as before.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def shielded(work: Callable[[], T], interrupt_after: bool = False) -> T:
    """`work()`, finished whatever Ctrl-C the caller gets meanwhile; raises what it raised.
    `interrupt_after`: a Ctrl-C that came meanwhile is raised once the work has ended (a run
    that was complete is recorded complete, and nothing after it starts)."""
    done = threading.Event()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = exc
        finally:
            done.set()

    try:
        threading.Thread(target=run, name="evalcore-shielded", daemon=True).start()
    except RuntimeError:  # no thread can be started (a process limit): here, unshielded
        return work()
    interrupted = False
    while True:
        try:
            done.wait()  # (an Event: Python 3.11's Thread.join may end early when interrupted)
            break
        except KeyboardInterrupt:
            interrupted = True
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    if interrupted and interrupt_after:
        raise KeyboardInterrupt
    return outcome["value"]  # type: ignore[return-value]
