"""A FIFO, a socket or a device node in place of one of the store's own files never hangs a
command nor reads without end (round 3, R3-3; issue 34, promises 1 and 2).

evalcore makes only folders and regular files in a store. A FIFO as `_shared/store.json` once
hung every command (opening a FIFO for reading blocks until someone writes), and `/dev/zero`'s
device node there made every command read until memory ran out; the same for a run's
`tables.json`, with `store check` hanging too. Now every file of the store is opened without
blocking and proven a regular file (evalcore/common/regular_files.py), small ones are read with a bound,
and pyarrow and DuckDB are never handed anything else:

- the store marker as one: every command says so in one line naming it (exit 2);
- anywhere in a run (pointer, manifest, data file, part file, lock file, quarantine, anywhere):
  the run is damaged; `store check` names it with its way out, readers list the run apart,
  writers refuse it in one line, and `store repair` removes it (it holds no data) after which
  the run is healthy and writable; as run.json, repair says what to do instead (no manifest to
  rebuild);
- a pointer or manifest larger than any evalcore writes is damage, never read whole;
- caches, job records and annotation files: never opened, a miss (or a damaged file listed).

Hang guard: a test whose code blocks on one of its FIFOs would hang for ever; `_rescued` gives
such a FIFO an end-of-file once the test has waited far longer than it ever needs, so a
regression fails instead of hanging. Nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import Annotation, EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df
from evalcore.store.layout import RunDamaged

runner = CliRunner()
KINDS = {"fifo": "a FIFO (named pipe)", "socket": "a socket", "device": "a character device"}


def _make(path: Path, kind: str) -> Path:
    """`path` replaced by a FIFO, a socket or /dev/zero's device node (skipped where the system
    does not let this process make one)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":  # bound by its short name from its folder (a socket's path is short)
        here = os.getcwd()
        os.chdir(path.parent)
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(path.name)
        finally:
            os.chdir(here)
    else:
        try:
            os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 5))
        except (PermissionError, OSError):
            pytest.skip("this process may not make a device node")
    return path


@contextmanager
def _rescued(root: Path) -> Iterator[None]:
    """The hang guard of the module docstring: every FIFO under `root` gets an end-of-file
    (opened for writing and closed) while the block runs, once it ran far longer than needed."""
    done = threading.Event()

    def rescue() -> None:
        if done.wait(120):
            return
        while not done.is_set():
            for base, _, files in os.walk(root):
                for name in files:
                    try:
                        os.close(os.open(os.path.join(base, name), os.O_WRONLY | os.O_NONBLOCK))
                    except OSError:
                        pass
            done.wait(0.2)

    helper = threading.Thread(target=rescue, daemon=True)
    helper.start()
    try:
        yield
    finally:
        done.set()
        helper.join()


def _kind(path: Path) -> str:
    try:
        return "file" if stat.S_ISREG(os.lstat(path).st_mode) else "other"
    except FileNotFoundError:
        return "absent"


def _cli(root: Path, *args: str):
    with _rescued(root):
        return runner.invoke(app, ["--store", str(root), *args])


def _value(run_id: str, i: int, value: float) -> MetricValue:
    return MetricValue(run_id=run_id, method="a", question_id=f"q{i}", metric="m", value=value, group="g")


def _build(store: RunStore, run_id: str) -> None:
    """A run of 3 answers scored twice (generation 2, the older one still on disk)."""
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


def _current(store: RunStore, run_id: str, table: str) -> str:
    return json.loads((store.run_dir(run_id) / "tables.json").read_text())["files"][table]


def _means(store: RunStore) -> dict:
    frame = query_df(store, "SELECT run_id, mean FROM summary_metrics ORDER BY run_id")
    return dict(zip(frame.run_id, frame["mean"]))


# ---- the store marker ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "huge"])
def test_the_store_marker_as_no_small_regular_file_is_one_line_naming_it(store, kind):
    marker = store.root / "_shared" / "store.json"
    if kind == "huge":  # valid JSON, but more than any marker holds: never read whole
        marker.write_text('{"format_version": 2}' + " " * (2 * 2 ** 20))
        said = "bytes, more than such a file ever holds"
    else:
        _make(marker, kind)
        said = f"is {KINDS[kind]}, not a regular file"
    for args in (("runs",), ("store", "check"), ("show", "r1"), ("store", "clean")):
        res = _cli(store.root, *args)
        assert isinstance(res.exception, StoreError), (args, res.exception, res.output)
        message = str(res.exception)
        assert str(marker) in message and said in message and "remove it" in message, message
        assert "\n" not in message


