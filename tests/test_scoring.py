"""score_run and `evalcore score` end to end on the shipped example."""

import json

import pytest
from typer.testing import CliRunner

from evalcore.scoring import engine as scoring
from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.metrics.base import MetricSpec, Score, per_item
from evalcore.store import query_df

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


@pytest.fixture
def example(tmp_path):
    root = tmp_path / "runs"
    res = _cli(root, "import", "--example")
    assert res.exit_code == 0, res.output
    from evalcore.store import RunStore

    return RunStore(root), res.stdout.strip().splitlines()[-1]


def _value(store, run_id, method, qid, metric):
    df = query_df(store, "SELECT value, reason FROM metrics WHERE run_id=? AND method=? AND question_id=? "
                         "AND metric=?", [run_id, method, qid, metric])
    assert len(df) == 1, (method, qid, metric)
    return df.value[0]


def test_score_cli_on_example(example):
    store, run_id = example
    res = _cli(store.root, "score", run_id, "--no-progress")
    assert res.exit_code == 0, res.output
    assert "token_f1" in res.stdout and "skipped" in res.stderr  # judge metrics are skipped, and said so
    assert _value(store, run_id, "local_search", "ex-01", "exact_match") == 1.0
    assert _value(store, run_id, "basic_search", "ex-01", "exact_match") == 0.0
    assert _value(store, run_id, "basic_search", "ex-04", "abstention_false_negative_rate") == 1.0  # made up a budget
    assert _value(store, run_id, "local_search", "ex-04", "negative_detection") == 1.0
    assert _value(store, run_id, "basic_search", "ex-05", "dont_know") == 1.0  # Korean "찾을 수 없습니다"
    assert _value(store, run_id, "local_search", "ex-03", "checks_pass") == 1.0
    assert _value(store, run_id, "basic_search", "ex-03", "checks_pass") == 0.0
    assert _value(store, run_id, "local_search", "ex-01", "latency_ms") == 820.0
    manifest = store.manifest(run_id)
    assert manifest.config["scoring"][-1]["metrics"]


def test_rescoring_replaces_values(example):
    store, run_id = example
    first = scoring.score_run(store, run_id, groups=["lexical"], progress=False)
    scoring.score_run(store, run_id, groups=["lexical"], progress=False)
    n_view = query_df(store, "SELECT count(*) n FROM metrics WHERE run_id=?", [run_id]).n[0]
    pointer = json.loads((store.run_dir(run_id) / "tables.json").read_text())
    # one row per key on disk; the second pass replaced every value of the first
    assert n_view == first.n_values == pointer["rows"]["metrics"]
    assert pointer["replaced"]["metrics"] == first.n_values


def test_selection_errors(example):
    store, run_id = example
    with pytest.raises(EvalcoreError, match="unknown metric.*known: .*token_f1"):
        scoring.score_run(store, run_id, metrics=["token_f2"], progress=False)
    with pytest.raises(EvalcoreError, match="unknown group"):
        scoring.score_run(store, run_id, groups=["nope"], progress=False)
    judged = [n for n, s in scoring.metric_registry().items() if "judge" in s.needs]
    if judged:
        with pytest.raises(EvalcoreError, match="needs a judge"):
            scoring.score_run(store, run_id, metrics=[judged[0]], progress=False)
    res = _cli(store.root, "score", run_id, "--metrics", "bogus")
    assert res.exit_code != 0


def test_dry_run_writes_nothing(example):
    store, run_id = example
    report = scoring.score_run(store, run_id, dry_run=True, progress=False)
    assert report.dry_run and report.estimate["calls"] == 0 and report.metrics
    assert query_df(store, "SELECT count(*) n FROM metrics").n[0] == 0
    res = _cli(store.root, "score", run_id, "--dry-run")
    assert res.exit_code == 0 and json.loads(res.stdout)["run_id"] == run_id


