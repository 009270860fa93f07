"""A fingerprint of every file a reading of the runs can see, from the file system's own records.

Why: `evalcore runs` is the command typed most, and most of its start went to loading DuckDB and
the manifest models to compute again a listing of files that had not changed since the last one
(docs/benchmarks.md, "CLI start"). A result saved under this fingerprint may be reused only
while it is unchanged, and it changes when any file a reader opens does:

- it covers the store marker, the names and kinds of the root's entries, and every entry (files
  and folders) under each run folder and under the annotations folder, each with its inode, size,
  mtime and ctime in nanoseconds. A write changes mtime and ctime; a chmod or `touch -d` changes
  ctime, which no user can set back; an atomic replace gives a new inode;
- timestamps advance in ticks of a few milliseconds, so a file written twice within one tick keeps
  its stamps. As git does for its index, a state is `settled` only when every stamp is at least
  SETTLE_SECONDS older than the moment it was taken; only a settled state may be saved beside a
  result, so any later edit falls in a later tick and changes the fingerprint;
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

import hashlib
import os
import stat
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.store.layout import RUN_ID_RE

if TYPE_CHECKING:
    from evalcore.store.runstore import RunStore

SETTLE_SECONDS = 2.0
MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class FileState:
    digest: str  # sha256 of every entry's name and stamps, the store's path and the reader
    settled: bool  # every stamp at least SETTLE_SECONDS old: safe to save a result under
    entries: int  # how many entries it covers (a bound for what a saved result may weigh)
    marked: bool  # the store has its marker: it has published something (a plain folder gets nothing saved)


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
    lines: list[str] = [f"root {root!r} {os.path.realpath(root)!r}", f"reader {_reader()}"]
    newest = 0
    marked = True
    try:
        marker = os.fspath(store.marker_path())
        newest = max(newest, _stamp("store.json", os.lstat(marker), lines, "marker"))
    except FileNotFoundError:
        lines.append("marker -")
        marked = False
    except (_Unstable, OSError):
        return None
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if not RUN_ID_RE.match(entry.name):
                lines.append(f"other {entry.name!r}")  # the store's own folders: only their names
                continue
            newest = max(newest, _walk(entry.path, entry.name, lines))
        annotations = os.fspath(store.annotations_dir())
        if os.path.lexists(annotations):
            newest = max(newest, _walk(annotations, "annotations", lines))
    except (_Unstable, OSError):
        return None
    digest = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
    return FileState(digest, newest <= taken - int(SETTLE_SECONDS * 1e9), len(lines), marked)


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


def _walk(path: str, rel: str, lines: list[str]) -> int:
    """Stamp `path` and, for a folder, everything under it, depth first without recursion (a
    folder nested thousands deep is a folder like any other); links never followed. The newest
    stamp seen."""
    newest = 0
    stack = [(path, rel)]
    while stack:
        path, rel = stack.pop()
        st = os.lstat(path)
        newest = max(newest, _stamp(rel, st, lines))
        if len(lines) > MAX_ENTRIES:
            raise _Unstable("too many entries")
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path) as it:
                children = sorted(((e.path, f"{rel}/{e.name}") for e in it), reverse=True)
            stack.extend(children)
    return newest


def _stamp(rel: str, st: os.stat_result, lines: list[str], kind: str = "entry") -> int:
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise _Unstable(rel)
    lines.append(f"{kind} {rel!r} {st.st_mode:o} {st.st_uid}:{st.st_gid} {st.st_ino} {st.st_size} "
                 f"{st.st_mtime_ns} {st.st_ctime_ns}")
    return max(st.st_mtime_ns, st.st_ctime_ns)