@pytest.mark.parametrize("folder, args", [(".staging", ("import", "--example")), (".trash", ("delete", "r1", "--yes")),
                                          ("_shared", ("runs",))])
@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_folder_of_the_store_that_is_no_folder_is_one_line_naming_it(store, folder, args, kind):
    """`.staging`, `.trash`, `_shared` as a FIFO or a file: one line naming it, never "unexpected
    NotADirectoryError" or a hang; nothing of the runs changes."""
    here = store.root / folder
    shutil.rmtree(here, ignore_errors=True)
    if kind == "fifo":
        _make(here, "fifo")
    else:
        here.write_text("not a folder")
    res = _cli(store.root, *args)
    assert isinstance(res.exception, StoreError), (res.exception, res.output)
    message = str(res.exception)
    assert f"{folder} is {'a FIFO (named pipe)' if kind == 'fifo' else 'a file'}" in message, message
    assert "\n" not in message
    assert sorted(p.name for p in store.root.iterdir() if not p.name.startswith(("_", "."))) == ["r1", "r2"]


@pytest.mark.parametrize("rel", [".staging", ".trash", "_shared/judge_cache", "_shared/app_jobs"])
@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_store_check_names_a_folder_of_the_store_that_is_no_folder(store, rel, kind):
    here = store.root / rel
    shutil.rmtree(here, ignore_errors=True)
    if kind == "fifo":
        _make(here, "fifo")
    else:
        here.write_text("not a folder")
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1, res.output
    said = "is a FIFO (named pipe), not a regular file or folder" if kind == "fifo" else "is a file, not a folder"
    assert f"DAMAGED store: {rel} {said}" in res.output and "remove it" in res.output, res.output


# ---- anywhere in a run -----------------------------------------------------------------------
WHERE = {
    "pointer": lambda s: "tables.json",
    "current-data-file": lambda s: _current(s, "r1", "metrics"),
    "current-summary": lambda s: _current(s, "r1", "summary_metrics"),
    "part-file": lambda s: "parts/metrics/part-20260101T000000000000-0badc0de.parquet",
    "compact-lock": lambda s: ".compact.lock",
    "manifest-lock": lambda s: ".run.json.lock",
    "quarantined": lambda s: "quarantine/parts/metrics/part-x.parquet",
    "stray-in-data": lambda s: "data/metrics-g9-0badc0de.parquet",
    "elsewhere": lambda s: "notes/pipe",
}


CASES = [(where, "fifo") for where in WHERE] + [(where, kind) for where in ("pointer", "part-file")
                                                for kind in ("socket", "device")]


@pytest.mark.parametrize("where, kind", CASES)
def test_a_special_file_anywhere_in_a_run_is_damage_and_repair_removes_it(store, where, kind):
    rel = WHERE[where](store)
    _make(store.run_dir("r1") / rel, kind)
    line = f"DAMAGED r1: {rel} is {KINDS[kind]}, not a regular file"

    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1, res.output
    assert any(x.startswith(line) and "`evalcore store repair r1` removes it" in x for x in res.output.splitlines()), \
        res.output
    assert "DAMAGED r2" not in res.output
    res = _cli(store.root, "runs")
    assert res.exit_code == 0 and "r2" in res.output, res.output
    with _rescued(store.root), pytest.raises(RunDamaged, match=re.escape(f"{rel} is {KINDS[kind]}")):
        store.open_run("r1")  # every writer compacts first
    assert list(_means(store)) in (["r1", "r2"], ["r2"])  # r1 read or listed apart, never a hang

    res = _cli(store.root, "store", "repair", "r1")
    assert res.exit_code == 0, (res.exception, res.output)
    assert f"removed {rel}: it was {KINDS[kind]}, not a regular file" in res.output
    assert _kind(store.run_dir("r1") / rel) in ("absent", "file")  # the pointer is rebuilt in its place
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 0 and "0 damaged" in res.output, res.output
    with _rescued(store.root):
        store.open_run("r1").publish()


def test_run_json_as_a_fifo_is_listed_apart_and_repair_says_what_to_do(store):
    _make(store.run_dir("r1") / "run.json", "fifo")
    res = _cli(store.root, "runs")
    assert res.exit_code == 0 and "damaged run r1: run.json is a FIFO (named pipe)" in res.output, res.output
    res = _cli(store.root, "store", "check", "r1")
    assert res.exit_code == 1 and "DAMAGED r1: run.json is a FIFO (named pipe), not a regular file" in res.output
    for args in (("store", "repair", "r1"), ("show", "r1"), ("score", "r1", "-m", "token_f1", "--no-progress")):
        res = _cli(store.root, *args)
        assert isinstance(res.exception, RunDamaged), (args, res.exception, res.output)
        assert "run.json is a FIFO" in str(res.exception) and "put a copy of the run's run.json" in str(res.exception)
    assert stat.S_ISFIFO(os.lstat(store.run_dir("r1") / "run.json").st_mode), "repair changed nothing"
    res = _cli(store.root, "delete", "r1", "--yes")  # the way out it names
    assert res.exit_code == 0 and not store.run_dir("r1").exists(), res.output


