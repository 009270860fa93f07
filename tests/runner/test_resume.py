"""Crash safety: kill -9 a running `evalcore run`, then `--resume`: every (question, method)
ends up stored exactly once, and answers stored before the kill are never asked again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evalcore.pipeline import resume_run
from evalcore.store import RunStore

N_QUESTIONS = 60


def _start(store_root: Path, url: str, qfile: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "evalcore", "--store", str(store_root), "run", "--target", url,
           "--dataset", str(qfile), "--methods", "alpha,beta", "--concurrency", "2", "--no-score",
           "--no-progress"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _wait_for_parts(store_root: Path, proc: subprocess.Popen, deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        # answers written (parts) or already published by the run's periodic compaction
        if len(list(store_root.glob("*/parts/responses/*.parquet"))) >= 2 or list(store_root.glob("*/data/responses-*")):
            return
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.stderr.read().decode()}")
        time.sleep(0.05)
    raise AssertionError("no part files appeared")


def _stored(audit, store: RunStore, run_id: str):
    """Every answer row on disk, published or not (conftest.StoreAudit)."""
    return audit.rows(store, run_id, "responses")


def _interrupt_then_resume(sig, faulty, question_file, tmp_path, expected_status, audit):
    faulty.delay_s = 0.03
    qfile = question_file([f"plain question {i}" for i in range(N_QUESTIONS)])
    root = tmp_path / "runs"
    proc = _start(root, faulty.url, qfile)
    _wait_for_parts(root, proc)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    store = RunStore(root)
    (run_id,) = store.run_ids()
    assert store.manifest(run_id).status == expected_status
    before = _stored(audit, store, run_id)
    assert 0 < len(before) < 2 * N_QUESTIONS, "the kill should land mid-run"
    done_before = set(zip(before["method"], before["question_id"]))
    calls_before = sum(faulty.calls.values())

    result = resume_run(run_id, store, progress=False)
    after = _stored(audit, store, run_id)
    keys = list(zip(after["method"], after["question_id"]))
    assert len(keys) == len(set(keys)) == 2 * N_QUESTIONS   # exactly once each, raw rows included
    assert audit.replaced(store, run_id, "responses") == 0  # and no compaction ever merged a second answer
    assert result.status == "complete" and store.manifest(run_id).status == "complete"
    assert result.asked == 2 * N_QUESTIONS - len(done_before)
    send_as = {"alpha": "alpha", "beta": "beta"}
    for method, qid in done_before:  # stored before the kill -> never asked again
        text = f"plain question {int(qid[1:]) - 1}"
        assert faulty.calls[(text, send_as[method])] == 1
    assert sum(faulty.calls.values()) - calls_before == result.asked
    again = resume_run(run_id, store, progress=False)   # nothing left: asks nothing
    assert again.asked == 0
    return store, run_id


def test_kill_9_then_resume(faulty, question_file, tmp_path, audit):
    _interrupt_then_resume(signal.SIGKILL, faulty, question_file, tmp_path, expected_status="running", audit=audit)


def test_ctrl_c_marks_cancelled_then_resume(faulty, question_file, tmp_path, audit):
    store, run_id = _interrupt_then_resume(signal.SIGINT, faulty, question_file, tmp_path, audit=audit,
                                           expected_status="cancelled")
    notes = store.manifest(run_id).notes
    assert any("cancelled" in note for note in notes)
    # complete now: no note still tells the user to resume it
    assert not any("--resume" in note for note in notes), notes
    assert "an earlier attempt was cancelled by the user; the run was resumed and completed" in notes
