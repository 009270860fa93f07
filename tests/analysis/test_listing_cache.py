"""`evalcore runs`' saved listing: reused only while nothing it read has changed, never trusted
when damaged, never written where it must not be.

Every check compares with the listing computed afresh from the store's views
(listing_cache.compute_listing), the only truth: a saved listing that differs from it is the
defect. SETTLE_SECONDS is lowered so a store built a moment ago may be saved beside; each test
then waits past it before the listing that saves, so an edit after it lands in a later tick.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from typer.testing import CliRunner

from evalcore.analysis.runs import listing_cache as LC
from evalcore.cli.main import app
from evalcore.demo.synthetic import build_store
from evalcore.store import RunStore, file_state
from tests.analysis.listing_helpers import fresh as _fresh
from tests.analysis.listing_helpers import listed as _list
from tests.analysis.listing_helpers import put_in_the_listings_place
from tests.analysis.listing_helpers import saved as _saved

SETTLE = 0.05


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(file_state, "SETTLE_SECONDS", SETTLE)
    monkeypatch.setattr(file_state, "FINE_SETTLE_SECONDS", SETTLE)
    built = build_store(tmp_path / "runs", n_runs=2, n_questions=6, n_metrics=3, judge_calls=False)
    time.sleep(SETTLE * 2)
    return built


def _without_time(saved: bytes | None) -> tuple[bytes, dict] | None:
    """A saved listing, less how long its computation took (which no two computations share)."""
    if saved is None:
        return None
    head, _, body = saved.partition(b"\n")
    parsed = json.loads(body)
    assert isinstance(parsed.pop("seconds"), float)
    return head, parsed


def _cli(store: RunStore, *args: str):
    res = CliRunner().invoke(app, ["--store", str(store.root), "runs", *args])
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


def test_an_unchanged_store_is_listed_from_the_saved_listing(store, monkeypatch):
    first = _list(store)
    assert _saved(store) is not None and first == _fresh(store)
    monkeypatch.setattr(LC, "compute_listing", lambda s: pytest.fail("listed afresh though nothing changed"))
    assert _list(store) == first
    assert [r.run_id for r in first.rows] == ["synthetic-01-7001", "synthetic-00-7000"]


@pytest.mark.parametrize("args", [(), ("--json",)], ids=["table", "json"])
def test_the_command_prints_the_same_from_the_saved_listing(store, args):
    assert _saved(store) is None
    printed = _cli(store, *args)
    assert _saved(store) is not None
    assert _cli(store, *args) == printed


def _edit_manifest_keeping_size_and_times(store):
    path = store.run_dir("synthetic-00-7000") / "run.json"
    before = path.stat()
    text = path.read_text()
    path.write_text(text.replace('"synthetic-00"', '"synthetic-0X"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # only ctime tells


def _truncate_a_data_file(store):
    data = store.run_dir("synthetic-01-7001") / "data"
    path = next(p for p in sorted(data.iterdir()) if p.name.startswith("responses-"))
    before = path.stat()
    path.write_bytes(path.read_bytes()[: before.st_size // 2])
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _delete_a_run(store):
    res = CliRunner().invoke(app, ["--store", str(store.root), "delete", "synthetic-01-7001", "--yes"])
    assert res.exit_code == 0, res.output


def _add_an_unreadable_run(store):
    (store.root / "broken-run").mkdir()
    (store.root / "broken-run" / "run.json").write_text("{not json")


def _add_a_torn_annotation_file(store):
    folder = store.annotations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part-20260101T000000000000-1-deadbeef.parquet").write_bytes(b"PAR1 torn")


def _copy_a_run_in(store):
    src = store.run_dir("synthetic-00-7000")
    manifest = json.loads((src / "run.json").read_text())
    dst = store.root / "synthetic-02-7002"
    shutil.copytree(src, dst)
    manifest.update(run_id="synthetic-02-7002", name="synthetic-02")
    (dst / "run.json").write_text(json.dumps(manifest))


EDITS = {"manifest edited, same size and mtime": _edit_manifest_keeping_size_and_times,
         "data file truncated, same mtime": _truncate_a_data_file,
         "run deleted": _delete_a_run,
         "unreadable run added": _add_an_unreadable_run,
         "torn annotation file added": _add_a_torn_annotation_file,
         "run copied in": _copy_a_run_in}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_any_edit_after_the_listing_was_saved_is_listed(store, edit):
    before = _list(store)
    assert _saved(store) is not None
    EDITS[edit](store)
    after = _list(store)
    assert after == _fresh(store)
    assert after != before


def test_a_store_that_changed_a_moment_ago_gets_nothing_saved(store, monkeypatch):
    monkeypatch.setattr(file_state, "SETTLE_SECONDS", 3600.0)  # every file is "recent"
    monkeypatch.setattr(file_state, "FINE_SETTLE_SECONDS", 3600.0)
    listing = _list(store)
    assert _saved(store) is None and listing == _fresh(store)


GARBAGE = {"not json": lambda head: head + b"\n{",
           "another fingerprint": lambda head: head[:-4] + b"0000\n{}",
           "rows of the wrong shape": lambda head: head + b'\n{"problems": [], "rows": [{"run_id": 1}], '
                                                        b'"damaged_runs": [], "damaged_annotations": []}',
           "a count that is text": None,
           "empty": lambda head: b"",
           "no newline": lambda head: head}


@pytest.mark.parametrize("damage", list(GARBAGE), ids=list(GARBAGE))
def test_a_damaged_saved_listing_is_computed_afresh_and_saved_over(store, damage):
    truth = _list(store)
    saved = _saved(store)
    head = saved.partition(b"\n")[0]
    if GARBAGE[damage] is None:
        body = json.loads(saved.partition(b"\n")[2])
        body["rows"][0]["n_questions"] = "6"
        bad = head + b"\n" + json.dumps(body).encode()
    else:
        bad = GARBAGE[damage](head)
    (store.root / "_shared" / LC.CACHE / LC.entry_name()).write_bytes(bad)
    assert _list(store) == truth
    assert _without_time(_saved(store)) == _without_time(saved)


def test_a_saved_listing_larger_than_the_store_could_need_is_not_read(store, monkeypatch):
    truth = _list(store)
    head = _saved(store).partition(b"\n")[0]
    (store.root / "_shared" / LC.CACHE / LC.entry_name()).write_bytes(head + b"\n" + b"[" + b"1," * 2_000_000 + b"1]")
    class NoParsing:
        dumps = staticmethod(json.dumps)

        @staticmethod
        def loads(*args, **kwargs):
            pytest.fail("a listing beyond the bound was parsed")

    monkeypatch.setattr(LC, "json", NoParsing)
    assert _list(store) == truth


@pytest.mark.parametrize("kind", ["fifo", "folder", "link out of the store"])
def test_something_else_in_the_saved_listings_place_is_a_miss_and_left_alone(store, tmp_path, kind):
    truth = _fresh(store)
    outside = put_in_the_listings_place(store, tmp_path, kind)
    assert _list(store) == truth
    assert _list(store) == truth
    assert list(outside.iterdir()) == []  # nothing written through the link


def test_a_store_that_cannot_be_written_is_listed_all_the_same(store, monkeypatch):
    from evalcore.store.shared_cache import SharedCache

    def refuse(self, rel, data, private=False):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(SharedCache, "write", refuse)
    printed = _cli(store)
    assert "synthetic-00-7000" in printed[0] and _saved(store) is None


def test_a_link_inside_a_run_means_nothing_is_saved(store, tmp_path):
    outside = tmp_path / "notes.txt"
    outside.write_text("x")
    (store.run_dir("synthetic-00-7000") / "notes.txt").symlink_to(outside)
    assert _list(store) == _fresh(store)
    assert _saved(store) is None


@pytest.mark.parametrize("state", ["missing folder", "folder without a store marker"])
def test_listing_a_folder_that_is_no_store_writes_nothing_into_it(tmp_path, monkeypatch, state):
    monkeypatch.setattr(file_state, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(file_state, "FINE_SETTLE_SECONDS", 0.0)
    root = tmp_path / "runs"
    if state != "missing folder":
        root.mkdir()
        (root / "notes").mkdir()
    res = CliRunner().invoke(app, ["--store", str(root), "runs"])
    assert res.exit_code == 0 and "no runs in" in res.stdout
    assert (not root.exists()) if state == "missing folder" else sorted(p.name for p in root.iterdir()) == ["notes"]


def _damage_a_pointer(store):
    (store.run_dir("synthetic-01-7001") / "tables.json").unlink()


def test_a_store_moved_elsewhere_names_its_new_path(store, tmp_path):
    """Messages quote the store's path; a move keeps every inode and stamp."""
    _damage_a_pointer(store)
    time.sleep(SETTLE * 2)
    before = _list(store)
    assert _saved(store) is not None and str(store.root) in before.damaged_runs[0].reason
    moved = RunStore(tmp_path / "moved")
    store.root.rename(moved.root)
    after = _list(moved)
    assert after == _fresh(moved) and str(moved.root) in after.damaged_runs[0].reason


