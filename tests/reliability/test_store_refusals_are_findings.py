"""Whatever a writer refuses, `store check` reports as damage, and `store repair` fixes or says
exactly what to do (round 3, R3-4; the F9 class; issue 34, promise 4).

A part file copied from another run into `parts/` made `score` refuse the run and point to
`store check`, which said "0 damaged", while `store repair` said "nothing to repair": the run
could never be written again. Writers' refusals and check's findings now come from one list
(evalcore/store/run_damage.py), and a pending part file a write cannot absorb is set aside by
the one test both the compaction and `store check` apply (quarantine.part_problem):

- a part file of another run (copied, its rows naming another run, with or without footer
  statistics), of another table, or not Parquet: `store check` lists it ("the next write sets
  it aside"), and the next write sets it aside in quarantine/ with one warning, never merging
  it; nothing of the run changes;
- every way a run is refused by a writer (a data file of another run, of another table, torn or
  with a corrupt page; a lost pointer; a link or a FIFO; a folder where a file belongs...):
  check names it, and repair either makes the run healthy and writable again or refuses in one
  line saying what to do, changing nothing; done, the run is healthy and writable again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, RunWriter, query_df
from evalcore.store.layout import RunDamaged
from tests.store_trees import is_listing_cache

runner = CliRunner()
PART = "part-20260101T000000000000-0badc0de.parquet"


def _value(run_id: str, i: int, value: float) -> MetricValue:
    return MetricValue(run_id=run_id, method="a", question_id=f"q{i}", metric="m", value=value, group="g")


def _build(store: RunStore, run_id: str) -> None:
    """A run of 3 answers scored twice (generation 2; generation 1's files still on disk)."""
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(3)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(3)])
    writer.write_metrics([_value(run_id, i, 0.25) for i in range(3)])
    writer.publish()
    writer.write_metrics([_value(run_id, i, 0.5) for i in range(3)])
    writer.publish()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("template") / "runs"
    store = RunStore(root)
    _build(store, "r1")
    _build(store, "r2")
    return root


@pytest.fixture
def store(template, tmp_path) -> RunStore:
    root = tmp_path / "runs"
    shutil.copytree(template, root)
    return RunStore(root)


def _cli(store: RunStore, *args: str):
    return runner.invoke(app, ["--store", str(store.root), *args])


def _file(store: RunStore, run_id: str, table: str) -> Path:
    rel = json.loads((store.run_dir(run_id) / "tables.json").read_text())["files"][table]
    return store.run_dir(run_id) / rel


def _numbers(store: RunStore) -> list:
    return query_df(store, "SELECT run_id, metric, n, mean FROM summary_metrics ORDER BY run_id").values.tolist()


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*")) if not is_listing_cache(p, folder)}


# ---- a part file a write cannot absorb: listed by check, set aside by the next write ----------
def _rows_of(store: RunStore, run_id: str, table: str, stats: bool = True, run_value: str | None = "zz") -> Path:
    """A part file of `table` in r1 whose rows name `run_value` (None: no run at all)."""
    rows = pq.read_table(_file(store, run_id, table))
    rows = rows.set_column(rows.schema.get_field_index("run_id"), "run_id",
                           pa.array([run_value] * rows.num_rows, pa.string()))
    part = store.run_dir("r1") / "parts" / table / PART
    part.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, part, write_statistics=stats)
    return part


PARTS = {
    "copied-from-another-run": (lambda s: shutil.copy(_file(s, "r2", "metrics"),
                                                      _place(s, "metrics")), "holds rows of run 'r2'"),
    "rows-naming-another-run": (lambda s: RunWriter("zz", s.run_dir("r1")).write_metrics(
        [_value("zz", 0, 0.9)]), "holds rows of run 'zz'"),
    "no-footer-statistics": (lambda s: _rows_of(s, "r1", "metrics", stats=False), "holds rows of run 'zz'"),
    "rows-naming-no-run": (lambda s: _rows_of(s, "r1", "questions", run_value=None), "holds rows of run 'None'"),
    "another-tables-columns": (lambda s: shutil.copy(_file(s, "r1", "responses"), _place(s, "questions")),
                               "it is not a questions file"),
    "not-parquet": (lambda s: _place(s, "metrics").write_bytes(b"PAR1 torn"), "unreadable part file"),
    "a-folder-named-like-a-part": (lambda s: (_place(s, "metrics") / "notes").mkdir(parents=True),
                                   "unreadable part file (it is a folder"),
}


def _place(store: RunStore, table: str) -> Path:
    path = store.run_dir("r1") / "parts" / table / PART
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("case", list(PARTS))
def test_a_part_file_a_write_cannot_absorb_is_listed_and_set_aside_never_merged(store, case, caplog):
    before = _numbers(store)
    make, reason = PARTS[case]
    make(store)
    (part,) = [p for p in (store.run_dir("r1") / "parts").rglob("*.parquet")]
    rel = part.relative_to(store.run_dir("r1")).as_posix()

    res = _cli(store, "store", "check", "r1")
    assert res.exit_code == 0 and "0 damaged" in res.output, res.output
    assert f"stray   r1/{rel}: " in res.output and reason in res.output, res.output
    assert "the next write to the run sets it aside in quarantine/" in res.output

    res = _cli(store, "score", "r1", "-m", "token_f1", "--no-progress")  # the write R3-4 found refused
    assert res.exit_code == 0, (res.exception, res.output)
    assert not part.exists() and (store.run_dir("r1") / "quarantine" / rel).exists()
    assert any("cannot absorb" in r.getMessage() and part.name in r.getMessage() for r in caplog.records)
    after = [row for row in _numbers(store) if row[1] == "m"]
    assert after == [row for row in before if row[1] == "m"], "nothing of it was merged"
    res = _cli(store, "store", "check", "r1")
    assert res.exit_code == 0 and "0 damaged" in res.output and "quarantine/" in res.output, res.output


