"""The Launch page's judge repeats box (issue 36, item 1): K reaches the background `evalcore
run` as `--repeats K`, which scores the answers as `score --repeats K` does (the option
judge_repeats: K stored verdicts per judged value); K = 1 leaves the command line as it was; a K
the CLI would refuse, or K > 1 without a judge, is refused on the page with one sentence."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.store import RunStore, query_df
from tests.app.test_launch_metrics import _fill_and_submit, started  # noqa: F401  (the fixture)


def _submit(make_app, repeats: str, judge: str = "heuristic", url: str = "http://127.0.0.1:9",
            metrics: tuple[str, ...] = ("answer_class",)):
    at = make_app("launch")
    next(t for t in at.text_input if t.label.startswith("Judge repeats")).set_value(repeats)
    return _fill_and_submit(at, url, list(metrics), [], judge=judge)


def test_launch_passes_k_judge_repeats_and_leaves_k_1_out(make_app, started):  # noqa: F811
    at = _submit(make_app, "3")
    assert not at.exception, at.exception
    [(_, argv)] = started
    assert argv[argv.index("--repeats") + 1] == "3"
    started.clear()
    _submit(make_app, "1")
    [(_, argv)] = started
    assert "--repeats" not in argv


def test_launch_refuses_a_k_the_cli_refuses(make_app, started):  # noqa: F811
    at = _submit(make_app, "0")
    assert started == [] and any(e.value.startswith("Judge repeats") and "from 1 to 50" in e.value for e in at.error)


@pytest.mark.parametrize("text, said", [("0", "from 1 to 50, got 0"), ("51", "from 1 to 50, got 51"),
                                        ("２", "not a whole number"), ("2.5", "not a whole number"),
                                        ("-1", "not a whole number"), ("3", None), ("007", None)])
def test_the_repeats_box_follows_the_clis_rule(text, said):
    from evalcore.analysis.read.catalog import repeats_problem

    problem = repeats_problem(text)
    assert problem is None if said is None else said in problem


def test_launch_refuses_repeats_without_a_judge(make_app, started):  # noqa: F811
    at = _submit(make_app, "3", judge="(no judge)", metrics=())
    assert started == [] and any("pick a judge" in e.value for e in at.error)


def test_the_launch_command_line_stores_k_verdicts_per_judged_value(make_app, started, tmp_path):  # noqa: F811
    """The argv the page built, run in this process against the demo server: K = 3 repeats of
    each judged value are stored, as `score --repeats 3` stores them, and the run records it."""
    from evalcore.demo.server import start_in_thread

    server = start_in_thread(0)
    try:
        _submit(make_app, "3", url=server.url)
        [(_, argv)] = started
        store = RunStore(tmp_path / "runs")
        argv[argv.index("--store") + 1] = str(store.root)
        res = CliRunner().invoke(app, argv[argv.index("--store"):])
        assert res.exit_code == 0, res.output
    finally:
        server.shutdown()
        server.server_close()
    [run_id] = store.run_ids()
    per_value = query_df(store, """SELECT question_id, count(*) AS k FROM metric_repeats
                                   WHERE run_id = ? AND metric = 'answer_class' GROUP BY 1""", [run_id])
    assert len(per_value) == 3 and set(per_value["k"]) == {3}  # --samples 3, K = 3
    assert store.manifest(run_id).config["score_options"]["judge_repeats"] == 3


def test_run_refuses_a_bad_k_and_a_k_on_resume_in_one_line(tmp_path):
    """An EvalcoreError is what `evalcore` (cli.main.main) prints as one `error:` line, exit 2."""
    base = ["--store", str(tmp_path / "runs"), "run"]
    res = CliRunner().invoke(app, [*base, "--target", "http://127.0.0.1:9", "--dataset", "x.yaml", "--repeats", "0"])
    assert isinstance(res.exception, EvalcoreError) and "from 1 to 50, got 0" in str(res.exception)
    assert "--repeats" in str(res.exception)
    res = CliRunner().invoke(app, [*base, "--resume", "latest", "--repeats", "3"])
    assert isinstance(res.exception, EvalcoreError)
    assert "--repeats is kept from the run's start when resuming" in str(res.exception)


def test_run_repeats_joins_the_configs_scoring_options(tmp_path, monkeypatch):
    """`run --config C --repeats K`: K joins the config's other score_options (and wins over its
    judge_repeats), as the run's scoring reads them; caught before anything is asked."""
    import evalcore.pipeline as pipeline

    seen = []

    def capture(cfg, store, **how):
        seen.append(cfg)
        raise EvalcoreError("stop here")

    monkeypatch.setattr(pipeline, "run_evaluation", capture)
    config = tmp_path / "eval.yaml"
    config.write_text("target: http://127.0.0.1:9\ndataset: q.yaml\n"
                      "score_options: {judge_repeats: 2, weights: {accuracy: 1.0}}\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["--store", str(tmp_path / "runs"), "run", "--config", str(config), "--repeats", "4"])
    assert str(res.exception) == "stop here"
    assert seen[0].score_options == {"judge_repeats": 4, "weights": {"accuracy": 1.0}}
