"""A flag value a settings model refuses is one `error:` line naming the flag, exit 2 (issue 34,
item 3, round 4).

`evalcore run --max-response-mb 0` (also -1, nan, inf, 1e300; --timeout 0 / nan; --concurrency
0; --top-k 0) printed "unexpected ValidationError" with pydantic's multi-clause text and a
link, exit 1, while the same values in a config file were a clean exit 2. One mechanism
(evalcore/cli/flag_errors.py, applied to every command where the CLI looks commands up) maps the
refused value back to its flag. With --config, a flag's bad value names the flag, not the file;
`run --resume RUN --concurrency 0` used to go on unvalidated.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from evalcore.cli.main import COMMANDS, app, commands_of
from evalcore.errors import EvalcoreError

runner = CliRunner()
RUN_CASES = [("--max-response-mb", v) for v in ("0", "-1", "nan", "inf", "1e300", "-inf")] + [
    ("--timeout", "0"), ("--timeout", "nan"), ("--timeout", "-3"), ("--concurrency", "0"), ("--concurrency", "100000"),
    ("--top-k", "0"), ("--top-k", "5000"), ("--samples", "0"), ("--retries", "-1"), ("--retries", "99")]


def _one_flag_line(res, flag: str) -> str:
    assert isinstance(res.exception, EvalcoreError), (res.exception, res.output)
    text = str(res.exception)
    assert len(text.splitlines()) == 1 and text.startswith(flag + " "), text
    assert "pydantic" not in text and "validation error" not in text.lower(), text
    return text


@pytest.fixture
def questions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "question": "Who ruled Normandy?"}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("flag,value", RUN_CASES)
def test_a_run_flag_out_of_range_names_the_flag(tmp_path, questions, flag, value):
    res = runner.invoke(app, ["--store", str(tmp_path / "runs"), "run", "--target", "http://127.0.0.1:9",
                              "--dataset", str(questions), flag, value])
    _one_flag_line(res, flag)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # nothing asked, nothing stored


@pytest.mark.parametrize("args,flag", [(["--methods", "a,a"], "--methods"), (["--datasets", " , "], "--datasets")])
def test_a_rule_over_several_flags_names_them(tmp_path, questions, args, flag):
    """A rule of the whole model (unique method names; some questions) names the flags it read."""
    base = ["--dataset", str(questions)] if flag != "--datasets" else []
    res = runner.invoke(app, ["--store", str(tmp_path / "runs"), "run", "--target", "http://127.0.0.1:9", *base, *args])
    assert isinstance(res.exception, EvalcoreError), (res.exception, res.output)
    text = str(res.exception)
    assert len(text.splitlines()) == 1 and text.startswith("--target / ") and flag in text.split(":")[0], text


@pytest.mark.parametrize("flag,value", [("--timeout", "0"), ("--max-response-mb", "nan"), ("--top-k", "0")])
def test_with_a_config_file_the_flag_is_named_not_the_file(tmp_path, questions, flag, value):
    config = tmp_path / "eval.yaml"
    config.write_text(f"target: http://127.0.0.1:9\ndataset: {questions}\ntimeout: 30\n", encoding="utf-8")
    res = runner.invoke(app, ["--store", str(tmp_path / "runs"), "run", "--config", str(config), flag, value])
    assert str(config) not in _one_flag_line(res, flag)
    bad = tmp_path / "bad.yaml"  # and a bad value in the file still names the file
    bad.write_text(f"target: http://127.0.0.1:9\ndataset: {questions}\ntimeout: 0\n", encoding="utf-8")
    res = runner.invoke(app, ["--store", str(tmp_path / "runs"), "run", "--config", str(bad)])
    assert isinstance(res.exception, EvalcoreError) and str(bad) in str(res.exception) and "timeout" in str(res.exception)


@pytest.mark.parametrize("flag,value", [("--concurrency", "0"), ("--timeout", "nan"), ("--max-response-mb", "0"),
                                        ("--retries", "-1")])
def test_resume_validates_its_flags(tmp_path, flag, value):
    """A live run resumed with a bad setting is refused before anything is opened or asked."""
    from evalcore import __version__
    from evalcore.runner.config import EvalConfig
    from evalcore.schemas import RunManifest
    from evalcore.store import FORMAT_VERSION, RunStore, new_run_id

    store = RunStore(tmp_path / "runs")
    config = EvalConfig(target="http://127.0.0.1:9", dataset=str(tmp_path / "q.jsonl"))
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=new_run_id("live"), name="live", kind="live",
                           status="cancelled", evalcore_version=__version__, methods=["default"],
                           config=config.snapshot(), counts={"questions": 0, "responses": 0, "errors": 0})
    with store.staged_run(manifest) as writer:
        writer.write_manifest(manifest)
    res = runner.invoke(app, ["--store", str(store.root), "run", "--resume", manifest.run_id, flag, value])
    _one_flag_line(res, flag)


def test_the_real_command_exits_2_with_one_line(tmp_path, questions):
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "run",
                           "--target", "http://127.0.0.1:9", "--dataset", str(questions), "--max-response-mb", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["error: --max-response-mb 0.0: should be greater than 0"], proc.stderr


def test_every_command_is_guarded():
    """The mapping is applied to every command and subcommand the CLI can look up, so a flag
    a command starts feeding to a model tomorrow is covered the day it is added."""
    from typer.main import get_group

    group = get_group(app)
    ctx = typer.Context(group)
    names = list(dict.fromkeys(n for loader in dict.fromkeys(COMMANDS.values()) for n in commands_of(loader)))
    seen = 0
    for name in names:
        stack = [group.get_command(ctx, name)]
        while stack:
            command = stack.pop()
            stack.extend((getattr(command, "commands", None) or {}).values())
            if command.callback is not None:
                assert getattr(command.callback, "_evalcore_flag_errors", False), name
                seen += 1
    assert seen >= len(names)


class _Settings(BaseModel):
    size: int = Field(ge=1)
    ratio: float = Field(gt=0, lt=1)


def test_the_mapping_names_the_flag_by_field_or_by_value():
    """A command of any module: --size feeds the field `size` (named by path); --share feeds
    `ratio` (another name: found by its value); an error no flag explains stays as it was."""
    from pydantic import ValidationError

    from evalcore.cli.flag_errors import guard_flags

    toy = typer.Typer()

    @toy.command()
    def make(size: int = typer.Option(1, "--size"), share: float = typer.Option(0.5, "--share"),
             other: int = typer.Option(0, "--other")) -> None:
        _Settings(size=size, ratio=share if other == 0 else 0.5)
        if other:
            _Settings(size=-other, ratio=0.5)  # no flag holds -other: not the flags' fault

    command = guard_flags(typer.main.get_command(toy))
    with pytest.raises(EvalcoreError) as caught:
        command.main(["--size", "0"], standalone_mode=False)
    assert str(caught.value) == "--size 0: should be greater than or equal to 1"
    with pytest.raises(EvalcoreError) as caught:
        command.main(["--share", "2"], standalone_mode=False)
    assert str(caught.value) == "--share 2.0: should be less than 1"
    with pytest.raises(ValidationError):
        command.main(["--other", "3"], standalone_mode=False)
