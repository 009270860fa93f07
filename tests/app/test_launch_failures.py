"""Launch never starts a run with no method, and ends a run with its failures (issue 23,
item 2): Enter in the form used to submit with no method, the run asked the server for method
'default', and the page said "status complete; 40 of 40 answers stored" for 40 HTTP 400s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.demo import questions_path
from evalcore.scoring.importer import import_recorded
from evalcore.store import RunStore
from evalcore.ui import jobs

APP = Path(__file__).resolve().parents[2] / "app.py"
FAILURE = "HTTP 400 unknown method 'default'"


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(jobs, "start", lambda store, kind, argv, **kw: calls.append((kind, argv)))
    return calls


def _page(root, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/launch.py")
    return at.run()


def test_a_form_without_methods_is_refused(tmp_path, monkeypatch, started):
    at = _page(tmp_path / "runs", monkeypatch)
    label = lambda widgets, text: next(w for w in widgets if w.label.startswith(text))  # noqa: E731
    label(at.radio, "Target").set_value("RAG server URL")
    label(at.text_input, "Server URL").set_value("http://127.0.0.1:9")
    label(at.text_input, "Dataset file path").set_value(str(questions_path()))
    next(b for b in at.button if b.label == "Start run").click()
    at = at.run()
    assert not at.exception, at.exception
    assert started == [] and any("Name the methods to ask" in e.value for e in at.error)


def _all_failed_run(store: RunStore, tmp_path) -> str:
    rows = [{"question_id": f"q{i}", "question": f"Q{i}?", "method": "default", "error": FAILURE,
             "error_kind": "http"} for i in range(5)]
    path = tmp_path / "failed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return import_recorded(store, path, name="app-run-ab12").run_id


def test_a_run_whose_every_answer_failed_is_shown_failed(tmp_path, monkeypatch):
    store = RunStore(tmp_path / "runs")
    run_id = _all_failed_run(store, tmp_path)
    job_dir = store.local_shared_dir("app_jobs") / "20000101-000000-abcdef"
    job_dir.mkdir(parents=True)
    jobs.save(store, jobs.Job(job_id="20000101-000000-abcdef", kind="run", argv=["evalcore", "run"], pid=0,
                              started_at=0.0, run_name="app-run-ab12", run_id=run_id, exit_code=1))
    at = _page(store.root, monkeypatch)
    assert not at.exception, at.exception
    texts = [t.value for t in at.text]
    assert any(f"run {run_id}: status failed (every answer failed)" in t for t in texts), texts
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(f"Run failed: 5 of 5 answers failed; first: {FAILURE}" in e for e in errors), errors


def test_the_demo_server_stops_when_its_run_has_ended(tmp_path, monkeypatch):
    """A run started with the demo server records the server's job; once the run's process has
    ended, the run's panel stops the server (it was only stopped for import jobs, which never
    have one, so every demo run left its server running)."""
    import sys

    store = RunStore(tmp_path / "runs")
    server = jobs.start(store, "demo-server", [sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        run = jobs.start(store, "run", [sys.executable, "-c", "pass"], run_name="app-run-cd34")
        run.extra["demo_job"] = server.job_id
        jobs.save(store, run)
        run.exit_code = jobs._CHILDREN[run.pid].wait(timeout=60)  # the run has ended
        jobs.save(store, run)
        assert jobs.is_alive(store, server)
        at = _page(store.root, monkeypatch)
        assert not at.exception, at.exception
        assert jobs.load(store, server.job_id).cancel_requested
        assert jobs._CHILDREN[server.pid].wait(timeout=60) is not None  # SIGINT ended it
    finally:
        if jobs._CHILDREN[server.pid].poll() is None:
            jobs._CHILDREN[server.pid].kill()


def test_a_stale_copy_of_a_job_keeps_what_another_stored(tmp_path):
    """A page reads every job at its start and acts on those copies. The run's panel cancelled
    the demo server (cancel_requested stored); the server's own panel, holding a copy read
    before, then recorded its exit code and saved that copy whole: the cancel was lost, so the
    stopped server read as crashed (seen as a flaky test_the_demo_server_stops_... in CI)."""
    import sys

    store = RunStore(tmp_path / "runs")
    server = jobs.start(store, "demo-server", [sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        panel_a, panel_b = jobs.load(store, server.job_id), jobs.load(store, server.job_id)
        assert jobs.cancel(store, panel_a)
        code = jobs._CHILDREN[server.pid].wait(timeout=60)
        assert not jobs.is_alive(store, panel_b)  # records the exit code from the stale copy
        stored = jobs.load(store, server.job_id)
        assert stored.cancel_requested and stored.exit_code == code
        assert panel_b.cancel_requested  # and the stale copy now reads what is stored
    finally:
        if jobs._CHILDREN[server.pid].poll() is None:
            jobs._CHILDREN[server.pid].kill()
