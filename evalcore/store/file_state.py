"""A fingerprint of every file a reading of the runs can see, from the file system's own records.

Why: `evalcore runs` is the command typed most, and most of its start went to loading DuckDB and
the manifest models to compute again a listing of files that had not changed since the last one
(docs/benchmarks.md, "CLI start"). A result saved under this fingerprint may be reused only
while it is unchanged, and it changes when any file a reader opens does:

- it covers the store marker, the names and kinds of the root's entries, and every entry (files
  and folders) under each run folder and under the annotations folder, each with its inode, size,
  mtime and ctime in nanoseconds. A write changes mtime and ctime; a chmod or `touch -d` changes
  ctime, which no user can set back; an atomic replace gives a new inode;
- timestamps advance in ticks, so a file written twice within one tick keeps its stamps. As git
  does for its index, a state is `settled` only when every stamp is older than the moment it was
  taken by more than the longest tick the file system can have; only a settled state may be saved
  beside a result, so any later edit falls in a later tick and changes the fingerprint. That wait
  is SETTLE_SECONDS (2 s: FAT's mtime, network file systems whose server sets the stamps) unless
  every entry lies on a local Linux file system the kernel stamps (FINE_TYPES, found by device in
  /proc/self/mountinfo) and every ctime has a sub-second part (a file system storing whole
  seconds has none). There a stamp is the kernel's coarse clock, which trails the real time by a
  tick or two (4 ms each at HZ=250, 10 ms at HZ=100; ~7 ms measured here), and the wait is
  FINE_SETTLE_SECONDS: a command that has just written can save what it reads a moment later
  (listing_cache.save_after_write). ctime, not mtime, decides: no user can set it. A btrfs
  subvolume's device is none of mountinfo's: such a device's type comes from statfs(2), trusted
  for the file systems that give subvolumes devices of their own (STATFS_TYPES) and no other
  (overlay's lower files have such a device too, but statfs names overlay, not the file system
  that stamped them);
- a write sets the stamps when it begins, and one still copying its bytes when the wait ends, or
  one through a shared mapping, changes no stamp afterwards: the small files a listing reads
  whole (the marker, each run's run.json and table pointer) enter by their bytes too. evalcore
  never rewrites any other file in place (every table file is new, renamed into place); another
  program that does, slowly or through a mapping, can go unseen, as in git's index;
- it names the store's path as given and as resolved (messages quote it: a store moved or
  mounted elsewhere keeps its inodes and stamps) and who reads (user, groups and, on Linux, the
  effective capabilities: a manifest one reader may open another cannot);
- None (nothing may be reused) for a store on object storage (no ctime there); when a run
  folder, or anything under it or under the annotations folder, is a symbolic link or neither a
  regular file nor a folder (what a link points to can change while the link's stamps do not);
  and when the runs hold more than MAX_ENTRIES entries (stray files by the hundred thousand: the
  scan would cost more than the reading it saves).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.store.layout import POINTER, RUN_ID_RE

if TYPE_CHECKING:
    from evalcore.store.runstore import RunStore

SETTLE_SECONDS = 2.0  # the longest tick of any file system's stamps
FINE_SETTLE_SECONDS = 0.05  # five times the kernel's coarsest clock tick (HZ=100: 10 ms)
# local file systems whose stamps are the kernel's clock in nanoseconds (mountinfo's type names);
# a network or FUSE file system's server sets its own, maybe from a clock seconds apart
FINE_TYPES = frozenset({"ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "overlay"})
# statfs(2)'s f_type of the same file systems (linux/magic.h; ext2/3/4 share one)
_MAGIC = {0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0x01021994: "tmpfs", 0xF2F52010: "f2fs",
          0x2FC12FC1: "zfs", 0xCA451A4E: "bcachefs", 0x794C7630: "overlay"}
STATFS_TYPES = frozenset({"btrfs", "zfs", "bcachefs"})
CONTENT_MAX_BYTES = 64 * 1024 * 1024  # the largest manifest or pointer a reader reads (fs.read_small)
MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class FileState:
    digest: str  # sha256 of every entry's name and stamps, the store's path and the reader
    settled: bool  # every stamp older than the moment it was taken by settle_ns: safe to save a result under
    entries: int  # how many entries it covers (a bound for what a saved result may weigh)
    marked: bool  # the store has its marker: it has published something (a plain folder gets nothing saved)
    newest: int = 0  # the newest stamp (ns since the epoch, mtime or ctime)
    settle_ns: int = int(SETTLE_SECONDS * 1e9)  # the wait a stamp needs before it can be trusted

    def settled_before(self, moment_ns: int) -> bool:
        """Every stamp older than `moment_ns` by the wait: a write made after that moment shows in
        a state taken later (a result read from `moment_ns` on may be saved under that state)."""
        return self.newest <= moment_ns - self.settle_ns


class _Unstable(Exception):
    """A link, a special file or too many entries where a reading would look: nothing may be reused."""


def reading_state(store: RunStore) -> FileState | None:
    """The fingerprint of what the store's readers see now, or None when it cannot be trusted
    (the module's rules; also when the store's root is not a folder: nothing to save beside).
    Refuses a store of a newer format, as every reading does (RunStore.check_format)."""
    if store.remote:
        return None
    root = os.fspath(store.root)
    if not os.path.isdir(root) or os.path.islink(root):
        return None
    store.check_format()
    taken = time.time_ns()
    scan = _Scan([f"root {root!r} {os.path.realpath(root)!r}", f"reader {_reader()}"])
    marked = True
    try:
        scan.devices.setdefault(os.stat(root).st_dev, root)
        marker = os.fspath(store.marker_path())
        scan.stamp("store.json", os.lstat(marker), marker, "marker", whole=True)
    except FileNotFoundError:
        scan.lines.append("marker -")
        marked = False
    except (_Unstable, OSError):
        return None
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if not RUN_ID_RE.match(entry.name):
                scan.lines.append(f"other {entry.name!r}")  # the store's own folders: only their names
                continue
            scan.walk(entry.path, entry.name)
        annotations = os.fspath(store.annotations_dir())
        if os.path.lexists(annotations):
            scan.walk(annotations, "annotations")
    except (_Unstable, OSError):
        return None
    digest = hashlib.sha256("\n".join(scan.lines).encode("utf-8", "surrogateescape")).hexdigest()
    settle_ns = int((FINE_SETTLE_SECONDS if scan.fine() else SETTLE_SECONDS) * 1e9)
    return FileState(digest, scan.newest <= taken - settle_ns, len(scan.lines), marked, scan.newest, settle_ns)


def _reader() -> str:
    """Who reads: what a reading can open depends on it (a root without its capabilities reads
    as any user does)."""
    caps = ""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            caps = next((line.split()[1] for line in fh if line.startswith("CapEff:")), "")
    except OSError:
        pass
    if not hasattr(os, "geteuid"):
        return "-"
    return f"{os.geteuid()} {os.getegid()} {sorted(os.getgroups())} {caps}"


class _Scan:
    """The lines a fingerprint hashes, the newest stamp, and what says how fine the stamps are."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.newest = 0
        self.devices: dict[int, str] = {}  # each device seen, and a path on it
        self.whole_seconds = False  # some ctime without a sub-second part

    def walk(self, path: str, rel: str) -> None:
        """Stamp `path` and, for a folder, everything under it, depth first without recursion (a
        folder nested thousands deep is a folder like any other); links never followed."""
        stack = [(path, rel)]
        while stack:
            path, rel = stack.pop()
            st = os.lstat(path)
            read_whole = rel.count("/") == 1 and rel.endswith(("/run.json", f"/{POINTER}"))
            self.stamp(rel, st, path, whole=read_whole)
            if len(self.lines) > MAX_ENTRIES:
                raise _Unstable("too many entries")
            if stat.S_ISDIR(st.st_mode):
                with os.scandir(path) as it:
                    children = sorted(((e.path, f"{rel}/{e.name}") for e in it), reverse=True)
                stack.extend(children)

    def stamp(self, rel: str, st: os.stat_result, path: str, kind: str = "entry", whole: bool = False) -> None:
        """One entry's line; `whole`: a file a listing reads whole (its bytes enter too)."""
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise _Unstable(rel)
        digest = f" {_content(path)}" if whole and stat.S_ISREG(st.st_mode) else ""
        self.lines.append(f"{kind} {rel!r} {st.st_mode:o} {st.st_uid}:{st.st_gid} {st.st_ino} {st.st_size} "
                          f"{st.st_mtime_ns} {st.st_ctime_ns}{digest}")
        self.newest = max(self.newest, st.st_mtime_ns, st.st_ctime_ns)
        self.devices.setdefault(st.st_dev, path)
        self.whole_seconds = self.whole_seconds or st.st_ctime_ns % 1_000_000_000 == 0

    def fine(self) -> bool:
        """Whether every stamp seen comes from the kernel's clock in nanoseconds (the module's rule)."""
        if self.whole_seconds or not self.devices or not sys.platform.startswith("linux"):
            return False  # (the rule reads Linux's mount table and statfs: elsewhere every stamp is coarse)
        types = _mounted_types()
        for device, path in self.devices.items():
            kind = types.get((os.major(device), os.minor(device)))
            if kind is None:
                kind = _statfs_type(path)
                kind = kind if kind in STATFS_TYPES else None
            if kind not in FINE_TYPES:
                return False
        return True


