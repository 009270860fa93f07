"""The pytest gate, run as a user would: a separate pytest process (the plugin loads through the
package's pytest11 entry point)
(pytester's runpytest_subprocess equivalent; pytester itself is not enabled in this repo)."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml

from evalcore.runner.config import EvalConfig
from evalcore.demo import questions_path
from evalcore.pipeline import run_evaluation
from evalcore.store import RunStore

TEST_FILE = """
import pytest

@pytest.mark.rag_eval
def test_rag_quality(rag_eval):
    assert rag_eval.run_id

def test_ordinary():
    assert True
"""


def _pytest(tmp_path, *args, autoload: bool = False):
    """pytest in a child on a user's test file. `autoload`: every installed plugin loads as it
    would for a user (test_skipped_without_run_eval proves the gate arrives that way); else only
    pytest's own plugins and ours, named by its pytest11 entry point (`-p evalcore`): hypothesis,
    xdist, coverage and anyio took ~2.5 s of each child to load and play no part in the gate."""
    (tmp_path / "test_gate.py").write_text(TEST_FILE, encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:phoenix",
           *([] if autoload else ["-p", "evalcore"]),
           str(tmp_path / "test_gate.py"), "--rootdir", str(tmp_path), "-c", str(tmp_path / "none.ini"), *args]
    (tmp_path / "none.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {**os.environ, **({} if autoload else {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)


def _config(tmp_path, url, **extra):
    path = tmp_path / "eval.yaml"
    data = {"target": url, "dataset": str(questions_path()), "methods": ["m"], "store": str(tmp_path / "runs"),
            "concurrency": 4, **extra}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _demo_method_config(tmp_path, url, send_as, **extra):
    return _config(tmp_path, url, methods=[{"name": "m", "method": send_as}], **extra)


def test_skipped_without_run_eval(tmp_path):
    proc = _pytest(tmp_path, autoload=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 skipped" in proc.stdout and "--run-eval" in proc.stdout


def test_thresholds_pass_and_fail(tmp_path, demo_server):
    ok = _demo_method_config(tmp_path, demo_server.url, "local_search", thresholds={"token_f1": 0.1})
    proc = _pytest(tmp_path, "--run-eval", "--eval-config", str(ok), "--eval-samples", "12")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    bad = _demo_method_config(tmp_path, demo_server.url, "local_search",
                              thresholds={"token_f1": 0.99, "latency_ms": {"max": 60000}})
    proc = _pytest(tmp_path, "--run-eval", "--eval-config", str(bad), "--eval-samples", "12")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "quality gate FAILED" in proc.stdout and "token_f1" in proc.stdout and "below the minimum 0.99" in proc.stdout
    assert "latency_ms" not in proc.stdout.split("quality gate FAILED")[1]


def test_significant_regression_against_a_baseline(tmp_path, demo_server):
    store = RunStore(tmp_path / "runs")
    base = run_evaluation(EvalConfig(name="baseline", target=demo_server.url, dataset=str(questions_path()),
                                     methods=[{"name": "m", "method": "llm_with_context"}], progress=False), store)
    assert base.scored
    cfg = _demo_method_config(tmp_path, demo_server.url, "basic_search", baseline=base.run_id,
                              thresholds={"keyword_hit": 0.0})
    proc = _pytest(tmp_path, "--run-eval", "--eval-config", str(cfg))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "regressed vs baseline" in proc.stdout and "keyword_hit" in proc.stdout


def test_options_are_the_cli_names_with_an_eval_prefix(tmp_path, demo_server):
    """--eval-target is `evalcore run --target` (issue 26, item 6); --rag-url, its old spelling,
    still works for a release with a deprecation warning."""
    store = str(tmp_path / "runs")
    proc = _pytest(tmp_path, "--run-eval", "--eval-target", demo_server.url, "--eval-samples", "2", "--eval-store", store)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout and "deprecated" not in proc.stdout + proc.stderr
    old = _pytest(tmp_path, "--run-eval", "--rag-url", demo_server.url, "--eval-samples", "2", "--eval-store", store)
    assert old.returncode == 0, old.stdout + old.stderr
    assert "--rag-url is deprecated and goes in the next release; use --eval-target" in old.stdout + old.stderr
    assert len(RunStore(store).run_ids()) == 2
