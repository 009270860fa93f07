"""RunWriter: appends part files to one run, and publishes them by compaction.

Used by import, the live runner, scoring and the judge layer. Every write lands in its own part
file under `<run>/parts/<table>/` (atomic rename; a crash loses at most the batch in flight),
invisible to readers until `publish()` compacts the run (store/compaction.py). run.json is the
one read-modify-write file: it is only ever changed under the run's exclusive lock (on object
storage a lease object, and the PUT is conditional on the version read, so even a writer that
lost its lease cannot overwrite a newer manifest: it reads again and re-applies its edit).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator

try:  # POSIX; elsewhere the manifest lock is a no-op (documented in docs/reliability.md)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from evalcore.errors import StoreError
from evalcore.schemas import Claim, ContextJudgement, EvalQuestion, EvalResponse, JudgeCall, MetricValue, RunManifest
from evalcore.store import fs as _fs
from evalcore.store.compaction import Compaction, compact, pending_rows
from evalcore.store.fs import Conflict, Location
from evalcore.store import safe_paths as _safe
from evalcore.store.layout import LOCK_NAME, parts_dir, run_root, write_atomic_bytes, write_part
from evalcore.tables import ROW_BUILDERS, SCHEMAS, question_row, response_row

if TYPE_CHECKING:
    from evalcore.store.runstore import RunStore

_held = threading.local()  # lock files this thread holds, so the manifest lock is re-entrant
MANIFEST_ATTEMPTS = 5  # object storage: re-reads after a conditional PUT lost a race


class RunWriter:
    """Appends part files to one run. Used by import, the live runner and scoring."""

    def __init__(self, store: "RunStore", run_id: str, directory: Location):
        self.store = store
        self.run_id = run_id
        self.dir = directory

    def write_rows(self, table: str, rows: list[dict[str, Any]]) -> Location | None:
        if table not in SCHEMAS:
            raise StoreError(f"unknown table {table!r}")
        return write_part(parts_dir(self.dir, table), table, rows, within=run_root(self.dir))

    def write_questions(self, questions: list[EvalQuestion]) -> Location | None:
        return self.write_rows("questions", [question_row(self.run_id, q) for q in questions])

    def write_responses(self, responses: list[EvalResponse]) -> Location | None:
        return self.write_rows("responses", [response_row(self.run_id, r) for r in responses])

    def write_metrics(self, values: list[MetricValue]) -> Location | None:
        return self.write_rows("metrics", [ROW_BUILDERS["metrics"](v) for v in values])

    def write_judge_calls(self, calls: list[JudgeCall]) -> Location | None:
        return self.write_rows("judge_calls", [ROW_BUILDERS["judge_calls"](c) for c in calls])

    def write_claims(self, claims: list[Claim]) -> Location | None:
        """Claims written in one call form one set per (method, question, metric): they share one
        timestamp, so compaction (newest set wins) replaces whole sets on re-scoring."""
        stamp = datetime.now(timezone.utc)
        rows = [ROW_BUILDERS["claims"](c) | {"computed_at": stamp} for c in claims]
        return self.write_rows("claims", rows)

    def write_context_verdicts(self, verdicts: list[ContextJudgement]) -> Location | None:
        """Per-context relevance verdicts; like claims, one call = one set per (answer, metric)."""
        stamp = datetime.now(timezone.utc)
        rows = [ROW_BUILDERS["context_verdicts"](v) | {"computed_at": stamp} for v in verdicts]
        return self.write_rows("context_verdicts", rows)

    def publish(self) -> Compaction:
        """Make everything written so far visible to readers: compact the run (idempotent)."""
        return compact(self.dir)

    def pending_rows(self, table: str) -> int:
        """Rows written but not yet published (e.g. a live run's progress between compactions)."""
        return pending_rows(self.dir, table)

    def read_manifest(self) -> RunManifest:
        return self.store._read_manifest_at(self.dir / "run.json")

    def write_manifest(self, manifest: RunManifest) -> None:
        if manifest.run_id != self.run_id:
            raise StoreError("manifest run_id does not match the writer's run")
        write_atomic_bytes(self.dir / "run.json", manifest.model_dump_json(indent=2).encode(), within=run_root(self.dir))

    @contextmanager
    def manifest_lock(self) -> Iterator[None]:
        """Hold the run's manifest lock: read-modify-write of run.json inside it cannot lose a
        concurrent update from another process or thread. Re-entrant within one thread."""
        path = self.dir / LOCK_NAME
        held = getattr(_held, "paths", None)
        if held is None:
            held = _held.paths = {}
        key = str(path)
        if _fs.is_remote(path) and not held.get(key):
            with _fs.lease(path):
                held[key] = 1
                try:
                    yield
                finally:
                    held[key] = 0
            return
        if fcntl is None or held.get(key):
            held[key] = held.get(key, 0) + 1
            try:
                yield
            finally:
                held[key] -= 1
            return
        with _safe.open_lock(run_root(self.dir), path) as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def update_manifest(self, **changes: Any) -> RunManifest:
        """Set manifest fields, atomically with respect to other writers of this run."""
        return self.edit_manifest(lambda _: changes)

    def edit_manifest(self, edit: Callable[[RunManifest], dict[str, Any]]) -> RunManifest:
        """Read-modify-write under the lock: `edit` gets the current manifest and returns the
        changes. Use it when new values depend on old ones (appending to a history, counts)."""
        with self.manifest_lock():
            if not _fs.is_remote(self.dir):
                manifest = self.read_manifest()
                manifest = manifest.model_copy(update=edit(manifest))
                manifest = RunManifest.model_validate(manifest.model_dump())
                self.write_manifest(manifest)
                return manifest
            path = self.dir / "run.json"
            for _ in range(MANIFEST_ATTEMPTS):
                raw, token = _fs.read_versioned(path)
                manifest = self.store._parse_manifest(path, raw)
                manifest = manifest.model_copy(update=edit(manifest))
                manifest = RunManifest.model_validate(manifest.model_dump())
                if manifest.run_id != self.run_id:
                    raise StoreError("manifest run_id does not match the writer's run")
                try:
                    _fs.replace(path, manifest.model_dump_json(indent=2).encode(), token)
                    return manifest
                except Conflict:
                    continue  # another writer got in first: apply the edit to its version
            raise StoreError(f"{path}: changed by other writers {MANIFEST_ATTEMPTS} times in a row")
