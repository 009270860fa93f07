"""`evalcore run --trials T` (issue 36 item 4): every question asked T times per method, each
answer stored and scored as its own trial, a resume asks only the missing (question, method,
trial) answers, and a bad T is one `error:` line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.pipeline import live, resume_run, run_evaluation
from evalcore.runner.config import EvalConfig
from evalcore.store import query_df


def _questions(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": text, "ground_truth": "heads"}) + "\n"
                            for i, text in enumerate(["COIN one", "plain two"], start=1)), encoding="utf-8")
    return path


def _config(faulty, tmp_path, **more) -> EvalConfig:
    return EvalConfig(target=faulty.url, dataset=str(_questions(tmp_path)), methods=["a", "b"], trials=3,
                      concurrency=1, progress=False, **more)


def test_every_question_is_asked_t_times_per_method_and_each_trial_scored(faulty, tmp_path, store, audit):
    result = run_evaluation(_config(faulty, tmp_path, metrics=["exact_match"]), store)
    assert result.status == "complete" and result.asked == 2 * 2 * 3 and result.trials == 3
    assert faulty.calls[("COIN one", "a")] == 3 and faulty.calls[("plain two", "b")] == 3
    rows = audit.rows(store, result.run_id, "responses")
    assert sorted(zip(rows.method, rows.question_id, rows.trial)) == [
        (m, q, t) for m in ("a", "b") for q in ("q1", "q2") for t in range(3)]
    assert store.manifest(result.run_id).counts["expected"] == 12
    assert store.manifest(result.run_id).config["trials"] == 3  # a resume asks the same T
    coin = query_df(store, "SELECT trial, answer FROM trial_responses WHERE method = 'a' AND question_id = 'q1' "
                           "ORDER BY trial")
    assert coin.answer.tolist() == ["heads", "tails", "heads"]  # the server sampled; every draw is kept
    values = query_df(store, "SELECT trial, value FROM trial_metrics WHERE method = 'a' AND question_id = 'q1' "
                             "AND metric = 'exact_match' ORDER BY trial")
    assert values.value.tolist() == [1.0, 0.0, 1.0]


def test_a_resume_asks_only_the_missing_trials(faulty, tmp_path, store, audit, monkeypatch):
    real = live.plan_jobs
    # the first pass gets every other job asked, as a run killed part way through would
    monkeypatch.setattr(live, "plan_jobs", lambda *a, **k: real(*a, **k)[::2])
    first = run_evaluation(_config(faulty, tmp_path, score=False), store)
    monkeypatch.setattr(live, "plan_jobs", real)
    asked = sum(faulty.calls.values())
    done = set(zip(*[audit.rows(store, first.run_id, "responses")[c] for c in ("method", "question_id", "trial")]))
    assert asked == len(done) == 6
    result = resume_run(first.run_id, store, progress=False, score=False)
    assert result.asked == 6 and sum(faulty.calls.values()) == 12  # the missing six, nothing twice
    rows = audit.rows(store, first.run_id, "responses")
    keys = list(zip(rows.method, rows.question_id, rows.trial))
    assert len(keys) == len(set(keys)) == 12
    assert audit.replaced(store, first.run_id, "responses") == 0
    assert resume_run(first.run_id, store, progress=False, score=False).asked == 0
    with pytest.raises(EvalcoreError, match="trials define the run"):  # a --config may not change T either
        resume_run(first.run_id, store, config=_config(faulty, tmp_path).with_settings(trials=5))


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "x", "101", "10000000000000"])
def test_a_bad_number_of_trials_is_one_error_line(tmp_path, value):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "Who?"}\n', encoding="utf-8")
    res = CliRunner().invoke(app, ["--store", str(tmp_path / "runs"), "run", "--target", "http://127.0.0.1:9",
                                   "--dataset", str(questions), "--trials", value])
    assert isinstance(res.exception, EvalcoreError), res.output
    text = str(res.exception)
    assert len(text.splitlines()) == 1 and text.startswith("--trials ") and "1 to 100" in text
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_trials_cannot_change_on_resume():
    res = CliRunner().invoke(app, ["run", "--resume", "any", "--trials", "2"])
    assert isinstance(res.exception, EvalcoreError) and "--trials defines the run" in str(res.exception)
