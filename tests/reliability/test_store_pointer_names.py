"""Every name a run's pointer holds is one evalcore itself writes, for the table its key names
(issue 34, items 1 and 4; the hostile tester's F7 and F8).

- A name longer than evalcore writes (a 300-letter `retired` entry once ended `store check` as
  "0 damaged" and every later `score` as "unexpected OSError: File name too long"), with
  characters evalcore never writes, or under a key that is not a table, makes the run damaged:
  `store check` names the entry, `runs` lists the run apart, `show` and writers refuse it in
  one line, and nothing in the store changes.
- `files.questions` naming the run's responses file (once "15 validation errors for
  EvalQuestion") is damage the same way, and so is a `files`, `rows` or `replaced` key that is
  not a table, or a `previous` / `retired` / `absorbed` entry of an unknown table.
- The name is no proof: a file of another table under the right name (its columns say so) is
  the same damage, `store repair` skips it, and a part file of another table is set aside in
  quarantine/ rather than merged into the wrong table.
- What evalcore writes always passes: a compaction never absorbs a part file named otherwise
  (it stays, listed as a stray), and `store repair` never puts a name it would refuse into the
  pointer it rebuilds.
- On object storage the same rules hold, and a key longer than S3 takes is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.store import RunStore
from evalcore.store import safe_paths
from evalcore.store.layout import RunDamaged
from tests.store_trees import is_listing_cache

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _main(root, *args) -> subprocess.CompletedProcess:
    """The real console entry point (its one-line error handling), in a child process (one test
    here; the others call the same entry point in this process through the `console` fixture)."""
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, "--store", str(root), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not is_listing_cache(p, folder)}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("template") / "runs"
    res = _cli(root, "import", "--example")
    assert res.exit_code == 0, res.output
    return root


@pytest.fixture
def store(template, tmp_path) -> RunStore:
    root = tmp_path / "runs"
    shutil.copytree(template, root, symlinks=True)
    return RunStore(root)


def _run(store: RunStore) -> tuple[str, Path]:
    (run_id,) = store.run_ids()
    return run_id, store.run_dir(run_id)


def _edit_pointer(run_dir: Path, edit) -> None:
    path = run_dir / "tables.json"
    pointer = json.loads(path.read_text())
    edit(pointer)
    path.write_text(json.dumps(pointer))


def _file_of(pointer: dict, table: str) -> str:
    return pointer["files"][table]


def test_cli_a_retired_name_longer_than_evalcore_writes_is_damage_and_score_refuses_in_one_line(store, console):
    """The tester's case: `"retired": {"data/" + "a"*300: 0}`."""
    run_id, run_dir = _run(store)
    _edit_pointer(run_dir, lambda p: p["retired"].update({"data/" + "a" * 300: 0}))
    before = _tree(store.root)
    proc = console("--store", store.root, "score", run_id, "-m", "token_f1", "--no-progress")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"run {run_id} is damaged" in lines[0], lines
    assert "'retired' entry 'data/aaaa" in lines[0] and "OSError" not in lines[0] and len(lines[0]) < 600
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1 and f"DAMAGED {run_id}:" in res.output and "'retired' entry" in res.output
    assert "1 damaged" in res.output
    assert _tree(store.root) == before


LONG = [  # every key, each bound: segment, whole path, tag, generation, part name, characters
    ("retired", lambda p: p["retired"].update({"data/questions-g1-" + "0" * 300 + ".parquet": 0})),
    ("retired", lambda p: p["retired"].update({"data/questions-g1-" + "0" * 40 + ".parquet": 0})),
    ("retired", lambda p: p["retired"].update({"metrics/part-" + "x" * 200 + ".parquet": 0})),
    ("retired", lambda p: p["retired"].update({"data/" + "a/" * 600 + "x.parquet": 0})),
    ("absorbed", lambda p: p.update(absorbed=["parts/metrics/" + "p" * 300 + ".parquet"])),
    ("absorbed", lambda p: p.update(absorbed=["parts/metrics/part-é.parquet"])),
    ("absorbed", lambda p: p.update(absorbed=["parts/metrics/part x.parquet"])),
    ("previous", lambda p: p.update(previous=["data/questions-g" + "9" * 40 + "-ab.parquet"])),
    ("files", lambda p: p["files"].update(questions="data/questions-g" + "9" * 13 + "-ab.parquet")),
    ("files", lambda p: p["files"].update(questions="data/questions-g1-abcdéf.parquet")),
    ("generation", lambda p: p.update(generation=10 ** 13)),
]


@pytest.mark.parametrize("key,edit", LONG, ids=[f"{k}-{i}" for i, (k, _) in enumerate(LONG)])
def test_every_pointer_name_is_bounded_and_plain(store, key, edit):
    run_id, run_dir = _run(store)
    _edit_pointer(run_dir, edit)
    before = _tree(store.root)
    _assert_damaged(store, run_id, f"'{key}'")
    assert _tree(store.root) == before


