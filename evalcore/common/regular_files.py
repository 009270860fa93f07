"""Opening the files evalcore keeps for itself, proven regular files, without ever blocking.

Why this module: evalcore makes only folders and regular files in a store, but a FIFO (named
pipe), a socket or a device node can be put there by anything else, under any name the store
reads: the store marker, a run's pointer or manifest, a part or data file, a judge
cache entry, a job record. Opening a FIFO for reading blocks until some process writes to it,
so every command hung on the first one; reading `/dev/zero` never ends, so every command read
until memory ran out. A link there is refused already (store/safe_paths.py); this is the same
rule for what is neither a folder nor a regular file nor a link.

How, without a window in which a FIFO could be opened blocking: the file is opened with
O_NONBLOCK (opening a FIFO then returns at once, and opening a socket fails with ENXIO), and
`fstat` on that descriptor says what was opened: anything but a regular file is closed again
and refused (`NotRegularFile`, one line naming the file and what it is). For files handed by
name to a library that opens them itself (pyarrow and DuckDB read Parquet by path),
`require_regular` checks with `stat` just before; a file swapped between the two is a race out
of scope, like a folder swapped for a link (store/safe_paths.py).

Small files are read with a bound (`read_regular(path, limit)`): a pointer or a manifest of
gigabytes is damage, not something to read whole, so it is refused in one line naming its size
(`FileTooLarge`). Both errors are OSErrors too, so code that treats an unreadable file as a
miss (a cache entry, a job record) keeps doing so.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

from evalcore.errors import StoreError

MB = 2 ** 20
# What the store's small files may weigh (docs/reliability.md, "Bounds"): the marker holds one
# number; a pointer, a manifest, a judge cache entry or a job record a few kilobytes to a few
# megabytes. Far more is damage (or /dev/zero's worth of bytes), never data to read whole.
MARKER_MAX_BYTES = 1 * MB
METADATA_MAX_BYTES = 64 * MB

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"))


class NotRegularFile(StoreError, OSError):
    """A file evalcore reads or writes as its own is something else: a FIFO, a socket, a
    device, a folder. `why` is the phrase alone ("is a FIFO (named pipe), not a regular file"),
    for messages that name the file themselves."""

    def __init__(self, path: object, kind: str):
        self.path = path
        self.kind = kind
        self.why = f"is {kind}, not a regular file"
        super().__init__(f"{path} {self.why}")


class FileTooLarge(StoreError, OSError):
    """A small file of the store (a pointer, a manifest, a marker...) is larger than any that
    evalcore writes: damage, refused instead of read whole."""

    def __init__(self, path: object, size: int, limit: int):
        self.path = path
        self.size = size
        self.limit = limit
        self.why = f"is {size:,} bytes, more than such a file ever holds ({limit:,} bytes at most)"
        super().__init__(f"{path} {self.why}")


def kind_of(mode: int) -> str | None:
    """What a file of this `st_mode` is, as a phrase ("a FIFO (named pipe)"); None for a
    regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def special_kind(path: os.PathLike | str, follow: bool = False) -> str | None:
    """What `path` is when it exists and is neither a regular file, a folder nor (unless
    `follow`) a symbolic link: "a FIFO (named pipe)", "a socket", "a character device"...; None
    otherwise (missing included). Never opens it."""
    try:
        mode = os.stat(path).st_mode if follow else os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return None
    return kind_of(mode)


def require_regular(path: os.PathLike | str) -> None:
    """NotRegularFile when `path` exists and is not a regular file (a link to one is fine:
    checked by `stat`, for readers that open files by name themselves: pyarrow, DuckDB). A
    missing file is left to the reader, which says so in its own words."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    kind = kind_of(mode)
    if kind is not None:
        raise NotRegularFile(path, kind)


def open_regular(path: os.PathLike | str, flags: int = os.O_RDONLY, mode: int = 0o644,
                 follow: bool = True) -> int:
    """A descriptor of `path` opened with `flags`, proven a regular file, never blocking on the
    way: O_NONBLOCK for the open itself (cleared again before it is returned), then fstat.
    `follow=False` adds O_NOFOLLOW (a link is refused by the system). NotRegularFile for a FIFO,
    a socket, a device, a folder; other OSErrors as the system raised them."""
    extra = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags | extra, mode)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP):
            kind = special_kind(path, follow=follow) or ("a folder" if exc.errno == errno.EISDIR else None)
            if kind:
                raise NotRegularFile(path, kind) from None
        raise
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


_FLAGS = {"rb": os.O_RDONLY, "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
          "a+b": os.O_RDWR | os.O_CREAT | os.O_APPEND, "r+b": os.O_RDWR}


def open_file(path: os.PathLike | str, how: str = "rb", follow: bool = True) -> IO[bytes]:
    """`open(path, how)` for the binary modes evalcore uses on its own files ("rb", "wb", "xb",
    "a+b", "r+b"), through `open_regular`."""
    fd = open_regular(path, _FLAGS[how], follow=follow)
    try:
        return os.fdopen(fd, how)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: os.PathLike | str, limit: int | None = None, follow: bool = True) -> bytes:
    """The bytes of a regular file, read without blocking on anything else (open_regular); with
    `limit`, FileTooLarge for a file larger than that, found by its size before anything is
    read, and by the bytes read (a file that grows meanwhile)."""
    fd = open_regular(path, follow=follow)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if limit is not None and size > limit:
            raise FileTooLarge(path, size, limit)
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise FileTooLarge(path, len(data), limit)
    return data


def write_new(path: os.PathLike | str, data: bytes) -> None:
    """Write a new file that must not exist yet (a temporary or uniquely named file): O_EXCL,
    so nothing found under that name (a FIFO, a link) is ever opened for writing."""
    with open_file(path, "xb", follow=False) as fh:
        fh.write(data)
