"""The run store: the only package that knows the on-disk layout.

store/layout.py says where everything lives and why; writer.py appends part files;
compaction.py folds them into one canonical file per table plus a summary; views.py hands
readers DuckDB views over the canonical files; runstore.py ties a folder of runs together;
health.py finds damage, keeps it inside its run, and repairs a lost pointer.
Import from here: `from evalcore.store import RunStore, open_db, query_df`.

Why the views and the writing side load when first named (_LAZY): a reader never writes, and
the writing side brings pyarrow and numpy (a third of `evalcore runs`' start); a command that
only opens the store (`delete`, `store clean`) needs no DuckDB either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.store.layout import (
    DEFAULT_ROOT,
    FORMAT_VERSION,
    RUN_ID_RE,
    SHARED_DIR,
    STAGING_DIR,
    STORE_MARKER,
    TRASH_DIR,
    RunDamaged,
    check_run_id,
    default_root,
    new_run_id,
)
from evalcore.store.process_exit import end_process
from evalcore.store.runstore import RunStore

if TYPE_CHECKING:
    from evalcore.store.compaction import Compaction
    from evalcore.store.views import forget_connections, open_db, query_df, query_frame, wide_columns
    from evalcore.store.writer import RunWriter

_LAZY = {
    "Compaction": ("evalcore.store.compaction", "Compaction"),
    "RunWriter": ("evalcore.store.writer", "RunWriter"),
    "forget_connections": ("evalcore.store.views", "forget_connections"),
    "open_db": ("evalcore.store.views", "open_db"),
    "query_df": ("evalcore.store.views", "query_df"),
    "query_frame": ("evalcore.store.views", "query_frame"),
    "wide_columns": ("evalcore.store.views", "wide_columns"),
}

__all__ = ["Compaction", "DEFAULT_ROOT", "FORMAT_VERSION", "RUN_ID_RE", "RunDamaged", "RunStore", "RunWriter",
           "SHARED_DIR", "STAGING_DIR", "STORE_MARKER", "TRASH_DIR", "check_run_id", "default_root", "end_process", "forget_connections", "new_run_id", "open_db",
           "query_df", "query_frame", "wide_columns"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        value = globals()[name] = getattr(importlib.import_module(module_name), attr)
        return value
    raise AttributeError(f"module 'evalcore.store' has no attribute {name!r}")
