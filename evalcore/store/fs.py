"""Where a store's root points — a local folder or `s3://bucket/prefix` — and the few
operations that must be done differently on each.

Why this module: everything else in the store walks paths the same way on both (S3Path
mimics the part of pathlib it uses), so the differences are gathered here and nowhere else:

| need                        | local folder                      | object storage                     |
|-----------------------------|-----------------------------------|------------------------------------|
| whole file or nothing       | temp file, fsync, rename          | one PUT (atomic by itself)         |
| replace tables.json/run.json| rename, under the run's flock     | PUT If-Match <etag read>, under a lease |
| a lock                      | flock                             | lease object (store/lease.py)      |
| publish a staged run        | rename the folder                 | copy objects, run.json last        |
| a version for caches        | inode, mtime, size                | ETag                               |
| DuckDB / pyarrow reads      | the path, proven a regular file   | the s3fs filesystem, registered    |

The local column is exactly what the store did before object storage existed: the local
store is not slowed or changed by any of this.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Union

from evalcore.errors import StoreError
from evalcore.common.regular_files import METADATA_MAX_BYTES, read_regular, require_regular
from evalcore.store import s3
from evalcore.store.s3 import S3Path

Location = Union[Path, S3Path]


class Conflict(StoreError):
    """A conditional replace found a newer version than the one it read."""


def location(root: str | os.PathLike | S3Path) -> Location:
    """A store root from `--store` / EVALCORE_STORE: `s3://bucket/prefix` or a folder."""
    if isinstance(root, S3Path):
        return root
    text = os.fspath(root)
    if s3.is_url(text):
        return S3Path.parse(text)
    if text.lower().startswith("s3:/"):  # a URL that went through pathlib lost a slash
        return S3Path.parse("s3://" + text[4:].lstrip("/"))
    return Path(text)


def is_remote(path: object) -> bool:
    return isinstance(path, S3Path)


def read_versioned(path: Location, limit: int | None = METADATA_MAX_BYTES) -> tuple[bytes, str | None]:
    """A small file's bytes and a version token for `replace`; FileNotFoundError if absent.
    Local files need no token (their writers hold the run's flock). Never blocks on, nor reads,
    what is not a regular file, nor more than `limit` bytes (evalcore/common/regular_files.py:
    NotRegularFile, FileTooLarge, both OSErrors)."""
    if isinstance(path, S3Path):
        return path.read_versioned(limit)
    return read_regular(path, limit), None


def read_small(path: Location, limit: int = METADATA_MAX_BYTES) -> bytes:
    """The bytes of one of the store's small files (a pointer, a manifest, the marker): as
    read_versioned, without the version."""
    return read_versioned(path, limit)[0]


def replace(path: S3Path, data: bytes, token: str | None) -> str:
    """Replace an object only if it is still the version `token` (None: only if it still does
    not exist). Returns the new version; raises Conflict otherwise."""
    new = path.put(data, if_match=token) if token is not None else path.put(data, if_none_match=True)
    if new is None:
        raise Conflict(f"{path}: changed by another writer meanwhile")
    return new


def version(path: Location) -> str:
    """A token that changes whenever the file is replaced (FileNotFoundError if absent)."""
    if isinstance(path, S3Path):
        return path.stat().etag
    st = path.stat()  # atomic replaces give a new inode every time
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def remove_tree(path: Location) -> None:
    """Remove a folder and everything under it (best effort, like rmtree(ignore_errors))."""
    if isinstance(path, S3Path):
        try:
            objects = [p for p, _ in path.walk_files()]
        except StoreError:
            return
        fs = s3.filesystem()
        for i in range(0, len(objects), 1000):  # DeleteObjects takes 1000 keys a request
            try:
                fs.rm([p.fs_path for p in objects[i:i + 1000]])
            except (OSError, StoreError):
                pass
        return
    shutil.rmtree(path, ignore_errors=True)


def publish_tree(src: S3Path, dst: S3Path, last: tuple[str, ...]) -> None:
    """Copy a staged run into place: every object, then the names in `last` in that order, each
    only if it does not exist yet (the run becomes visible with the final one, whole). S3 has
    no rename; a copy is server-side and costs no transfer."""
    fs = s3.filesystem()
    objects = [p for p, _ in src.walk_files()]
    tail = [src / name for name in last]
    for p in objects:
        if p not in tail:
            try:
                fs.copy(p.fs_path, (dst / str(p.relative_to(src))).fs_path)
            except Exception as exc:
                raise s3.error(p, exc) from None
    for p in tail:  # each only if absent: a run that took this id meanwhile is left alone
        if (dst / p.name).put(p.read_bytes(), if_none_match=True) is None:
            raise StoreError(f"cannot publish {dst}: a run with this id appeared meanwhile")


@contextmanager
def lease(path: S3Path) -> Iterator[None]:
    from evalcore.store.lease import lease_lock

    with lease_lock(path):
        yield


def arrow(path: Location) -> tuple[str, Any]:
    """(where, filesystem) for pyarrow's readers. A local path that is there but is not a
    regular file (a FIFO would block the reader for ever, /dev/zero feed it without end) is
    refused first: NotRegularFile, an OSError naming it."""
    if isinstance(path, S3Path):
        return path.fs_path, s3.arrow_filesystem()
    require_regular(path)
    return str(path), None


def upload(local: Path, path: S3Path) -> None:
    """Send a finished local file as one object (a multipart upload is atomic as well)."""
    try:
        s3.filesystem().put_file(str(local), path.fs_path)
    except Exception as exc:
        raise s3.error(path, exc) from None


def use_in(con: Any, root: Location) -> None:
    """Let a DuckDB connection read `s3://` paths through our s3fs filesystem; it never loads
    or downloads an extension for them."""
    if isinstance(root, S3Path):
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.register_filesystem(s3.filesystem())
