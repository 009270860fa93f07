"""Ctrl-C while a compaction works two jobs at a time (store/paired_jobs.py): the compaction
raises it only once its running jobs have ended, so the next compaction (a cancelled live run
is published at once: pipeline/live.py) never races one of them, and no file is left that no
compaction sweeps. A hostile review found both: the derived-table job of an interrupted
compaction wrote its file after the next one had published, and the DuckDB connection it
shared was closed while busy (a DuckDB error in place of the Ctrl-C)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, compaction, compaction_derived, query_df
from evalcore.store.health import check_run


def _run(root):
    store = RunStore(root)
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="demo",
                                          evalcore_version="test", methods=["a", "b"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?", ground_truth=str(i)) for i in range(20)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method=m, answer=f"{m}-{i}", latency_ms=1.0)
                            for i in range(20) for m in ("a", "b")])
    writer.write_metrics([MetricValue(run_id="r1", method=m, question_id=f"q{i}", metric=name, value=i / 20,
                                      group="lexical") for i in range(20) for m in ("a", "b")
                          for name in ("token_f1", "exact_match")])
    writer.publish()
    return store, writer


@pytest.mark.parametrize("slow", ["_wide_alone", "merge_files"])
def test_ctrl_c_mid_compaction_then_the_next_one_leaves_no_stray(tmp_path, monkeypatch, slow):
    store, writer = _run(tmp_path / "runs")
    run_dir = store.run_dir("r1")
    writer.write_responses([EvalResponse(question_id="q0", method="a", answer="again", latency_ms=1.0)])
    writer.write_metrics([MetricValue(run_id="r1", method="a", question_id="q0", metric="token_f1", value=0.5,
                                      group="lexical")])
    where = compaction_derived if slow == "_wide_alone" else compaction
    real = getattr(where, slow)
    calls, ended = [], []

    def slow_job(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the first job of the first compaction: Ctrl-C while it works
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        try:
            return real(*args, **kwargs)
        finally:
            ended.append(time.monotonic())

    monkeypatch.setattr(where, slow, slow_job)
    with pytest.raises(KeyboardInterrupt):
        compaction.compact(run_dir)
    raised = time.monotonic()
    assert ended and max(ended) <= raised  # every job that ran had ended when it was raised
    for worker in [t for t in threading.enumerate() if t.name.startswith("evalcore-compaction")]:
        worker.join(timeout=5)  # (a worker leaves once it finds nothing left to take)
        assert not worker.is_alive()
    monkeypatch.undo()
    compaction.compact(run_dir)
    time.sleep(0.7)  # what a job of the interrupted compaction still doing would write meanwhile
    for _ in range(2):
        compaction.compact(run_dir, force_summary=True)
    assert check_run(run_dir).strays == []
    answers = query_df(store, "SELECT count(*) AS n FROM responses WHERE run_id = 'r1'")
    assert int(answers["n"][0]) == 40


def test_a_full_disk_under_both_derived_jobs_is_reported_as_the_sequential_loop_did(tmp_path, monkeypatch):
    """The summaries come first in the derived tables' order: when the pivot beside them fails
    too, the error still names the first summary's file, as before they ran two at a time."""
    import errno

    store, writer = _run(tmp_path / "runs")
    writer.write_responses([EvalResponse(question_id="q0", method="a", answer="again", latency_ms=1.0)])

    def full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(compaction_derived, "write_parquet_atomic", full)
    with pytest.raises(OSError, match="summary_metrics-g"):
        compaction.compact(store.run_dir("r1"))
    monkeypatch.undo()
    compaction.compact(store.run_dir("r1"))
    assert check_run(store.run_dir("r1")).strays == []


@pytest.mark.parametrize("failing", [("summary_labels", "metric_wide"), ("summary_responses", "summary_labels"),
                                     ("summary_responses", "summary_judges"), ("summary_judges", "metric_wide")])
def test_a_full_disk_under_two_derived_tables_names_the_first_in_their_order(tmp_path, monkeypatch, failing):
    """The derived tables' order is the summaries', then the pivot: whichever job each lands in
    (the label counts share the pivot's; a hostile review; each other summary has a job of its
    own), the error names the first to fail."""
    import errno

    store, writer = _run(tmp_path / "runs")
    writer.write_responses([EvalResponse(question_id="q0", method="a", answer="again", latency_ms=1.0)])
    real = compaction_derived.write_parquet_atomic

    def full(path, *args, **kwargs):
        if path.name.startswith(failing):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(compaction_derived, "write_parquet_atomic", full)
    with pytest.raises(OSError, match=f"{failing[0]}-g"):
        compaction.compact(store.run_dir("r1"))
