"""`evalcore run` ends with the number of failed answers and the first error, and a run whose
every answer failed exits non-zero (issue 23, item 2): the all-error run that asked the demo
server for method 'default' used to end "complete" with exit 0."""

from __future__ import annotations

from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.demo import questions_path

runner = CliRunner()


def _run(store, url, methods):
    return runner.invoke(app, ["--store", str(store.root), "run", "--target", url, "--dataset",
                               str(questions_path()), "--samples", "4", "--methods", methods, "--no-progress",
                               "--no-score"])


def test_every_answer_failed_exits_non_zero_with_the_first_error(demo_server, store):
    res = _run(store, demo_server.url, "default")
    assert res.exit_code == 1, res.output
    assert "4 of 4 answers failed; first: " in res.output and "unknown method 'default'" in res.output
    assert "every answer of run" in res.output
    run_id = res.stdout.strip().splitlines()[-1]
    assert store.exists(run_id)  # the answers (errors) are kept: `evalcore show` lists them


def test_a_working_run_says_no_answer_failed(demo_server, store):
    res = _run(store, demo_server.url, "basic_search")
    assert res.exit_code == 0, res.output
    assert "no answer failed (4 answers)" in res.output


def test_some_failures_are_counted_but_do_not_fail_the_run(demo_server, store):
    res = _run(store, demo_server.url, "basic_search,default")
    assert res.exit_code == 0, res.output
    assert "4 of 8 answers failed; first: " in res.output
