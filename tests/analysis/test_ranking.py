"""Ranking only where it means something (issue 23, item 2): a 3-question run is listed apart,
never above a ranked one; a system with a majority of failed answers is flagged with the
first error; error rate and the CI's lower bound are columns."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.runs.progress import answer_failures, failure_line
from evalcore.analysis.runs.ranking import ranked_order
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run

FAILURE = "HTTP 400 unknown method 'default'"


def _import(store, tmp_path, name, n, method, right=lambda i: True, error=None):
    rows = []
    for i in range(n):
        row = {"question_id": f"q{i}", "question": f"Colour of item {i}?", "ground_truth": f"item {i} is blue",
               "method": method, "latency_ms": 200.0}
        row.update({"error": error, "error_kind": "http"} if error else
                   {"answer": f"item {i} is blue" if right(i) else "no idea"})
        rows.append(row)
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run_id = import_recorded(store, path, name=name).run_id
    score_run(store, run_id, metrics=["token_f1", "latency_ms", "weighted_score"])
    return run_id


def test_tiny_runs_are_listed_apart_and_failures_flagged(store, tmp_path):
    tiny = _import(store, tmp_path, "tiny", 3, "lucky")  # 3/3 right: the best mean of all
    big = _import(store, tmp_path, "big", 12, "steady", right=lambda i: i % 4 != 0)
    broken = _import(store, tmp_path, "broken", 12, "default", error=FAILURE)
    board = L.leaderboard(store)
    assert list(board["run_id"]) == [big, broken, tiny]  # the 1.000 of 3 questions is never first
    row = board.set_index("run_id")
    assert row.loc[tiny, "weighted_score"] > row.loc[big, "weighted_score"]
    assert not row.loc[tiny, "ranked"] and row.loc[tiny, "rank_note"] == "too few questions to rank (n=3)"
    assert row.loc[big, "ranked"] and pd.isna(row.loc[big, "rank_note"])
    assert row.loc[broken, "error_rate"] == 1.0 and row.loc[big, "error_rate"] == 0.0
    assert row.loc[broken, "failure_flag"] == f"12/12 failed: {FAILURE}"
    assert pd.isna(row.loc[big, "failure_flag"])
    ci = row.loc[big, "weighted_score_ci95"]  # half-width of the one CI (means.mean_ci, a bootstrap)
    low, high = row.loc[big, "weighted_score_ci_low"], row.loc[big, "weighted_score_ci_high"]
    assert low < row.loc[big, "weighted_score"] < high and (high - low) / 2 == pytest.approx(ci)
    # whatever the sort, an unranked system stays below the ranked ones
    for by, ascending in (("weighted_score", True), ("n", True), ("weighted_score_ci_low", False)):
        assert ranked_order(board, by, ascending)["run_id"].iloc[-1] == tiny


def test_answer_failures_give_the_count_and_the_first_error(store, tmp_path):
    broken = _import(store, tmp_path, "broken", 12, "default", error=FAILURE)
    fails = answer_failures(store, broken)
    assert fails["all_failed"] and fails["n"] == fails["n_failed"] == 12 and fails["first_error"] == FAILURE
    assert failure_line(fails) == f"12 of 12 answers failed; first: {FAILURE}"
    ok = _import(store, tmp_path, "ok", 12, "steady")
    assert failure_line(answer_failures(store, ok)) == "no answer failed (12 answers)"
