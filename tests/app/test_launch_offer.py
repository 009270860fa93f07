"""Launch (issue 24, item 6): Enter never submits (no form on the page: every box confirms
only itself, one button starts), the methods are offered from the target's /models/info, and an
import runs as a background job instead of blocking the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.demo import questions_path
from evalcore.ui import jobs

APP = Path(__file__).resolve().parents[2] / "app.py"


@pytest.fixture
def started(monkeypatch):
    calls = []

    def fake_start(store, kind, argv, **kw):
        calls.append((kind, list(argv)))
        return jobs.Job(job_id="20000101-000000-abcdef", kind=kind, argv=argv, pid=0, started_at=0.0)

    monkeypatch.setattr(jobs, "start", fake_start)
    return calls


def _page(root, monkeypatch, **params):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/launch.py")
    at.query_params.update(params)
    return at.run()


def _label(widgets, text):
    return next(w for w in widgets if w.label.startswith(text))


def _forms(at) -> list:
    """Form blocks anywhere in the page's element tree."""
    found, stack = [], [at._tree]
    while stack:
        node = stack.pop()
        if getattr(node, "type", None) == "form":
            found.append(node)
        stack.extend(getattr(node, "children", {}).values())
    return found


@pytest.mark.parametrize("action", ["start a run", "import answers"])
def test_no_form_so_enter_cannot_submit(tmp_path, monkeypatch, action):
    at = _page(tmp_path / "runs", monkeypatch, action=action)
    assert not at.exception, at.exception
    assert _forms(at) == [], "a form submits on Enter in any of its text boxes"
    assert not any(b.proto.is_form_submitter for b in at.button)


def test_ask_the_target_offers_its_methods(tmp_path, monkeypatch, started):
    from evalcore.demo.server import start_in_thread

    server = start_in_thread(0)
    try:
        at = _page(tmp_path / "runs", monkeypatch)
        _label(at.radio, "Target").set_value("RAG server URL")
        _label(at.text_input, "Server URL").set_value(server.url)
        at = at.run()
        _label(at.button, "Ask the target").click()
        at = at.run()
    finally:
        server.shutdown()
        server.server_close()
    assert not at.exception, at.exception
    assert _label(at.text_input, "Methods").value == "basic_search,local_search,llm_with_context"
    assert any("offers 3 methods" in t.value and "llm_with_context" in t.value for t in at.text)
    assert started == []  # asking starts nothing
    _label(at.text_input, "Dataset file path").set_value(str(questions_path()))
    _label(at.button, "Start run").click()
    at.run()
    [(kind, argv)] = started
    assert kind == "run" and argv[argv.index("--methods") + 1] == "basic_search,local_search,llm_with_context"


def test_asking_a_dead_target_says_so_and_keeps_what_was_typed(tmp_path, monkeypatch, started):
    at = _page(tmp_path / "runs", monkeypatch)
    _label(at.radio, "Target").set_value("RAG server URL")
    _label(at.text_input, "Server URL").set_value("ftp://127.0.0.1:9")
    _label(at.text_input, "Methods").set_value("mine")
    at = at.run()
    _label(at.button, "Ask the target").click()
    at = at.run()
    assert not at.exception, at.exception
    assert _label(at.text_input, "Methods").value == "mine"
    assert any("must start with http" in t.value for t in at.text)


def test_an_import_job_ends_with_its_run_or_its_failure(tmp_path, monkeypatch):
    """The import the page starts is `evalcore import` as a background job (the page never blocks
    on it); its panel names the new run, or says it failed with the log."""
    import time

    from evalcore.store import RunStore

    store = RunStore(tmp_path / "runs")
    good = tmp_path / "answers.jsonl"
    good.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": f"Q{i}?", "answer": "a",
                                          "method": "m"}) for i in range(3)) + "\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    for path in (good, bad):
        job = jobs.start(store, "import", [*jobs.evalcore_cmd(), "--store", str(store.root), "import", str(path),
                                           "--name", path.stem])
        deadline = time.time() + 120
        while jobs.is_alive(store, job) and time.time() < deadline:
            time.sleep(0.2)
    [run_id] = store.run_ids()
    at = _page(store.root, monkeypatch)
    assert not at.exception, at.exception
    assert f"imported as run {run_id}" in [t.value for t in at.text]
    assert any("Import failed; nothing was added" in e.value for e in at.error)


def test_the_demo_run_waits_for_its_server_in_its_job_not_in_the_page(tmp_path, monkeypatch, started):
    """With the demo server the page starts two jobs and returns: the run's job waits for the
    server to listen (evalcore.demo.wait_port), the page render never waits on a process."""
    from evalcore.store import RunStore
    from evalcore.store.jobs import jobs_root

    (jobs_root(RunStore(tmp_path / "runs")) / "20000101-000000-abcdef").mkdir(parents=True)  # the fake job's
    at = _page(tmp_path / "runs", monkeypatch)
    _label(at.radio, "Target").set_value("Demo server (started for you)")
    at = at.run()
    _label(at.button, "Start run").click()
    at = at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    [(kind1, server), (kind2, run)] = started
    assert (kind1, kind2) == ("demo-server", "run")
    port = server[server.index("--port") + 1]
    assert run[1:5] == ["-m", "evalcore.demo.wait_port", port, "--"]
    assert run[run.index("--target") + 1] == f"http://127.0.0.1:{port}"


def test_wait_port_becomes_the_command_once_the_port_listens(tmp_path):
    import socket
    import subprocess
    import sys

    from evalcore.demo.wait_port import wait_port

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "evalcore.demo.wait_port", str(port), "--", sys.executable,
                              "-c", "import os; print('became the run', os.getpid())"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("became the run")
    assert not wait_port(port, seconds=0.5)  # nothing listens any more: the job would end with 1
