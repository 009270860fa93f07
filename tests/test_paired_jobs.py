"""store/paired_jobs.py: a compaction's merges and derived tables, two at a time, with the
results and the failure the sequential loop gave."""

from __future__ import annotations

import threading
import time

import pytest

from evalcore.store.paired_jobs import run_jobs


def test_two_jobs_run_at_once():
    """Each job waits for the other: run one after the other, neither would get past the barrier."""
    barrier = threading.Barrier(2, timeout=10)

    def job(name):
        return lambda: (barrier.wait(), name)[1]

    assert run_jobs({"a": job("a"), "b": job("b")}) == {"a": "a", "b": "b"}


def test_results_come_in_the_callers_order_whatever_started_first():
    done = run_jobs({"x": lambda: 1, "y": lambda: 2, "z": lambda: 3}, first=["z", "y"])
    assert list(done.items()) == [("x", 1), ("y", 2), ("z", 3)]


def test_the_first_failure_in_the_callers_order_is_raised_after_every_job_ended():
    ended = []

    def slow():
        time.sleep(0.3)
        ended.append("slow")
        return "ok"

    def fails(message):
        def job():
            raise ValueError(message)
        return job

    # "late" fails first in time (at once) but comes after "early" in the caller's order
    with pytest.raises(ValueError, match="early"):
        run_jobs({"slow": slow, "early": lambda: (time.sleep(0.1), fails("early")())[1], "late": fails("late")},
                 first=["late"])
    assert ended == ["slow"]  # nothing still writing when the caller handles the error


def test_a_single_job_runs_in_the_callers_thread():
    assert run_jobs({"only": lambda: threading.current_thread() is threading.main_thread()}) == {"only": True}
    assert run_jobs({}) == {}


def test_ctrl_c_is_raised_once_the_running_jobs_end_and_nothing_starts_after():
    """Ctrl-C reaches the calling thread only, while it waits: the caller must not release the
    run's lock (and clean up) while a job still writes, nor may a job start afterwards. (A job
    that started before the Ctrl-C was noticed, e.g. the next one a worker took, is waited for:
    the signal may land on a worker thread, and the waiting thread then sees it only when it
    wakes. That the jobs not started are cancelled is the next test's.)"""
    import os
    import signal

    events = []
    both_running = threading.Barrier(2, timeout=10)

    def interrupting():
        both_running.wait()
        os.kill(os.getpid(), signal.SIGINT)  # handled by the main thread, waiting in run_jobs
        time.sleep(0.3)
        events.append("interrupting ended")

    def running():
        both_running.wait()
        time.sleep(0.5)
        events.append("running ended")

    def queued():
        events.append("queued started")
        time.sleep(0.2)
        events.append("queued ended")

    with pytest.raises(KeyboardInterrupt):
        run_jobs({"a": interrupting, "b": running, "c": queued}, first=["a", "b"])
    events.append("raised")
    time.sleep(0.4)  # a job not cancelled nor waited for would start or end now
    assert events[-1] == "raised"
    assert {"interrupting ended", "running ended"} <= set(events)
    assert ("queued started" in events) == ("queued ended" in events)


def test_ctrl_c_while_the_workers_start_leaves_nothing_running(monkeypatch):
    """A Ctrl-C while the workers are being started (before the second exists): a job the first
    worker took ends before the Ctrl-C is raised, and the rest never start."""
    events = []
    real_start = threading.Thread.start

    def interrupted_start(self):
        real_start(self)
        raise KeyboardInterrupt

    def a():
        events.append("a started")
        time.sleep(0.2)
        events.append("a ended")

    monkeypatch.setattr(threading.Thread, "start", interrupted_start)
    with pytest.raises(KeyboardInterrupt):
        run_jobs({"a": a, "b": lambda: events.append("b started")})
    monkeypatch.undo()
    events.append("raised")
    time.sleep(0.3)
    assert events in (["a started", "a ended", "raised"], ["raised"])  # "a" taken before the Ctrl-C, or cancelled


def test_no_thread_to_be_had_runs_the_jobs_here(monkeypatch):
    """A process at its thread limit ("can't start new thread") still compacts, one job after
    another in the calling thread, as before the jobs ran two at a time."""
    def no_thread(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    ran_in = []
    done = run_jobs({"a": lambda: ran_in.append(threading.current_thread()) or 1, "b": lambda: 2})
    assert done == {"a": 1, "b": 2} and ran_in == [threading.current_thread()]
