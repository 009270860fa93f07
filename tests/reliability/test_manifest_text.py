"""A run.json whose text UTF-8 cannot hold (a lone surrogate, NUL: JSON spells both as escapes),
or that is not a JSON object, must not take the whole store down.

Found by a hostile review: a manifest name holding `\\ud800` made `evalcore runs` (and every
reader of the store's views) fail with DuckDB's "cannot encode str as UTF-8"; a manifest that
was a JSON list crashed on `.get`. The text is repaired on read as imports repair it (U+FFFD,
and a note naming the fields); a manifest that is not an object is an unreadable run, named.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from evalcore.store import RunStore


def _cli(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(root), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("manifest-text")
    answers = tmp / "a.jsonl"
    answers.write_text(json.dumps({"question_id": "q1", "method": "m", "question": "Q?", "answer": "A",
                                   "contexts": ["c"]}) + "\n")
    root = tmp / "runs"
    for name in ("first", "second"):
        assert _cli(root, "import", str(answers), "--name", name).returncode == 0
    return root


@pytest.fixture
def two_runs(base, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(base, root)
    store = RunStore(root)
    runs = {store.manifest(r).name: r for r in store.run_ids()}
    return root, runs["first"], runs["second"]


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\u0000", "\\ud83d"])
def test_unstorable_text_in_a_manifest_is_repaired_on_read(two_runs, escape):
    root, bad, good = two_runs
    path = root / bad / "run.json"
    path.write_text(path.read_text().replace('"first"', f'"fi{escape}rst"'))
    done = _cli(root, "runs", "--json")
    assert done.returncode == 0, done.stderr
    listed = {row["run_id"]: row for row in json.loads(done.stdout)}
    assert listed[bad]["name"] == "fi\ufffdrst" and listed[good]["name"] == "second"
    manifest = RunStore(root).manifest(bad)
    assert manifest.name == "fi\ufffdrst"
    assert any("run.json" in note and "U+FFFD" in note and "name" in note for note in manifest.notes)
    if escape == "\\ud800":
        assert _cli(root, "show", bad).returncode == 0


def test_a_valid_surrogate_pair_is_text_not_damage(two_runs):
    root, bad, _ = two_runs
    path = root / bad / "run.json"
    path.write_text(path.read_text().replace('"first"', '"fi\\ud83d\\ude00rst"'))
    manifest = RunStore(root).manifest(bad)
    assert manifest.name == "fi\U0001F600rst" and not any("U+FFFD" in n for n in manifest.notes)


@pytest.mark.parametrize("body", ["[]", "[1, 2]", '"text"', "3"])
def test_a_manifest_that_is_not_an_object_is_an_unreadable_run(two_runs, body):
    root, bad, good = two_runs
    (root / bad / "run.json").write_text(body)
    done = _cli(root, "runs", "--json")
    assert done.returncode == 0, done.stderr
    assert [row["run_id"] for row in json.loads(done.stdout)] == [good]
    assert "run.json" in done.stderr and "not an object" in done.stderr, done.stderr


def _with_config(path, config_text: str) -> None:
    data = json.loads(path.read_text())
    data.pop("config", None)
    text = json.dumps(data)
    path.write_text(text[:-1] + ', "config": ' + config_text + "}")


@pytest.mark.parametrize("lists", [252, 253, 400, 5000])
def test_a_manifest_nested_deeper_than_evalcore_writes_is_an_unreadable_run(two_runs, lists):
    """As deep as pydantic can write (a list 252 deep in `config`: 254 levels) is read; deeper
    is a run listed apart, never a failure of the whole listing (it was: a serialisation error
    from 253 lists, a RecursionError from ~990)."""
    root, bad, good = two_runs
    _with_config(root / bad / "run.json", '{"x": ' + "[" * lists + "]" * lists + "}")
    done = _cli(root, "runs", "--json")
    assert done.returncode == 0, done.stderr
    listed = [row["run_id"] for row in json.loads(done.stdout)]
    if lists <= 252:
        assert sorted(listed) == sorted([bad, good]), done.stderr
    else:
        assert listed == [good] and "nested" in done.stderr, done.stderr


def test_repair_makes_no_invalid_manifest_valid_and_loses_no_key(two_runs):
    root, bad, _ = two_runs
    path = root / bad / "run.json"
    _with_config(path, '{"k\\ud800": "one", "k\\udfff": "two", "k\\ufffd": "three"}')
    config = RunStore(root).manifest(bad).config
    assert config == {"k\ufffd (2)": "one", "k\ufffd (3)": "two", "k\ufffd": "three"}
    data = json.loads(path.read_text())
    data["notes"] = "not a list"
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="notes"):  # still what it was without the surrogate: invalid
        RunStore(root).manifest(bad)
