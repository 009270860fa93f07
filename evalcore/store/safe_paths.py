"""Proof that a path the store deletes, moves or writes lies inside the store.

Why this module: the store's housekeeping removes and rewrites files by names it reads back —
a pointer's `retired` and `absorbed` lists, the listings of `.staging/` and `.trash/`. A name
with `..`, or one of the store's own folders replaced by a symbolic link to somewhere else,
once made a plain `evalcore import` remove folders outside the store and `evalcore score`
unlink arbitrary files. So every delete, move, write and lock of the store passes `inside()`
first, and the few operations here (unlink, remove_tree, move, make_dirs, open_lock) are the
only way the store does those things.

The rule, on a local folder: the path is under the store's root by its parts alone (no `..`),
and no component below the root — the path itself included — is a symbolic link. evalcore
creates only real folders and files in a store, so a link there was made by something else and
is never followed. (The root itself may be a link: where the store lives is the user's choice.)
On object storage there are no links, but a key is a string: it must lie under the root's
prefix with no empty, `.` or `..` segment (some S3-compatible servers and proxies resolve
dot-segments in a request path, which would reach another key).

A check and the operation after it are two steps; a process racing to swap a folder for a
link in between is out of scope (it could write the files itself).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from pathlib import Path
from typing import IO, Union

from evalcore.errors import StoreError
from evalcore.common.regular_files import kind_of, open_regular
from evalcore.store.s3 import S3Path

Location = Union[Path, S3Path]


class OutsideStore(StoreError):
    """A delete, move or write (or a read of one of the store's own files) the store refused:
    its path is not provably inside the store. `why` is the reason alone (for messages that
    name the path themselves)."""

    def __init__(self, path: object, why: str, doing: str = "write or delete"):
        self.path = path
        self.why = why
        super().__init__(f"refusing to {doing} {path}: {why}")


# The longest name of one file or folder most file systems take (bytes, NAME_MAX), the longest
# relative path stored data may name, the longest local path (PATH_MAX less its NUL) and the
# longest object key S3 takes: a longer one is refused in one line instead of failing the
# operation with "File name too long".
NAME_MAX_BYTES = 255
REL_MAX_CHARS = 1024
PATH_MAX_BYTES = 4095
KEY_MAX_BYTES = 1024


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # C0 controls and DEL (a regex: every path's every name is checked)


def name_problem(name: object) -> str | None:
    """Why `name` cannot be one segment of a path inside the store (None if it can), as a
    phrase: "has the name '..'"."""
    if not isinstance(name, str) or not name:
        return "has an empty name"
    if name in (".", ".."):
        return f"has the name {name!r}"
    if "/" in name or "\\" in name:
        return f"has a separator in {name!r}"
    if _CONTROL.search(name):
        return f"has a control character in {name!r}"
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > NAME_MAX_BYTES:
        return f"has a name of {size} bytes (at most {NAME_MAX_BYTES}): {name[:40]!r}..."
    return None


def rel_problem(rel: object) -> str | None:
    """Why `rel` (a path some stored data names, relative to its run) is not a plain relative
    path of plain names (None if it is), as a phrase: absolute, empty segments, `.`, `..`,
    backslashes, control characters."""
    if not isinstance(rel, str) or not rel:
        return "is not a relative path"
    if rel.startswith("/"):
        return "is absolute"
    if len(rel) > REL_MAX_CHARS:
        return f"is {len(rel)} characters long (at most {REL_MAX_CHARS})"
    for part in rel.split("/"):
        problem = name_problem(part)
        if problem:
            return problem
    return None


def _below(root: Path, path: Path) -> tuple[Path, tuple[str, ...]]:
    """(the root as `path` spells it, the parts of `path` below it), compared part by part:
    nothing is resolved, so `data/../..` stays visible as `..`. The root is resolved only when
    `path` does not spell it as given (resolving looks at every folder above it, and every part
    file a run writes is checked)."""
    full = path if path.is_absolute() else Path.cwd() / path
    spelled = root if root.is_absolute() else Path.cwd() / root
    try:
        return spelled, full.relative_to(spelled).parts
    except ValueError:
        pass
    resolved = root.resolve()
    try:
        return resolved, full.relative_to(resolved).parts
    except ValueError:
        raise OutsideStore(path, f"it is not inside the store {root}") from None


def inside(root: Location, path: Location) -> Location:
    """`path`, proven to lie inside the store at `root`; OutsideStore (one line naming the
    path and why) otherwise. Parts that do not exist yet are fine: the store creates them as
    real folders. The one check every delete, move and write of the store goes through."""
    if isinstance(root, S3Path) or isinstance(path, S3Path):
        return _inside_remote(root, path)
    base, parts = _below(Path(root), Path(path))
    for part in parts:
        problem = name_problem(part)
        if problem:
            raise OutsideStore(path, f"its path {problem}")
    if len(os.fsencode(base.joinpath(*parts))) > PATH_MAX_BYTES:
        raise OutsideStore(path, f"its path is longer than {PATH_MAX_BYTES} bytes")
    found = _first_link(base, parts)
    if found is not None:
        raise OutsideStore(path, f"{found} is a symbolic link (to {link_target(found)}); the store never "
                                 "writes, moves or deletes through one: replace the link by a real folder or remove it")
    _refuse_non_folder(base, parts[:-1], path)
    return path


def _refuse_non_folder(base: Path, parts: tuple[str, ...], path: Location, doing: str = "write or delete") -> None:
    """OutsideStore when a component of `parts` below `base` exists and is no folder (a FIFO, a
    file where the store keeps a folder: `.staging`, `.trash`, `_shared`...): one line naming it,
    instead of the system's "Not a directory" or "File exists" from whatever comes next."""
    current = os.fspath(base)  # (plain strings: a Path per part cost more than the lstat)
    for part in parts:
        current = _join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return
        if not stat.S_ISDIR(mode):
            raise OutsideStore(path, f"{current} is {kind_of(mode) or 'a file'}, not a folder; evalcore never makes "
                                     "one there: move it out of the store or remove it", doing=doing)


def refuse_non_folder_parent(root: Location, path: Location, doing: str) -> None:
    """For readers of the store's own files (its marker): OutsideStore naming the first folder
    on the way to `path` that is something else (a FIFO as `_shared`...). Nothing on object storage."""
    if isinstance(root, S3Path) or isinstance(path, S3Path):
        return
    base, parts = _below(Path(root), Path(path))
    _refuse_non_folder(base, parts[:-1], path, doing=doing)


def first_link(root: Location, path: Location) -> Path | None:
    """The first component of `path` below `root` (`path` itself included) that is a symbolic
    link, None if there is none (or on object storage, which has no links). For readers of
    the store's own files (its marker), which must not read one through a link either."""
    if isinstance(root, S3Path) or isinstance(path, S3Path):
        return None
    base, parts = _below(Path(root), Path(path))
    return _first_link(base, parts)


def _join(folder: str, name: str) -> str:
    """`folder / name` as pathlib spells it (`a`, not `./a`, below the current folder): the
    messages name paths as they always did."""
    return name if folder == "." else os.path.join(folder, name)


def _first_link(base: Path, parts: tuple[str, ...]) -> Path | None:
    current = os.fspath(base)  # (plain strings, as in _refuse_non_folder)
    for part in parts:
        current = _join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None  # the rest does not exist yet
        if stat.S_ISLNK(mode):
            return Path(current)
    return None


def _inside_remote(root: Location, path: Location) -> Location:
    if not (isinstance(root, S3Path) and isinstance(path, S3Path)) or path.bucket != root.bucket:
        raise OutsideStore(path, f"it is not inside the store {root}")
    prefix = f"{root.key}/" if root.key else ""
    if path.key == root.key:
        return path
    if not path.key.startswith(prefix):
        raise OutsideStore(path, f"it is not inside the store {root}")
    problem = rel_problem(path.key[len(prefix):])
    if problem:
        raise OutsideStore(path, f"its key {problem}")
    size = len(path.key.encode("utf-8", "surrogatepass"))
    if size > KEY_MAX_BYTES:
        raise OutsideStore(path, f"its key is {size} bytes long (object storage takes at most {KEY_MAX_BYTES})")
    return path


def link_target(link: Path) -> str:
    """Where a symbolic link points, as it says (for messages: it is never followed)."""
    try:
        return os.readlink(link)
    except OSError:  # pragma: no cover - vanished meanwhile
        return "?"


def unlink(root: Location, path: Location) -> None:
    """Remove one file (absent is fine). A link as the last part is removed itself, never
    followed; every folder above it must be a real one inside the store."""
    inside(root, path.parent)
    if isinstance(path, S3Path):
        inside(root, path)
    path.unlink(missing_ok=True)


def unlink_all(root: Location, paths: list[Location]) -> None:
    """`unlink` of many files, each folder above them proven once: a compaction removes the
    dozens of part files it absorbed from the same two or three folders, and proving a folder
    (its every part, links, length) cost more than the removals themselves."""
    proven: set[Location] = set()
    for path in paths:
        if isinstance(path, S3Path):
            unlink(root, path)
            continue
        if path.parent not in proven:
            inside(root, path.parent)
            proven.add(path.parent)
        path.unlink(missing_ok=True)


def remove_tree(root: Location, path: Location, ignore_errors: bool = True) -> None:
    """Remove a folder and everything in it (links inside it are removed, never followed). On
    object storage a key under it that is not a plain path is refused before anything goes."""
    inside(root, path)
    if isinstance(path, S3Path):
        from evalcore.store import fs as _fs

        for key, _ in path.walk_files():
            inside(root, key)
        _fs.remove_tree(path)
        return
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode):
        # a file, FIFO, socket or device where a folder was expected: rmtree would open it to
        # list it (a FIFO blocks that open for ever); it is no folder to remove, as rmtree says
        if ignore_errors:
            return
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path))
    if ignore_errors:
        shutil.rmtree(path, ignore_errors=True)
    else:
        shutil.rmtree(path)


