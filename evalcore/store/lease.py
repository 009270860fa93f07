"""Locks on object storage: a lock object with a lease, kept alive by its holder.

Why not flock: S3 has no locks, and a process that dies holding one must not block a run
forever. A lock here is one small object created with `If-None-Match: *` (exactly one
creator wins, by S3's own guarantee). It records who holds it and until when; the holder
renews it (a conditional PUT on its own ETag) every third of the lease from a thread, so it
expires only when the holder is gone or cut off. A waiter that finds it expired takes it
over with `If-Match` on the ETag it read, so two waiters cannot both take over one corpse.

A lease can still be lost (a process frozen past its lease, a network partition). That is
why the writes a lock protects are conditional too (tables.json and run.json are replaced
with `If-Match`, store/fs.py): a holder that lost its lease fails its write instead of
overwriting the newer one. Clocks of the machines sharing a store must agree to well within
the lease (seconds, not minutes).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from evalcore.errors import StoreError
from evalcore.store.s3 import S3Path

LEASE_S = 30.0
WAIT_S = 600.0  # a compaction of a very large run may hold a lock for minutes


def _body(owner: str, lease_s: float) -> bytes:
    return json.dumps({"owner": owner, "host": socket.gethostname(), "pid": os.getpid(),
                       "expires": time.time() + lease_s}).encode()


def holder(path: S3Path) -> tuple[dict | None, str | None]:
    """The lock's content and ETag; (None, None) when nobody holds it."""
    try:
        data, etag = path.read_versioned()
    except FileNotFoundError:
        return None, None
    try:
        info = json.loads(data)
    except ValueError:
        info = {}
    return (info if isinstance(info, dict) else {}), etag


def expired(info: dict | None) -> bool:
    try:
        return float(info.get("expires", 0)) < time.time()  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return True


def acquire(path: S3Path, owner: str, lease_s: float = LEASE_S, wait_s: float = WAIT_S) -> str:
    """Take the lock (waiting with back-off while someone holds a live lease); return its ETag."""
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        etag = path.put(_body(owner, lease_s), if_none_match=True)
        if etag is not None:
            return etag
        info, current = holder(path)
        if info is not None and expired(info):
            etag = path.put(_body(owner, lease_s), if_match=current)
            if etag is not None:
                return etag
        if time.monotonic() > deadline:
            raise StoreError(f"{path}: still locked by {info.get('host') if info else '?'} "
                             f"after {wait_s:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


@contextmanager
def lease_lock(path: S3Path, lease_s: float = LEASE_S, wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the lock object at `path` for the block; renewed in the background."""
    owner = uuid.uuid4().hex
    etag = [acquire(path, owner, lease_s, wait_s)]
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(lease_s / 3):
            try:
                new = path.put(_body(owner, lease_s), if_match=etag[0])
            except StoreError:
                continue  # a passing network error: try again before the lease ends
            if new is None:
                return  # lost (taken over): the guarded writes are conditional and will fail
            etag[0] = new

    keeper = threading.Thread(target=renew, name=f"lease {path.name}", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join()
        try:
            path.delete(if_match=etag[0])  # only our own version: never a lock taken over
        except StoreError:
            pass  # it expires by itself