def test_a_folder_nested_thousands_deep_in_a_run_is_listed(store):
    """Deeper than Python's recursion limit (and than a path may be long): made and removed
    through folder descriptors."""
    depth = 1500
    fds = [os.open(store.run_dir("synthetic-00-7000"), os.O_RDONLY)]
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        time.sleep(SETTLE * 2)
        assert _list(store) == _fresh(store)
    finally:
        for parent in reversed(fds[:-1]):
            os.close(fds.pop())
            os.rmdir("d", dir_fd=parent)
        os.close(fds.pop())


def test_more_entries_than_the_scan_is_worth_means_nothing_is_saved(store, monkeypatch):
    monkeypatch.setattr(file_state, "MAX_ENTRIES", 10)
    assert _list(store) == _fresh(store) and _saved(store) is None


@pytest.mark.parametrize("body", [b"[" * 50_000, b'{"problems": [], "rows": [], "damaged_runs": [], '
                                                 b'"damaged_annotations": [], "x": NaN}', None],
                         ids=["nested too deep", "NaN", "NaN latency"])
def test_what_json_allows_but_a_listing_never_holds_is_a_miss(store, body):
    truth = _list(store)
    saved = _saved(store)
    head, _, rest = saved.partition(b"\n")
    if body is None:
        parsed = json.loads(rest)
        parsed["rows"][0]["latency_p50_ms"] = {"local_search": float("nan")}
        body = json.dumps(parsed).encode()
    (store.root / "_shared" / LC.CACHE / LC.entry_name()).write_bytes(head + b"\n" + body)
    assert _list(store) == truth
    assert _without_time(_saved(store)) == _without_time(saved)


