"""The pytest plugin's gate fails when it compared nothing (issue 34, item 3), run as a user runs
it: a separate pytest process against the demo server on 127.0.0.1."""

from __future__ import annotations

from evalcore.runner.config import EvalConfig
from evalcore.demo import questions_path
from evalcore.pipeline import run_evaluation
from evalcore.store import RunStore
from tests.runner.test_pytest_plugin import _demo_method_config, _pytest


def test_a_baseline_without_the_method_fails_the_session(tmp_path, demo_server):
    store = RunStore(tmp_path / "runs")
    base = run_evaluation(EvalConfig(name="baseline", target=demo_server.url, dataset=str(questions_path()),
                                     methods=[{"name": "other", "method": "basic_search"}], samples=3,
                                     progress=False), store)
    assert base.scored
    cfg = _demo_method_config(tmp_path, demo_server.url, "basic_search", baseline=base.run_id, samples=3)
    proc = _pytest(tmp_path, "--run-eval", "--eval-config", str(cfg))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "quality gate FAILED" in proc.stdout and "has no method 'm'" in proc.stdout

