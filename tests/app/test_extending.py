"""Adding things is short (issue 26, item 2; docs/architecture.md, "Adding a metric / a page").

A deterministic metric is a function and its MetricSpec, registered through the public API: the
CLI lists it, scores it and shows it, and the dashboard offers it, with nothing else edited. The
dashboard's page list has one home, evalcore.ui.entry.PAGES: every pages/ wrapper is an entry and
every entry has its wrapper and its ui module.
"""

from __future__ import annotations

import importlib
import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.metrics.base import ANSWER_QUALITY, MetricSpec, Score, per_item
from evalcore.metrics.registry import register_metric, unregister_metric
from evalcore.ui import entry
from tests.app.conftest import ROOT

runner = CliRunner()


def _short_answer(q, r) -> Score:
    """1 if the answer has at most five words (a toy metric)."""
    return Score(float(len(r.answer.split()) <= 5))


@pytest.fixture
def toy_metric():
    spec = MetricSpec("toy_short_answer", "lexical", per_item(_short_answer), needs=frozenset({"answer"}),
                      binary=True, description="1 if the answer has at most five words.",
                      importance=(ANSWER_QUALITY, -1), key_rank=-1)
    register_metric(spec)
    yield spec
    unregister_metric(spec.name)


def _cli(root, *args):
    res = runner.invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_registered_metric_is_listed_scored_shown_and_offered(toy_metric, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    listed = json.loads(_cli(root, "metrics", "--json"))
    assert {"name": "toy_short_answer", "group": "lexical"}.items() <= \
        next(m for m in listed if m["name"] == "toy_short_answer").items()
    _cli(root, "import", "--example")
    run_id = json.loads(_cli(root, "runs", "--json"))[0]["run_id"]
    _cli(root, "score", run_id, "--metrics", "toy_short_answer", "--no-progress")
    shown = json.loads(_cli(root, "show", run_id, "--json"))["metrics"]
    scored = [m for m in shown if m["metric"] == "toy_short_answer"]
    assert scored and all(m["n_scored"] > 0 for m in scored)

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    columns = next(w for w in at.multiselect if w.label == "Metric columns")
    assert columns.value[0] == "toy_short_answer"  # a key metric (key_rank -1): the first column


def test_every_page_is_one_entry_with_its_module_and_wrapper():
    modules = [module for module, _, _ in entry.PAGES]
    wrappers = sorted(p.stem for p in (ROOT / "pages").glob("*.py"))
    assert sorted(modules) == wrappers, "pages/ and evalcore.ui.entry.PAGES list different pages"
    for module in modules:
        assert callable(importlib.import_module(f"evalcore.ui.{module}").render), module
        wrapper = (ROOT / "pages" / f"{module}.py").read_text(encoding="utf-8")
        assert f"evalcore.ui.{module}" in wrapper or f"import {module}" in wrapper, f"pages/{module}.py"
