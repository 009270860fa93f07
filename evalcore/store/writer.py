"""RunWriter: appends part files to one run, and publishes them by compaction.

Used by import, the live runner, scoring and the judge layer. Every write lands in its own part
file under `<run>/parts/<table>/` (atomic rename; a crash loses at most the batch in flight),
invisible to readers until `publish()` compacts the run (store/compaction.py). run.json is the
one read-modify-write file: it is only ever changed under the run's exclusive lock (on object
storage a lease object, and the PUT is conditional on the version read, so even a writer that
lost its lease cannot overwrite a newer manifest: it reads again and re-applies its edit).

What the manifest says about the run's data (a scoring pass's judge calls and history entry,
a live run's answer count) is recorded by `publish(record=...)`, with the data it describes:
run.json never claims rows no reader can see (a full disk between the two once left a
manifest counting 2,100 judge calls that were never published).
"""

from __future__ import annotations

import os
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterator

try:  # POSIX; elsewhere the manifest lock is a no-op (documented in docs/reliability.md)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from evalcore.errors import StoreError
from evalcore.common.regular_files import open_file
from evalcore.schemas import (
    Claim,
    ContextJudgement,
    EvalQuestion,
    EvalResponse,
    JudgeCall,
    MetricRepeat,
    MetricValue,
    RunManifest,
)
from evalcore.store import fs as _fs
from evalcore.store.fs import Conflict, Location
from evalcore.store import safe_paths as _safe
from evalcore.store.layout import (LOCK_NAME, failed_write, fsync_dir, parts_dir, read_pointer, run_root,
                                   write_atomic_bytes)
from evalcore.store.manifest_file import parse_manifest, read_manifest
from evalcore.store.parquet_write import write_part
from evalcore.store.tables import ROW_BUILDERS, SCHEMAS, question_row, response_row

if TYPE_CHECKING:  # compaction (DuckDB, the merge) loads when a writer first publishes: a
    # writer that only writes parts (the scoring child of a live run) never needs it
    from evalcore.store.compaction import Compaction

_held = threading.local()  # lock files this thread holds, so the manifest lock is re-entrant
MANIFEST_ATTEMPTS = 5  # object storage: re-reads after a conditional PUT lost a race
ManifestEdit = Callable[[RunManifest], dict[str, Any]]


