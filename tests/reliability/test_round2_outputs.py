"""Reliability round 2 (outputs): what a user reads back must not be silently wrong or live.

- `compare --metrics tokenf1` names an unknown metric and suggests the right one, instead of
  saying it was not scored;
- `show` prints no "not scored" note for a metric every question was scored on;
- CSV exports cannot run as spreadsheet formulas; Markdown exports hold no live autolinks.
"""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.store import RunStore


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("r2")
    rows = [{"question_id": f"q{i}", "method": m, "question": "=HYPERLINK(\"http://evil.invalid\")",
             "ground_truth": "see www.evil.invalid or mail a@evil.invalid", "answer": f"+cmd|' /C calc'!A0 {i}"}
            for i in range(6) for m in ("a", "b")]
    path = base / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    store = RunStore(base / "runs")
    run_id = import_recorded(store, path, name="r2").run_id
    score_run(store, run_id, metrics=["token_f1", "exact_match"], progress=False)
    return store, run_id


def _cli(store, *args):
    return CliRunner().invoke(app, ["--store", str(store.root), *args])


def test_compare_names_an_unknown_metric_and_suggests(run):
    store, run_id = run
    res = _cli(store, "compare", f"{run_id}:a", f"{run_id}:b", "--metrics", "tokenf1")
    assert res.exit_code != 0
    message = str(res.exception) + res.output
    assert "no such metric 'tokenf1'" in message and "did you mean token_f1" in message
    assert "not scored" not in message


def test_show_has_no_not_scored_note_for_fully_scored_metrics(run):
    store, run_id = run
    out = _cli(store, "show", run_id).stdout
    lines = [line for line in out.splitlines() if "token_f1" in line]
    assert lines and not any("not scored" in line for line in lines)
    assert "nan" not in out


def test_csv_export_cells_cannot_run_as_formulas(run):
    store, run_id = run
    df = pd.read_csv(io.StringIO(_cli(store, "export", run_id, "--format", "csv").stdout))
    for col in ("question", "answer"):
        assert not df[col].str.startswith(("=", "+", "-", "@")).any(), col
        assert df[col].str.startswith("'").all(), col


def test_markdown_export_has_no_live_links(run):
    store, run_id = run
    md = _cli(store, "export", run_id, "--format", "md").stdout
    html = MarkdownIt("gfm-like").render(md)
    assert "<a " not in html and "evil.invalid" in html
