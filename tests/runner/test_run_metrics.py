"""`evalcore run --metrics/--group` (and `metrics:`/`groups:` in the YAML config): the chosen
metrics are what gets scored, and a bad name fails before the server sees a single question."""

from __future__ import annotations

from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.demo import questions_path
from evalcore.metrics.registry import groups
from evalcore.store import query_df

runner = CliRunner()


def _run(store, *args):
    return runner.invoke(app, ["--store", str(store.root), "run", "--dataset", str(questions_path()),
                               "--samples", "4", "--methods", "basic_search", "--no-progress", *args])


def _scored(store, run_id: str) -> set[str]:
    return set(query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id])["metric"])


def test_metrics_and_group_flags_choose_what_is_scored(demo_server, store):
    res = _run(store, "--target", demo_server.url, "--metrics", "token_f1, mrr", "--groups", "abstention")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    assert _scored(store, run_id) == {"token_f1", "mrr", *groups()["abstention"]}


def test_unknown_metric_fails_before_any_question(faulty, store):
    res = _run(store, "--target", faulty.url, "--metrics", "token_f1,no_such_metric")
    assert res.exit_code != 0
    assert "unknown metric(s) no_such_metric" in str(res.exception) + res.output
    assert sum(faulty.calls.values()) == 0 and store.run_ids() == []


def test_unknown_group_and_judged_metric_without_judge_fail_early(faulty, store):
    res = _run(store, "--target", faulty.url, "--groups", "lexical,nonsense")
    assert res.exit_code != 0 and "unknown group(s) nonsense" in str(res.exception) + res.output
    res = _run(store, "--target", faulty.url, "--metrics", "faithfulness", "--no-judge")
    assert res.exit_code != 0 and "need a judge" in str(res.exception) + res.output
    assert sum(faulty.calls.values()) == 0 and store.run_ids() == []


def test_config_file_metrics_and_groups(demo_server, store, tmp_path):
    config = tmp_path / "eval.yaml"
    config.write_text(f"target: {demo_server.url}\ndataset: {questions_path()}\nsamples: 3\n"
                      "methods: [local_search]\nmetrics: [exact_match]\ngroups: [performance]\n"
                      "progress: false\n", encoding="utf-8")
    res = runner.invoke(app, ["--store", str(store.root), "run", "--config", str(config)])
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    assert _scored(store, run_id) == {"exact_match", *groups()["performance"]}
    # A flag overrides the file's choice.
    res = runner.invoke(app, ["--store", str(store.root), "run", "--config", str(config), "--metrics", "token_f1"])
    assert res.exit_code == 0, res.output
    assert _scored(store, res.stdout.strip().splitlines()[-1]) == {"token_f1", *groups()["performance"]}
