"""What `evalcore runs` prints, saved in the store and reused while no file it read has changed.

Why: listing the runs is the command people type most, and it mostly lists a store that has not
changed since the last time. Computing the listing loads DuckDB and the manifest models and
reads every run's files (~0.25 s of a 0.5 s start, docs/benchmarks.md "CLI start"); reusing it
needs neither: a scan of the runs' folders (store/file_state.py) proves nothing changed.

What is saved, under the fingerprint of the files it was computed from (which also names the
store's path and the reader: store/file_state.py): the runs listed, the warnings for runs
skipped, and the damaged runs and annotation files. It is saved only when the store has settled
(no file changed within the file system's longest tick: store/file_state.py) and has its marker
(a folder that never held a published run gets nothing written into it), by `runs` itself or
by the command that changed the store, right after (save_after_write); the write is the shared caches'
(`_shared/listing/runs-<uid>.json`, whole or not at all, readable by its owner alone: it may name
runs other users cannot read), and a store that cannot be written to is listed all the same.

A saved listing is reused only when its first line names this module's FORMAT, the current
fingerprint and the code that computed it: evalcore's version and the stamps of its own modules
(an edited checkout lists anew), and of the packages whose messages a listing quotes (DuckDB,
pydantic: an upgrade lists anew). Anything else about the file (torn, edited, nested too deep,
a value JSON allows but a listing never holds, too large for the store's size, a pipe in its
place) makes it a miss, computed afresh and saved over.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from evalcore.analysis.read.damage import DamagedFile, DamagedRun
from evalcore.analysis.runs.run_listing import RunRow
from evalcore.errors import StoreError

if TYPE_CHECKING:
    from evalcore.store import RunStore
    from evalcore.store.file_state import FileState

FORMAT = 2
CACHE = "listing"
# the longest a writing command spends on the next `runs`' listing (save_after_write), judged by
# how long the last one took: 0.07-0.12 s for 1-10 runs, ~0.26 s for 60 small ones (views are built per run)
WRITER_BUDGET_SECONDS = 0.25
# and a bound that needs no earlier listing (one that could never be saved: a cache folder of
# another user's, a full disk): ~21 files a run, so ~35 runs
WRITER_MAX_ENTRIES = 750
_BASE_BYTES, _BYTES_PER_ENTRY = 64 * 1024, 4096  # a saved listing's bound: far above what one holds


@dataclass(frozen=True)
class Listing:
    problems: tuple[str, ...]  # runs left out because their manifest cannot be read, and why
    rows: tuple[RunRow, ...]  # readable runs, newest first
    damaged_runs: tuple[DamagedRun, ...]
    damaged_annotations: tuple[DamagedFile, ...]


def run_listing(store: RunStore) -> Listing:
    """The listing of `store`: the saved one when nothing it read has changed, else computed
    (and saved, when the store has settled)."""
    from evalcore.store.file_state import reading_state

    state = reading_state(store)
    head = _head(state) if state is not None else None
    if state is not None and head is not None:
        saved = _load(store, head, _BASE_BYTES + _BYTES_PER_ENTRY * state.entries)
        if saved is not None:
            return saved
    listing, seconds = _timed_listing(store)
    if state is not None and head is not None and state.settled and state.marked:
        _save(store, head, listing, seconds)
    return listing


def save_after_write(store: RunStore) -> bool:
    """Compute the listing and save it, for a command that has just changed the store (run,
    score, import, delete...), so that the `evalcore runs` typed next reuses it. Whether it was
    saved.

    Why here: the command has DuckDB and the manifest models loaded already, a new `runs`
    process would load both again (~0.25 s) to compute the same rows. The files were written a
    moment ago, so this waits until every stamp is older than the file system's tick
    (file_state: 50 ms on a local Linux file system, nothing is saved on any other), takes the
    fingerprint at that moment `began`, reads, and takes it again: the listing is saved only when
    both are the same (bytes changed without a stamp while it read: through a mapping, or by a
    write still copying) and every stamp is older than `began` by the tick (a write made while
    it read). Never fails the command: an unreadable store is left for `runs` to report. Left
    to `runs` too for a store of more than WRITER_MAX_ENTRIES files, or whose last listing took
    longer than WRITER_BUDGET_SECONDS to compute: a loop of imports would pay it every time,
    saved or not."""
    from evalcore.store.file_state import FINE_SETTLE_SECONDS, reading_state
    from evalcore.store import forget_connections

    try:
        began = time.time_ns()
        state = reading_state(store)
        if (state is None or not state.marked or state.settle_ns > FINE_SETTLE_SECONDS * 1e9
                or state.entries > WRITER_MAX_ENTRIES):
            return False
        last = _last_seconds(store, _BASE_BYTES + _BYTES_PER_ENTRY * state.entries)
        if last is None or last > WRITER_BUDGET_SECONDS:
            return False
        wait_ns = state.newest + state.settle_ns - time.time_ns()
        if wait_ns > state.settle_ns:  # a stamp in the future (touch -d): never settles
            return False
        if wait_ns > 0:
            time.sleep(wait_ns / 1e9)
            began = time.time_ns()
            state = reading_state(store)
            if state is None:
                return False
        forget_connections()  # a database this process kept was read before `began`
        listing, seconds = _timed_listing(store)
        after = reading_state(store)
        head = _head(after) if after is not None else None
        if (after is None or head is None or not after.marked or after.digest != state.digest
                or not after.settled_before(began)):
            return False
        return _save(store, head, listing, seconds)
    except Exception:  # noqa: BLE001 - the write succeeded; `runs` computes and reports whatever failed here
        return False


def _head(state: FileState) -> str | None:
    """The first line of a listing saved under `state`; None when the code cannot be fingerprinted
    (nothing is saved or reused)."""
    try:
        return f"evalcore-runs-listing {FORMAT} {_code()} {state.digest}"
    except (OSError, ImportError, ValueError):
        return None


def _timed_listing(store: RunStore) -> tuple[Listing, float]:
    """The listing computed, and the seconds it took past the imports it needs (DuckDB, the
    manifest model: loaded first, so a `runs` process and a writer, which has them, measure alike)."""
    from evalcore.schemas import RunManifest  # noqa: F401 - loaded, not used: outside the timing
    from evalcore.store import open_db  # noqa: F401

    start = time.perf_counter()
    listing = compute_listing(store)
    return listing, time.perf_counter() - start


def _last_seconds(store: RunStore, limit: int) -> float | None:
    """How long the saved listing, whatever state it was saved under, took to compute; 0.0 when
    none is saved or it cannot be read as one (nothing known: a listing is computed once to learn
    it); None when the cache itself refuses the reading (a link in its place)."""
    try:
        data = store.shared_cache(CACHE).read(entry_name(), limit=limit)
    except (OSError, StoreError):
        return None
    if data is None:
        return 0.0
    try:
        seconds = json.loads(data.partition(b"\n")[2].decode("utf-8", "surrogatepass"),
                             parse_constant=_no_constant).get("seconds")
    except (ValueError, AttributeError, RecursionError):
        return 0.0  # torn or edited: computed afresh, as `runs` would
    return float(seconds) if type(seconds) in (int, float) and 0 <= seconds < 1e6 else 0.0


def compute_listing(store: RunStore) -> Listing:
    """The listing read from the store's views (what `evalcore runs` printed before it was saved)."""
    from evalcore.analysis.read.damage import damaged_annotation_rows, damaged_run_rows
    from evalcore.analysis.runs.run_listing import run_rows

    problems: list[str] = []
    store.manifests(problems)
    return Listing(tuple(problems), tuple(run_rows(store)), tuple(damaged_run_rows(store)),
                   tuple(damaged_annotation_rows(store)))