def _mounted_types() -> dict[tuple[int, int], str]:
    """{(major, minor): file system type} of every mount this process sees; empty where there is no
    /proc/self/mountinfo (not Linux: every stamp is then taken as coarse). A device mounted
    twice with two types (it cannot be) would make it coarse."""
    types: dict[tuple[int, int], str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields, sep, rest = line.partition(" - ")
                parts = fields.split()
                if not sep or len(parts) < 3 or not rest.split():
                    continue
                major, _, minor = parts[2].partition(":")
                if not (major.isdigit() and minor.isdigit()):
                    continue
                key, kind = (int(major), int(minor)), rest.split()[0]
                types[key] = kind if types.get(key, kind) == kind else "?"
    except OSError:
        return {}
    return types


def _content(path: str) -> str:
    """sha256 of a small file's bytes ("-" when it cannot be read: a reader cannot either; "large"
    past what a reader reads). Opened without following a link or waiting on a pipe put in its
    place since it was stamped (either makes the whole state untrusted)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Unstable(path) from None
        return "-"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unstable(path)
        digest, read = hashlib.sha256(), 0
        while chunk := os.read(fd, 1 << 20):
            read += len(chunk)
            if read > CONTENT_MAX_BYTES:
                return "large"
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return "-"
    finally:
        os.close(fd)


def _statfs_type(path: str) -> str | None:
    """The file system type of `path` by statfs(2)'s magic number, for a device mountinfo does not
    name (a btrfs subvolume's); None where statfs cannot be called (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(512)  # struct statfs is 120 bytes on 64-bit Linux
        if libc.statfs(os.fsencode(path), buf) != 0:
            return None
        width = ctypes.sizeof(ctypes.c_long)  # f_type, the struct's first field, is a long
        return _MAGIC.get(int.from_bytes(buf.raw[:width], sys.byteorder) & 0xFFFFFFFF)
    except (OSError, AttributeError, ValueError):
        return None
