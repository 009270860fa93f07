"""Adding things is short (issue 26, item 2; issue 37, item 6; docs/architecture.md, "Adding a
metric, a judged metric, a page": its step lists are what these tests do).

A deterministic metric is a function and its MetricSpec (its options declared on it), registered
through the public API: the CLI lists it, scores it (with its option) and shows it, and the
dashboard offers it, with nothing else edited. A judged metric is one TaskDef (its prompt file,
reply model, offline heuristic and `inputs`) and one `judged_metric(...)` spec: the offline judge
scores it, the dry run counts its calls, and the CLI and the dashboard show it, with no scoring or
estimate code of its own. A page is its ui module with render(), reading an analysis function,
one entry in evalcore.ui.entry.PAGES and its pages/ wrapper: the app navigates to it and it
shows the two toy metrics exactly as `evalcore show` prints them. The dashboard's page list has
one home, entry.PAGES: every pages/ wrapper is an entry and every entry has its wrapper and its
ui module.

The toys are registered the way code outside the package adds them (register_metric, the task
registry's register); the toy page's module and wrapper are written to a temporary checkout (a
copy of app.py beside its pages/ folder) and its module is imported as evalcore.ui.toy_scores,
so the test leaves the real package and pages/ untouched.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys

import pytest
from pydantic import BaseModel, StrictInt
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.judges.tasks import TaskDef, register, unregister
from evalcore.metrics.base import ANSWER_QUALITY, Item, MetricOption, MetricSpec, Score, ScoringContext
from evalcore.metrics.judged.specs import judged_metric
from evalcore.metrics.registry import register_metric, unregister_metric
from evalcore.ui import entry
from tests.app.conftest import ROOT

runner = CliRunner()


# ---- a deterministic metric: a function and its spec, its option declared on it ------------------
MAX_WORDS = MetricOption("toy_max_words", StrictInt, 5, "toy_short_answer: the most words of a short answer")


def _short_answers(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """1 if the answer has at most `toy_max_words` words (default 5): a toy metric."""
    most = ctx.options.get(MAX_WORDS.name, MAX_WORDS.default)
    return [Score(float(len(r.answer.split()) <= most)) for _, r in items]


@pytest.fixture
def toy_metric():
    spec = MetricSpec("toy_short_answer", "lexical", _short_answers, needs=frozenset({"answer"}),
                      binary=True, description="1 if the answer has at most toy_max_words words.",
                      importance=(ANSWER_QUALITY, -1), key_rank=-1, options=(MAX_WORDS,))
    register_metric(spec)
    yield spec
    unregister_metric(spec.name)


def _cli(root, *args):
    res = runner.invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """One store with the packaged example run, shared by this module's tests (each scores its
    own toy metric into it; re-scoring replaces): (store root, run id)."""
    root = tmp_path_factory.mktemp("extending") / "runs"
    _cli(root, "import", "--example")
    return root, json.loads(_cli(root, "runs", "--json"))[0]["run_id"]


def test_a_registered_metric_is_listed_scored_shown_and_offered(toy_metric, example_run, monkeypatch):
    root, run_id = example_run
    listed = json.loads(_cli(root, "metrics", "--json"))
    assert {"name": "toy_short_answer", "group": "lexical"}.items() <= \
        next(m for m in listed if m["name"] == "toy_short_answer").items()
    assert next(m for m in listed if m["name"] == "toy_short_answer")["options"] == ["toy_max_words"]
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


def test_a_judged_metric_is_one_task_and_one_spec(toy_judged_metric, example_run, monkeypatch):
    name = "toy_echoes_reference"
    root, run_id = example_run
    listed = next(m for m in json.loads(_cli(root, "metrics", "--json")) if m["name"] == name)
    assert {"answer", "ground_truth", "judge"} <= set(listed["needs"])
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


# ---- a page: its ui module with render(), reading an analysis function; its PAGES entry; its wrapper
TOY_PAGE = '''"""Toy scores: the toy metrics' means per method of the newest run, as `evalcore show` prints them."""

from evalcore.analysis.runs.leaderboard import run_list
from evalcore.analysis.runs.means import metric_table
from evalcore.ui import safe_widgets


def render() -> None:
    safe_widgets.header("Toy scores", "The toy metrics' means per method of the newest run.")
    run_id = safe_widgets.call(run_list).run_id.iloc[0]
    table = safe_widgets.call(metric_table, run_id)
    safe_widgets.show_table(table[table.metric.str.startswith("toy_")], "toy_scores")


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
'''
TOY_WRAPPER = '''"""Toy scores page as app.py's navigation runs it; the page is evalcore.ui.toy_scores."""

from evalcore.ui.entry import run_page
from evalcore.ui.toy_scores import render

run_page(render)
'''


@pytest.fixture
def toy_page(tmp_path, monkeypatch):
    """A checkout with one more page: the module evalcore.ui.toy_scores (its file in the temporary
    checkout), its entry in entry.PAGES and its wrapper pages/toy_scores.py beside a copy of app.py.
    Returns the checkout's app.py."""
    checkout = tmp_path / "checkout"
    (checkout / "pages").mkdir(parents=True)
    (checkout / "app.py").write_text((ROOT / "app.py").read_text(encoding="utf-8"), encoding="utf-8")
    (checkout / "pages" / "toy_scores.py").write_text(TOY_WRAPPER, encoding="utf-8")
    (checkout / "toy_scores.py").write_text(TOY_PAGE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("evalcore.ui.toy_scores", checkout / "toy_scores.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "evalcore.ui.toy_scores", module)
    monkeypatch.setattr(entry, "PAGES", (*entry.PAGES, ("toy_scores", "Toy scores", "toy-scores")))
    return checkout / "app.py"


def test_a_page_is_one_module_one_entry_and_its_wrapper(toy_metric, toy_judged_metric, toy_page, example_run,
                                                         monkeypatch):
    """Both toy metrics scored by the CLI (the deterministic one with its option), offered on the
    Runs page, and shown on the toy page exactly as `evalcore show` prints them."""
    from streamlit.testing.v1 import AppTest

    root, run_id = example_run
    toys = ["toy_echoes_reference", "toy_short_answer"]
    _cli(root, "score", run_id, "--metrics", ",".join(toys), "--judge", "heuristic", "--no-progress",
         "--option", "toy_max_words=100000")
    shown = [m for m in json.loads(_cli(root, "show", run_id, "--json"))["metrics"] if m["metric"] in toys]
    assert {m["metric"] for m in shown} == set(toys)
    assert {m["mean"] for m in shown if m["metric"] == "toy_short_answer"} == {1.0}  # the option reached it

    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(toy_page), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert next(w for w in at.multiselect if w.label == "Metric columns").value[:2] == toys  # key_rank -1 both
    at.switch_page("pages/toy_scores.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Toy scores"
    page = at.dataframe[0].value
    assert sorted(zip(page["method"], page["metric"], page["mean"])) == \
        sorted((m["method"], m["metric"], m["mean"]) for m in shown)


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