def _assert_damaged(store: RunStore, run_id: str, needle: str) -> None:
    """Damage as every reader and writer says it: named by check, listed by runs, refused in one
    line by show and by a writer."""
    with pytest.raises(RunDamaged, match=needle) as err:
        store.open_run(run_id)
    assert "\n" not in str(err.value) and len(str(err.value)) < 600
    (check,) = store.check([run_id])
    assert check.damaged and needle in check.damage[0], check.damage
    res = _cli(store.root, "runs")
    assert f"damaged run {run_id}" in res.output and needle in res.output, res.output
    res = _cli(store.root, "show", run_id)
    assert isinstance(res.exception, StoreError) and needle in str(res.exception), (res.exception, res.output)


WRONG_TABLE = [
    ("files", lambda p: p["files"].update(questions=_file_of(p, "responses"))),
    ("files", lambda p: p["files"].update(summary_metrics=_file_of(p, "metric_wide"))),
    ("files", lambda p: p["files"].update({"../../evil": _file_of(p, "questions")})),
    ("files", lambda p: p["files"].update(evil="data/evil-g1-ab.parquet")),
    ("files", lambda p: p["files"].update(questions="data/.questions-g1-ab.parquet.tmp")),
    ("files", lambda p: p["files"].update(questions="data/questions-g1-ab.parquet.tmp")),
    ("files", lambda p: p["files"].update(questions="parts/questions/part-1.parquet")),
    ("previous", lambda p: p.update(previous=["data/evil-g1-ab.parquet"])),
    ("retired", lambda p: p["retired"].update({"data/evil-g1-ab.parquet": 0})),
    ("retired", lambda p: p["retired"].update({"evil/part-1.parquet": 0})),
    ("absorbed", lambda p: p.update(absorbed=["parts/metrics/.part-1.parquet"])),
    ("absorbed", lambda p: p.update(absorbed=["parts/summary_metrics/part-1.parquet"])),
    ("rows", lambda p: p["rows"].update({"../../evil": 1})),
    ("replaced", lambda p: p["replaced"].update({"summary_metrics": 0})),
]


@pytest.mark.parametrize("key,edit", WRONG_TABLE, ids=[f"{k}-{i}" for i, (k, _) in enumerate(WRONG_TABLE)])
def test_a_pointer_entry_of_another_or_an_unknown_table_is_damage(store, key, edit):
    run_id, run_dir = _run(store)
    _edit_pointer(run_dir, edit)
    before = _tree(store.root)
    _assert_damaged(store, run_id, f"'{key}'")
    assert _tree(store.root) == before


def test_cli_files_naming_another_tables_file_is_refused_in_one_line_by_score_and_show(store):
    """The tester's case: `files.questions` set to the run's responses file; `score` once ended in
    "unexpected ValidationError: 15 validation errors for EvalQuestion"."""
    run_id, run_dir = _run(store)
    _edit_pointer(run_dir, lambda p: p["files"].update(questions=_file_of(p, "responses")))
    proc = _main(store.root, "score", run_id, "-m", "token_f1", "--no-progress")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "'files' entry 'questions'" in lines[0] and "of table 'responses'" in lines[0], lines
    assert "ValidationError" not in proc.stderr
    res = _cli(store.root, "show", run_id)
    assert isinstance(res.exception, StoreError) and "'files' entry 'questions'" in str(res.exception)


def _lookalike(run_dir: Path, table: str, source: str) -> str:
    """A file named as `table`'s that holds `source`'s rows (or, for "bare", only run ids)."""
    data = run_dir / "data"
    rel = f"data/{table}-g1-0badc0de.parquet"
    if source == "bare":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"run_id": [run_dir.name]}), data / f"{table}-g1-0badc0de.parquet")
    else:
        shutil.copy(next(data.glob(f"{source}-g*")), run_dir / rel)
    return rel


@pytest.mark.parametrize("table,source", [("questions", "responses"), ("responses", "questions"),
                                          ("questions", "bare")])
def test_a_file_of_another_table_under_its_name_is_damage_and_repair_skips_it(store, table, source):
    """The name is no proof: a responses file copied to `data/questions-g1-....parquet` and named
    by `files.questions` would end `score` in validation errors, and a compaction would merge
    its rows into the questions."""
    run_id, run_dir = _run(store)
    rel = _lookalike(run_dir, table, source)
    _edit_pointer(run_dir, lambda p: p["files"].update({table: rel}))
    before = _tree(store.root)
    _assert_damaged(store, run_id, f"it is not a {table} file")
    res = _cli(store.root, "score", run_id, "-m", "token_f1", "--no-progress")
    assert isinstance(res.exception, StoreError) and f"{rel}: it is not a {table} file" in str(res.exception)
    assert "\n" not in str(res.exception) and _tree(store.root) == before
    report = store.repair(run_id)
    assert any(s.startswith(f"{rel}: it is not a {table} file") for s in report.skipped), report.skipped
    assert report.chosen[table] != rel and (run_dir / rel).exists()
    (check,) = store.check([run_id])
    assert not check.damaged, check.damage
    assert _cli(store.root, "score", run_id, "-m", "token_f1", "--no-progress").exit_code == 0


