"""YAML aliases are refused wherever evalcore reads YAML (evalcore/common/safe_yaml.py).

Before: a question file whose anchor refers to itself ended in RecursionError, nine levels
of nine aliases ran for minutes, and a 1 MB file of aliased long strings grew to 19 GB. Now
each is a one-line InputError naming the file and the line of the first alias, before any
expansion. The CLI check runs in a subprocess with a generous ceiling, so a regression fails
instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalcore.runner.config import load_config
from evalcore.datasets.registry import load_questions
from evalcore.errors import EvalcoreError, InputError
from evalcore.common.safe_yaml import MAX_DEPTH, loads

ROOT = Path(__file__).resolve().parents[2]


def _self_reference() -> str:
    return "- &q\n  id: q1\n  question: hi\n  metadata: *q\n"


def _laughs(levels: int = 9) -> str:
    lines = ['    l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "- id: q1\n  question: hi\n  metadata:\n" + "\n".join(lines) + "\n"


def _aliased_strings(size: int = 1_000_000) -> str:
    head = "- id: q0\n  question: &s '" + "x" * 10_000 + "'\n"
    row = "- id: q{n}\n  question: hi\n  metadata: {{copies: [" + ", ".join(["*s"] * 400) + "]}}\n"
    parts, n, total = [head], 0, len(head)
    while total < size:
        n += 1
        parts.append(row.format(n=n))
        total += len(parts[-1])
    return "".join(parts)


HOSTILE = {"self_reference": _self_reference, "laughs": _laughs, "aliased_strings": _aliased_strings}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_question_file_with_aliases_is_a_clear_error(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(HOSTILE[name]())
    with pytest.raises(InputError) as err:
        load_questions(path)
    assert err.value.file == str(path)
    assert "aliases are not accepted" in str(err.value) and "line " in str(err.value)


def test_the_cli_refuses_an_alias_bomb_at_once(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(_laughs())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "evalcore", "stats", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)  # a ceiling against a hang, not a benchmark
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and str(path) in lines[0] and "*l0" in lines[0], done.stderr


def test_config_file_with_an_alias_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("target: &t http://127.0.0.1:1\nname: *t\n")
    with pytest.raises(InputError, match="config.yaml.*aliases are not accepted"):
        load_config(path)


def test_price_table_with_an_alias_is_refused(tmp_path, monkeypatch):
    from evalcore.judges.pricing import load_prices

    table = tmp_path / "prices.yaml"
    table.write_text("a: &p {input: 1, output: 2}\nb: *p\n")
    monkeypatch.setenv("EVALCORE_PRICES", str(table))
    with pytest.raises(EvalcoreError, match="aliases are not accepted"):
        load_prices()


def test_anchors_alone_and_plain_yaml_still_load():
    assert loads("a: &x 1\nb: 2\n") == {"a": 1, "b": 2}
    text = "- id: q1\n  question: 'a: b'\n  tags: [x, y]\n  metadata: {k: [1, 2.5, null, true]}\n"
    assert loads(text) == yaml.safe_load(text)


def test_deep_nesting_is_refused_before_it_reaches_the_composer():
    """Our scan stops at MAX_DEPTH; newer libyaml (PyYAML 6.0.4) may refuse first with a limit
    of its own. Either way it is a YAMLError whose words are ours, not the library's."""
    for levels in (MAX_DEPTH + 1, 200_000):
        with pytest.raises(yaml.YAMLError, match="nested too deeply"):
            loads("[" * levels)
    assert loads("[" * 50 + "]" * 50) is not None


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 200_000])
def test_deep_nesting_is_one_line_naming_the_file(tmp_path, levels):
    path = tmp_path / "deep.yaml"
    path.write_text("[" * levels)
    with pytest.raises(InputError) as err:
        load_questions(path)
    assert err.value.file == str(path) and "nested too deeply" in str(err.value)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "evalcore", "stats", str(path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.strip().splitlines()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert str(path) in lines[0] and "nested too deeply" in lines[0], done.stderr


def test_every_yaml_file_evalcore_ships_loads():
    shipped = sorted((ROOT / "evalcore").rglob("*.yaml"))
    assert shipped
    for path in shipped:
        loads(path.read_text(encoding="utf-8"))
