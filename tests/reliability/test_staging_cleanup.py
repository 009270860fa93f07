"""Abandoned staging folders: an import killed with SIGKILL leaves `.staging/<run_id>/` behind;
`RunStore.clean_staging`, `evalcore store clean` and the next import remove it, report the
bytes, and never touch a folder whose writer is alive (a real second process holding it) nor
anything else in the store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.store import staging
from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.store import RunStore
from tests.store_trees import is_listing_cache

N_RECORDS = 30_000  # ~6 s to import: long enough to kill it after its first part file

HOLDER = textwrap.dedent("""
    import sys, time
    from evalcore.schemas import EvalQuestion, RunManifest
    from evalcore.store import FORMAT_VERSION, RunStore
    store = RunStore(sys.argv[1])
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=sys.argv[2], name="held",
                           evalcore_version="test", methods=["m"])
    with store.staged_run(manifest) as writer:
        writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(50)])
        print("ready", flush=True)
        time.sleep(600)
""")


def _answers(path: Path, n: int = N_RECORDS) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"question_id": f"q{i // 2}", "method": "ab"[i % 2], "question": f"question {i // 2}?",
                                 "answer": f"answer {i} " + "x" * 100}) + "\n")
    return path


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file of the store outside .staging and .trash: size, mtime and content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".staging", ".trash") or not path.is_file() or is_listing_cache(path, root):
            continue
        st = path.stat()
        out[str(rel)] = (st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def _tree_bytes(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _age(folder: Path, seconds: float) -> None:
    """Make everything in `folder` look untouched for `seconds`, so only the lock can save it."""
    stamp = time.time() - seconds
    for path in [*folder.rglob("*"), folder]:
        os.utime(path, (stamp, stamp), follow_symlinks=False)


def _kill_import_midway(root: Path, source: Path) -> Path:
    """Run `evalcore import` in a real process and SIGKILL it once its first part file is in
    staging; returns the staging folder it left."""
    proc = subprocess.Popen([sys.executable, "-m", "evalcore", "--store", str(root), "import", str(source)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not list(root.glob(".staging/*/parts/responses/*.parquet")):
            assert proc.poll() is None, f"import ended before the kill: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "no part file appeared in staging"
            time.sleep(0.01)
        assert proc.poll() is None, "import finished before the kill (make the file larger)"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (folder,) = (root / ".staging").iterdir()
    return folder


@pytest.fixture
def store_with_run(tmp_path):
    """A store that already holds one published run (the example), to prove it is left alone."""
    root = tmp_path / "runs"
    res = CliRunner().invoke(app, ["--store", str(root), "import", "--example"])
    assert res.exit_code == 0, res.output
    return RunStore(root)


@pytest.fixture
def holder(store_with_run):
    """A live second process in the middle of a staged import (it holds the writer lock)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(store_with_run.root), "held-import"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read()
        yield proc, store_with_run.root / ".staging" / "held-import"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_sigkilled_import_leaves_staging_and_clean_removes_it(store_with_run, tmp_path):
    store = store_with_run
    before = _snapshot(store.root)
    runs_before = store.run_ids()
    folder = _kill_import_midway(store.root, _answers(tmp_path / "big.jsonl"))

    assert (folder / staging.LOCK_FILE).is_file() and list((folder / "parts" / "responses").glob("*.parquet"))
    assert store.run_ids() == runs_before, "the killed import must not be visible"
    size = _tree_bytes(folder)
    assert size > 10_000  # at least one part file of 1000 responses

    removed = store.clean_staging()
    assert [(r.path, r.bytes, r.reason) for r in removed] == [(folder, size, "its writer is gone")]
    assert not folder.exists() and list((store.root / ".staging").iterdir()) == []
    assert not (store.root / ".trash").exists() or not list((store.root / ".trash").iterdir())
    assert _snapshot(store.root) == before and store.run_ids() == runs_before
    assert store.clean_staging() == []


def test_live_writer_in_another_process_is_never_touched(holder, store_with_run):
    proc, folder = holder
    store = store_with_run
    _age(folder, 3 * 24 * 3600)  # old enough for the age rule: only the lock protects it
    held_files = _snapshot(folder)
    before = _snapshot(store.root)

    kept: list[Path] = []
    assert store.clean_staging(kept=kept) == []
    assert kept == [folder]
    res = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean"])
    assert res.exit_code == 0, res.output
    assert "nothing to clean" in res.stdout and "left 1 staging folder(s) alone" in res.stdout
    # a new import starting meanwhile sweeps too, and must also leave it alone
    src = store.root.parent / "small.jsonl"
    src.write_text(json.dumps({"question_id": "q", "method": "m", "question": "Q?", "answer": "a"}) + "\n")
    new_run = import_recorded(store, src).run_id
    assert _snapshot(folder) == held_files
    assert proc.poll() is None, "the holder should still be running"

    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    removed = store.clean_staging()
    assert [r.path for r in removed] == [folder] and removed[0].bytes == _tree_bytes_of(held_files)
    after = _snapshot(store.root)
    assert {k: v for k, v in after.items() if not k.startswith(new_run + "/")} == before


def _tree_bytes_of(snapshot: dict[str, tuple[int, int, str]]) -> int:
    return sum(size for size, _, _ in snapshot.values())


