"""How a live run publishes what it has written while it asks (pipeline/live.py).

Why apart: the rule is about readers (the dashboard, `evalcore runs`) and what it costs the
run, not about asking: answers become visible a few seconds late, and compacting never takes
more than PUBLISH_SHARE of the run however large it grows.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable

from evalcore.store import RunWriter

if TYPE_CHECKING:
    from evalcore.schemas import EvalQuestion

PUBLISH_EVERY_S = 5.0  # how often a live run compacts what it has written (see on_flush)
PUBLISH_SHARE = 0.2  # at most this share of a live run's time goes to those compactions


def recorder(writer: RunWriter, n_done: int, expected: int) -> Callable[[int], None]:
    """What runs as answers get written: a publish every few seconds, which records the count
    of answers it makes visible in the manifest (never a count of answers readers cannot see
    yet: a full disk may stop the run before the next publish)."""
    started = time.monotonic()
    published = [started, PUBLISH_EVERY_S]  # (last publish ended, wait before the next)

    def on_flush(written: int) -> None:
        # readers (the dashboard) see a live run's answers as it goes, a few seconds late:
        # compaction rewrites the run's file, so it runs at most every PUBLISH_EVERY_S, and less
        # often as the run grows: the wait is at least (1 - share) / share times the last
        # compaction's time, so compacting never takes more than PUBLISH_SHARE of the run (it
        # holds the answers' writer meanwhile, and 100,000 answers take seconds to compact).
        # Between publishes, progress counts the pending part files: analysis/runs/progress.py
        # A run whose end, at its pace so far, is nearer than that wait skips it: its final
        # publish shows everything sooner, and a compaction near the end only took the
        # interpreter from the asking (a fifth of a 1,000-answer run's CPU, bench_runner).
        now = time.monotonic()
        if now - published[0] >= published[1] and not _ends_within(published[1], started, now, written,
                                                                      expected - n_done - written):
            began = time.monotonic()
            writer.publish(record=lambda m: {"counts": {**m.counts, "responses": n_done + written,
                                                        "expected": expected}})
            took = time.monotonic() - began
            published[:] = [time.monotonic(), max(PUBLISH_EVERY_S, took * (1 - PUBLISH_SHARE) / PUBLISH_SHARE)]

    return on_flush


def _ends_within(seconds: float, started: float, now: float, written: int, left: int) -> bool:
    """Whether the `left` answers still to write take less than `seconds` at the pace of the
    `written` ones since `started`."""
    if written <= 0 or now <= started:
        return False
    return left / (written / (now - started)) < seconds


class OpeningPublish:
    """A new run's first write and publish (its questions), made beside the asking instead of
    before it.

    Why: the publish computes the run's (empty) summaries, ~0.07 s that every fresh run waited
    for before its first question was sent (bench/bench_runner.py); the write is the process's
    first Arrow conversion of Python values, which imports pandas (pyarrow checks every value
    for a pandas type): ~0.26 s before the first question of every `evalcore run`. The asking
    needs neither; what needs them done is the first answers' write (the sink waits for `wait`
    there), so a run whose questions or first publish failed (a full disk) has written no
    answer and can be removed whole, as when it failed before the asking. The price: such a run
    has asked meanwhile (until the failure is known it asks as any run does; then it stops at
    once: ResponseSink's `failed_before`), answers it does not keep: a fraction of a second of
    asking, in a run that could not have kept them anyway."""

    def __init__(self, writer: RunWriter, questions: list[EvalQuestion]):
        self._writer = writer
        self._questions = questions
        self.failure: BaseException | None = None
        # waited on instead of the thread: Python 3.11's Thread.join, interrupted by Ctrl-C,
        # can mark a running thread ended, and a second join then returns at once
        self._done = threading.Event()
        threading.Thread(target=self._publish, name="evalcore-opening-publish", daemon=True).start()

    def _publish(self) -> None:
        try:
            self._writer.write_questions(self._questions)
            self._writer.publish()
        except BaseException as exc:  # noqa: BLE001 - raised by `wait`, in the thread that waits
            self.failure = exc
        finally:
            self._done.set()

    def wait(self) -> None:
        """Once the publish is done; raises what made it fail."""
        if self.settled() is not None:
            raise self.failure

    def settled(self) -> BaseException | None:
        """Once the publish is done: what made it fail, or None. (A run that stops before its
        first answer asks this before deciding what it leaves behind, so a second Ctrl-C does
        not cut the wait short: the publish of the questions is bounded work.)"""
        while True:
            try:
                self._done.wait()
                return self.failure
            except KeyboardInterrupt:
                continue
