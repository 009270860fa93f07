"""The run store: the only module that knows the on-disk layout.

Layout (root = `--store`, `EVALCORE_STORE`, or `./runs`)::

    <root>/<run_id>/run.json                    manifest (RunManifest, no secrets)
    <root>/<run_id>/<table>/part-*.parquet      questions, responses, metrics, judge_calls, claims
    <root>/_shared/store.json                   store marker {"format_version": N} (absent = 1)
    <root>/_shared/annotations/part-*.parquet   human annotations (append-only, across runs)
    <root>/.staging/<run_id>/                   a run being imported; renamed into place when complete
                                                (abandoned ones are swept: evalcore/staging.py)
    <root>/.trash/                              runs being deleted

Part files are written under a temporary name and renamed, so a reader (DuckDB glob on
`*.parquet`) never sees half a file, and a crash loses at most the batch in flight.
Tables are append-only; DuckDB views keep the newest row per key (see tables.KEYS), which
is how a re-score or a resumed run replaces rows without rewriting files.

Several processes may write one store at once (two imports, a live run, a re-score): part
files and staging folders carry unique names, and the one read-modify-write file, run.json,
is updated under an exclusive lock (`RunWriter.manifest_lock`, fcntl.flock on a lock file).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

try:  # POSIX; elsewhere the manifest lock is a no-op (documented in docs/reliability.md)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore import staging as _staging
from evalcore.errors import StoreError
from evalcore.schemas import (
    Annotation,
    Claim,
    EvalQuestion,
    EvalResponse,
    JudgeCall,
    MetricValue,
    RunManifest,
)
from evalcore.tables import (
    ROW_BUILDERS,
    SCHEMAS,
    annotation_row,
    question_row,
    response_row,
    to_arrow,
)

FORMAT_VERSION = 1
DEFAULT_ROOT = "runs"
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SHARED_DIR = "_shared"
STAGING_DIR = _staging.STAGING_DIR
TRASH_DIR = ".trash"
STORE_MARKER = "store.json"
LOCK_NAME = ".run.json.lock"

_held = threading.local()  # lock files this thread holds, so the manifest lock is re-entrant


def default_root() -> Path:
    return Path(os.environ.get("EVALCORE_STORE") or DEFAULT_ROOT)


def check_run_id(run_id: str) -> str:
    """Reject ids that could escape the store or collide with its own folders."""
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id) or ".." in run_id:
        raise StoreError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (max 128)")
    return run_id


def new_run_id(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:40] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}-{uuid.uuid4().hex[:6]}"


def _write_atomic_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_part(directory: Path, table: str, rows: list[dict[str, Any]]) -> Path | None:
    if not rows:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    name = f"part-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.parquet"
    final = directory / name
    tmp = directory / f".{name}.tmp"
    arrow = to_arrow(table, rows)
    # no min/max statistics on float columns: Parquet statistics ignore NaN, which lets
    # readers wrongly conclude a column holds no NaN (see queries.py)
    stats = [f.name for f in arrow.schema if not pa.types.is_floating(f.type)]
    pq.write_table(arrow, tmp, compression="zstd", write_statistics=stats)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


class RunWriter:
    """Appends part files to one run. Used by import, the live runner and scoring."""

    def __init__(self, store: "RunStore", run_id: str, directory: Path):
        self.store = store
        self.run_id = run_id
        self.dir = directory

    def write_rows(self, table: str, rows: list[dict[str, Any]]) -> Path | None:
        if table not in SCHEMAS:
            raise StoreError(f"unknown table {table!r}")
        return _write_part(self.dir / table, table, rows)

    def write_questions(self, questions: list[EvalQuestion]) -> Path | None:
        return self.write_rows("questions", [question_row(self.run_id, q) for q in questions])

    def write_responses(self, responses: list[EvalResponse]) -> Path | None:
        return self.write_rows("responses", [response_row(self.run_id, r) for r in responses])

    def write_metrics(self, values: list[MetricValue]) -> Path | None:
        return self.write_rows("metrics", [ROW_BUILDERS["metrics"](v) for v in values])

    def write_judge_calls(self, calls: list[JudgeCall]) -> Path | None:
        return self.write_rows("judge_calls", [ROW_BUILDERS["judge_calls"](c) for c in calls])

    def write_claims(self, claims: list[Claim]) -> Path | None:
        """Claims written in one call form one set per (method, question, metric): they share one
        timestamp, so the `claims` view (newest set wins) replaces whole sets on re-scoring."""
        stamp = datetime.now(timezone.utc)
        rows = [ROW_BUILDERS["claims"](c) | {"computed_at": stamp} for c in claims]
        return self.write_rows("claims", rows)

    def read_manifest(self) -> RunManifest:
        return self.store._read_manifest_at(self.dir / "run.json")

    def write_manifest(self, manifest: RunManifest) -> None:
        if manifest.run_id != self.run_id:
            raise StoreError("manifest run_id does not match the writer's run")
        _write_atomic_bytes(self.dir / "run.json", manifest.model_dump_json(indent=2).encode())

    @contextmanager
    def manifest_lock(self) -> Iterator[None]:
        """Hold the run's manifest lock: read-modify-write of run.json inside it cannot lose a
        concurrent update from another process or thread. Re-entrant within one thread."""
        path = self.dir / LOCK_NAME
        held = getattr(_held, "paths", None)
        if held is None:
            held = _held.paths = {}
        key = str(path)
        if fcntl is None or held.get(key):
            held[key] = held.get(key, 0) + 1
            try:
                yield
            finally:
                held[key] -= 1
            return
        with open(path, "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def update_manifest(self, **changes: Any) -> RunManifest:
        """Set manifest fields, atomically with respect to other writers of this run."""
        with self.manifest_lock():
            manifest = self.read_manifest().model_copy(update=changes)
            manifest = RunManifest.model_validate(manifest.model_dump())
            self.write_manifest(manifest)
            return manifest

    def edit_manifest(self, edit: Callable[[RunManifest], dict[str, Any]]) -> RunManifest:
        """Read-modify-write under the lock: `edit` gets the current manifest and returns the
        changes. Use it when new values depend on old ones (appending to a history, counts)."""
        with self.manifest_lock():
            return self.update_manifest(**edit(self.read_manifest()))


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

    def table_glob(self, table: str) -> str:
        return str(self.root.resolve() / "*" / table / "*.parquet")

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
        """Write the store marker once, on the first write that publishes something."""
        path = self.marker_path()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic_bytes(path, json.dumps({"format_version": FORMAT_VERSION}).encode())

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
        run_id = self.resolve(run_id)
        return RunWriter(self, run_id, self.run_dir(run_id))

    def create_run(self, manifest: RunManifest) -> RunWriter:
        """Create a run in place (live runs: visible while they proceed, resumable)."""
        directory = self.run_dir(manifest.run_id)
        self.check_format()
        if directory.exists():
            raise StoreError(f"run {manifest.run_id!r} already exists")
        directory.mkdir(parents=True)
        self._mark()
        writer = RunWriter(self, manifest.run_id, directory)
        writer.write_manifest(manifest)
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
            writer.write_manifest(manifest)
            yield writer
            # drop the lock file so the published run does not carry it; until the rename,
            # the folder is lock-less but young, which the age rule still protects
            (staging / _staging.LOCK_FILE).unlink(missing_ok=True)
            try:
                os.replace(staging, final)
            except OSError as exc:  # the id appeared meanwhile (ids are unique, so: a bug)
                raise StoreError(f"cannot publish run {manifest.run_id!r}: {exc}") from exc
            writer.dir = final
            self._mark()
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
        return _write_part(self.annotations_dir(), "annotations", rows)
