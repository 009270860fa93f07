"""The store's path rules (evalcore/store/safe_paths.py), checked directly: every write, move and
delete of the store goes through `inside` and `make_dirs`, which a live run calls for each part
file it writes, so they are written for speed (plain strings, the root resolved only when the
path does not spell it as given, an existing folder not made again). What they refuse must
not change with that: links anywhere below the root, things that are not folders where folders
go, paths outside the root — whichever way the root is spelled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalcore.store.safe_paths import OutsideStore, first_link, inside, make_dirs, move, remove_tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    store = tmp_path / "runs"
    (store / "run-a" / "parts" / "responses").mkdir(parents=True)
    return store


def test_a_path_below_the_root_passes_whichever_way_the_root_is_spelled(root: Path, tmp_path: Path) -> None:
    target = root / "run-a" / "parts" / "responses" / "part-1.parquet"
    assert inside(root, target) == target
    alias = tmp_path / "alias"
    alias.symlink_to(root)  # the root itself may be a link: where the store lives is the user's choice
    assert inside(alias, target) == target  # spelled through the resolved root
    assert inside(alias, alias / "run-a" / "x.parquet") == alias / "run-a" / "x.parquet"


def test_a_path_outside_the_root_or_climbing_out_is_refused(root: Path, tmp_path: Path) -> None:
    with pytest.raises(OutsideStore, match="not inside the store"):
        inside(root, tmp_path / "elsewhere" / "x.parquet")
    with pytest.raises(OutsideStore, match=r"has the name '\.\.'"):
        inside(root, root / "run-a" / ".." / ".." / "x")


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_link_at_any_depth_is_refused_and_named(root: Path, tmp_path: Path, depth: int) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    parts = ["run-b", "parts", "metrics"][:depth]
    folder = root.joinpath(*parts[:-1])
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / parts[-1]
    link.symlink_to(elsewhere, target_is_directory=True)
    target = root / "run-b" / "parts" / "metrics" / "part-1.parquet"
    with pytest.raises(OutsideStore, match=f"{link} is a symbolic link \\(to {elsewhere}\\)"):
        inside(root, target)
    assert first_link(root, target) == link
    with pytest.raises(OutsideStore, match="is a symbolic link"):
        make_dirs(root, target.parent)
    assert not any(elsewhere.iterdir())  # nothing was made through the link


def test_make_dirs_makes_what_is_missing_and_takes_a_real_folder_as_it_is(root: Path) -> None:
    made = root / "run-c" / "parts" / "metrics"
    assert make_dirs(root, made) == made and made.is_dir() and not made.is_symlink()
    existing = root / "run-a" / "parts" / "responses"
    (existing / "kept.txt").write_text("x")
    assert make_dirs(root, existing) == existing and (existing / "kept.txt").read_text() == "x"


def test_make_dirs_refuses_a_link_to_a_folder_in_place_of_the_folder(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "run-a" / "parts" / "metrics").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutsideStore, match="metrics is a symbolic link"):
        make_dirs(root, root / "run-a" / "parts" / "metrics")


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_something_else_where_a_folder_goes_is_refused_and_named(root: Path, kind: str) -> None:
    where = root / "run-a" / "parts" / "metrics"
    if kind == "file":
        where.write_text("not a folder")
    else:
        os.mkfifo(where)
    with pytest.raises(OutsideStore, match=f"{where} is .*, not a folder"):
        make_dirs(root, where)
    with pytest.raises(OutsideStore, match=f"{where} is .*, not a folder"):
        inside(root, where / "part-1.parquet")
    with pytest.raises(OutsideStore, match=f"{where} is .*, not a folder"):
        make_dirs(root, where / "deeper")


def test_the_root_is_resolved_only_when_the_path_does_not_spell_it(root: Path, monkeypatch) -> None:
    """Resolving walks every folder above the root: it is the fallback, not every check's cost."""
    calls = []
    resolve = Path.resolve

    def counting(self, *a, **k):
        calls.append(self)
        return resolve(self, *a, **k)

    monkeypatch.setattr(Path, "resolve", counting)
    inside(root, root / "run-a" / "parts" / "responses" / "part-1.parquet")
    make_dirs(root, root / "run-a" / "parts" / "responses")
    assert calls == []


def test_a_root_that_is_a_link_is_made_into_and_moved_within(tmp_path: Path) -> None:
    """The root itself may be a link (where the store lives is the user's choice): making the
    root's own folder, and moving a staged run under it, work through it as they always did."""
    (tmp_path / "real").mkdir()
    root = tmp_path / "store"
    root.symlink_to(tmp_path / "real", target_is_directory=True)
    (root / ".staging" / "run-1").mkdir(parents=True)
    assert make_dirs(root, root) == root
    move(root, root / ".staging" / "run-1", root / "run-1")
    assert (tmp_path / "real" / "run-1").is_dir()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutsideStore, match="is a symbolic link, not a folder"):
        make_dirs(dangling, dangling)


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_remove_tree_of_something_that_is_no_folder_returns_at_once(root: Path, kind: str) -> None:
    """rmtree opens what it removes to list it: a FIFO where a folder was expected blocked it for
    ever (a hostile review). Such a thing is no folder to remove: ignored, or NotADirectoryError."""
    import threading

    where = root / "run-a" / "parts" / "odd"
    os.mkfifo(where) if kind == "fifo" else where.write_text("x")
    outcome: list[object] = []

    def both() -> None:
        remove_tree(root, where)
        try:
            remove_tree(root, where, ignore_errors=False)
        except NotADirectoryError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=both, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "remove_tree blocked on a FIFO"
    assert len(outcome) == 1 and os.path.lexists(where)  # refused, and nothing removed


def test_messages_name_a_relative_path_as_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a").write_text("not a folder")
    with pytest.raises(OutsideStore, match=r"^refusing to write or delete a: a is a file, not a folder"):
        make_dirs(Path("."), Path("a"))
