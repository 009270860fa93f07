"""One CLI vocabulary (issue 26, item 6): `-m` and `--metrics`, `--groups`, `--options-file`,
`--engine` mean the same in every command; old spellings still work for a release with one
deprecation line on stderr; run and score choose the same default metrics; commands register
lazily, so a command's --help imports neither the store nor pandas."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from evalcore.cli import main
from evalcore.cli.main import COMMANDS, app, commands_of
from evalcore.demo import questions_path
from evalcore.store import query_df

runner = CliRunner()


def _cli(store, *args):
    return runner.invoke(app, ["--store", str(store.root), *args])


def _collect(store, url, *args, methods=("--methods", "basic_search")):
    res = _cli(store, "run", "--target", url, "--dataset", str(questions_path()), "--samples", "3",
               *methods, "--no-progress", *args)
    assert res.exit_code == 0, res.output
    return res.stdout.strip().splitlines()[-1], res


def _scored(store, run_id):
    return set(query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id])["metric"])


def _option(command: str, name: str):
    cmd = commands_of(COMMANDS[command])[command]
    return next(p for p in cmd.params if name in p.opts or name in p.secondary_opts)


@pytest.mark.parametrize("command", ["score", "compare", "rejudge", "trec"])
def test_dash_m_means_metrics_wherever_metrics_are_chosen(command):
    assert _option(command, "-m").opts[0] == "--metrics"


def test_run_and_score_share_groups_and_engine():
    for command in ("run", "score"):
        assert "--groups" in _option(command, "--groups").opts
        assert _option(command, "--group").hidden  # the old spelling, still accepted
    for command in ("run", "score"):
        assert "--engine <local|ray>" in runner.invoke(app, [command, "--help"]).output, command
    assert _option("score", "--options-file").opts == ["--options-file"] and _option("score", "--options").hidden


def test_old_spellings_work_with_a_deprecation_line(demo_server, store, tmp_path):
    run_id, res = _collect(store, demo_server.url, "--no-score")
    options = tmp_path / "options.yaml"
    options.write_text("dont_know_phrases: {en: [no idea]}\n", encoding="utf-8")
    old = _cli(store, "score", run_id, "--group", "abstention", "--options", str(options), "--no-progress")
    assert old.exit_code == 0, old.output
    assert "warning: --group is deprecated and goes in the next release; use --groups" in old.stderr
    assert "warning: --options is deprecated and goes in the next release; use --options-file" in old.stderr
    before = _scored(store, run_id)
    new = _cli(store, "score", run_id, "--groups", "abstention", "--options-file", str(options), "--no-progress")
    assert new.exit_code == 0 and "deprecated" not in new.stderr
    assert _scored(store, run_id) == before and "dont_know" in before

    both = _cli(store, "score", run_id, "--group", "lexical", "--groups", "lexical", "--no-progress")
    assert both.exit_code != 0 and "--group is the old spelling of --groups" in str(both.exception) + both.output

    _, res = _collect(store, demo_server.url, "--no-score", methods=("-m", "basic_search"))
    assert "warning: -m is deprecated" in res.stderr and "use --methods" in res.stderr


def test_score_m_and_engine_choice(demo_server, store):
    run_id, _ = _collect(store, demo_server.url, "--no-score")
    assert _cli(store, "score", run_id, "-m", "token_f1", "--engine", "local", "--no-progress").exit_code == 0
    assert _scored(store, run_id) == {"token_f1"}
    bad = _cli(store, "score", run_id, "--engine", "spark", "--no-progress")
    assert bad.exit_code == 2 and "'spark' is not one of 'local', 'ray'" in bad.output


def test_run_and_score_choose_the_same_default_metrics(demo_server, store):
    scored_by_run, _ = _collect(store, demo_server.url)
    collected, _ = _collect(store, demo_server.url, "--no-score")
    assert _cli(store, "score", collected, "--no-progress").exit_code == 0
    assert _scored(store, scored_by_run) == _scored(store, collected) != set()


def test_every_command_module_registers_the_commands_named_for_it():
    for loader in dict.fromkeys(COMMANDS.values()):
        named = {name for name, other in COMMANDS.items() if other is loader}
        assert set(commands_of(loader)) == named, loader.__name__


def test_the_root_help_lists_every_command_in_order():
    out = runner.invoke(app, ["--help"]).output
    listed = [line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == list(COMMANDS)


def test_a_commands_help_imports_neither_the_store_nor_pandas():
    code = ("import sys; sys.argv = ['evalcore', 'runs', '--help']\n"
            "import evalcore.cli.main as m\n"
            "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
            "heavy = [n for n in ('evalcore.store', 'pandas', 'duckdb', 'evalcore.cli.score_commands') "
            "if n in sys.modules]\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "List the runs in the store" in out
    assert "HEAVY []" in out, out.splitlines()[-1]


def test_a_new_command_module_needs_only_its_loader_and_names(monkeypatch):
    """How a command is added: a module with register(app), and its names in COMMANDS."""
    import types

    module = types.SimpleNamespace(register=lambda a: a.command("hello")(lambda: typer.echo("hi")))
    monkeypatch.setitem(COMMANDS, "hello", lambda: module)
    group = typer.main.get_command(main.app)
    assert "hello" in group.list_commands(None)
    assert runner.invoke(main.app, ["hello"]).output == "hi\n"
