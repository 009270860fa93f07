"""Filters reach DuckDB only as bound parameters.

The store itself holds hostile names (a method `m' OR '1'='1`, a metric whose name closes a
string and drops a table, a category with a comment), so the tests check two things at
once: a hostile value that EXISTS selects exactly its own rows (it was compared as a value,
not spliced into SQL), and a hostile value that does not exist selects nothing (no
`OR 1=1` widened the filter). Afterwards every table still has all its rows.
"""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.store import query_df
from evalcore.schemas import EvalQuestion
from evalcore.analysis.labels import annotations as DA
from evalcore.analysis.comparison import compare as DCMP
from evalcore.analysis.comparison.side_by_side import side_by_side
from evalcore.analysis.charts import distributions as DC
from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.questions import question_drilldown as Qn
from evalcore.analysis.read import sql as SQ
from evalcore.demo.synthetic import write_run

EVIL_METHOD = "m' OR '1'='1"
EVIL_METRIC = "f1'); DROP TABLE metrics; --"
EVIL_CATEGORY = "cat' /* */ OR 1=1 --"
ABSENT = ["x' OR 1=1 --", "' OR ''='", "1; DROP TABLE metrics", "%", "_", "*", "$run", "?", "\\'"]
N = 6


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    from evalcore.store import RunStore

    store = RunStore(tmp_path_factory.mktemp("sql") / "runs")
    questions = [EvalQuestion(id=f"q{i}", question=f"question {i}", ground_truth="g",
                              category=EVIL_CATEGORY if i % 2 else "plain") for i in range(N)]
    run_id = write_run(store, "evil", questions, [EVIL_METHOD, "plain"], [EVIL_METRIC, "token_f1"], seed=7)
    yield store, run_id


def _counts(store):
    return {t: int(query_df(store, f"SELECT count(*) AS n FROM {t}")["n"][0])
            for t in ("questions", "responses", "metrics")}


def test_app_data_functions_bind_every_filter(evil):
    store, run = evil
    before = _counts(store)
    q = Qn.question_table
    rows = q(store, Qn.QuestionFilter(run, methods=(EVIL_METHOD,)), (EVIL_METRIC,))
    assert set(rows["method"]) == {EVIL_METHOD} and len(rows) == N and EVIL_METRIC in rows.columns
    assert len(q(store, Qn.QuestionFilter(run, category=EVIL_CATEGORY))) == 2 * (N // 2)
    assert len(q(store, Qn.QuestionFilter(run, metric=EVIL_METRIC, min_value=0.0))) == 2 * N
    for bad in ABSENT:
        for f in (Qn.QuestionFilter(run, methods=(bad,)), Qn.QuestionFilter(run, category=bad),
                  Qn.QuestionFilter(run, question_type=bad), Qn.QuestionFilter(run, text=bad),
                  Qn.QuestionFilter(run, metric=bad), Qn.QuestionFilter(bad)):
            assert q(store, f, (bad,)).empty, (bad, f)
        assert L.leaderboard(store, (bad,), search=bad).empty
        assert L.leaderboard(store, (), statuses=(bad,)).empty
        assert L.systems(store, (bad,)).empty and L.metric_names(store, (bad,)) == []
        assert L.facet_values(store, bad) == {"category": [], "question_type": []}
        assert DC.label_counts(store, (f"{run}:{bad}",), "grade").empty
        assert DC.metric_by_facet(store, (f"{run}:plain",), bad, "category").empty
        assert DC.frontier_points(store, (f"{run}:{bad}",), "token_f1").empty
        assert DA.queue(store, run, "claim", bad, (bad,)).empty
        assert DCMP.metric_deltas(store, f"{run}:plain", f"{run}:{bad}")["n_pairs"].sum() == 0
    board = L.leaderboard(store, (EVIL_METRIC,))
    assert set(board["method"]) == {EVIL_METHOD, "plain"} and EVIL_METRIC in board.columns
    keys = (f"{run}:{EVIL_METHOD}", f"{run}:plain")
    by_facet = DC.facet_means(store, keys, EVIL_METRIC, "category")
    assert set(by_facet["facet"]) == {EVIL_CATEGORY, "plain"} and by_facet["n"].sum() == 2 * N
    with pytest.raises(ValueError):  # identifiers are allow-listed, never bound or spliced
        DC.metric_by_facet(store, keys, "token_f1", "category; DROP TABLE metrics")
    with pytest.raises(ValueError):
        DC.label_counts(store, keys, "grade'; DROP TABLE metrics")
    pairs = DCMP.paired_values(store, f"{run}:{EVIL_METHOD}", f"{run}:plain", (EVIL_METRIC,))
    assert len(pairs) == N and set(pairs["metric"]) == {EVIL_METRIC}
    assert _counts(store) == before


def test_stats_and_compare_cli_bind_selections(evil):
    store, run = evil
    before = _counts(store)
    vals = SQ.metric_values(store, run, methods=[EVIL_METHOD], metrics=[EVIL_METRIC])
    assert len(vals) == N and set(vals["method"]) == {EVIL_METHOD}
    for bad in ABSENT:
        assert SQ.metric_values(store, run, methods=[bad]).empty
        assert SQ.metric_values(store, run, metrics=[bad]).empty
        assert len(side_by_side(store, f"{run}:{bad}", f"{run}:{bad}").question_id) == 0  # what compare pairs
        assert SQ.question_ids(store, run, bad) == []
        with pytest.raises(EvalcoreError):
            SQ.metric_means(store, run, by=bad)  # a grouping is an allow-listed name
    cli = CliRunner()
    root = str(store.root)
    res = cli.invoke(app, ["--store", root, "compare", f"{run}:{EVIL_METHOD}", f"{run}:plain",
                           "--metrics", EVIL_METRIC, "--json"])
    assert res.exit_code == 0, res.output
    assert EVIL_METRIC in res.stdout
    for bad in ABSENT:
        res = cli.invoke(app, ["--store", root, "compare", f"{run}:{bad}", f"{run}:plain"])
        assert res.exit_code != 0 and isinstance(res.exception, (EvalcoreError, SystemExit)), (bad, res.output)
        res = cli.invoke(app, ["--store", root, "compare", f"{run}:{EVIL_METHOD}", f"{run}:plain",
                               "--metrics", bad, "--json"])
        assert EVIL_METRIC not in (res.stdout or ""), bad  # an unknown metric selects nothing
    assert _counts(store) == before
    assert not math.isnan(SQ.metric_means(store, run)["mean"].dropna().iloc[0])
