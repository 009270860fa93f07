"""One source of truth: the CLI and the dashboard show the same numbers for the same system.

The dashboard's pages call evalcore.analysis through evalcore/ui/cached_reads.py; the CLI calls the
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

from evalcore.analysis.comparison import compare as C
from evalcore.analysis.charts import distributions as G
from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.questions import question_drilldown as Qn
from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
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


# ---- issue 23, item 5: one definition per figure, on a run with every awkward case -------------
def _messy_answers(path, n=30):
    """Two methods; 'good' leaves every third answer unpriced, 'poor' fails every fifth question
    with an error (NaN quality, no price)."""
    rows = []
    for i in range(n):
        for m in ("good", "poor"):
            error = m == "poor" and i % 5 == 0
            right = (i % 3 != 0) if m == "good" else (i % 2 == 0)
            rec = {"question_id": f"q{i}", "method": m, "question": f"What is item {i}?",
                   "ground_truth": f"item {i} is blue", "latency_ms": 300.0 + 13 * i + (500 if m == "poor" else 0)}
            if error:
                rec["error"] = "HTTP 500 upstream failed"
            else:
                rec["answer"] = f"item {i} is blue" if right else "no idea"
            if not error and not (m == "good" and i % 3 == 0):
                rec["token_usage"] = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.001 * (1 + i % 4)}
            rows.append(rec)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    from evalcore.schemas import JudgeCall, JudgeId

    base = tmp_path_factory.mktemp("messy")
    store = RunStore(base / "runs")
    run_id = import_recorded(store, _messy_answers(base / "m.jsonl"), name="messy").run_id
    score_run(store, run_id, metrics=METRICS, progress=False)
    judge = JudgeId(provider="anthropic", model="claude-x", prompt_id="faithfulness", prompt_version="1")
    calls = [JudgeCall(run_id=run_id, call_key=f"{m}-{i}", judge_id=judge, method=m, question_id=f"q{i}",
                       purpose="faithfulness.claims", request={}, cost_usd=0.0004) for i in range(0, 30, 2)
             for m in ("good", "poor")]
    # a per-question call (reference statements): no method, its cost shared by the question's methods
    calls += [JudgeCall(run_id=run_id, call_key=f"ref-{i}", judge_id=judge, method=None, question_id=f"q{i}",
                        purpose="reference_statements", request={}, cost_usd=0.003) for i in range(10)]
    writer = store.open_run(run_id)
    writer.write_judge_calls(calls)
    writer.publish()
    return store, run_id


def test_cost_per_query_has_one_definition(messy):
    """Runs (leaderboard), operations table, Charts (per answer and fronts) and compare agree,
    and equal the definition computed by hand: RAG mean over priced answers + judge cost / answers."""
    from evalcore.analysis.runs import cost as K
    from evalcore.analysis.read import sql as S

    store, run_id = messy
    keys = (f"{run_id}:good", f"{run_id}:poor")
    board = L.system_rows(store, [(run_id, "good"), (run_id, "poor")]).set_index("method")
    per_answer = G.latency_cost(store, keys)
    rolled = K.system_costs(per_answer).set_index("system")
    ops = S.operations(store, run_id).set_index("method")
    fronts = G.frontier_points(store, keys, "token_f1").set_index("system")
    cli = json.loads(_cli(store.root, "compare", *keys, "--json"))
    run_level = {r["label"]: r for r in cli["run_level"]}
    for method in ("good", "poor"):
        key = f"{run_id}:{method}"
        rag = [0.001 * (1 + i % 4) for i in range(30)
               if not (method == "good" and i % 3 == 0) and not (method == "poor" and i % 5 == 0)]
        judge = 0.0004 * 15 + 0.003 * 10 / 2
        expected = sum(rag) / len(rag) + judge / 30
        assert board.loc[method, "cost_per_query_usd"] == pytest.approx(expected, rel=1e-9)
        for figure in (rolled.loc[key, "cost_per_query_usd"], ops.loc[method, "cost_per_query_usd"],
                       fronts.loc[key, "cost_per_query_usd"], run_level[key]["cost"]):
            assert _eq(figure, board.loc[method, "cost_per_query_usd"]), (method, figure)
        # per answer: the per-question call is in (the Charts used to drop it), unpriced answers unknown
        rows = per_answer[per_answer.system == key]
        assert rows["judge_cost_usd"].sum() == pytest.approx(judge)
        assert rows["cost_usd"].isna().sum() == 30 - len(rag)
        # latency: one p50 everywhere
        for figure in (ops.loc[method, "latency_p50_ms"], fronts.loc[key, "latency_p50_ms"], run_level[key]["latency"]):
            assert _eq(figure, board.loc[method, "latency_p50_ms"])


def test_means_and_ci_have_one_definition(messy):
    """Means: show --json = leaderboard = gate = drill-down; the leaderboard's ± is half of the
    CI `summarize` gives every mean (errors and NaNs in the data)."""
    from evalcore.analysis.runs.means import per_method_means, summarize
    from evalcore.outputs.gate import method_means

    store, run_id = messy
    shown = {(m["method"], m["metric"]): m for m in json.loads(_cli(store.root, "show", run_id, "--json"))["metrics"]}
    board = L.leaderboard(store, tuple(METRICS)).set_index("method")
    gate, means = method_means(store, run_id), per_method_means(store, run_id)
    table = Qn.question_table(store, Qn.QuestionFilter(run_id), ("token_f1", "weighted_score"))
    for method in ("good", "poor"):
        for metric in ("token_f1", "exact_match", "weighted_score", "cost_usd"):
            v = shown[(method, metric)]["mean"]
            assert _eq(v, board.loc[method, metric]) and _eq(v, gate[method][metric]) and _eq(v, means[method][metric])
        assert _eq(shown[(method, "token_f1")]["mean"], table[table.method == method]["token_f1"].mean())
        s = summarize(store, run_id, methods=[method], metrics=["weighted_score"]).iloc[0]
        assert board.loc[method, "weighted_score_ci_low"] == pytest.approx(s.ci_low, abs=1e-12)
        assert board.loc[method, "weighted_score_ci_high"] == pytest.approx(s.ci_high, abs=1e-12)
        assert board.loc[method, "weighted_score_ci95"] == pytest.approx((s.ci_high - s.ci_low) / 2, abs=1e-12)


def test_compare_verdict_cli_equals_the_page(messy):
    """compare --json (default metrics) = the Compare page's table, verdict lines and summary."""
    from evalcore.analysis.comparison import verdict as V

    store, run_id = messy
    base, cand = f"{run_id}:good", f"{run_id}:poor"
    out = json.loads(_cli(store.root, "compare", base, cand, "--json"))
    tested = V.default_tested_metrics(store, [base, cand])  # what the page tests by default
    assert [r["metric"] for r in out["metrics"]] == tested
    from evalcore.analysis.comparison.pair import pair_comparison

    page, said = pair_comparison(store, base, cand, tuple(tested), "good", "poor")  # what the page calls
    lines = said.lines
    cli_lines = out["verdicts"][cand]["lines"]
    assert [(x["metric"], x["outcome"], x["verdict"]) for x in cli_lines] == \
        [(r.metric, r.outcome, r.verdict) for r in lines.set_index("metric").loc[[x["metric"] for x in cli_lines]]
         .reset_index().itertuples()]
    assert out["verdicts"][cand]["summary"] == said.summary == V.verdict_summary(lines, page, "good", "poor")
    assert out["verdicts"][cand]["warnings"] == list(said.warnings)
    by = page.set_index("metric")
    for row in out["metrics"]:
        for k in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_holm", "mde", "n_pairs"):
            assert _eq(row[k], by.loc[row["metric"], k]), (row["metric"], k)


