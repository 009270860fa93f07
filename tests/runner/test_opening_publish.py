"""pipeline/live_publish.py OpeningPublish: a new run's questions, written and published beside
the asking. Whatever happens meanwhile, the answers are never written before the questions,
and a run whose questions cannot be written stops asking at once (found by session 15's
hostile review: a second Ctrl-C let the wait return early, and a failed write let the lanes go
on asking until their held answers filled the buffer). And the publish that records how a run
ended is not cut short by a Ctrl-C (common/shielded.py)."""

from __future__ import annotations

import errno
import json
import os
import signal
import threading
import time

import pytest

from evalcore.pipeline.live_publish import OpeningPublish
from evalcore.runner.config import EvalConfig
from evalcore.store import RunStore
from tests.reliability.servers import ScriptedServer, rag_answer


class SlowWriter:
    """Writes its questions slowly (100,000 questions take ~2 s), publishes at once."""

    run_id = "r"

    def __init__(self, seconds: float = 0.8):
        self.seconds = seconds
        self.written = threading.Event()

    def write_questions(self, questions):
        time.sleep(self.seconds)
        self.written.set()

    def publish(self):
        pass


def _ctrl_c_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))  # the main thread gets it
    timer.start()
    return timer


def _cancel(timers: list[threading.Timer]) -> None:
    """Timers not fired yet never fire (a Ctrl-C after the test would stop the session)."""
    for timer in timers:
        timer.cancel()
        timer.join()


def test_the_wait_outlasts_ctrl_c_until_the_questions_are_written():
    """Python 3.11's Thread.join, interrupted by Ctrl-C, can mark a running thread ended; a
    wait built on it returned while the questions were still being written."""
    writer = SlowWriter()
    opening = OpeningPublish(writer, [])
    timers = [_ctrl_c_after(0.15), _ctrl_c_after(0.35)]  # and a second Ctrl-C
    try:
        assert opening.settled() is None
        assert writer.written.is_set(), "settled() returned before the questions were written"
    finally:
        _cancel(timers)


def test_the_first_answers_wait_for_the_questions_whatever_the_main_thread_sees():
    """The answers' write waits (`wait`) in a flush thread; a Ctrl-C in the main thread's own
    wait must not release it before the questions are written."""
    writer = SlowWriter()
    opening = OpeningPublish(writer, [])
    released = []

    def first_write():
        opening.wait()
        released.append(writer.written.is_set())

    flush = threading.Thread(target=first_write)
    flush.start()
    timer = _ctrl_c_after(0.15)
    try:
        opening.settled()
    finally:
        _cancel([timer])
    flush.join(5)
    assert released == [True]


def test_a_run_whose_questions_cannot_be_written_stops_asking_at_once(tmp_path, monkeypatch, question_file):
    """A full disk for the questions: the run is removed (no answer was kept) and no lane asks
    more than the question it had sent: the answers would be thrown away, and a target may
    charge for each. (Before, the lanes asked until the first answers' write failed.)"""
    from evalcore.pipeline import live
    from evalcore.store.writer import RunWriter

    def full_disk(self, questions):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(RunWriter, "write_questions", full_disk)
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        qfile = question_file([f"q {i}?" for i in range(200)])
        store = RunStore(tmp_path / "runs")
        config = EvalConfig(target=server.url, dataset=str(qfile), concurrency=4, batch_size=8,
                            score=False, progress=False)
        with pytest.raises(OSError, match="No space left"):
            live.run_evaluation(config, store)
        assert store.run_ids() == []
        assert sum(server.calls.values()) <= config.concurrency
    finally:
        server.stop()


def _run_with_ctrl_c_in_the_end_publish(tmp_path, monkeypatch, question_file) -> RunStore:
    """A 5-question run whose publish recording how it ended gets a Ctrl-C 0.02 s in (it takes
    0.3 s more): returns the store once the run raised KeyboardInterrupt."""
    from evalcore.pipeline import live
    from evalcore.store import compaction

    real_compact = compaction.compact
    interrupts = []

    def compact_under_ctrl_c(run_dir, *args, **kwargs):
        opening = threading.current_thread().name == "evalcore-opening-publish"
        status = json.loads((run_dir / "run.json").read_text())["status"]
        if not interrupts and not opening and status == "running":  # the end's publish
            interrupts.append(_ctrl_c_after(0.02))
            time.sleep(0.3)  # the Ctrl-C lands now
        return real_compact(run_dir, *args, **kwargs)

    monkeypatch.setattr(compaction, "compact", compact_under_ctrl_c)
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        qfile = question_file([f"q {i}?" for i in range(5)])
        store = RunStore(tmp_path / "runs")
        config = EvalConfig(target=server.url, dataset=str(qfile), score=False, progress=False)
        with pytest.raises(KeyboardInterrupt):
            live.run_evaluation(config, store)
    finally:
        _cancel(interrupts)
        server.stop()
    assert interrupts, "the end's publish was not reached"
    return store


def test_a_second_ctrl_c_while_the_cancelled_run_is_recorded_still_records_it(tmp_path, monkeypatch, question_file):
    """Ctrl-C while asking, then again while the run publishes how it ended: the run is
    recorded `cancelled` with its questions, the first Ctrl-C is what is raised (before, the
    second cut the publish: the run stayed `running`, the command ended on DuckDB's "Query
    interrupted")."""
    from evalcore.pipeline import live

    async def first_ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(live, "ask_jobs", first_ctrl_c)
    store = _run_with_ctrl_c_in_the_end_publish(tmp_path, monkeypatch, question_file)
    (run_id,) = store.run_ids()
    assert store.manifest(run_id).status == "cancelled"


def test_a_ctrl_c_while_a_complete_run_is_published_records_it_complete_then_stops(tmp_path, monkeypatch,
                                                                                   question_file):
    """Every answer in, then Ctrl-C during the publish that records the run complete: the run
    is recorded complete (not left `running` by a publish cut short), and the Ctrl-C is raised
    once it is, so nothing after it starts (the scoring, when it was not done while asking)."""
    store = _run_with_ctrl_c_in_the_end_publish(tmp_path, monkeypatch, question_file)
    (run_id,) = store.run_ids()
    manifest = store.manifest(run_id)
    assert manifest.status == "complete" and manifest.counts["responses"] == 5


def test_a_live_run_whose_ctrl_c_a_query_took_is_recorded_cancelled(tmp_path, monkeypatch, question_file):
    """A Ctrl-C that lands in a publish's query while the run asks (the last answers' flush
    publishes in the main thread) reaches the run as DuckDB's RuntimeError("Query
    interrupted"): the run is recorded `cancelled`, as for any Ctrl-C, not `failed`, and
    KeyboardInterrupt is raised."""
    from evalcore.pipeline import live

    async def ctrl_c_in_a_query(*args, **kwargs):
        raise RuntimeError("Query interrupted")  # what DuckDB 2.0.1 raises (tests/test_cli_query_interrupted.py)

    monkeypatch.setattr(live, "ask_jobs", ctrl_c_in_a_query)
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        store = RunStore(tmp_path / "runs")
        config = EvalConfig(target=server.url, dataset=str(question_file(["q 1?", "q 2?", "q 3?"])),
                            score=False, progress=False)
        with pytest.raises(KeyboardInterrupt):
            live.run_evaluation(config, store)
    finally:
        server.stop()
    (run_id,) = store.run_ids()
    assert store.manifest(run_id).status == "cancelled"
