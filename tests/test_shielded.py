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


def test_the_work_ends_whatever_ctrl_c_comes_meanwhile():
    steps = []

    def work():
        time.sleep(0.3)
        steps.append("ended")
        return 42

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


def test_a_process_that_cannot_start_a_thread_does_the_work_where_it_is(monkeypatch):
    def no_thread(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    assert shielded(lambda: threading.current_thread() is threading.main_thread())


def test_a_ctrl_c_that_came_meanwhile_is_raised_after_the_work_when_asked():
    steps = []

    def work():
        time.sleep(0.3)
        steps.append("ended")
        return 1

    timer = _ctrl_c_soon(0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            shielded(work, interrupt_after=True)
    finally:
        timer.cancel()
        timer.join()
    assert steps == ["ended"]
    assert shielded(lambda: 2, interrupt_after=True) == 2  # no Ctrl-C: the value