def entry_name() -> str:
    """One saved listing per user (each may read a different store: store/file_state.py)."""
    return f"runs-{os.geteuid() if hasattr(os, 'geteuid') else 0}.json"


_DEPENDENCIES = ("duckdb", "pydantic", "pydantic_core")


def _code() -> str:
    """A digest of the code a listing comes from: evalcore's version, every module file of the
    package (name, size, mtime), and the folders of the packages it quotes (an upgrade replaces
    them). Found without importing them."""
    import hashlib
    import importlib.util

    import evalcore

    lines = [evalcore.__version__]
    package = os.path.dirname(os.path.abspath(evalcore.__file__))
    stack = [package]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for entry in sorted(it, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    lines.append(f"{entry.path[len(package):]} {st.st_size} {st.st_mtime_ns}")
    for name in _DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        where = os.path.dirname(spec.origin) if spec is not None and spec.origin else None
        st = os.stat(where) if where else None
        lines.append(f"{name} {where} {st.st_ino if st else '-'} {st.st_mtime_ns if st else '-'}")
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _save(store: RunStore, head: str, listing: Listing, seconds: float) -> bool:
    body = {"seconds": round(seconds, 4), "problems": list(listing.problems),
            "rows": [{**asdict(r), "created_at": r.created_at.isoformat() if r.created_at else None}
                     for r in listing.rows],
            "damaged_runs": [list(r) for r in listing.damaged_runs],
            "damaged_annotations": [list(r) for r in listing.damaged_annotations]}
    data = (head + "\n" + json.dumps(body, ensure_ascii=False)).encode("utf-8", "surrogatepass")
    try:
        store.shared_cache(CACHE).write(entry_name(), data, private=True)
    except (OSError, StoreError):
        return False  # a store that cannot be written to (read-only, full, a link in _shared): listed all the same
    return True


def _load(store: RunStore, head: str, limit: int) -> Listing | None:
    try:
        data = store.shared_cache(CACHE).read(entry_name(), limit=limit)
    except (OSError, StoreError):
        return None
    if data is None:
        return None
    first, _, rest = data.partition(b"\n")
    if first != head.encode():
        return None
    try:
        body = json.loads(rest.decode("utf-8", "surrogatepass"), parse_constant=_no_constant)
        return Listing(tuple(_texts(body["problems"])), tuple(_row(r) for r in body["rows"]),
                       tuple(DamagedRun(*_fields(r, 4, optional=(1, 2))) for r in body["damaged_runs"]),
                       tuple(DamagedFile(*_fields(r, 2)) for r in body["damaged_annotations"]))
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None  # torn or edited: computed afresh, and saved over it


def _no_constant(name: str) -> None:
    """NaN and Infinity: JSON as Python writes it allows them, a listing never holds them."""
    raise ValueError(f"{name} in a saved listing")


def _texts(items: Any) -> list[str]:
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise TypeError("not a list of texts")
    return items


def _fields(item: Any, n: int, optional: tuple[int, ...] = ()) -> list[str | None]:
    if not isinstance(item, list) or len(item) != n:
        raise TypeError("not a row")
    for i, value in enumerate(item):
        if not (isinstance(value, str) or (value is None and i in optional)):
            raise TypeError("not a text")
    return item


_TEXT_FIELDS = ("run_id", "name", "kind", "status", "dataset", "methods")
_COUNT_FIELDS = ("n_questions", "n_responses", "n_errors", "n_metric_values")


def _row(item: Any) -> RunRow:
    if not isinstance(item, dict) or set(item) != set(RunRow.__dataclass_fields__):
        raise TypeError("not a run row")
    if not isinstance(item["run_id"], str):
        raise TypeError("run_id")
    for name in _TEXT_FIELDS:
        if item[name] is not None and not isinstance(item[name], str):
            raise TypeError(name)
    for name in _COUNT_FIELDS:
        if type(item[name]) is not int:
            raise TypeError(name)
    latency = item["latency_p50_ms"]
    if not isinstance(latency, dict) or not all(
            isinstance(v, float) or v is None for v in latency.values()):
        raise TypeError("latency_p50_ms")
    created = item["created_at"]
    if created is not None:
        if not isinstance(created, str):
            raise TypeError("created_at")
        created = datetime.fromisoformat(created)
        if created.utcoffset() != timedelta(0):
            raise ValueError("created_at not in UTC")
    return RunRow(**{**item, "created_at": created})
