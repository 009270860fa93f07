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
from evalcore.queries import query_df
from evalcore.schemas import EvalQuestion
from evalcore.analysis import sql as SQ
from evalcore.ui import data as D
from evalcore.ui import data_annotate as DA
from evalcore.ui import data_charts as DC
from evalcore.ui import data_compare as DCMP
from evalcore.ui.snapshot import forget, get_snapshot
from evalcore.ui.synthetic import write_run

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
    forget(store)


def _counts(store):
    return {t: int(query_df(store, f"SELECT count(*) AS n FROM {t}")["n"][0])
            for t in ("questions", "responses", "metrics")}


def test_app_data_functions_bind_every_filter(evil):
    store, run = evil
    before = _counts(store)
    snap = get_snapshot(store)
    q = D.question_table
    rows = q(snap, D.QuestionFilter(run, methods=[EVIL_METHOD]), [EVIL_METRIC])
    assert set(rows["method"]) == {EVIL_METHOD} and len(rows) == N and EVIL_METRIC in rows.columns
    assert len(q(snap, D.QuestionFilter(run, category=EVIL_CATEGORY), [])) == 2 * (N // 2)
    assert len(q(snap, D.QuestionFilter(run, metric=EVIL_METRIC, min_value=0.0), [])) == 2 * N
    for bad in ABSENT:
        for f in (D.QuestionFilter(run, methods=[bad]), D.QuestionFilter(run, category=bad),
                  D.QuestionFilter(run, question_type=bad), D.QuestionFilter(run, text=bad),
                  D.QuestionFilter(run, metric=bad), D.QuestionFilter(bad)):
            assert q(snap, f, [bad]).empty, (bad, f)
        assert D.leaderboard(snap, [bad], search=bad).empty
        assert D.leaderboard(snap, [], statuses=[bad]).empty
        assert D.systems(snap, [bad]).empty and D.metric_names(snap, [bad]) == []
        assert D.facet_values(snap, bad) == {"category": [], "question_type": []}
        assert DC.label_counts(snap, [f"{run}:{bad}"], bad).empty
        assert DC.metric_by_facet(snap, [f"{run}:plain"], bad, "category").empty
        assert DC.frontier_points(snap, [f"{run}:{bad}"], "token_f1").empty
        assert DA.queue(snap, run, "claim", bad, [bad]).empty
        assert DCMP.delta_table(snap, D.System(run, "plain"), D.System(run, bad))["n_pairs"].sum() == 0
    board = D.leaderboard(snap, [EVIL_METRIC])
    assert set(board["method"]) == {EVIL_METHOD, "plain"} and EVIL_METRIC in board.columns
    keys = [f"{run}:{EVIL_METHOD}", f"{run}:plain"]
    by_facet = DC.facet_means(snap, keys, EVIL_METRIC, "category")
    assert set(by_facet["facet"]) == {EVIL_CATEGORY, "plain"} and by_facet["n"].sum() == 2 * N
    with pytest.raises(ValueError):  # identifiers are allow-listed, never bound or spliced
        DC.metric_by_facet(snap, keys, "token_f1", "category; DROP TABLE metrics")
    pairs = DCMP.paired_values(snap, D.System(run, EVIL_METHOD), D.System(run, "plain"), [EVIL_METRIC])
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
        assert SQ.paired_rows(store, run, bad).empty
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
