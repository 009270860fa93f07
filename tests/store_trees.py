"""What a test that snapshots a whole store leaves out of its comparison.

`_shared/listing/` holds `evalcore runs`' saved listing: any reading of a settled store may save it
there (docs/store.md; analysis/runs/listing_cache.py), and a store settles 50 ms after its last
write on a local file system. A test asserting that a refused command wrote nothing compares
everything else: the runs, the shared data, and a link in place of that folder (never followed).
"""

from __future__ import annotations

from pathlib import Path

LISTING_CACHE = ("_shared", "listing")


def is_listing_cache(path: Path, root: Path) -> bool:
    """Whether `path` (under `root`) is the saved listing's folder or inside it, and no link."""
    parts = path.relative_to(root).parts
    return parts[:2] == LISTING_CACHE and not path.is_symlink()
