"""What a test that snapshots a whole store leaves out of its comparison.

`_shared/listing/runs-<uid>.json` is `evalcore runs`' saved listing: any reading of a settled
store may save it (docs/store.md; analysis/runs/listing_cache.py), and a store settles 50 ms after
its last write on a local file system. A test asserting that a refused command wrote nothing
compares everything else: the runs, the shared data, a temporary file the save left behind, and
a link or anything but a folder in place of `_shared/listing` (never followed).
"""

from __future__ import annotations

from pathlib import Path

from evalcore.analysis.runs.listing_cache import CACHE, entry_name


def is_listing_cache(path: Path, root: Path) -> bool:
    """Whether `path` (under `root`) is the saved listing's folder (a real one) or the saved
    listing itself (a regular file): what a reading may add, and nothing else."""
    parts = path.relative_to(root).parts
    if path.is_symlink() or parts[:2] != ("_shared", CACHE):
        return False
    if len(parts) == 2:
        return path.is_dir()
    return len(parts) == 3 and parts[2] == entry_name() and path.is_file()