def test_writer_in_the_same_process_is_never_touched(store, tmp_path):
    """flock locks belong to an open file, so a cleaner in the writer's own process sees it too."""
    from evalcore.schemas import RunManifest
    from evalcore.store import FORMAT_VERSION

    manifest = RunManifest(format_version=FORMAT_VERSION, run_id="same-proc", name="s",
                           evalcore_version="test", methods=["m"])
    with store.staged_run(manifest) as writer:
        _age(writer.dir, 3 * 24 * 3600)
        assert store.clean_staging() == []
        assert writer.dir.is_dir()
    published = store.run_dir("same-proc")
    assert (published / "run.json").is_file() and not (published / staging.LOCK_FILE).exists()


def test_cli_store_clean_prints_what_it_removed(store_with_run, tmp_path):
    store = store_with_run
    before = _snapshot(store.root)
    folder = _kill_import_midway(store.root, _answers(tmp_path / "big.jsonl"))
    size = _tree_bytes(folder)

    dry = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"would remove {folder}" in dry.stdout and folder.is_dir()

    res = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"removed {folder}  {staging.human_bytes(size)}  (its writer is gone)"
    assert lines[1] == f"freed {staging.human_bytes(size)} in 1 folder(s)"
    assert not folder.exists() and _snapshot(store.root) == before
    again = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean"])
    assert "nothing to clean" in again.stdout


def test_next_import_removes_abandoned_staging_and_logs_it(store_with_run, tmp_path, caplog):
    store = store_with_run
    folder = _kill_import_midway(store.root, _answers(tmp_path / "big.jsonl"))
    with caplog.at_level(logging.WARNING, logger="evalcore.store.staging"):
        result = import_recorded(store, _answers(tmp_path / "small.jsonl", 10))
    assert not folder.exists()
    assert any(str(folder) in r.getMessage() and "interrupted" in r.getMessage() for r in caplog.records)
    assert result.run_id in store.run_ids() and list((store.root / ".staging").iterdir()) == []


def test_a_failing_cleanup_never_fails_the_import(store, tmp_path, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise PermissionError("no access")

    monkeypatch.setattr(staging, "sweep", broken)
    with caplog.at_level(logging.WARNING, logger="evalcore.store.staging"):
        result = import_recorded(store, _answers(tmp_path / "small.jsonl", 10))
    assert store.exists(result.run_id)
    assert any("no access" in r.getMessage() for r in caplog.records)


def test_folders_without_a_lock_follow_the_age_rule(store):
    """Folders from an evalcore older than the lock (or without fcntl) go only after 24 h idle."""
    base = store.root / ".staging"
    old, young = base / "old-import", base / "young-import"
    for folder in (old, young):
        (folder / "responses").mkdir(parents=True)
        (folder / "responses" / "part-1.parquet").write_bytes(b"x" * 1000)
    _age(old, staging.STALE_AFTER + 3600)
    _age(young, staging.STALE_AFTER - 3600)
    kept: list[Path] = []
    removed = store.clean_staging(kept=kept)
    assert [(r.path, r.bytes) for r in removed] == [(old, 1000)] and removed[0].reason.startswith("untouched for")
    assert kept == [young] and young.is_dir()


def test_without_fcntl_only_the_age_rule_applies(store, monkeypatch):
    """The Windows fallback: a free lock file proves nothing there, only the idle time counts."""
    base = store.root / ".staging"
    fresh, stale = base / "fresh-import", base / "stale-import"
    for folder in (fresh, stale):
        folder.mkdir(parents=True)
        (folder / staging.LOCK_FILE).touch()  # left by a dead writer; its lock is free
    _age(stale, staging.STALE_AFTER + 60)
    monkeypatch.setattr(staging, "fcntl", None)
    assert [r.path for r in store.clean_staging()] == [stale]
    assert fresh.is_dir()


def test_only_run_folders_inside_staging_are_considered(store, tmp_path):
    """Symlinks, stray files and odd names in .staging, and everything outside it, stay."""
    outside = tmp_path / "outside"
    (outside / "data").mkdir(parents=True)
    (outside / "data" / "keep.txt").write_text("keep")
    base = store.root / ".staging"
    base.mkdir(parents=True)
    (base / "linked-import").symlink_to(outside, target_is_directory=True)
    (base / ".hidden").mkdir()
    (base / "stray-file").write_text("x")
    for path in (outside, base / ".hidden", base / "stray-file"):
        _age(path, 10 * staging.STALE_AFTER) if path.is_dir() else os.utime(path, (0, 0))
    assert store.clean_staging() == []
    assert (outside / "data" / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in base.iterdir()) == [".hidden", "linked-import", "stray-file"]


def test_store_clean_finishes_a_delete_that_was_killed(store_with_run, tmp_path):
    import os
    import shutil

    store = store_with_run
    victim = CliRunner().invoke(app, ["--store", str(store.root), "import", "--example"]).stdout.strip().splitlines()[-1]
    before = {k: v for k, v in _snapshot(store.root).items() if not k.startswith(victim)}
    # What `delete` leaves when killed between its rename and its rmtree (part of it removed).
    trashed = store.root / ".trash" / f"{victim}-dead01"
    trashed.parent.mkdir(exist_ok=True)
    os.replace(store.run_dir(victim), trashed)
    shutil.rmtree(next(p for p in trashed.iterdir() if p.is_dir()))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the store's")
    (store.root / ".trash" / "link").symlink_to(outside)
    size = _tree_bytes(trashed)

    dry = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean", "--dry-run"])
    assert f"would remove {trashed}  {staging.human_bytes(size)}  (a delete was interrupted)" in dry.stdout
    assert trashed.is_dir()
    res = CliRunner().invoke(app, ["--store", str(store.root), "store", "clean"])
    assert res.exit_code == 0, res.output
    assert not trashed.exists() and (outside / "keep.txt").read_text() == "not the store's"
    assert victim not in store.run_ids() and _snapshot(store.root) == before
