"""The dashboard's pure helpers, the background-job manager and the `evalcore app` command."""

from __future__ import annotations

import math
import signal
import sys
import time

from evalcore.ui import jobs
from evalcore.schemas.labels import ContextVerdict, context_verdict
from evalcore.stats.agreement import agreement_rate, cohen_kappa
from evalcore.ui.wording import diff_text, word_diff


def test_chart_fronts_use_the_one_pareto_rule():
    """The Charts' fronts come from evalcore.stats.pareto (as `compare --pareto`), not a copy."""
    import pandas as pd

    from evalcore.analysis.charts.distributions import front_2d

    points = pd.DataFrame({"system": list("abcde"), "quality": [0.9, 0.8, 0.7, 0.85, float("nan")],
                           "cost": [3.0, 1.0, 2.0, 3.0, 0.1]})
    # 0.7@2 is dominated by 0.8@1; 0.85@3 by 0.9@3; a point with no quality cannot be placed
    out = front_2d(points, "cost")
    assert out["system"].tolist() == list("abcd") and out["front"].tolist() == [True, True, False, False]
    import evalcore.ui.wording as wording
    assert not hasattr(wording, "pareto_mask")


def test_cohen_kappa_known_values():
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "b"], ["a", "b"]) == 1.0
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # one shared label: chance agreement is 1
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "a", "b"]) == 0.0
    a = ["y"] * 20 + ["n"] * 30
    b = ["y"] * 15 + ["n"] * 5 + ["y"] * 10 + ["n"] * 20  # p_o = 0.7, p_e = 0.5 -> kappa 0.4
    assert abs(cohen_kappa(a, b) - 0.4) < 1e-12


def test_agreement_rate_has_a_wilson_interval():
    rate, lo, hi = agreement_rate(["x"] * 10, ["x"] * 9 + ["y"])
    assert rate == 0.9 and 0.59 < lo < 0.6 and 0.98 < hi < 0.99  # Wilson 95% for 9/10
    assert agreement_rate([], []) == (None, None, None)


def test_word_diff_round_trips_both_answers():
    a, b = "the tower opened in 1987 to visitors", "the tower opened in 1979"
    rows = word_diff(a, b)
    assert " ".join(t for op, t in rows if op != "+") == a
    assert " ".join(t for op, t in rows if op != "-") == b
    assert diff_text(rows) == "the tower opened in [-1987 to visitors-] {+1979+}"


def test_context_verdict_words_map_to_one_vocabulary():
    assert context_verdict("yes") == context_verdict(1) == context_verdict(True) == ContextVerdict.RELEVANT
    assert context_verdict("irrelevant") == context_verdict(0) == ContextVerdict.NOT_RELEVANT
    assert context_verdict(None) is None and context_verdict("maybe") is None


def _wait_dead(store, job, seconds=20.0):
    deadline = time.time() + seconds
    while jobs.is_alive(store, job) and time.time() < deadline:
        time.sleep(0.1)
    return jobs.load(store, job.job_id)


def test_job_runs_detached_logs_and_records_exit_code(store):
    job = jobs.start(store, "run", [sys.executable, "-c", "print('hello from job'); raise SystemExit(3)"])
    done = _wait_dead(store, job)
    assert done.exit_code == 3
    assert "hello from job" in jobs.tail(store, done)
    assert [j.job_id for j in jobs.list_jobs(store)] == [job.job_id]


def test_job_cancel_interrupts_only_its_process_group(store):
    """The job says when its handler is in place; only then is it cancelled (a SIGINT during
    the interpreter's start-up would end it before the `try`, whatever the machine's speed)."""
    code = ("import time\ntry:\n    print('ready', flush=True)\n    time.sleep(60)\n"
            "except KeyboardInterrupt:\n    print('stopped cleanly')\n")
    job = jobs.start(store, "run", [sys.executable, "-u", "-c", code])
    deadline = time.time() + 30
    while "ready" not in jobs.tail(store, job) and jobs.is_alive(store, job) and time.time() < deadline:
        time.sleep(0.05)
    assert jobs.is_alive(store, job), jobs.tail(store, job)
    assert jobs.cancel(store, job)
    done = _wait_dead(store, job)
    assert not jobs.is_alive(store, done) and done.cancel_requested
    assert "stopped cleanly" in jobs.tail(store, done)


