"""What the tests of `evalcore runs`' saved listing share: the truth (the listing computed
afresh), what a new `runs` process lists, the saved file, and what may stand in its place."""

from __future__ import annotations

import os
from pathlib import Path

from evalcore.analysis.runs import listing_cache as LC
from evalcore.store import RunStore
from evalcore.store.views import forget_connections

PLACES = ["link out of the store", "fifo", "folder"]


def saved(store: RunStore) -> bytes | None:
    path = store.root / "_shared" / LC.CACHE / LC.entry_name()
    return path.read_bytes() if path.is_file() else None


def fresh(store: RunStore) -> LC.Listing:
    forget_connections()  # as a new process would: no database kept from before an edit
    return LC.compute_listing(store)


def listed(store: RunStore) -> LC.Listing:
    """What a new `evalcore runs` process lists (saved or computed)."""
    forget_connections()
    return LC.run_listing(store)


def put_in_the_listings_place(store: RunStore, tmp_path: Path, kind: str) -> Path:
    """A link out of the store in place of the listing's folder, or a pipe or a folder in place of
    the file; the folder outside the store (which must stay empty)."""
    folder = store.root / "_shared" / LC.CACHE
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "link out of the store":
        folder.symlink_to(outside, target_is_directory=True)
    else:
        folder.mkdir(parents=True)
        if kind == "fifo":
            os.mkfifo(folder / LC.entry_name())
        else:
            (folder / LC.entry_name()).mkdir()
    return outside