def test_interrupted_scoring_keeps_finished_chunks(example, monkeypatch):
    store, run_id = example
    calls = {"n": 0}

    def flaky(items, ctx):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return [Score(1.0) for _ in items]

    spec = MetricSpec("flaky", "lexical", flaky)
    monkeypatch.setattr(scoring, "metric_registry", lambda: {"flaky": spec})
    with pytest.raises(KeyboardInterrupt):
        scoring.score_run(store, run_id, progress=False, chunk_size=5)
    assert query_df(store, "SELECT count(*) n FROM metrics WHERE metric='flaky'").n[0] == 5


def test_metric_exception_is_a_reasoned_nan(example, monkeypatch):
    store, run_id = example

    def broken(q, r):
        raise ZeroDivisionError("oops")

    spec = MetricSpec("broken", "lexical", per_item(broken))
    monkeypatch.setattr(scoring, "metric_registry", lambda: {"broken": spec})
    report = scoring.score_run(store, run_id, progress=False)
    assert "ZeroDivisionError" in report.errors["broken"]
    df = query_df(store, "SELECT reason FROM metrics WHERE metric='broken'")
    assert len(df) == 12 and df.reason.str.startswith("metric error").all()


def test_spot_check_is_passed_through_or_reported_missing(example, monkeypatch):
    import sys
    import types

    store, run_id = example
    seen = {}
    fake = types.ModuleType("evalcore.scoring.spot_check")

    def spot_check(store_, run_id_, fraction, second_judge, first_judge, seed):
        seen.update(run_id=run_id_, fraction=fraction, second=second_judge, first=first_judge, seed=seed)
        return {"disagreement_rate": 0.0}

    fake.spot_check = spot_check
    monkeypatch.setitem(sys.modules, "evalcore.scoring.spot_check", fake)
    res = _cli(store.root, "score", run_id, "--metrics", "token_f1", "--no-progress",
               "--spot-check", "0.1", "--second-judge", "heuristic")
    assert res.exit_code == 0, res.output
    assert seen == {"run_id": run_id, "fraction": 0.1, "second": "heuristic", "first": None, "seed": 0}
    assert '"disagreement_rate": 0.0' in res.stdout
    monkeypatch.setitem(sys.modules, "evalcore.scoring.spot_check", None)  # import now fails
    res = _cli(store.root, "score", run_id, "--metrics", "token_f1", "--no-progress",
               "--spot-check", "0.1", "--second-judge", "heuristic")
    assert isinstance(res.exception, EvalcoreError) and "--spot-check is not available" in str(res.exception)
    res = _cli(store.root, "score", run_id, "--spot-check", "0.1")
    assert isinstance(res.exception, EvalcoreError) and "--second-judge" in str(res.exception)


def test_a_metric_failing_on_one_answer_costs_that_answer_only(example, monkeypatch):
    """A batch metric raising on one answer of a chunk: the chunk's other answers keep their
    values, whatever the chunk size (the local pass, scoring while asking and Ray cut chunks
    differently, and the values must not depend on it)."""
    store, run_id = example
    bad = sorted(query_df(store, "SELECT DISTINCT question_id FROM responses").question_id)[3]

    def fragile(items, ctx):
        if any(q.id == bad for q, _ in items):
            raise ValueError(f"cannot read {bad}")
        return [Score(1.0) for _ in items]

    spec = MetricSpec("fragile", "lexical", fragile)
    monkeypatch.setattr(scoring, "metric_registry", lambda: {"fragile": spec})
    for chunk_size in (1, 5, 64):
        report = scoring.score_run(store, run_id, progress=False, chunk_size=chunk_size)
        assert f"cannot read {bad}" in report.errors["fragile"]
        df = query_df(store, "SELECT question_id, value, reason FROM metrics WHERE metric='fragile'")
        lost = df[df.value.isna()]
        assert len(df) == 12 and set(lost.question_id) == {bad}, chunk_size
        assert lost.reason.str.startswith("metric error: ValueError").all()
