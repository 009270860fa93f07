"""The CLI reports honestly (issue 23, item 6): `score` prints means per method with its
skipped metrics summarised in one line and exits non-zero when a metric raised; `runs` prints
whole counts and a latency per system; no CI is printed from a single pair."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.metrics.registry import METRICS, register_metric


def _cli(root, *args, code=0):
    res = CliRunner().invoke(app, ["--store", str(root), *args])
    assert res.exit_code == code, res.output
    return res


def _run(store, tmp_path, n=4):
    rows = []
    for i in range(n):
        q = {"question_id": f"q{i}", "question": f"Colour of item {i}?", "ground_truth": f"item {i} is blue"}
        rows.append({**q, "method": "good", "answer": f"item {i} is blue", "latency_ms": 100.0})
        rows.append({**q, "method": "poor", "answer": "no idea at all", "latency_ms": 900.0})
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return import_recorded(store, path, name="honest").run_id


def test_score_prints_means_per_method_and_one_skipped_line(store, tmp_path):
    run_id = _run(store, tmp_path)
    out = _cli(store.root, "score", run_id, "--no-progress").output
    row = next(line for line in out.splitlines() if "token_f1" in line)
    assert "1.000 (4/4)" in row and "0.000 (4/4)" in row and "0.500" not in row  # not pooled
    header = next(line for line in out.splitlines() if "metric" in line and "good" in line)
    assert header.index("good") < header.index("poor")
    skipped = [line for line in out.splitlines() if "skipped" in line]
    assert len(skipped) == 1, skipped
    assert re.match(r"\d+ skipped: .*needs a judge \(--judge\) \(\d+\).*run has no .*\(\d+\).*evalcore metrics --needs",
                    skipped[0]), skipped[0]


def test_score_exits_non_zero_when_a_metric_raised(store, tmp_path, request):
    run_id = _run(store, tmp_path)

    def broken(items, ctx):
        raise RuntimeError("the metric broke")

    original = register_metric(dataclasses.replace(METRICS["token_f1"], compute=broken), replace=True)
    request.addfinalizer(lambda: register_metric(original, replace=True))
    res = _cli(store.root, "score", run_id, "--metrics", "token_f1,exact_match", "--no-progress", code=1)
    assert "ERROR in token_f1: RuntimeError: the metric broke" in res.output
    assert "1 metric(s) raised" in res.output
    shown = json.loads(_cli(store.root, "show", run_id, "--json").stdout)["metrics"]
    exact = [m for m in shown if m["metric"] == "exact_match"]
    assert exact and all(m["n_scored"] == 4 for m in exact)  # the others were still scored and stored


def test_runs_prints_whole_counts_and_latency_per_system(store, tmp_path):
    run_id = _run(store, tmp_path)
    _cli(store.root, "score", run_id, "--metrics", "token_f1", "--no-progress")
    text = _cli(store.root, "runs").stdout
    assert re.search(r"\b8\b", text) and "8.0" not in text and "4.0" not in text
    (row,) = json.loads(_cli(store.root, "runs", "--json").stdout)
    assert row["n_responses"] == 8 and isinstance(row["n_responses"], int) and isinstance(row["n_errors"], int)
    assert row["latency_p50_ms"] == {"good": 100.0, "poor": 900.0}  # not the slowest method's 900 for both


def test_no_ci_from_a_single_pair(store, tmp_path):
    run_id = _run(store, tmp_path, n=1)
    _cli(store.root, "score", run_id, "--metrics", "token_f1", "--no-progress")
    out = _cli(store.root, "compare", f"{run_id}:good", f"{run_id}:poor", "--metrics", "token_f1").stdout
    assert "-1.0000, -1.0000" not in out
    data = json.loads(_cli(store.root, "compare", f"{run_id}:good", f"{run_id}:poor", "--metrics", "token_f1",
                           "--json").stdout)
    row = next(r for r in data["metrics"] if r["metric"] == "token_f1")
    assert row["n_pairs"] == 1 and row["delta"] == -1.0
    assert row["ci_low"] is None and row["ci_high"] is None


def test_a_verdict_from_a_single_pair_names_no_interval(store, tmp_path):
    from evalcore.analysis.comparison.compare import compare
    from evalcore.analysis.comparison.verdict import verdict_lines

    run_id = _run(store, tmp_path, n=1)
    _cli(store.root, "score", run_id, "--metrics", "token_f1", "--no-progress")
    result = compare(store, [f"{run_id}:good", f"{run_id}:poor"], metrics=["token_f1"])
    (text,) = verdict_lines(result.table, "good", "poor")["verdict"]
    assert "no CI (n < 2)" in text and "nan" not in text
