"""The Launch page's metric/group picker: the background `evalcore run` gets --metrics/--group,
and that command line, run for real against the demo server, scores exactly those metrics."""

from __future__ import annotations

import subprocess

import pytest

from evalcore.demo import questions_path
from evalcore.metrics.registry import groups
from evalcore.store import RunStore, query_df
from evalcore.ui import jobs


@pytest.fixture
def started(monkeypatch):
    """Record what the page would start instead of starting it."""
    calls: list[tuple[str, list[str]]] = []

    def fake_start(store, kind, argv, run_name=None, run_id=None, port=None):
        calls.append((kind, list(argv)))
        return jobs.Job(job_id="20000101-000000-abcdef", kind=kind, argv=argv, pid=0, started_at=0.0,
                        run_name=run_name)

    monkeypatch.setattr(jobs, "start", fake_start)
    return calls


def _fill_and_submit(at, url: str, metrics: list[str], picked_groups: list[str], judge: str = "(default)"):
    def by_label(widgets, label):
        return next(w for w in widgets if w.label.startswith(label))

    by_label(at.radio, "Target").set_value("RAG server URL")
    by_label(at.text_input, "Server URL").set_value(url)
    by_label(at.text_input, "Dataset file path").set_value(str(questions_path()))
    by_label(at.text_input, "Methods").set_value("basic_search")
    by_label(at.text_input, "Samples").set_value("3")
    by_label(at.selectbox, "Judge").set_value(judge)
    by_label(at.multiselect, "Metrics to score").set_value(metrics)
    by_label(at.multiselect, "Metric groups").set_value(picked_groups)
    next(b for b in at.button if b.label == "Start run").click()
    return at.run()


def test_launch_passes_the_picked_metrics_and_groups(make_app, started):
    at = make_app("launch")
    assert set(groups()) <= set(next(m for m in at.multiselect if m.label.startswith("Metric groups")).options)
    at = _fill_and_submit(at, "http://127.0.0.1:9", ["token_f1", "mrr"], ["abstention"])
    assert not at.exception, at.exception
    [(kind, argv)] = started
    assert kind == "run"
    assert argv[argv.index("--metrics") + 1] == "token_f1,mrr"
    assert argv[argv.index("--groups") + 1] == "abstention"


def test_launch_without_a_pick_leaves_the_defaults(make_app, started):
    at = _fill_and_submit(make_app("launch"), "http://127.0.0.1:9", [], [])
    [(_, argv)] = started
    assert "--metrics" not in argv and "--groups" not in argv and "--group" not in argv


def test_launch_refuses_metrics_when_scoring_is_off(make_app, started):
    at = _fill_and_submit(make_app("launch"), "http://127.0.0.1:9", ["token_f1"], [],
                          judge="(collect only, no scoring)")
    assert started == [] and any("scoring is off" in e.value for e in at.error)


def test_launch_refuses_judged_metrics_without_a_judge(make_app, started):
    at = _fill_and_submit(make_app("launch"), "http://127.0.0.1:9", ["faithfulness", "token_f1"], [])
    assert started == [] and any("faithfulness need a judge" in e.value for e in at.error)
    at = _fill_and_submit(make_app("launch"), "http://127.0.0.1:9", ["faithfulness"], [], judge="heuristic")
    [(_, argv)] = started
    assert argv[argv.index("--judge") + 1] == "heuristic" and argv[argv.index("--metrics") + 1] == "faithfulness"


def test_the_launch_command_line_scores_the_picked_metrics(make_app, started, tmp_path):
    """Run the exact argv the page built (store swapped for a temp one) against the demo server."""
    from evalcore.demo.server import start_in_thread

    server = start_in_thread(0)
    try:
        _fill_and_submit(make_app("launch"), server.url, ["token_f1"], ["performance"])
        [(_, argv)] = started
        store = RunStore(tmp_path / "runs")
        argv[argv.index("--store") + 1] = str(store.root)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
    finally:
        server.shutdown()
        server.server_close()
    [run_id] = store.run_ids()
    scored = set(query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id])["metric"])
    assert scored == {"token_f1", *groups()["performance"]}


def test_launch_can_keep_the_first_copy_of_repeated_ids(make_app, started):
    at = make_app("launch")
    next(c for c in at.checkbox if c.label.startswith("Keep the first copy")).check()
    at = _fill_and_submit(at, "http://127.0.0.1:9", [], [])
    assert not at.exception, at.exception
    [(_, argv)] = started
    assert argv[argv.index("--on-duplicate") + 1] == "keep-first"


def test_launch_refuses_repeated_ids_by_default(make_app, started):
    _fill_and_submit(make_app("launch"), "http://127.0.0.1:9", [], [])
    [(_, argv)] = started
    assert "--on-duplicate" not in argv
