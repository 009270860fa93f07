"""Reading a run's manifest (`run.json`): bounded, a regular file only, a version this code knows.

Why a module of its own: the RunStore reads manifests to list and resolve runs, and a RunWriter
reads its run's manifest before each edit. Both read through these two functions, so neither
needs the other (the writer once called the RunStore's private reader, and the two imported
each other).
"""

from __future__ import annotations

import json

from evalcore.common.regular_files import FileTooLarge, NotRegularFile
from evalcore.errors import StoreError
from evalcore.schemas import RunManifest
from evalcore.store import fs as _fs
from evalcore.store.fs import Location
from evalcore.store.layout import FORMAT_VERSION

# the deepest nesting of lists and objects a manifest can have: pydantic refuses to write a
# deeper one (run.json is written by RunManifest.model_dump_json), and a reader that met one
# failed on it (views serialise each manifest again), taking every run of the store with it
MAX_DEPTH = 254


def read_manifest(path: Location) -> RunManifest:
    """The manifest at `path`; a StoreError naming the file when it cannot be read (too large,
    not a regular file, not JSON, from a newer evalcore) or does not validate."""
    try:
        raw = _fs.read_small(path)
    except (NotRegularFile, FileTooLarge) as exc:
        raise StoreError(f"{path}: unreadable run manifest: it {exc.why}") from exc
    except OSError as exc:
        raise StoreError(f"{path}: unreadable run manifest ({exc})") from exc
    return parse_manifest(path, raw)


def parse_manifest(path: Location, raw: bytes) -> RunManifest:
    """The manifest in `raw`, the bytes read from `path` (named in every error)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: unreadable run manifest ({exc})") from exc
    except RecursionError:
        raise StoreError(f"{path}: unreadable run manifest (nested deeper than JSON can be read)") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path}: unreadable run manifest (a JSON {type(data).__name__}, not an object)")
    if _depth(data) > MAX_DEPTH:
        raise StoreError(f"{path}: unreadable run manifest (nested more than {MAX_DEPTH} levels deep, "
                         "deeper than evalcore can write one)")
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise StoreError(f"{path}: store format version {version!r} is newer than this evalcore "
                         f"understands ({FORMAT_VERSION}); upgrade evalcore to read it")
    if b"\\u" in raw:  # only an escape spells a lone surrogate or NUL in JSON text
        data = _storable(path, data)
    return RunManifest.model_validate(data)


def _storable(path: Location, data: dict) -> dict:
    """`data` with every lone UTF-16 surrogate and NUL in its text replaced by U+FFFD, and a note
    naming the fields. A run.json edited by hand or written by another tool may hold them
    (JSON spells them `\\ud800`, `\\u0000`); UTF-8 cannot encode the first, and a name holding
    one made every reader of the store fail (DuckDB refuses such text), not just this run."""
    from evalcore.schemas.storable import make_storable, storable_note

    data, repaired = make_storable(data)
    if repaired and isinstance(data.get("notes", []), list):  # (other notes fail validation, as they would)
        data["notes"] = [*data.get("notes", []), f"{path.name}: " + storable_note(repaired)]
    return data


def _depth(data: object) -> int:
    """How deeply lists and objects nest in `data` (an object holding a list of one number: 2),
    walked without recursion. An empty list or object is a value, as pydantic counts it when
    it writes (a level only for containers that hold something)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        if not node:
            continue
        deepest = max(deepest, level)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
    return deepest
