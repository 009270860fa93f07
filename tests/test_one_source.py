"""One source of truth: the CLI and the dashboard show the same numbers for the same system.

The dashboard's pages call evalcore.analysis through evalcore/ui/cache.py; the CLI calls the
same functions. These tests read one store both ways — `show --json`, `compare --json`,
`export`, `runs --json` through the real CLI, and the functions the pages call — and require
equality. They also check that weighted_score ranks systems comparably across runs: a run's
leaderboard figure does not move when other runs are added, and gets worse when it is slower.
"""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.analysis import compare as C
from evalcore.analysis import distributions as G
from evalcore.analysis import leaderboard as L
from evalcore.analysis import questions as Qn
from evalcore.cli.main import app
from evalcore.importer import import_recorded
from evalcore.scoring import score_run
from evalcore.store import RunStore

METRICS = ["token_f1", "exact_match", "latency_ms", "cost_usd", "weighted_score"]


def _cli(root, *args):
    res = CliRunner().invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def _answers(path, methods=("good", "poor"), n=30, slow=1.0):
    rows = []
    for i in range(n):
        for m in methods:
            right = (i % 3 != 0) if m == "good" else (i % 2 == 0)
            rows.append({"question_id": f"q{i}", "method": m, "question": f"What is item {i}?",
                         "ground_truth": f"item {i} is blue", "answer": f"item {i} is blue" if right else "no idea",
                         "latency_ms": slow * (400.0 + 37 * i if m == "good" else 1500.0 + 11 * i),
                         "token_usage": {"input_tokens": 100, "output_tokens": 20,
                                         "cost_usd": 0.002 if m == "good" else 0.004}})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    base = tmp_path_factory.mktemp("one")
    store = RunStore(base / "runs")
    run_id = import_recorded(store, _answers(base / "a.jsonl"), name="pair").run_id
    score_run(store, run_id, metrics=METRICS, progress=False)
    return store, run_id


def _eq(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == pytest.approx(b, rel=1e-12, abs=1e-12)


def test_show_json_equals_the_leaderboard_and_page_tables(scored):
    store, run_id = scored
    shown = json.loads(_cli(store.root, "show", run_id, "--json"))["metrics"]
    by_key = {(m["method"], m["metric"]): m for m in shown}
    board = L.leaderboard(store, tuple(METRICS))
    assert len(board) == 2
    for row in board.itertuples():
        for metric in ("token_f1", "exact_match", "weighted_score"):
            assert _eq(by_key[(row.method, metric)]["mean"], getattr(row, metric))
    # the drill-down's per-question values average to the same means
    table = Qn.question_table(store, Qn.QuestionFilter(run_id), ("token_f1",))
    for method, g in table.groupby("method"):
        assert _eq(by_key[(method, "token_f1")]["mean"], g["token_f1"].mean())


def test_compare_json_equals_the_compare_page(scored):
    store, run_id = scored
    tested = ("token_f1", "exact_match")
    out = json.loads(_cli(store.root, "compare", f"{run_id}:good", f"{run_id}:poor",
                          "--metrics", ",".join(tested), "--json"))
    page = C.pair_table(store, f"{run_id}:good", f"{run_id}:poor", tested).set_index("metric")
    for row in out["metrics"]:
        p = page.loc[row["metric"]]
        for cli_key, page_key in (("mean_a", "mean_a"), ("mean_b", "mean_b"), ("delta", "delta"),
                                  ("ci_low", "ci_low"), ("ci_high", "ci_high"), ("p_value", "p_value"),
                                  ("p_holm", "p_holm"), ("improved", "improved"), ("regressed", "regressed"),
                                  ("unchanged", "unchanged"), ("n_pairs", "n_pairs")):
            assert _eq(row[cli_key], p[page_key]), (row["metric"], cli_key)
        assert bool(row["significant"]) == bool(p["significant"])
    # the run-level figures of compare are the leaderboard's
    board = L.system_rows(store, [(run_id, "good"), (run_id, "poor")]).set_index("method")
    for r in out["run_level"]:
        method = r["label"].split(":", 1)[1]
        assert _eq(r["weighted_score"], board.loc[method, "weighted_score"])
        assert _eq(r["cost"], board.loc[method, "cost_per_query_usd"])
        assert _eq(r["latency"], board.loc[method, "latency_p50_ms"])


def test_export_equals_the_drill_down(scored):
    store, run_id = scored
    exported = pd.read_csv(io.StringIO(_cli(store.root, "export", run_id, "--format", "csv")))
    assert "contexts" in exported.columns
    assert not [c for c in exported.columns if c.endswith(("_x", "_y"))]  # one name, one column
    table = Qn.question_table(store, Qn.QuestionFilter(run_id), ("token_f1", "exact_match"))
    merged = exported.merge(table, on=["question_id", "method"], suffixes=("_export", "_page"))
    assert len(merged) == len(exported) == 60
    for metric in ("token_f1", "exact_match"):
        assert (merged[f"{metric}_export"] - merged[f"{metric}_page"]).abs().max() < 1e-12


def test_runs_json_equals_the_page_counts(scored):
    store, run_id = scored
    listed = {r["run_id"]: r for r in json.loads(_cli(store.root, "runs", "--json"))}
    board = L.system_rows(store, None)
    assert listed[run_id]["n_responses"] == int(board[board.run_id == run_id]["n"].sum()) == 60
    points = G.frontier_points(store, (f"{run_id}:good", f"{run_id}:poor"), "token_f1").set_index("system")
    for row in board.itertuples():
        assert _eq(points.loc[f"{row.run_id}:{row.method}", "cost_per_query_usd"], row.cost_per_query_usd)


def test_weighted_score_on_the_leaderboard_is_comparable_across_runs(tmp_path):
    """Imported alone or next to other runs and methods, a system keeps its leaderboard score;
    the same answers ten times slower score lower."""
    store = RunStore(tmp_path / "runs")
    alone = import_recorded(store, _answers(tmp_path / "alone.jsonl", methods=("good",)), name="alone").run_id
    score_run(store, alone, metrics=METRICS, progress=False)
    first = L.leaderboard(store, ()).set_index("run_id").loc[alone, "weighted_score"]
    both = import_recorded(store, _answers(tmp_path / "both.jsonl"), name="both").run_id
    score_run(store, both, metrics=METRICS, progress=False)
    slow = import_recorded(store, _answers(tmp_path / "slow.jsonl", methods=("good",), slow=10.0), name="slow").run_id
    score_run(store, slow, metrics=METRICS, progress=False)
    board = L.leaderboard(store, ())
    score = {(r.run_id, r.method): r.weighted_score for r in board.itertuples()}
    assert score[(alone, "good")] == pytest.approx(first, abs=1e-12)
    assert score[(both, "good")] == pytest.approx(first, abs=1e-12)
    assert score[(slow, "good")] < first - 1e-3
    assert list(board.run_id[:2]) != [slow, slow]