class RunWriter:
    """Appends part files to one run. Used by import, the live runner and scoring.

    It needs only its run's id and folder (`RunStore.run_dir(run_id)`, or the folder the run is
    staged in), not the store: the manifest is read by store/manifest_file.py."""

    def __init__(self, run_id: str, directory: Location):
        self.run_id = run_id
        self.dir = directory

    def write_rows(self, table: str, rows: list[dict[str, Any]]) -> Location | None:
        """One part file of `rows`, which are consumed (the list is emptied: parquet_write.write_part)."""
        if table not in SCHEMAS:
            raise StoreError(f"unknown table {table!r}")
        return write_part(parts_dir(self.dir, table), table, rows, within=run_root(self.dir), keep=True)

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

    def write_metric_repeats(self, repeats: list[MetricRepeat]) -> Location | None:
        """The K verdicts behind judged values, written in one call: one set per (method,
        question, metric) sharing one timestamp, so a re-score with another K replaces the set
        whole (compaction keeps the newest set)."""
        stamp = datetime.now(timezone.utc)
        return self.write_rows("metric_repeats", [ROW_BUILDERS["metric_repeats"](r) | {"computed_at": stamp}
                                                  for r in repeats])

    def write_context_verdicts(self, verdicts: list[ContextJudgement]) -> Location | None:
        """Per-context relevance verdicts; like claims, one call = one set per (answer, metric)."""
        stamp = datetime.now(timezone.utc)
        rows = [ROW_BUILDERS["context_verdicts"](v) | {"computed_at": stamp} for v in verdicts]
        return self.write_rows("context_verdicts", rows)

    def publish(self, record: ManifestEdit | None = None) -> Compaction:
        """Make everything written so far visible to readers: compact the run (idempotent).

        `record(manifest) -> changes`: manifest fields that describe what is being published.
        They take effect with the data or not at all. The edited run.json is first written in
        full under a temporary name (a full disk fails there, before anything changed), then
        the run is compacted, and only then is the file renamed into place (a rename needs no
        space); a compaction that fails discards it. The manifest lock is held throughout, so
        no other edit can come between the two and be overwritten."""
        from evalcore.store.compaction import compact

        if record is None:
            return compact(self.dir)
        with self.manifest_lock():
            staged = self._stage_manifest(record)
            try:
                result = compact(self.dir)
            except BaseException:
                staged.discard()
                raise
            staged.commit(self, record)
        return result

    def _stage_manifest(self, edit: ManifestEdit) -> "_StagedManifest":
        path = self.dir / "run.json"
        if _fs.is_remote(path):
            raw, token = _fs.read_versioned(path)
            manifest = self._edited(parse_manifest(path, raw), edit)
            return _StagedManifest(path, manifest.model_dump_json(indent=2).encode(), token=token)
        manifest = self._edited(self.read_manifest(), edit)
        tmp = _safe.inside(run_root(self.dir), path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"))
        try:
            with open_file(tmp, "xb", follow=False) as fh:  # a new file: nothing found there is opened
                fh.write(manifest.model_dump_json(indent=2).encode())
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise failed_write(exc, tmp, path) from None
        return _StagedManifest(path, tmp=tmp)

    def _edited(self, manifest: RunManifest, edit: ManifestEdit) -> RunManifest:
        manifest = manifest.model_copy(update=edit(manifest))
        manifest = RunManifest.model_validate(manifest.model_dump())
        if manifest.run_id != self.run_id:
            raise StoreError("manifest run_id does not match the writer's run")
        return manifest

    def pending_rows(self, table: str) -> int:
        """Rows written but not yet published (e.g. a live run's progress between compactions)."""
        from evalcore.store.compaction import pending_rows

        return pending_rows(self.dir, table)

    def rows_on_disk(self, table: str) -> int | None:
        """Rows of `table` the run holds, published or still in part files (what `run --resume`
        keeps); None when that cannot be read (a damaged pointer, an unreadable disk)."""
        from evalcore.store.compaction import pending_rows

        try:
            published = (read_pointer(self.dir).get("rows") or {}).get(table, 0)
            return int(published) + pending_rows(self.dir, table)
        except (OSError, StoreError, TypeError, ValueError):
            return None

    def read_manifest(self) -> RunManifest:
        return read_manifest(self.dir / "run.json")

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
                manifest = self._edited(self.read_manifest(), edit)
                self.write_manifest(manifest)
                return manifest
            path = self.dir / "run.json"
            for _ in range(MANIFEST_ATTEMPTS):
                raw, token = _fs.read_versioned(path)
                manifest = self._edited(parse_manifest(path, raw), edit)
                try:
                    _fs.replace(path, manifest.model_dump_json(indent=2).encode(), token)
                    return manifest
                except Conflict:
                    continue  # another writer got in first: apply the edit to its version
            raise StoreError(f"{path}: changed by other writers {MANIFEST_ATTEMPTS} times in a row")


class _StagedManifest:
    """A run.json written but not yet in place (`RunWriter.publish(record=...)`): locally a
    fsynced temporary file, renamed over run.json once the data is published; on object
    storage the new bytes, PUT conditionally on the version they were computed from."""

    def __init__(self, path: Location, data: bytes | None = None, token: str | None = None,
                 tmp: Location | None = None):
        self.path, self.data, self.token, self.tmp = path, data, token, tmp

    def discard(self) -> None:
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)

    def commit(self, writer: RunWriter, edit: ManifestEdit) -> None:
        """Put the new manifest in place; the data it describes is published already, so a
        failure here says so instead of claiming that nothing changed."""
        try:
            if self.tmp is None:
                try:
                    _fs.replace(self.path, self.data or b"", self.token)
                except Conflict:  # a writer that broke our lease edited it: apply ours to its version
                    writer.edit_manifest(edit)
                return
            _safe.move(run_root(self.path.parent), self.tmp, self.path)
            fsync_dir(self.path.parent)
        except (OSError, StoreError) as exc:
            if isinstance(exc, FileNotFoundError) and not self.path.parent.is_dir():
                return  # the run was deleted meanwhile (delete takes the compaction lock, not this one)
            self.discard()
            raise StoreError(f"run {writer.run_id}: its new data is published, but {self.path} could not "
                             f"be updated to describe it ({exc}); run the command again") from exc
