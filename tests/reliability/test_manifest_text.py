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


@pytest.mark.parametrize("lists", [253, 254, 400, 5000])
def test_a_manifest_nested_deeper_than_evalcore_writes_is_an_unreadable_run(two_runs, lists):
    """As deep as pydantic can write (252 lists around an empty one in `config`: 254 levels, an
    empty list being a value) is read; deeper is a run listed apart, never a failure of the whole
    listing (it was: a serialisation error from 253 lists, a RecursionError from ~990)."""
    root, bad, good = two_runs
    _with_config(root / bad / "run.json", '{"x": ' + "[" * lists + "]" * lists + "}")
    done = _cli(root, "runs", "--json")
    assert done.returncode == 0, done.stderr
    listed = [row["run_id"] for row in json.loads(done.stdout)]
    if lists <= 253:
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


@pytest.mark.parametrize("leaf", ["[]", "{}", "1"])
def test_every_manifest_evalcore_can_write_it_reads(tmp_path, leaf):
    """The reader's depth rule is the writer's: pydantic counts an empty list or object as a
    value, not a level (a run.json with 252 lists around `[]` was written, then refused)."""
    from evalcore.errors import StoreError
    from evalcore.schemas import RunManifest
    from evalcore.store import FORMAT_VERSION
    from evalcore.store.manifest_file import parse_manifest

    for lists in (250, 251, 252, 253):
        value = json.loads("[" * lists + leaf + "]" * lists)
        manifest = RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="n", evalcore_version="t",
                               config={"x": value})
        try:
            raw = manifest.model_dump_json().encode()
        except Exception:  # noqa: BLE001 - pydantic's own limit: nothing evalcore writes
            with pytest.raises(StoreError, match="nested"):
                parse_manifest(tmp_path / "run.json", json.dumps({**json.loads(
                    manifest.model_copy(update={"config": {}}).model_dump_json()), "config": {"x": value}}).encode())
            continue
        assert parse_manifest(tmp_path / "run.json", raw).config == {"x": value}


def test_a_target_whose_info_nests_deep_still_gets_its_run(tmp_path):
    """/models/info nested 251 deep once made `run` fail with an unexpected serialisation
    error; the run is made, with the info cut at 32 levels and a note saying so."""
    from .servers import ScriptedServer, ok_json, rag_answer

    deep = json.loads("[" * 251 + "1" + "]" * 251)
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"]),
                            on_get=lambda r: ok_json({"status": "ok"} if r["path"] == "/health" else {"llm": deep}))
    server.start()
    try:
        questions = tmp_path / "q.jsonl"
        questions.write_text(json.dumps({"id": "q1", "question": "one?"}) + "\n")
        root = tmp_path / "runs"
        done = _cli(root, "run", "--target", server.url, "--dataset", str(questions), "--no-score", "--no-progress")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    (run_id,) = RunStore(root).run_ids()
    manifest = RunStore(root).manifest(run_id)
    assert manifest.status == "complete"
    assert any("nested deeper than 32 levels" in note for note in manifest.notes), manifest.notes
