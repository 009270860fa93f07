"""RunStore: a directory of runs — listing, resolving, creating, publishing, deleting.

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
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from evalcore import staging as _staging
from evalcore.errors import StoreError
from evalcore.schemas import Annotation, RunManifest
from evalcore.store.compaction import Compaction, compact, compaction_lock, pending_rows
from evalcore.store.layout import (
    FORMAT_VERSION,
    POINTER,
    RUN_ID_RE,
    RUN_TABLES,
    SHARED_DIR,
    STAGING_DIR,
    STORE_MARKER,
    TRASH_DIR,
    check_run_id,
    default_root,
    empty_pointer,
    is_legacy,
    pending_parts,
    write_atomic_bytes,
    write_part,
    write_pointer,
)
from evalcore.store.writer import RunWriter
from evalcore.tables import annotation_row

log = logging.getLogger(__name__)


class RunStore:
    """A directory of runs. Cheap to create; holds no open handles."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_root()

    # ---- paths -------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        path = (self.root / check_run_id(run_id)).resolve()
        if path.parent != self.root.resolve():
            raise StoreError(f"run id {run_id!r} escapes the store")
        return path

    def annotations_dir(self) -> Path:
        return self.root / SHARED_DIR / "annotations"

    def marker_path(self) -> Path:
        return self.root / SHARED_DIR / STORE_MARKER

    def check_format(self) -> int:
        """The store's format version; a newer one than this code understands is refused.

        A store written before the marker existed has none: that is version 1.
        """
        path = self.marker_path()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 1
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path}: unreadable store marker ({exc})") from exc
        try:
            version = json.loads(text).get("format_version")
        except (ValueError, AttributeError):
            version = None
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise StoreError(f"{path}: store marker has no valid format_version")
        if version > FORMAT_VERSION:
            raise StoreError(f"{path}: store format version {version} is newer than this evalcore "
                             f"understands ({FORMAT_VERSION}); upgrade evalcore to read it")
        return version

    def _mark(self) -> None:
        """Write the store marker on the first write that publishes something. A store of an
        older format is upgraded first: its format-1 runs are compacted (store/compaction.py),
        so a marker saying 2 means every run has canonical files."""
        path = self.marker_path()
        if self.check_format() < FORMAT_VERSION:
            self.upgrade()
        if self.check_format() < FORMAT_VERSION or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic_bytes(path, json.dumps({"format_version": FORMAT_VERSION}).encode())

    def upgrade(self) -> list[str]:
        """Compact every format-1 run into format 2; returns their ids. Readers keep working
        throughout (a run is read the old way until its pointer appears)."""
        done = []
        for run_id in self.run_ids():
            run_dir = self.run_dir(run_id)
            if is_legacy(run_dir):
                try:
                    compact(run_dir)
                except Exception as exc:  # one unreadable old run must not block every write
                    log.warning("could not upgrade run %s (it stays readable the old way): %s", run_id, exc)
                    continue
                done.append(run_id)
        return done

    def compact(self, run_id: str) -> Compaction:
        """Publish a run's pending part files (see store/compaction.py)."""
        return compact(self.run_dir(check_run_id(run_id)))

    def state_token(self) -> str:
        """A short fingerprint of everything readers can see: it changes when any run is created,
        published (its pointer replaced), edited (run.json) or deleted, or an annotation added.
        Cheap (a few stats per run), so a dashboard can key its caches on it."""
        import hashlib

        parts: list[str] = []
        if self.root.is_dir():
            for run_id in self.run_ids():
                run_dir = self.run_dir(run_id)
                for name in ("run.json", POINTER):
                    try:
                        st = (run_dir / name).stat()  # atomic replaces give a new inode every time
                        parts.append(f"{run_id}/{name}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}")
                    except FileNotFoundError:
                        parts.append(f"{run_id}/{name}:-")
                if is_legacy(run_dir):
                    parts.extend(p.name for t in RUN_TABLES for p in pending_parts(run_dir, t))
            ann = self.annotations_dir()
            if ann.is_dir():
                parts.extend(sorted(p.name for p in ann.glob("*.parquet")))
        return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]

    def pending_rows(self, run_id: str, table: str) -> int:
        """Rows a writer of the run has written but not yet published (a live run's progress)."""
        return pending_rows(self.run_dir(check_run_id(run_id)), table)

    def shared_dir(self, name: str) -> Path:
        """A store-level folder for caches (judge, embeddings) beside the runs."""
        if not re.match(r"^[a-z_]+$", name):
            raise StoreError(f"invalid shared folder name {name!r}")
        return self.root / SHARED_DIR / name

    # ---- runs --------------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        self.check_format()
        return sorted(p.name for p in self.root.iterdir()
                      if p.is_dir() and RUN_ID_RE.match(p.name) and (p / "run.json").is_file())

    def exists(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / "run.json").is_file()

    def _read_manifest_at(self, path: Path) -> RunManifest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise StoreError(f"{path}: unreadable run manifest ({exc})") from exc
        version = data.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise StoreError(f"{path}: store format version {version!r} is newer than this evalcore "
                             f"understands ({FORMAT_VERSION}); upgrade evalcore to read it")
        return RunManifest.model_validate(data)

    def manifest(self, run_id: str) -> RunManifest:
        path = self.run_dir(run_id) / "run.json"
        if not path.is_file():
            raise StoreError(f"no run {run_id!r} in store {self.root}")
        return self._read_manifest_at(path)

    def manifests(self, problems: list[str] | None = None) -> list[RunManifest]:
        """Every readable run's manifest, oldest first. A run whose manifest cannot be read (or
        is from a newer evalcore) is left out; pass `problems` to collect why, for a warning."""
        out = []
        for run_id in self.run_ids():
            try:
                out.append(self.manifest(run_id))
            except (StoreError, ValueError) as exc:
                if problems is not None:
                    problems.append(str(exc))
        return sorted(out, key=lambda m: m.created_at)

    def resolve(self, ref: str) -> str:
        """A run id from an id, a unique id prefix, a unique run name, or `latest`."""
        ids = self.run_ids()
        if ref == "latest":
            manifests = self.manifests()
            if not manifests:
                raise StoreError(f"store {self.root} has no runs")
            return manifests[-1].run_id
        check_run_id(ref)
        if ref in ids:
            return ref
        matches = [i for i in ids if i.startswith(ref)]
        if not matches:
            matches = [m.run_id for m in self.manifests() if m.name == ref]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise StoreError(f"no run matches {ref!r} in store {self.root} (see `evalcore runs`)")
        raise StoreError(f"{ref!r} is ambiguous: {', '.join(matches[:5])}")

    def open_run(self, run_id: str) -> RunWriter:
        """A writer for an existing run. A format-1 run, or one with parts left by a writer that
        died, is compacted first, so what the new writer reads back is the run's true state."""
        run_id = self.resolve(run_id)
        writer = RunWriter(self, run_id, self.run_dir(run_id))
        writer.publish()
        self._mark()
        return writer

    def create_run(self, manifest: RunManifest) -> RunWriter:
        """Create a run in place (live runs: visible while they proceed, resumable).

        The run exists once its folder holds a pointer and a manifest; if either cannot be
        written (a full disk, a manifest that cannot be encoded) the folder is removed again,
        so a failed start leaves no empty run behind."""
        directory = self.run_dir(manifest.run_id)
        self.check_format()
        if directory.exists():
            raise StoreError(f"run {manifest.run_id!r} already exists")
        directory.mkdir(parents=True)
        try:
            self._mark()
            writer = RunWriter(self, manifest.run_id, directory)
            write_pointer(directory, empty_pointer())
            writer.write_manifest(manifest)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return writer

    @contextmanager
    def staged_run(self, manifest: RunManifest) -> Iterator[RunWriter]:
        """Build a run out of sight and publish it whole, or not at all.

        On any exception (including Ctrl-C) the staging folder is removed and nothing in
        the store changes; on success it is renamed into place in one step. A process killed
        outright cannot clean up, so the folder carries a lock held for the writer's life, and
        each new staged run first sweeps folders whose writer is gone (see evalcore/staging.py).
        """
        final = self.run_dir(manifest.run_id)
        self.check_format()
        if final.exists():
            raise StoreError(f"run {manifest.run_id!r} already exists")
        _staging.sweep_quietly(self.root)
        staging = self.root / STAGING_DIR / manifest.run_id
        try:
            staging.mkdir(parents=True)
        except FileExistsError as exc:
            raise StoreError(f"run {manifest.run_id!r} is already being staged") from exc
        writer = RunWriter(self, manifest.run_id, staging)
        lock = None
        try:
            lock = _staging.hold_writer_lock(staging)
            write_pointer(staging, empty_pointer())
            writer.write_manifest(manifest)
            yield writer
            writer.publish()  # published runs are canonical from their first moment
            self._mark()  # before the rename: an import never fails after its run is visible
            # drop the lock file so the published run does not carry it; until the rename,
            # the folder is lock-less but young, which the age rule still protects
            (staging / _staging.LOCK_FILE).unlink(missing_ok=True)
            try:
                os.replace(staging, final)
            except OSError as exc:  # the id appeared meanwhile (ids are unique, so: a bug)
                raise StoreError(f"cannot publish run {manifest.run_id!r}: {exc}") from exc
            writer.dir = final
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            if lock is not None:
                lock.close()

    def clean_staging(self, dry_run: bool = False, kept: list[Path] | None = None) -> list[_staging.Removed]:
        """Remove staging folders left by imports that were killed; return each with the bytes
        it held. A folder whose writer still lives is never touched (listed in `kept` if given).
        With `dry_run`, only report what would go."""
        return _staging.sweep(self.root, dry_run=dry_run, kept=kept)

    def clean_trash(self, dry_run: bool = False) -> list[_staging.Removed]:
        """Remove runs a killed `delete` left half-removed in .trash (never visible to readers)."""
        return _staging.sweep_trash(self.root, dry_run=dry_run)

    def delete_run(self, run_id: str) -> str:
        run_id = self.resolve(run_id)
        trash = self.root / TRASH_DIR / f"{run_id}-{uuid.uuid4().hex[:6]}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        with compaction_lock(self.run_dir(run_id)):  # not in the middle of a compaction
            os.replace(self.run_dir(run_id), trash)
        shutil.rmtree(trash, ignore_errors=True)
        return run_id

    # ---- annotations (append-only) -----------------------------------------------------
    def append_annotations(self, annotations: list[Annotation]) -> Path | None:
        for a in annotations:
            check_run_id(a.run_id)
        rows = [annotation_row(a) for a in annotations]
        self.check_format()
        if rows:
            self._mark()
        return write_part(self.annotations_dir(), "annotations", rows)