def test_a_run_listed_with_another_zone_is_a_miss(store):
    truth = _list(store)
    saved = _saved(store)
    head, _, rest = saved.partition(b"\n")
    parsed = json.loads(rest)
    parsed["rows"][0]["created_at"] = "2025-01-02T05:00:00+05:00"  # the same instant, not in UTC
    (store.root / "_shared" / LC.CACHE / LC.entry_name()).write_bytes(head + b"\n" + json.dumps(parsed).encode())
    assert _list(store) == truth


def test_another_reader_does_not_reuse_a_listing_and_nobody_else_can_read_it(store, monkeypatch):
    """What a reader can open decides what is listed (a manifest only its owner may read)."""
    _list(store)
    path = store.root / "_shared" / LC.CACHE / LC.entry_name()
    assert path.stat().st_mode & 0o777 == 0o600
    monkeypatch.setattr(file_state, "_reader", lambda: "12345 12345 [] 0000000000000000")
    monkeypatch.setattr(LC, "compute_listing", lambda s: pytest.fail("reused the listing another reader saved"))
    with pytest.raises(pytest.fail.Exception):
        _list(store)


def test_edited_evalcore_code_does_not_reuse_a_listing_it_did_not_compute():
    """A checkout edited under the same version: the saved listing's messages may be the old code's."""
    module = LC.__file__
    before = os.stat(module)
    code = LC._code()
    try:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert LC._code() != code
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert LC._code() == code


def test_code_that_cannot_be_fingerprinted_lists_afresh_and_saves_nothing(store, monkeypatch):
    def unreadable():
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(LC, "_code", unreadable)
    assert _list(store) == _fresh(store) and _saved(store) is None
