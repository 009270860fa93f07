"""`evalcore metrics` lists the registry itself, filtered by group or needed input."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.metrics.registry import METRICS, groups

runner = CliRunner()


def test_json_lists_every_registered_metric_once():
    result = runner.invoke(app, ["metrics", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert sorted(r["name"] for r in rows) == sorted(METRICS)
    faith = next(r for r in rows if r["name"] == "faithfulness")
    assert faith["group"] == "judged" and "judge" in faith["needs"] and faith["higher_is_better"]


def test_filters_by_group_and_needed_input_in_numeric_order():
    rows = json.loads(runner.invoke(app, ["metrics", "--group", "retrieval", "--json"]).output)
    assert {r["name"] for r in rows} == set(groups()["retrieval"])
    hits = [r["name"] for r in rows if r["name"].startswith("hit_rate@")]
    assert hits == sorted(hits, key=lambda n: int(n.split("@")[1]))
    judged = json.loads(runner.invoke(app, ["metrics", "--needs", "judge", "--json"]).output)
    assert judged and all("judge" in r["needs"] for r in judged)
    assert {r["name"] for r in judged} == {n for n, s in METRICS.items() if "judge" in s.needs}


def test_table_output_and_bad_filters():
    import subprocess
    import sys

    result = runner.invoke(app, ["metrics", "--group", "lexical"])
    assert result.exit_code == 0 and "token_f1" in result.output and "higher" in result.output
    for flag, value in (("--group", "nope"), ("--needs", "nope")):
        bad = subprocess.run([sys.executable, "-m", "evalcore.cli.main", "metrics", flag, value],
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and "known:" in bad.stderr, bad.stderr
