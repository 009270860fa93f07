"""Options shared by every command (set by the root callback)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the store (DuckDB, pyarrow) is imported when a command opens it, not at start
    from evalcore.store import RunStore


@dataclass
class CliState:
    store_root: str | Path | None = None  # a folder or s3://bucket/prefix

    def store(self) -> RunStore:
        from evalcore.store import RunStore

        return RunStore(self.store_root)


state = CliState()


def console(stderr: bool = False):
    """A rich console for tables: no markup parsing (names and answers are data, not markup),
    and a wide fixed width when output is not a terminal so piped tables stay readable."""
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(markup=False, highlight=False, stderr=stderr,
                   width=None if stream.isatty() else 240)
