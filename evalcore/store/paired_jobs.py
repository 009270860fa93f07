"""A compaction's independent jobs (one merge per table, one derived table) run two at a time.

Why: a live run's final publish — what the user waits for after the last answer
(bench/bench_runner.py) — merged its tables one after another, then computed its derived
tables one after another, on one core while the other sat idle. pyarrow and DuckDB let go of
the interpreter lock while they sort, scan and write, so the metrics merge overlaps the
answers' merge, and the one-row-per-answer pivot overlaps the summaries: at 1,000 answers the
publish went from ~0.22 s to ~0.17 s (docs/benchmarks.md, runner, "Session 14").

What a caller sees is what the sequential loop gave: every job's result under its own name,
and when jobs fail, the failure of the first failing job in the caller's order (the one the
loop would have stopped at) — only after every job started has ended, so no job still writes
while the caller handles the error (Ctrl-C included: the jobs not started are cancelled). A job that succeeded beside a failed one leaves at most an
unpublished file of the generation being written, which the next compaction sweeps, as when
the loop failed on a later table. Memory: at most two merges' bounded buffers at once
(store/merge.py: HELD_BYTES each).
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, wait
from typing import Callable, TypeVar

T = TypeVar("T")
WORKERS = 2


def run_jobs(jobs: dict[str, Callable[[], T]], first: list[str] | None = None) -> dict[str, T]:
    """Run `jobs` WORKERS at a time, those named in `first` started first (the longest, so the
    shorter ones fill the other worker); {name: result} in `jobs`' order, or the first failure
    in that order raised once all have ended. Ctrl-C (which only the calling thread handles)
    cancels the jobs not started yet and is raised once the running ones have ended: the caller
    then releases the run's lock and cleans up, and no job of this compaction still writes. (The
    signal may land on a worker thread, and the waiting thread sees it only when it wakes: a job
    a worker took meanwhile is one of the running ones, waited for.)

    Every job's future exists before any worker starts (ThreadPoolExecutor makes each as it is
    submitted, and a Ctrl-C while it starts a thread lost a queued job that ran anyway)."""
    if len(jobs) < 2:
        return {name: job() for name, job in jobs.items()}
    order = [n for n in (first or []) if n in jobs] + [n for n in jobs if n not in (first or [])]
    futures: dict[str, Future] = {name: Future() for name in order}
    queue, lock = deque(order), threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                name = queue.popleft()
            future = futures[name]
            if not future.set_running_or_notify_cancel():  # cancelled by a Ctrl-C
                continue
            try:
                future.set_result(jobs[name]())
            except BaseException as exc:  # noqa: BLE001 - raised by the caller, in its order
                future.set_exception(exc)

    try:
        started = 0
        for i in range(WORKERS):
            try:
                threading.Thread(target=worker, name=f"evalcore-compaction-{i}", daemon=True).start()
            except RuntimeError:  # no thread to be had (a process at its limit): fewer workers
                break
            started += 1
        if not started:
            worker()  # this thread does them all, as the sequential loop did
        wait(list(futures.values()))
    except BaseException:  # Ctrl-C while starting or waiting: the running jobs still end first
        _wait_out(list(futures.values()))
        raise
    for name in jobs:
        error = futures[name].exception()
        if error is not None:
            raise error
    return {name: futures[name].result() for name in jobs}


def _wait_out(futures: list[Future]) -> None:
    """Cancel the jobs not started and wait for the running ones, through further Ctrl-Cs
    (bounded work, as OpeningPublish.settled waits for the run's first publish). Waits on the
    futures, not the threads: on Python 3.11 a thread whose join() Ctrl-C interrupted counts as
    ended from then on, and a second join() returns at once while it still runs."""
    for future in futures:
        future.cancel()  # (a running job cannot be: it is waited for)
    while True:
        try:
            wait(futures)
            return
        except BaseException:  # noqa: BLE001 - a second Ctrl-C: the first is raised by the caller
            continue
