"""Every symbolic link in a run, and the store's own files as links, are named as such (issue
34, item 1; the hostile tester's F9 and F10).

- A link anywhere in a run (a part file, `quarantine/parts`, a lock file, a stray in data/, a
  link deep in quarantine, the pointer...) once left a run that `store check` called healthy
  and "the next write sets it aside" while every write refused it. Now `store check` names
  each link as damage with its way out, writers refuse in one line naming it, and `evalcore
  store repair RUN` removes the link itself — never what it points to — after which the run
  is healthy and writable again.
- A link the run's rows are read through (`data/`, a current data file, `run.json`) is named
  the same way, but repair refuses to remove it (the rows would leave the run with it) in one
  line, changing nothing: the way out is to replace it by a copy of what it points to.
- A store marker (`_shared/store.json`, or `_shared` itself) that is a link once made every
  command say "store marker has no valid format_version": now one line names the link; and
  `store check` names the store's other own folders that are links (`.staging`, `.trash`,
  anything under `_shared`).
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
from tests.store_trees import is_listing_cache

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _main(root, *args) -> subprocess.CompletedProcess:
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, "--store", str(root), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def _tree(folder: Path) -> dict[str, tuple]:
    """Everything under `folder` (files, folders, links), never following a link."""
    out: dict[str, tuple] = {}
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(base, name)
            rel = str(path.relative_to(folder))
            if is_listing_cache(path, folder):
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return out


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


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "folder" / "parts" / "metrics").mkdir(parents=True)
    (victim / "folder" / "parts" / "metrics" / "part-1-keep.parquet").write_bytes(b"not parquet, not the store's")
    (victim / "garbage.parquet").write_bytes(b"not parquet")
    (victim / "f.txt").write_text("precious")
    return victim


def _valid_part(run_dir: Path, victim: Path) -> Path:
    """A real Parquet file outside the store (a copy of the run's questions)."""
    target = victim / "valid.parquet"
    shutil.copy(next((run_dir / "data").glob("questions-*")), target)
    return target


# where the link is, and what it points to (a victim path, or a function of run and victim)
REMOVABLE = {
    "part-to-garbage": ("parts/metrics/part-20260101T000000000000-deadbeef.parquet",
                        lambda r, v: v / "garbage.parquet"),
    "part-to-valid-parquet": ("parts/questions/part-20260101T000000000000-cafef00d.parquet", _valid_part),
    "dangling-part": ("parts/responses/part-x.parquet", lambda r, v: v / "nowhere.parquet"),
    "quarantine/parts": ("quarantine/parts", lambda r, v: v / "folder" / "parts"),
    "quarantine": ("quarantine", lambda r, v: v / "folder"),
    "deep-in-quarantine": ("quarantine/parts/metrics/sub/x.parquet", lambda r, v: v / "f.txt"),
    "parts": ("parts", lambda r, v: v / "folder" / "parts"),
    "parts/metrics": ("parts/metrics", lambda r, v: v / "folder" / "parts" / "metrics"),
    "stray-in-data": ("data/notes.txt", lambda r, v: v / "f.txt"),
    "stray-data-file": ("data/metrics-g9-0badc0de.parquet", lambda r, v: v / "garbage.parquet"),
    ".compact.lock": (".compact.lock", lambda r, v: v / "f.txt"),
    ".run.json.lock": (".run.json.lock", lambda r, v: v / "lock"),
    "tables.json": ("tables.json", lambda r, v: shutil.copy(r / "tables.json", v / "pointer.json")),
    "other-folder": ("notes", lambda r, v: v / "folder"),
}


def _make_link(run_dir: Path, victim: Path, rel: str, target) -> Path:
    target = Path(target(run_dir, victim))
    here = run_dir / rel
    if here.is_dir() and not here.is_symlink():
        shutil.rmtree(here)
    else:
        here.unlink(missing_ok=True)
    here.parent.mkdir(parents=True, exist_ok=True)
    here.symlink_to(target, target_is_directory=target.is_dir())
    return here


@pytest.mark.parametrize("case", list(REMOVABLE))
def test_a_link_anywhere_in_a_run_is_damage_and_store_repair_removes_the_link_only(store, tmp_path, case):
    run_id, run_dir = _run(store)
    rel, target = REMOVABLE[case]
    victim = _victim(tmp_path)
    pointed = os.readlink(_make_link(run_dir, victim, rel, target))
    before = _tree(victim)

    res = _cli(store.root, "store", "check", run_id)
    assert res.exit_code == 1, res.output
    line = next(line for line in res.output.splitlines() if line.startswith(f"DAMAGED {run_id}: {rel} is a symbolic"))
    assert f"`evalcore store repair {run_id}` removes the link" in line and "never what it points to" in line
    assert "sets it aside" not in res.output
    res = _cli(store.root, "score", run_id, "-m", "token_f1", "--no-progress")
    assert isinstance(res.exception, StoreError) and "symbolic link" in str(res.exception), (res.exception, res.output)
    assert "\n" not in str(res.exception)

    res = _cli(store.root, "store", "repair", run_id)
    assert res.exit_code == 0, (res.exception, res.output)
    assert f"removed the link {rel} (to {pointed}); what it points to is untouched" in res.output
    assert not os.path.islink(run_dir / rel) and _tree(victim) == before
    res = _cli(store.root, "store", "check", run_id)
    assert res.exit_code == 0 and "0 damaged" in res.output, res.output
    res = _cli(store.root, "score", run_id, "-m", "token_f1", "--no-progress")
    assert res.exit_code == 0, (res.exception, res.output)
    assert _tree(victim) == before


HOLDS_ROWS = {
    "data": ("data", lambda r, v: shutil.copytree(r / "data", v / "data")),
    "current-data-file": (None, None),  # the pointer's questions file, set below
    "run.json": ("run.json", lambda r, v: shutil.copy(r / "run.json", v / "run.json")),
}


@pytest.mark.parametrize("case", list(HOLDS_ROWS))
def test_a_link_the_runs_rows_are_read_through_is_named_and_never_removed(store, tmp_path, case, console):
    run_id, run_dir = _run(store)
    rel, target = HOLDS_ROWS[case]
    if rel is None:
        rel = json.loads((run_dir / "tables.json").read_text())["files"]["questions"]
        target = lambda r, v: shutil.copy(r / rel, v / "questions.parquet")  # noqa: E731
    victim = _victim(tmp_path)
    _make_link(run_dir, victim, rel, target)
    before, run_before = _tree(victim), _tree(run_dir)

    res = _cli(store.root, "store", "check", run_id)
    assert res.exit_code == 1, res.output
    assert f"DAMAGED {run_id}: {rel} is a symbolic link" in res.output
    assert "replace the link by a copy of what it points to" in res.output
    proc = console("--store", store.root, "store", "repair", run_id)
    line = _one_error_line(proc)
    assert f"{rel} is a symbolic link" in line and "nothing was changed" in line, line
    assert _tree(run_dir) == run_before and _tree(victim) == before
    if case == "run.json":  # what a run says about itself is never read from elsewhere: listed apart
        res = _cli(store.root, "runs")
        assert f"damaged run {run_id}" in res.output and "run.json is a symbolic link" in res.output, res.output


def test_a_linked_format1_table_folder_holds_rows(tmp_path):
    """A format-1 run keeps its rows in <table>/ folders: a link there is never removed either."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1"
    root = tmp_path / "runs"
    shutil.copytree(fixture, root)
    store = RunStore(root)
    run_id, run_dir = _run(store)
    victim = tmp_path / "victim"
    shutil.copytree(run_dir / "metrics", victim / "metrics")
    shutil.rmtree(run_dir / "metrics")
    (run_dir / "metrics").symlink_to(victim / "metrics", target_is_directory=True)
    before = _tree(victim)
    (check,) = store.check([run_id])
    assert any(d.startswith("metrics is a symbolic link") and "copy of what it points to" in d for d in check.damage)
    with pytest.raises(StoreError, match="metrics is a symbolic link"):
        store.repair(run_id)
    assert (run_dir / "metrics").is_symlink() and _tree(victim) == before


# ---- the store's own files -------------------------------------------------------------------
def _link_marker(store: RunStore, victim: Path, case: str) -> Path:
    shared = store.root / "_shared"
    if case == "_shared":
        shutil.copytree(shared, victim / "shared")
        shutil.rmtree(shared)
        shared.symlink_to(victim / "shared", target_is_directory=True)
        return shared
    marker = shared / "store.json"
    if case == "valid":
        shutil.copy(marker, victim / "store.json")
    elif case == "invalid":
        (victim / "store.json").write_text("not a marker")
    marker.unlink()
    marker.symlink_to(victim / "store.json")  # "dangling": nothing there
    return marker


@pytest.mark.parametrize("case", ["valid", "invalid", "dangling", "_shared"])
def test_a_store_marker_reached_through_a_link_is_named_in_one_line(store, tmp_path, case, console):
    victim = tmp_path / "victim"
    victim.mkdir()
    link = _link_marker(store, victim, case)
    before = _tree(victim)
    # one case in a child process, as a user runs it; the others through the same entry point here
    proc = _main(store.root, "runs") if case == "valid" else console("--store", store.root, "runs")
    line = _one_error_line(proc)
    assert f"{link} is a symbolic link" in line and "no valid format_version" not in line, line
    for args in (("store", "check"), ("import", "--example"), ("store", "clean")):
        res = _cli(store.root, *args)
        assert isinstance(res.exception, StoreError) and f"{link} is a symbolic link" in str(res.exception), \
            (args, res.exception, res.output)
    assert _tree(victim) == before


@pytest.mark.parametrize("rel", [".staging", ".trash", "_shared/annotations", "_shared/judge_cache/ab",
                                 "_shared/annotations/part-20260101T000000000000-0badc0de.parquet"])
def test_store_check_names_the_stores_own_folders_that_are_links(store, tmp_path, rel):
    victim = tmp_path / "victim"
    victim.mkdir()
    here = store.root / rel
    shutil.rmtree(here, ignore_errors=True)  # an empty .staging is left by the import
    here.parent.mkdir(parents=True, exist_ok=True)
    here.symlink_to(victim, target_is_directory=not rel.endswith(".parquet"))
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1, res.output
    assert f"DAMAGED store: {rel} is a symbolic link (to {victim})" in res.output
    assert "0 damaged" in res.output and "1 of the store's own folders or files a symbolic link" in res.output
