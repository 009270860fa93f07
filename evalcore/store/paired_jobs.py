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
while the caller handles the error. A job that succeeded beside a failed one leaves at most an
unpublished file of the generation being written, which the next compaction sweeps, as when
the loop failed on a later table. Memory: at most two merges' bounded buffers at once
(store/merge.py: HELD_BYTES each).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")
WORKERS = 2


def run_jobs(jobs: dict[str, Callable[[], T]], first: list[str] | None = None) -> dict[str, T]:
    """Run `jobs` WORKERS at a time, those named in `first` started first (the longest, so the
    shorter ones fill the other worker); {name: result} in `jobs`' order, or the first failure
    in that order raised once all have ended."""
    if len(jobs) < 2:
        return {name: job() for name, job in jobs.items()}
    start = [n for n in (first or []) if n in jobs] + [n for n in jobs if n not in (first or [])]
    with ThreadPoolExecutor(WORKERS, thread_name_prefix="evalcore-compaction") as pool:
        futures = {name: pool.submit(jobs[name]) for name in start}
    # leaving the block waited for every job: none is running now
    for name in jobs:
        error = futures[name].exception()
        if error is not None:
            raise error
    return {name: futures[name].result() for name in jobs}