def make_dirs(root: Location, path: Location) -> Location:
    """Create a folder and its missing parents inside the store (nothing to do on object
    storage). Checked again afterwards: `mkdir(exist_ok=True)` accepts a link to a folder."""
    inside(root, path)
    if not isinstance(path, S3Path):
        if os.path.isdir(path):  # (follows a link: only the root may be one, and inside() proved the rest)
            return path  # a folder already: nothing to make, nothing to check again
        if os.path.lexists(path):
            _refuse_non_folder(Path(path.parent), (path.name,), path)
        path.mkdir(parents=True, exist_ok=True)
        inside(root, path)
    return path


def move(root: Location, src: Location, dst: Location) -> None:
    """Move a file or folder within the store (on object storage: one object, copy and delete)."""
    inside(root, src)
    inside(root, dst)
    if isinstance(src, S3Path):
        dst.write_bytes(src.read_bytes())
        src.unlink(missing_ok=True)
        return
    make_dirs(root, dst.parent)
    os.replace(src, dst)


def open_lock(root: Path, path: Path, create: bool = True) -> IO[bytes]:
    """Open a lock file for flock: created if missing (`create`), never through a link, and
    never anything but a regular file (a FIFO, a socket, a folder in its place: NotRegularFile,
    one line naming it; evalcore/common/regular_files.py)."""
    inside(root, path.parent)
    flags = os.O_RDWR | (os.O_CREAT if create else 0)
    try:
        fd = open_regular(path, flags, follow=False)
    except OSError as exc:
        if os.path.islink(path):
            raise OutsideStore(path, f"the lock file is a symbolic link (to {link_target(path)}); remove it") from None
        raise
    return os.fdopen(fd, "r+b")