def test_a_part_file_of_another_table_is_set_aside_never_merged(store):
    run_id, run_dir = _run(store)
    part = run_dir / "parts" / "questions" / "part-20260101T000000000000-0badc0de.parquet"
    part.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(next((run_dir / "data").glob("responses-g*")), part)
    (check,) = store.check([run_id])
    assert any(s.startswith(f"parts/questions/{part.name}: it is not a questions file")
               for s in check.strays), check.strays
    questions = json.loads((run_dir / "tables.json").read_text())["files"]["questions"]
    store.open_run(run_id).publish()
    assert not part.exists() and (run_dir / "quarantine" / "parts" / "questions" / part.name).exists()
    assert json.loads((run_dir / "tables.json").read_text())["files"]["questions"] == questions  # nothing merged
    (check,) = store.check([run_id])
    assert not check.damaged, check.damage


def test_what_evalcore_writes_always_passes(store):
    """A compaction never absorbs a part named unlike a part file (kept, listed as a stray), and
    repair never rebuilds a pointer it would refuse from odd files in data/."""
    run_id, run_dir = _run(store)
    odd_part = run_dir / "parts" / "metrics" / "part x (conflicted copy).parquet"
    odd_part.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(next((run_dir / "data").glob("questions-*")), odd_part)
    writer = store.open_run(run_id)
    writer.publish()
    assert odd_part.exists()
    (check,) = store.check([run_id])
    assert not check.damaged and any("part x (conflicted copy).parquet: not named like a part file" in s
                                     for s in check.strays), check.strays
    data = run_dir / "data"
    for name in ("evil-g1-abcd.parquet", "questions-g1-abcd.parquet.tmp", f"questions-g{10 ** 12}-ab.parquet"):
        shutil.copy(next(data.glob("questions-*")), data / name)
    (run_dir / "tables.json").unlink()
    report = store.repair(run_id)
    assert report.needed and report.chosen["questions"].startswith("data/questions-g1-")
    skipped = " ".join(report.skipped)
    assert all(name in skipped for name in ("evil-g1", "abcd.parquet.tmp", f"g{10 ** 12}-"))
    (check,) = store.check([run_id])
    assert not check.damaged, check.damage
    store.open_run(run_id).publish()


def test_the_one_check_refuses_names_and_paths_too_long_for_the_file_system(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    for bad in (root / ("a" * 256), root / "d" / ("é" * 128), root.joinpath(*["d" * 200] * 21)):
        with pytest.raises(safe_paths.OutsideStore) as err:
            safe_paths.inside(root, bad)
        assert "\n" not in str(err.value) and len(str(err.value)) < 6000
    assert safe_paths.inside(root, root / ("a" * 255)) == root / ("a" * 255)


# ---- object storage -------------------------------------------------------------------------
def test_s3_pointer_names_are_bounded_and_of_their_table(s3_store):
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    from evalcore.store import FORMAT_VERSION, s3

    writer = s3_store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="r1",
                                             evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id="q1", question="Q?")])
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="x")])
    writer.publish()
    run_dir = s3_store.run_dir("r1")
    good = json.loads((run_dir / "tables.json").read_bytes())
    for key, entries in (("retired", {"data/" + "a" * 1100: 0}),
                         ("files", {**good["files"], "questions": good["files"]["responses"]})):
        (run_dir / "tables.json").write_bytes(json.dumps(good | {key: entries}).encode())
        with pytest.raises(RunDamaged, match=f"'{key}'"):
            s3_store.open_run("r1")
        (check,) = s3_store.check(["r1"])
        assert check.damaged and f"'{key}'" in check.damage[0]
    (run_dir / "tables.json").write_bytes(json.dumps(good).encode())
    with pytest.raises(safe_paths.OutsideStore, match="1024"):
        safe_paths.inside(s3_store.root, s3_store.root / "r1" / "data" / "/".join(["é" * 125] * 5))
    # a listing holding keys with `..` and longer than evalcore writes: never absorbed, never deleted
    fs, bucket = s3.filesystem(), s3_store.root.bucket
    odd = [f"{bucket}/runs/r1/parts/metrics/../../../victim.parquet", f"{bucket}/runs/r1/parts/metrics/" + "p" * 200
           + ".parquet"]
    for key in odd:
        fs.pipe(key, b"precious")
    s3_store.open_run("r1").publish()
    for key in odd:
        assert fs.cat(key) == b"precious"
    (check,) = s3_store.check(["r1"])
    assert not check.damaged, check.damage