def test_a_part_set_aside_under_a_name_set_aside_before_replaces_nothing(store):
    for value in (b"PAR1 first", b"PAR1 second"):
        _place(store, "metrics").write_bytes(value)
        store.open_run("r1").publish()
    kept = sorted(p.read_bytes() for p in (store.run_dir("r1") / "quarantine").rglob("part-*"))
    assert kept == [b"PAR1 first", b"PAR1 second"]


# ---- every writer refusal is a finding, and repair's way out leads to a healthy run ----------
def _corrupt_page(path: Path) -> None:
    """Garbage in the middle of the file: its footer still reads, its rows do not."""
    data = bytearray(path.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] = 0xA5
    path.write_bytes(bytes(data))


def _socket(path: Path) -> None:
    """A Unix socket bound at `path` (by its short name, from its folder) and closed."""
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(here)


def _replace_dir(path: Path, as_folder: bool) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if as_folder:
        (path / "something").mkdir(parents=True)
    else:
        path.write_text("not a folder")


REFUSED = {  # how the run is damaged; what check says; what a person does first (None: repair alone)
    "data-file-of-another-run": (lambda s: shutil.copy(_file(s, "r2", "metrics"), _file(s, "r1", "metrics")),
                                 "holds rows of run 'r2'", None),
    "data-file-of-another-table": (lambda s: shutil.copy(_file(s, "r1", "responses"), _file(s, "r1", "questions")),
                                   "it is not a questions file", None),
    "torn-data-file": (lambda s: _file(s, "r1", "metrics").write_bytes(b"PAR1 torn"), "is unreadable", None),
    "corrupt-page": (lambda s: _corrupt_page(_file(s, "r1", "responses")), "is unreadable", None),
    "lost-pointer": (lambda s: (s.run_dir("r1") / "tables.json").unlink(), "tables.json is missing", None),
    "socket-in-parts": (lambda s: _socket(_place(s, "metrics")), "is a socket", None),  # FIFOs: test_store_special_files
    "link-in-parts": (lambda s: _place(s, "metrics").symlink_to(_file(s, "r2", "metrics")), "is a symbolic link",
                      None),
    "pointer-a-folder": (lambda s: _replace_dir(s.run_dir("r1") / "tables.json", True),
                         "tables.json is a folder, not a file", "tables.json"),
    "lock-a-folder": (lambda s: _replace_dir(s.run_dir("r1") / ".compact.lock", True),
                      ".compact.lock is a folder, not a file", ".compact.lock"),
    "parts-table-a-file": (lambda s: _replace_dir(s.run_dir("r1") / "parts" / "metrics", False),
                           "parts/metrics is a file, not a folder", "parts/metrics"),
    "data-a-file": (lambda s: _replace_dir(s.run_dir("r1") / "data", False), "data is a file, not a folder", "data"),
    "run-json-not-json": (lambda s: (s.run_dir("r1") / "run.json").write_text("{torn"), "run.json is unreadable",
                          "run.json"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_a_writer_refuses_check_names_and_repair_fixes_or_says_what_to_do(store, tmp_path, case):
    make, said, by_hand = REFUSED[case]
    make(store)
    with pytest.raises(StoreError) as refused:  # every writer compacts the run first
        store.open_run("r1")
    assert "\n" not in str(refused.value)
    (check,) = store.check(["r1"])
    assert check.damaged and any(said in d for d in check.damage), (str(refused.value), check.damage)
    assert not store.check(["r2"])[0].damaged

    if by_hand is not None:  # repair cannot: one line saying what to do, nothing changed
        before = _tree(store.run_dir("r1"))
        res = _cli(store, "store", "repair", "r1")
        assert isinstance(res.exception, RunDamaged), (res.exception, res.output)
        assert said in str(res.exception) and "nothing was changed" in str(res.exception), str(res.exception)
        assert _tree(store.run_dir("r1")) == before
        if by_hand == "run.json":  # put a copy in its place, as it says (here: r2's, edited)
            data = json.loads((store.run_dir("r2") / "run.json").read_text()) | {"run_id": "r1", "name": "r1"}
            (store.run_dir("r1") / "run.json").write_text(json.dumps(data))
        else:  # move it out of the run folder, as it says
            shutil.move(store.run_dir("r1") / by_hand, tmp_path / "moved-out")
    res = _cli(store, "store", "repair", "r1")
    assert res.exit_code == 0, (res.exception, res.output)
    res = _cli(store, "store", "check", "r1")
    assert res.exit_code == 0 and "0 damaged" in res.output, res.output
    store.open_run("r1").publish()  # writable again


def test_a_row_count_check_reports_is_one_repair_rebuilds(store):
    """Not refused by writers (they need no count), but damage to check: repair must act on it."""
    pointer = json.loads((store.run_dir("r1") / "tables.json").read_text())
    pointer["rows"]["metrics"] = 999
    (store.run_dir("r1") / "tables.json").write_text(json.dumps(pointer))
    (check,) = store.check(["r1"])
    assert any("the pointer says 999" in d for d in check.damage), check.damage
    res = _cli(store, "store", "repair", "r1")
    assert res.exit_code == 0 and "rebuilt tables.json" in res.output, res.output
    assert not store.check(["r1"])[0].damaged
