"""Symbolic links and other things that are no file (a FIFO, a socket, a device node) inside a
run folder: found at any depth, named as damage, removed by repair.

Why this module: evalcore makes only real files and folders in a store, so a link in a run
was put there by something else, and the store never writes, moves or deletes through one
(store/safe_paths.py). A link a writer would trip over (a part file, `quarantine/parts`, a
lock file) once left a run that every write refused while `store check` called it healthy,
with no way out. Now every link in a run, at any depth, is damage: `store check` names each
one with its way out, and writers refuse the run until it is gone. The same holds for a FIFO,
a socket or a device node in a run (`Link.kind` says which): opened as a file, a FIFO blocks its
reader for ever and `/dev/zero`'s device feeds it without end, so nothing of the store ever
opens one (evalcore/common/regular_files.py) and the run is damage until it is gone.

The way out is `evalcore store repair RUN`, which removes each link itself — never what it
points to — unless the run's rows are read through it: `run.json`, the `data/` folder, a data
file the pointer names as current (every data file, while the pointer cannot be read), and a
format-1 run's `<table>/` folders and files. Removing one of those would take the run's rows
out of the run, so repair refuses, naming it: replace the link by a copy of what it points to.
A FIFO, socket or device node holds no bytes of the run, so repair removes it wherever it is,
except in place of `run.json`: repair cannot make a manifest (layout.manifest_way_out says what
to do). Object storage has neither: nothing to find there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from evalcore.common.regular_files import special_kind
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import (
    DATA_DIR,
    RUN_TABLES,
    SHARED_DIR,
    STAGING_DIR,
    TRASH_DIR,
    RunDamaged,
    is_legacy,
    manifest_way_out,
    read_pointer,
    run_root,
)


LINK = "a symbolic link"


@dataclass(frozen=True)
class Link:
    """One symbolic link (or FIFO, socket, device node: `kind`) in a run: where it is (relative
    to the run folder), where a link points, and whether the run's rows are read through it
    (repair keeps those)."""

    rel: str
    target: str
    holds_rows: bool
    kind: str = LINK

    @property
    def is_link(self) -> bool:
        return self.kind == LINK

    def problem(self) -> str:
        if self.is_link:
            return f"{self.rel} is a symbolic link (to {self.target})"
        return f"{self.rel} is {self.kind}, not a regular file"

    def way_out(self, run_id: str) -> str:
        if not self.is_link:
            if self.holds_rows:  # run.json: repair cannot make a manifest
                return manifest_way_out(run_id, linked=False)
            return (f"evalcore never makes one and never opens one; it holds no data: `evalcore store repair {run_id}` "
                    "removes it")
        if self.holds_rows:
            return ("the run is read through it, so `evalcore store repair` does not remove it: replace the link "
                    "by a copy of what it points to")
        return (f"evalcore never writes through a link in a run; `evalcore store repair {run_id}` removes the link "
                "itself, never what it points to")

    def removed(self) -> str:
        """What `store repair` says it did."""
        if self.is_link:
            return f"removed the link {self.rel} (to {self.target}); what it points to is untouched"
        return f"removed {self.rel}: it was {self.kind}, not a regular file"


def links_in(run_dir: Location) -> list[Link]:
    """Every symbolic link, FIFO, socket or device node inside the run folder, at any depth
    (never followed, never opened), sorted. The run folder itself being a link is
    run_identity_problem's to say."""
    found = _odd_entries_below(run_dir)
    if not found:
        return []
    holds = _rows_behind(run_dir)
    return [Link(rel, _safe.link_target(run_dir / rel), holds(rel)) if kind == LINK
            else Link(rel, "", rel == "run.json", kind) for rel, kind in found]


def _odd_entries_below(folder: Location) -> list[tuple[str, str]]:
    """(path relative to `folder`, what it is) of every entry inside a local folder, at any
    depth, that is neither a folder nor a regular file: links (never followed), FIFOs,
    sockets, device nodes. Sorted."""
    if _fs.is_remote(folder) or os.path.islink(folder) or not os.path.isdir(folder):
        return []
    found: list[tuple[str, str]] = []
    folders = [""]
    while folders:
        rel = folders.pop()
        try:
            with os.scandir(os.path.join(folder, rel)) as entries:
                for entry in entries:
                    here = f"{rel}/{entry.name}" if rel else entry.name
                    if entry.is_symlink():
                        found.append((here, LINK))
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(here)
                    elif not entry.is_file(follow_symlinks=False):
                        found.append((here, special_kind(entry.path) or "not a regular file"))
        except OSError:  # unreadable or gone meanwhile: nothing to find there
            continue
    return sorted(found)



def store_links(root: Location) -> list[str]:
    """The store's own folders outside its runs that are symbolic links, or hold one: `.staging`
    and `.trash` themselves (what is in them is swept, links removed and never followed), and
    `_shared` at any depth (the marker, annotations, caches, jobs). One line each, for `store
    check`: the store never writes through a link (store/safe_paths.py), and reads its marker
    through none. A FIFO, socket or device node there is named the same way (never opened)."""
    if _fs.is_remote(root):
        return []
    found = [(name, LINK) for name in (STAGING_DIR, TRASH_DIR, SHARED_DIR) if os.path.islink(root / name)]
    found += [(name, kind) for name in (STAGING_DIR, TRASH_DIR, SHARED_DIR)
              for kind in [special_kind(root / name)] if kind]
    found += [(f"{SHARED_DIR}/{rel}", kind) for rel, kind in _odd_entries_below(root / SHARED_DIR)]
    found += [(rel, FILE) for rel in (STAGING_DIR, TRASH_DIR, SHARED_DIR, *(f"{SHARED_DIR}/{n}" for n in SHARED_FOLDERS))
              if os.path.isfile(root / rel) and not os.path.islink(root / rel)]
    return [_store_line(root, rel, kind) for rel, kind in sorted(found)]


FILE = "a file"
# the folders under _shared the store hands out (annotations; shared_dir/local_shared_dir users)
SHARED_FOLDERS = ("annotations", "judge_cache", "embeddings", "app_jobs", "app_uploads", "listing")


def _store_line(root: Location, rel: str, kind: str) -> str:
    if kind == LINK:
        return (f"{rel} is a symbolic link (to {_safe.link_target(root / rel)}); the store never writes through one: "
                "replace it by a real folder or file (a copy of what it points to), or remove it")
    if kind == FILE:
        return f"{rel} is a file, not a folder; evalcore never makes one there: move it out of the store or remove it"
    return f"{rel} is {kind}, not a regular file or folder; evalcore never makes one and never opens one: remove it"


def _rows_behind(run_dir: Location):
    """A test for "the run's rows are read through this link" (see the module docstring)."""
    legacy = is_legacy(run_dir)
    try:
        current: set[str] | None = set(read_pointer(run_dir).get("files", {}).values())
    except RunDamaged:
        current = None  # cannot tell which data file is current: each may be

    def holds(rel: str) -> bool:
        top = rel.split("/", 1)[0]
        if rel in ("run.json", DATA_DIR) or (legacy and top in RUN_TABLES):
            return True
        return top == DATA_DIR and (current is None or rel in current)

    return holds


def remove_links(run_dir: Location, links: list[Link]) -> list[str]:
    """Remove each link itself (its target untouched), for `store repair`; one line each."""
    done = []
    for link in links:
        _safe.unlink(run_root(run_dir), run_dir / link.rel)
        done.append(link.removed())
    return done