def test_correct_has_one_definition(messy):
    """Answer classes (show/exports), the Charts' class bars and the diagnosis count the same
    CORRECT answers; an error answer is ERROR everywhere, never diagnosed."""
    from evalcore.analysis.questions import failure_modes as FM
    from evalcore.analysis.runs.means import answer_classes

    store, run_id = messy
    keys = (f"{run_id}:good", f"{run_id}:poor")
    classes = answer_classes(store, run_id).set_index("method")
    bars = G.label_counts(store, keys, "answer_class")
    modes = FM.failure_modes(store, keys)
    for method in ("good", "poor"):
        key = f"{run_id}:{method}"
        b = dict(zip(bars[bars.system == key].label, bars[bars.system == key].n))
        assert b.get("CORRECT", 0) == classes.loc[method, "correct"]
        assert b.get("WRONG", 0) == classes.loc[method, "wrong"] and b.get("ERROR", 0) == classes.loc[method, "error"]
        m = modes[modes.system == key].set_index("bucket")["n"]
        assert m.get("correct", 0) == classes.loc[method, "correct"]
        assert m.sum() == 30 - classes.loc[method, "error"]
    assert classes.loc["poor", "error"] == 6 and classes.loc["good", "error"] == 0


def test_demo_board_is_the_leaderboard(messy):
    store, run_id = messy
    board = L.run_board(store, run_id)
    rows = L.system_rows(store, [(run_id, "good"), (run_id, "poor")], list(board.columns)).set_index("method")
    for method in board.index:
        for col in board.columns:
            assert _eq(board.loc[method, col], rows.loc[method, col]), (method, col)
    assert list(board.columns[:2]) == ["weighted_score", "token_f1"]
