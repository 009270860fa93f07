"""store/database_start.py: the views' database begun in a thread is the one the next build
takes, once; a failure to make it there, a fork, or no thread to be had leaves the build making
its own, as before."""

from __future__ import annotations

import os
import threading

import duckdb
import pytest

from evalcore.store import database_start as D


@pytest.fixture(autouse=True)
def _nothing_begun():
    D._BEGUN.clear()
    yield
    D._BEGUN.clear()


def test_a_begun_database_is_taken_once_then_new_ones_are_made(monkeypatch):
    made = []
    real = duckdb.connect

    def connect(*args, **kwargs):
        con = real(*args, **kwargs)
        made.append((threading.current_thread().name, con))
        return con

    monkeypatch.setattr(duckdb, "connect", connect)
    D.begin()
    D.begin()  # a second call begins nothing more
    first = D.new_database()
    assert [name for name, _ in made] == ["evalcore-database-start"] and first is made[0][1]
    assert first.execute("SELECT 42").fetchone() == (42,)
    second = D.new_database()
    assert second is not first and made[-1][0] == threading.current_thread().name


def test_a_failure_in_the_thread_is_met_again_by_the_taker(monkeypatch):
    calls = []

    def connect(*args, **kwargs):
        calls.append(threading.current_thread().name)
        raise duckdb.IOException("no memory for a database")

    monkeypatch.setattr(duckdb, "connect", connect)
    D.begin()
    with pytest.raises(duckdb.IOException, match="no memory"):
        D.new_database()
    assert calls == ["evalcore-database-start", threading.current_thread().name]


def test_no_thread_to_be_had_means_the_database_is_made_when_needed(monkeypatch):
    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    D.begin()
    assert D._BEGUN == []
    assert D.new_database().execute("SELECT 1").fetchone() == (1,)


def test_a_database_a_parent_began_is_not_used_after_a_fork(monkeypatch):
    D.begin()
    parent = D._BEGUN[-1]
    monkeypatch.setattr(os, "getpid", lambda: parent[0] + 1)  # as seen from a forked child
    con = D.new_database()
    assert D._BEGUN == [parent] and con.execute("SELECT 1").fetchone() == (1,)
    D.begin()  # the child begins its own, dropping the parent's
    assert len(D._BEGUN) == 1 and D._BEGUN[0][0] == parent[0] + 1


def test_the_listing_after_a_change_is_the_same_with_the_database_begun(tmp_path, monkeypatch):
    from evalcore.analysis.runs.listing_cache import compute_listing
    from evalcore.demo.synthetic import build_store
    from evalcore.store.views import forget_connections

    store = build_store(tmp_path / "runs", n_runs=2, n_questions=5, methods=("a", "b"))
    forget_connections()
    begun = compute_listing(store)
    assert D._BEGUN == []  # taken by the views' build
    monkeypatch.setattr(D, "begin", lambda: None)  # the database made when the views need it, as before
    forget_connections()
    assert compute_listing(store) == begun and len(begun.rows) == 2


def test_a_command_that_ends_while_the_database_is_made_exits_as_it_meant_to(monkeypatch):
    """A daemon thread still inside DuckDB when the interpreter ended was stopped there, which
    DuckDB's C++ code turned into an abort (exit 134) once in ~30 quick exits: the thread is not
    a daemon, so the interpreter waits for it (~25 ms) and the exit code is the command's own."""
    import subprocess
    import sys

    release, real = threading.Event(), duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: release.wait(10) and real(*a, **k))
    D.begin()
    (thread,) = [t for t in threading.enumerate() if t.name == "evalcore-database-start"]
    assert thread.is_alive() and not thread.daemon
    release.set()
    assert D.new_database().execute("SELECT 1").fetchone() == (1,)
    code = "from evalcore.store.database_start import begin; begin(); raise SystemExit(3)"
    for _ in range(8):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.returncode == 3, done.stderr[-500:]
