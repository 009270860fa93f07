"""RunStore: a directory of runs — listing, resolving, creating, publishing, deleting.

The directory is a local folder or `s3://bucket/prefix` (store/fs.py says what differs; on
object storage a staged import is published by copying it into place with its run.json last,
and a delete removes run.json first: either way a run appears or vanishes in one step).

The layout and its reasons are in store/layout.py; writing in store/writer.py; compaction in
store/compaction.py; the DuckDB views readers get in store/views.py. Several processes may
write one store at once (two imports, a live run, a re-score): part files and staging folders
carry unique names, run.json changes under an exclusive lock, and compaction of a run is
serialised by its own lock.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from evalcore.store import staging as _staging
from evalcore.errors import StoreError
from evalcore.store import fs as _fs
from evalcore.store import safe_paths as _safe
from evalcore.store.fs import Location
from evalcore.store.layout import (
    FORMAT_VERSION,
    POINTER,
    RUN_ID_RE,
    RUN_TABLES,
    SHARED_DIR,
    STORE_MARKER,
    TRASH_DIR,
    RunDamaged,
    check_run_id,
    default_root,
    empty_pointer,
    is_legacy,
    manifest_way_out,
    odd_file,
    pending_parts,
    run_identity_problem,
    store_format,
    write_atomic_bytes,
    write_pointer,
)
from evalcore.store.run_refs import resolve_run
from evalcore.store.shared_cache import SharedCache

if TYPE_CHECKING:  # the writing side (compaction, writers, pyarrow) is imported by what writes: a reader never does
    from evalcore.schemas import Annotation, RunManifest
    from evalcore.store.compaction import Compaction
    from evalcore.store.health import Repair, RunCheck
    from evalcore.store.writer import RunWriter

log = logging.getLogger(__name__)


def _digest(*texts: str) -> str:
    """16 hex digits of sha1 over the texts (cache keys, never security)."""
    import hashlib

    return hashlib.sha1("\n".join(texts).encode()).hexdigest()[:16]


def _has_manifest(path: Location) -> bool:
    """Whether a folder holds a run: a run.json, or (a damaged run, listed apart) a link or
    something other than a file in its place (a FIFO: never opened, store/layout.odd_file)."""
    return path.is_file() or (not _fs.is_remote(path) and os.path.lexists(path) and not path.is_dir())


class RunStore:
    """A directory of runs (a folder or `s3://bucket/prefix`). Cheap to create; holds no
    open handles."""

    def __init__(self, root: str | Path | None = None):
        self.root: Location = _fs.location(root) if root is not None else default_root()

    @property
    def remote(self) -> bool:
        """True for a store on object storage."""
        return _fs.is_remote(self.root)

    # ---- paths -------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Location:
        """The folder of a run: `<root>/<run_id>`, never resolved through a link (a run folder
        that is a link is a damaged run, not another run's folder: store/layout.py)."""
        return self.root.resolve() / check_run_id(run_id)

    def confine(self, path: Location) -> Location:
        """`path`, proven to lie inside this store (or, for a store on object storage, inside
        this machine's folder for it: `local_shared_dir`) and not reached through a link;
        OutsideStore otherwise. For the dashboard's job records and uploads (store/jobs.py)."""
        if self.remote and not _fs.is_remote(path):
            return _safe.inside(self._local_area(), path)
        return _safe.inside(self.root, path)

    def annotations_dir(self) -> Location:
        return self.root / SHARED_DIR / "annotations"

    def marker_path(self) -> Location:
        return self.root / SHARED_DIR / STORE_MARKER

    def check_format(self) -> int:
        """The store's format version (layout.store_format); a newer one than this code
        understands is refused, and so is a marker reached through a symbolic link."""
        return store_format(self.root, self.marker_path())

    def _mark(self) -> None:
        """Write the store marker on the first write that publishes something. A store of an
        older format is upgraded first: its format-1 runs are compacted (store/compaction.py),
        so a marker saying 2 means every run has canonical files."""
        path = self.marker_path()
        if self.check_format() < FORMAT_VERSION:
            self.upgrade()
        if self.check_format() < FORMAT_VERSION or not path.exists():
            _safe.make_dirs(self.root, path.parent)
            write_atomic_bytes(path, json.dumps({"format_version": FORMAT_VERSION}).encode(), within=self.root)

    def compact(self, run_id: str) -> Compaction:
        """Publish a run's pending part files (see store/compaction.py)."""
        from evalcore.store.compaction import compact

        return compact(self.run_dir(check_run_id(run_id)))

    def state_token(self) -> str:
        """A short fingerprint of everything readers can see: it changes when any run is created,
        published (its pointer replaced), edited (run.json) or deleted, or an annotation added.
        Cheap (two stats per run), so a dashboard can key its caches on it: a page asks for it
        before each of its reads."""
        return _digest(*self.state_parts())

    def state_parts(self) -> tuple[str, str]:
        """state_token's two halves: (the runs' fingerprint, the annotations' fingerprint).

        Why apart: a label saved changes only the second, so a reader keyed on the runs' half
        (store/views.py's kept databases) keeps every run view and re-reads the labels alone:
        the annotator's next answer does not wait for the run's views to be built again."""
        runs_parts: list[str] = []
        ann_parts: list[str] = []
        if self.root.is_dir():
            runs = self._local_run_files() if not self.remote else (
                (run_id, self.root / run_id) for run_id in self.run_ids())
            for run_id, run_dir in runs:
                has_pointer = False
                for name in ("run.json", POINTER):
                    try:
                        runs_parts.append(f"{run_id}/{name}:{_fs.version(run_dir / name)}")
                        has_pointer = name == POINTER
                    except FileNotFoundError:
                        runs_parts.append(f"{run_id}/{name}:-")
                if not has_pointer and is_legacy(run_dir):  # no pointer: maybe format 1
                    runs_parts.extend(p.name for t in RUN_TABLES for p in pending_parts(run_dir, t))
            ann = self.annotations_dir()
            if ann.is_dir():
                ann_parts.extend(sorted(p.name for p in ann.glob("*.parquet")))
        return _digest("\n".join(runs_parts)), _digest("\n".join(ann_parts))

    def _local_run_files(self) -> list[tuple[str, Path]]:
        """(run id, folder) of every run of a local store, as run_ids() lists them, from one
        directory scan (no path resolving: state_token only stats files inside them)."""
        self.check_format()
        root = Path(self.root)
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if RUN_ID_RE.match(e.name) and e.is_dir())
        return [(name, root / name) for name in names if _has_manifest(root / name / "run.json")]

    def check(self, run_ids: list[str] | None = None, deep: bool = True) -> list["RunCheck"]:
        """`evalcore store check`: every file every pointer names opened (store/health.py)."""
        from evalcore.store.health import check_run

        return [check_run(self.run_dir(r), deep=deep) for r in (self.run_ids() if run_ids is None else run_ids)]

    def linked_folders(self) -> list[str]:
        """`store check`: the store's own folders outside its runs that are, or hold, symbolic
        links, one line each (store/run_links.py)."""
        from evalcore.store.run_links import store_links

        return store_links(self.root)

    def repair(self, run_id: str) -> "Repair":
        """`evalcore store repair`: rebuild a lost or unreadable pointer from data/ (store/health.py)."""
        from evalcore.store.health import repair_run

        return repair_run(self.run_dir(self.resolve(run_id)))

    def upgrade(self, run_ids: list[str] | None = None) -> list[str]:
        """`evalcore store upgrade`: compact every run that lacks a derived table (summaries,
        metric_wide: written by a newer evalcore than the one that last compacted it) or is
        still in format 1, so readers stop computing them on every read. Returns the runs
        upgraded. Safe to interrupt: each run is one ordinary compaction."""
        from evalcore.store.compaction import compact
        from evalcore.store.layout import is_legacy, read_pointer
        from evalcore.store.summary import DERIVED_TABLES

        done = []
        for run_id in self.run_ids() if run_ids is None else run_ids:
            run_dir = self.run_dir(run_id)
            if not is_legacy(run_dir) and all(t in read_pointer(run_dir)["files"] for t in DERIVED_TABLES):
                continue
            if compact(run_dir, force_summary=True).changed:
                done.append(run_id)
        return done

    def quarantined(self) -> list[tuple[Location, int]]:
        """Part files set aside as unreadable, in every run, with their sizes."""
        from evalcore.store.quarantine import quarantined_files

        return [item for run_id in self.run_ids() for item in quarantined_files(self.run_dir(run_id))]

    def pending_rows(self, run_id: str, table: str) -> int:
        """Rows a writer of the run has written but not yet published (a live run's progress)."""
        from evalcore.store.compaction import pending_rows

        return pending_rows(self.run_dir(check_run_id(run_id)), table)

    def shared_dir(self, name: str) -> Location:
        """A store-level folder for caches (judge, embeddings) beside the runs; OutsideStore
        when it (or `_shared`) is a link out of the store."""
        if not re.match(r"^[a-z_]+$", name):
            raise StoreError(f"invalid shared folder name {name!r}")
        return _safe.inside(self.root, self.root / SHARED_DIR / name)

    def shared_cache(self, name: str, local: bool = False) -> SharedCache:
        """The area of one shared cache (`_shared/<name>`: the judge cache, the embedding
        caches), through which the cache reads and writes its files (store/shared_cache.py).
        `local`: a cache whose files need a local file system (the embedding caches' .npz
        parts and merge lock) gets, for a store on object storage, this machine's folder for
        it (`local_shared_dir`). OutsideStore when the folder is a link out of the store."""
        if local and self.remote:
            return SharedCache(self._local_area(), self.local_shared_dir(name))
        return SharedCache(self.root, self.shared_dir(name))

    def local_shared_dir(self, name: str) -> Path:
        """`shared_dir` where its users need a local folder (the embedding caches' .npz files
        and locks, the dashboard's job logs and uploads): the store's own for a local store;
        for a store on object storage, a folder on this machine named after the store URL
        (EVALCORE_CACHE_DIR, else ~/.cache/evalcore), so those stay per machine."""
        if not self.remote:
            return Path(self.shared_dir(name))
        self.shared_dir(name)  # the same name check
        return _safe.inside(self._local_area(), self._local_area() / name)

    def _local_area(self) -> Path:
        """This machine's folder for a store on object storage (see local_shared_dir)."""
        import hashlib

        base = Path(os.environ.get("EVALCORE_CACHE_DIR") or Path.home() / ".cache" / "evalcore")
        return base / "object-stores" / hashlib.sha256(str(self.root).encode()).hexdigest()[:16]

    # ---- runs --------------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        if self.remote:
            self.check_format()  # also: one clear line for a missing bucket or credentials
            try:
                entries = list(self.root.iterdir())
            except FileNotFoundError:
                return []
        elif not self.root.is_dir():
            return []
        else:
            self.check_format()
            entries = self.root.iterdir()
        return sorted(p.name for p in entries  # a run.json that is a link is a damaged run (manifest)
                      if p.is_dir() and RUN_ID_RE.match(p.name) and _has_manifest(p / "run.json"))

    def exists(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / "run.json").is_file()

    def manifest(self, run_id: str) -> RunManifest:
        """The run's manifest; RunDamaged when the folder is not the run it names (a copy, a
        renamed folder, an edited run.json: store/layout.run_identity_problem)."""
        run_dir = self.run_dir(run_id)
        path = run_dir / "run.json"
        odd = odd_file(path)  # its run would be what another file says (or a pipe): never read through one
        if odd:
            raise RunDamaged(run_dir, odd, hint=manifest_way_out(run_id, linked=path.is_symlink()))
        if not path.is_file():
            raise StoreError(f"no run {run_id!r} in store {self.root}")
        from evalcore.store.manifest_file import read_manifest  # the models load when a manifest is read

        manifest = read_manifest(path)
        problem = run_identity_problem(run_dir, manifest.run_id)
        if problem:
            raise RunDamaged(run_dir, problem, name=manifest.name)
        return manifest

    def manifests(self, problems: list[str] | None = None,
                  damaged: dict[str, RunDamaged] | None = None) -> list[RunManifest]:
        """Every readable run's manifest, oldest first: one per run folder, whose id is the
        folder's. A run whose manifest cannot be read (or is from a newer evalcore) is left out;
        pass `problems` to collect why, for a warning. A folder that is not the run it names is
        left out too, and collected in `damaged` (readers list it apart)."""
        out = []
        for run_id in self.run_ids():
            try:
                out.append(self.manifest(run_id))
            except RunDamaged as exc:
                if damaged is not None:
                    damaged[run_id] = exc
            except (StoreError, ValueError) as exc:
                if problems is not None:
                    problems.append(str(exc))
        return sorted(out, key=lambda m: m.created_at)

    def resolve(self, ref: str) -> str:
        """A run id from an id, a run name, a unique id prefix, or `latest` (store/run_refs.py:
        an exact match wins over a prefix)."""
        return resolve_run(ref, self.run_ids(), self.manifests, where=f"store {self.root}")

    def open_run(self, run_id: str) -> RunWriter:
        """A writer for an existing run. A format-1 run, or one with parts left by a writer that
        died, is compacted first, so what the new writer reads back is the run's true state."""
        from evalcore.store.writer import RunWriter

        run_id = self.resolve(run_id)
        writer = RunWriter(run_id, self.run_dir(run_id))
        writer.publish()
        self._mark()
        return writer

    def create_run(self, manifest: RunManifest) -> RunWriter:
        """Create a run in place (live runs: visible while they proceed, resumable).

        The run exists once its folder holds a pointer and a manifest; if either cannot be
        written (a full disk, a manifest that cannot be encoded) the folder is removed again,
        so a failed start leaves no empty run behind."""
        from evalcore.store.writer import RunWriter

        directory = _safe.inside(self.root, self.run_dir(manifest.run_id))
        self.check_format()
        if directory.exists() or directory.is_symlink():
            raise StoreError(f"run {manifest.run_id!r} already exists")
        directory.mkdir(parents=True)
        if self.remote:  # claim the id: the pointer is written only if nobody else wrote it
            try:
                write_pointer(directory, empty_pointer())
            except _fs.Conflict:
                raise StoreError(f"run {manifest.run_id!r} already exists") from None
        try:
            self._mark()
            writer = RunWriter(manifest.run_id, directory)
            if not self.remote:
                write_pointer(directory, empty_pointer())
            writer.write_manifest(manifest)
        except BaseException:
            _safe.remove_tree(self.root, directory)
            raise
        return writer

    @contextmanager
    def staged_run(self, manifest: RunManifest) -> Iterator[RunWriter]:
        """Build a run out of sight and publish it whole, or not at all.

        On any exception (including Ctrl-C) the staging folder is removed and nothing in
        the store changes; on success it is renamed into place in one step. A process killed
        outright cannot clean up, so the folder carries a lock held for the writer's life, and
        each new staged run first sweeps folders whose writer is gone (see evalcore/store/staging.py).
        """
        final = _safe.inside(self.root, self.run_dir(manifest.run_id))
        self.check_format()
        if final.exists() or final.is_symlink():
            raise StoreError(f"run {manifest.run_id!r} already exists")
        if self.remote:
            from evalcore.store.remote_staging import staged
        else:
            from evalcore.store.local_staging import staged
        with staged(self.root, manifest, final, mark=self._mark) as writer:
            yield writer

    def clean_staging(self, dry_run: bool = False, kept: list[Path] | None = None) -> list[_staging.Removed]:
        """Remove staging folders left by imports that were killed; return each with the bytes
        it held. A folder whose writer still lives is never touched (listed in `kept` if given).
        With `dry_run`, only report what would go."""
        if self.remote:
            from evalcore.store import remote_staging

            return remote_staging.sweep(self.root, dry_run=dry_run, kept=kept)
        return _staging.sweep(self.root, dry_run=dry_run, kept=kept)

    def clean_trash(self, dry_run: bool = False) -> list[_staging.Removed]:
        """Remove runs a killed `delete` left half-removed in .trash (never visible to readers)."""
        if self.remote:  # a remote delete needs no trash: its run.json goes first
            return []
        return _staging.sweep_trash(self.root, dry_run=dry_run)

    def delete_run(self, run_id: str) -> str:
        from evalcore.store.compaction import compaction_lock

        run_id = self.resolve(run_id)
        if self.remote:  # no rename on S3: the manifest goes first, so the run vanishes at once
            run_dir = self.run_dir(run_id)
            with compaction_lock(run_dir):
                _safe.unlink(self.root, run_dir / "run.json")
                _safe.remove_tree(self.root, run_dir)
            return run_id
        trash = self.root / TRASH_DIR / f"{run_id}-{uuid.uuid4().hex[:6]}"
        run_dir = _safe.inside(self.root, self.run_dir(run_id))
        _safe.make_dirs(self.root, trash.parent)
        with compaction_lock(run_dir):  # not in the middle of a compaction
            _safe.move(self.root, run_dir, trash)
        _safe.remove_tree(self.root, trash)
        return run_id

    # ---- annotations (append-only) -----------------------------------------------------
    def append_annotations(self, annotations: list[Annotation]) -> Path | None:
        from evalcore.schemas.results import check_label_time
        from evalcore.store.parquet_write import write_part
        from evalcore.store.tables import annotation_row

        for a in annotations:  # the time again, whoever built the label: a future one outranks later ones
            check_run_id(a.run_id)
            check_label_time(a)
        rows = [annotation_row(a) for a in annotations]
        self.check_format()
        if rows:
            self._mark()
        return write_part(self.annotations_dir(), "annotations", rows, within=self.root)