@pytest.mark.parametrize("name", ["tables.json", "run.json"])
def test_a_pointer_or_manifest_larger_than_any_evalcore_writes_is_never_read_whole(store, name):
    path = store.run_dir("r1") / name
    with open(path, "r+b") as fh:  # sparse: 65 MB of nothing after the real content
        fh.seek(65 * 2 ** 20)
        fh.write(b" ")
    res = _cli(store.root, "store", "check", "r1")
    assert res.exit_code == 1, res.output
    assert f"{name}" in res.output and "bytes, more than such a file ever holds" in res.output, res.output
    assert list(_means(store)) == ["r2"]
    res = _cli(store.root, "store", "repair", "r1")
    if name == "tables.json":
        assert res.exit_code == 0 and "rebuilt tables.json" in res.output, res.output
        assert _cli(store.root, "store", "check", "r1").exit_code == 0
    else:  # no manifest to rebuild: repair says what to do, and changes nothing
        assert isinstance(res.exception, RunDamaged) and "put a copy of the run's run.json" in str(res.exception)


# ---- readers: DuckDB and pyarrow are never handed one ----------------------------------------
def test_readers_leave_a_run_with_a_fifo_out_and_read_every_other(store):
    _make(store.run_dir("r1") / _current(store, "r1", "questions"), "fifo")
    with _rescued(store.root):
        assert _means(store) == {"r2": 0.5}
        damaged = query_df(store, "SELECT run_id, reason FROM damaged_runs")
        with pytest.raises(RunDamaged, match="FIFO"):
            query_df(store, "SELECT count(*) FROM questions", runs=["r1"])
    assert list(damaged.run_id) == ["r1"] and "FIFO" in damaged.reason.iloc[0]


def test_an_annotation_file_that_is_a_fifo_is_left_out_and_listed(store):
    first = store.append_annotations([Annotation(annotation_id="a1", who="w", run_id="r1", method="a",
                                                 question_id="q1", target_kind="metric", target_ref="m",
                                                 label="correct")])
    _make(first.with_name("part-20260101T000000000000-0badc0de.parquet"), "fifo")
    with _rescued(store.root):
        labels = query_df(store, "SELECT annotation_id FROM annotations")
        listed = query_df(store, "SELECT file, reason FROM damaged_annotations")
    assert list(labels.annotation_id) == ["a1"]
    assert len(listed) == 1 and "FIFO" in listed.reason.iloc[0]
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1 and "DAMAGED store: _shared/annotations/part-20260101T000000000000-0badc0de.parquet " \
                                  "is a FIFO (named pipe)" in res.output, res.output


# ---- caches and job records: a miss, never a hang --------------------------------------------
def test_caches_and_job_records_never_open_a_fifo(store, recwarn):
    from evalcore.embeddings.cache import ArrayCache
    from evalcore.judges.cache import JudgeCache
    from evalcore.store import jobs

    judge = JudgeCache(store.shared_cache("judge_cache"))
    key = "ab" + "0" * 62
    _make(store.shared_dir("judge_cache") / "ab" / f"{key}.json", "fifo")
    vectors = store.local_shared_dir("embeddings") / "vectors" / "m"
    _make(vectors / "part-1-x.npz", "fifo")
    _make(vectors / ".compact.lock", "fifo")
    job_id = jobs.new_job(store)
    job_dir = jobs.jobs_root(store) / job_id
    _make(job_dir / "job.json", "fifo")
    _make(job_dir / "log.txt", "fifo")
    with _rescued(store.root):
        assert judge.get(key) is None
        judge.put(key, {"reply": "ok"})  # replaces it with a real entry
        assert judge.get(key) == {"reply": "ok"}
        cache = ArrayCache(store.shared_cache("embeddings", local=True).sub("vectors", "m"), width=2)
        assert len(cache) == 0 and any("part-1-x.npz" in str(w.message) for w in recwarn)
        assert cache.compact() == 0
        assert jobs.load(store, job_id) is None and jobs.list_jobs(store) == []
        job = jobs.Job(job_id=job_id, kind="run", argv=["x"], pid=1, started_at=0.0)
        assert jobs.tail(store, job) == ""
        jobs.save(store, job)  # replaces the record
        assert jobs.load(store, job_id) == job
