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
    version = data.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise StoreError(f"{path}: store format version {version!r} is newer than this evalcore "
                         f"understands ({FORMAT_VERSION}); upgrade evalcore to read it")
    return RunManifest.model_validate(data)