def test_a_job_can_be_cancelled_when_the_dashboard_ignores_sigint(store):
    """A dashboard started with SIGINT ignored (`evalcore app &` in a script) must not pass
    that on: the job would ignore cancel's SIGINT and only a forced stop could end it."""
    code = ("import signal, time\ntry:\n    print('ready', signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)\n"
            "    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('stopped cleanly')\n")
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        job = jobs.start(store, "run", [sys.executable, "-u", "-c", code])
    finally:
        signal.signal(signal.SIGINT, before)
    deadline = time.time() + 30
    while "ready" not in jobs.tail(store, job) and jobs.is_alive(store, job) and time.time() < deadline:
        time.sleep(0.05)
    assert "ready False" in jobs.tail(store, job)
    assert jobs.cancel(store, job)
    done = _wait_dead(store, job)
    assert "stopped cleanly" in jobs.tail(store, done)


def test_an_upload_is_kept_in_the_store_under_a_safe_unique_name(store):
    """store/jobs.py keeps the Launch page's uploads (the page touches no path itself): the
    name loses its folders and odd characters, and two uploads of one name never collide."""
    from evalcore.store.jobs import save_upload

    first = save_upload(store, "../../etc/my answers?.jsonl", b"one")
    second = save_upload(store, "../../etc/my answers?.jsonl", b"two")
    assert first != second and first.parent == second.parent == store.local_shared_dir("app_uploads")
    assert first.name.endswith("-my_answers_.jsonl") and first.read_bytes() == b"one"


def test_run_request_builds_the_documented_cli_flags(store):
    req = jobs.RunRequest(target="http://127.0.0.1:9", dataset="q.yaml", methods=["a", "b"], name="n",
                          samples=5, concurrency=2, judge="heuristic")
    argv = req.argv(store)
    tail = argv[argv.index("run"):]
    assert argv[argv.index("--store") + 1] == str(store.root)
    for flag, value in [("--target", "http://127.0.0.1:9"), ("--dataset", "q.yaml"), ("--methods", "a,b"),
                        ("--samples", "5"), ("--concurrency", "2"), ("--judge", "heuristic"), ("--name", "n")]:
        assert tail[tail.index(flag) + 1] == value


def test_app_command_binds_localhost_and_finds_the_entry():
    from evalcore.cli.app_commands import app_script, streamlit_argv

    argv = streamlit_argv(app_script(), 8123, True)
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert argv[argv.index("--server.port") + 1] == "8123"
    assert argv[argv.index("--server.fileWatcherType") + 1] == "none"  # a served dashboard watches no files
    assert argv[argv.index("--client.toolbarMode") + 1] == "viewer"  # no "Deploy" button for visitors
    assert app_script().name == "served.py" and app_script().parent.name == "ui"  # this Streamlit has st.App


def test_app_command_falls_back_to_the_entry_without_st_app(monkeypatch):
    """A Streamlit older than st.App: `evalcore app` runs entry.py itself (same pages, the
    deep-link probe as before)."""
    from evalcore.cli import app_commands

    monkeypatch.setattr(app_commands, "_streamlit_has_app", lambda: False)
    assert app_commands.app_script().name == "entry.py"


def test_short_system_labels_stay_unambiguous():
    from evalcore.ui.wording import short_system_labels

    one_run = short_system_labels(["r1:basic", "r1:local"], {"r1": "demo"})
    assert one_run == {"r1:basic": "basic", "r1:local": "local"}
    named = short_system_labels(["r1:basic", "r2:basic"], {"r1": "nightly", "r2": "candidate"})
    assert named == {"r1:basic": "nightly / basic", "r2:basic": "candidate / basic"}
    same_name = short_system_labels(["r1:basic", "r2:basic"], {"r1": "demo", "r2": "demo"})
    assert same_name == {"r1:basic": "r1 / basic", "r2:basic": "r2 / basic"}
    clash = short_system_labels(["r1:m / x", "r2:x"], {"r1": "n", "r2": "n / m"})  # both "n / m / x"
    assert clash == {"r1:m / x": "r1:m / x", "r2:x": "r2:x"}
