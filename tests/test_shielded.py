"""common/shielded.py: bounded work that a Ctrl-C cannot cut short."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from evalcore.common.shielded import shielded


def _ctrl_c_soon(delay: float = 0.05) -> threading.Timer:
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))  # handled by the main thread
    timer.start()
    return timer


def _slow_work(steps: list[str], value: int):
    """Work of 0.3 s that records its end and returns `value`."""
    def work():
        time.sleep(0.3)
        steps.append("ended")
        return value
    return work


def test_the_work_ends_whatever_ctrl_c_comes_meanwhile():
    steps = []
    work = _slow_work(steps, 42)
    timers = [_ctrl_c_soon(0.05), _ctrl_c_soon(0.15)]
    try:
        assert shielded(work) == 42
    finally:
        for timer in timers:
            timer.cancel()
            timer.join()
    assert steps == ["ended"]


def test_what_the_work_raises_is_raised_in_the_caller():
    def work():
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        shielded(work)


def test_a_duckdb_query_in_the_work_is_not_interrupted():
    """DuckDB takes a Ctrl-C during a query of the main thread and stops the query
    ("Query interrupted"): in shielded work, a publish's queries run to their end."""
    import duckdb

    con = duckdb.connect()
    timer = _ctrl_c_soon(0.1)
    try:
        (n,) = shielded(lambda: con.execute("SELECT count(*) FROM range(100000000) t(x) WHERE x % 7 = 3").fetchone())
    finally:
        timer.cancel()
        timer.join()
        con.close()
    assert n == 14285714


def test_the_ctrl_c_handler_is_put_back_and_other_threads_just_run_the_work():
    before = signal.getsignal(signal.SIGINT)
    assert shielded(lambda: signal.getsignal(signal.SIGINT) is not before)  # noted meanwhile
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(ValueError):
        shielded(lambda: int("x"))
    assert signal.getsignal(signal.SIGINT) is before
    out = []
    worker = threading.Thread(target=lambda: out.append(shielded(lambda: signal.getsignal(signal.SIGINT))))
    worker.start()
    worker.join()
    assert out == [before]  # (signal handlers can only be set in the main thread: left alone)


def test_a_ctrl_c_that_came_meanwhile_is_raised_after_the_work_when_asked():
    steps = []
    work = _slow_work(steps, 1)
    timer = _ctrl_c_soon(0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            shielded(work, interrupt_after=True)
    finally:
        timer.cancel()
        timer.join()
    assert steps == ["ended"]
    assert shielded(lambda: 2, interrupt_after=True) == 2  # no Ctrl-C: the value
