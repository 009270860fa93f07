"""Adding things is short (issue 26, item 2; docs/architecture.md, "Adding a metric / a page").

A deterministic metric is a function and its MetricSpec, registered through the public API: the
CLI lists it, scores it and shows it, and the dashboard offers it, with nothing else edited. A
judged metric is one TaskDef (its prompt file, reply model, offline heuristic and `inputs`) and
one `judged_metric(...)` spec: the offline judge scores it, the dry run counts its calls, and the
CLI and the dashboard show it, with no scoring or estimate code of its own. The dashboard's page
list has one home, evalcore.ui.entry.PAGES: every pages/ wrapper is an entry and every entry has
its wrapper and its ui module.
"""

from __future__ import annotations

import importlib
import json

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.judges.tasks import TaskDef, register, unregister
from evalcore.metrics.base import ANSWER_QUALITY, MetricSpec, Score, per_item
from evalcore.metrics.judged.specs import judged_metric
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
    _first_metric_column(root, monkeypatch, "toy_short_answer")


def _first_metric_column(root, monkeypatch, name):
    """The Runs page offers `name` as its first metric column (a key metric, key_rank -1)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    columns = next(w for w in at.multiselect if w.label == "Metric columns")
    assert columns.value[0] == name


# ---- a judged metric: one TaskDef (prompt file included) and one spec ----------------------------
PROMPT = """id: echoes_reference
version: 1
description: Does the answer repeat the reference's key word?
preamble: preamble.v1
max_tokens: 200
system: |
  Task: say whether the answer states the reference answer's key fact.
user: |
  The reference answer:
  ${ground_truth}

  The answer:
  ${answer}

  Reply with this JSON object: {"echoes": 1, "reason": "short reason"}
"""


class EchoReply(BaseModel):
    echoes: int
    reason: str = ""


def _echo_heuristic(inp: dict) -> dict:
    """Offline: 1 when the answer holds the reference's longest word."""
    word = max(inp["ground_truth"].split(), key=len).strip(".").lower()
    return {"echoes": int(word in inp["answer"].lower()), "reason": f"looked for {word!r}"}


@pytest.fixture
def toy_judged_metric(tmp_path):
    (tmp_path / "echoes_reference.v1.yaml").write_text(PROMPT, encoding="utf-8")
    register(TaskDef("echoes_reference", "1", EchoReply, heuristic=_echo_heuristic, prompt_dir=tmp_path,
                     inputs=lambda q, r: {"ground_truth": q.ground_truth, "answer": r.answer},
                     needs_ground_truth=True, output_tokens=(30, 0)))
    spec = judged_metric("toy_echoes_reference", "echoes_reference", lambda out: out["echoes"],
                         "1 if the answer repeats the reference's key word.", binary=True, key_rank=-1)
    register_metric(spec)
    yield spec
    unregister_metric(spec.name)
    unregister("echoes_reference")


def test_a_judged_metric_is_one_task_and_one_spec(toy_judged_metric, tmp_path, monkeypatch):
    name = "toy_echoes_reference"
    root = tmp_path / "runs"
    listed = next(m for m in json.loads(_cli(root, "metrics", "--json")) if m["name"] == name)
    assert {"answer", "ground_truth", "judge"} <= set(listed["needs"])
    _cli(root, "import", "--example")
    run_id = json.loads(_cli(root, "runs", "--json"))[0]["run_id"]
    from evalcore.store import query_df
    from evalcore.store import RunStore

    with_truth = query_df(RunStore(root), "SELECT count(*) AS n FROM responses JOIN questions USING (run_id, question_id)"
                                         " WHERE coalesce(trim(ground_truth), '') <> '' AND error IS NULL").n[0]
    dry = json.loads(_cli(root, "score", run_id, "--metrics", name, "--judge", "heuristic", "--dry-run"))
    assert dry["metrics"] == [name] and dry["calls"] == with_truth > 0

    _cli(root, "score", run_id, "--metrics", name, "--judge", "heuristic", "--no-progress")
    rows = query_df(RunStore(root), f"SELECT value, judge_id, reason FROM metrics WHERE metric = '{name}'")
    judged = rows[rows.value.notna()]
    assert len(judged) == with_truth and set(judged.value) == {0.0, 1.0}
    assert (judged.judge_id.str.startswith("heuristic:") & judged.judge_id.str.endswith("/echoes_reference@1")).all()
    assert set(rows[rows.value.isna()].reason) <= {"no ground truth", "target error"}
    shown = json.loads(_cli(root, "show", run_id, "--json"))["metrics"]
    assert [m for m in shown if m["metric"] == name] and all(m["n_scored"] > 0 for m in shown if m["metric"] == name)
    _first_metric_column(root, monkeypatch, name)


def test_every_page_is_one_entry_with_its_module_and_wrapper():
    modules = [module for module, _, _ in entry.PAGES]
    wrappers = sorted(p.stem for p in (ROOT / "pages").glob("*.py"))
    assert sorted(modules) == wrappers, "pages/ and evalcore.ui.entry.PAGES list different pages"
    for module in modules:
        assert callable(importlib.import_module(f"evalcore.ui.{module}").render), module
        wrapper = (ROOT / "pages" / f"{module}.py").read_text(encoding="utf-8")
        assert f"evalcore.ui.{module}" in wrapper or f"import {module}" in wrapper, f"pages/{module}.py"


def test_judged_metric_takes_the_spec_facts_and_refuses_a_task_without_inputs():
    spec = judged_metric("toy_lower", "correctness", lambda out: out["score"], "toy", higher_is_better=False,
                         scale="points", importance=(ANSWER_QUALITY, 9))
    assert (spec.higher_is_better, spec.scale, spec.importance) == (False, "points", (ANSWER_QUALITY, 9))
    assert spec.needs == {"judge", "answer"} and spec.estimate is not None
    with pytest.raises(ValueError, match="'decompose' has no `inputs`"):
        judged_metric("toy_claims", "decompose", lambda out: len(out["claims"]), "toy")
