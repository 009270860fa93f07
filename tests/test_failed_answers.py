"""A failed answer is a wrong answer in every score (issue 23, item 1).

A system whose every answer failed (here: the all-error run a user got by asking a demo
server for method 'default') used to rank second: with no quality metric computable on an
error, weighted_score renormalised onto latency and cost alone, where a fast free error is
nearly perfect. End to end: import, score, then the CLI (`show`, `runs`) and the function the
Runs page calls must put it at 0, at or below a system with a single correct answer.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from evalcore.analysis.runs import leaderboard as L
from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.metrics.base import ScoringContext, answer_failed
from evalcore.metrics.registry import METRICS
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring.engine import score_run

N = 12
FAILURE = "HTTP 400 unknown method 'default'"


def _answers(path):
    rows = []
    for i in range(N):
        q = {"question_id": f"q{i}", "question": f"What colour is item {i}?", "ground_truth": f"item {i} is blue"}
        rows.append({**q, "method": "broken", "error": FAILURE, "error_kind": "http", "latency_ms": 3.0,
                     "token_usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}})
        rows.append({**q, "method": "one_right", "answer": f"item {i} is blue" if i == 0 else "no idea",
                     "contexts": [f"Item {i} is blue."], "latency_ms": 30_000.0,
                     "token_usage": {"input_tokens": 900, "output_tokens": 80, "cost_usd": 0.05}})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def scored(store, tmp_path):
    run_id = import_recorded(store, _answers(tmp_path / "a.jsonl"), name="errors").run_id
    score_run(store, run_id, metrics=["token_f1", "latency_ms", "cost_usd", "faithfulness", "answer_correct",
                                      "answer_wrong", "weighted_score", "ragas_score"],
              options={"judge": "heuristic"})
    return store, run_id


def _cli(root, *args):
    res = CliRunner().invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_all_errors_score_zero_and_rank_below_one_correct_answer(scored):
    store, run_id = scored
    board = L.leaderboard(store, ["faithfulness", "token_f1"]).set_index("method")  # the Runs page's data
    assert board.loc["broken", "weighted_score"] == 0.0
    assert board.loc["one_right", "weighted_score"] > 0.0
    assert list(board.index).index("one_right") < list(board.index).index("broken")
    assert board.loc["broken", "faithfulness"] == 0.0  # an error is an unfaithful answer, not left out
    shown = json.loads(_cli(store.root, "show", run_id, "--json"))["metrics"]
    means = {(m["method"], m["metric"]): m for m in shown}
    for metric in ("weighted_score", "ragas_score", "faithfulness", "token_f1", "answer_correct"):
        row = means[("broken", metric)]
        assert row["mean"] == 0.0 and row["n_scored"] == N, (metric, row)
    assert means[("broken", "answer_wrong")]["mean"] == 1.0  # an error is a wrong answer
    assert means[("broken", "weighted_score")]["mean"] <= means[("one_right", "weighted_score")]["mean"]
    assert means[("broken", "weighted_score")]["mean"] == board.loc["broken", "weighted_score"]
    runs = json.loads(_cli(store.root, "runs", "--json"))
    assert runs[0]["n_errors"] == N and isinstance(runs[0]["n_errors"], int)


def test_failed_answer_details_say_why(scored):
    store, run_id = scored
    from evalcore.store import query_df

    rows = query_df(store, "SELECT metric, value, details FROM metrics WHERE run_id = ? AND method = 'broken' "
                           "AND question_id = 'q1'", [run_id])
    by = {r.metric: r for r in rows.itertuples()}
    details = json.loads(by["weighted_score"].details)
    assert by["weighted_score"].value == 0.0 and details["failed_answer"] and details["target_error"] == "http"
    # every objective the run supports is counted 0, cost and latency included
    assert details["objectives"] == {"accuracy": 0.0, "faithfulness": 0.0, "cost": 0.0, "latency": 0.0}


def test_error_rule_only_where_the_question_could_be_scored():
    """A failed answer to a question without a ground truth is no more scorable by
    answer_correctness than a working one: it keeps the metric's own NaN and reason; with a
    ground truth it is 0, without a judge call."""
    spec = METRICS["answer_correctness"]
    with_gt = EvalQuestion(id="a", question="?", ground_truth="blue")
    without = EvalQuestion(id="b", question="?")
    items = [(q, EvalResponse(question_id=q.id, method="m", error="boom", error_kind="http")) for q in (with_gt, without)]
    scores = spec.score(items, ScoringContext(run_id="t", options={"judge": "heuristic"}))
    assert scores[0].value == 0.0 and scores[0].details["target_error"] == "http"
    assert math.isnan(scores[1].value) and scores[1].reason


def test_a_retrievers_log_is_not_a_run_of_failed_answers():
    """Empty answers fail only where answers were expected: a run with no answer text at all
    (imported with --retrieval-only) keeps its context metrics."""
    q = EvalQuestion(id="a", question="?", ground_truth="blue")
    empty = EvalResponse(question_id="a", method="m", answer="", retrieved=[{"rank": 1, "text": "x"}])
    answered = EvalResponse(question_id="a", method="n", answer="blue")
    retriever_log = ScoringContext(run_id="t", items=[(q, empty)])
    assert not retriever_log.run_has("answer", []) and not answer_failed(empty, answers_expected=False)
    answering = ScoringContext(run_id="t", items=[(q, empty), (q, answered)])
    assert answering.run_has("answer", []) and answer_failed(empty, answers_expected=True)
    # the Ray engine's workers see one block: the run's facts come from the driver's scan
    assert ScoringContext(run_id="t", items=[(q, None)], have=frozenset({"answer"})).run_has("answer", [])
