"""Options shared by every command (set by the root callback), and the helpers that print tables and
one-line messages quoting data (evalcore.common.inert_text makes what they quote inert)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # the store (DuckDB, pyarrow) is imported when a command opens it, not at start
    from evalcore.store import RunStore


@dataclass
class CliState:
    store_root: str | Path | None = None  # a folder or s3://bucket/prefix
    # set by a command that changes the store: the console entry then saves the listing
    # `evalcore runs` prints, before the process ends (evalcore.cli.main.run)
    changing: bool = False

    def store(self, changing: bool = False) -> RunStore:
        """The store the command works on; `changing=True` from a command that writes to it."""
        from evalcore.store import RunStore

        self.changing = self.changing or changing
        return RunStore(self.store_root)


state = CliState()


def console(stderr: bool = False):
    """A rich console for tables: no markup parsing (names and answers are data, not markup), no
    colour or style codes (everything written passes the terminal guard, evalcore.common.inert_text,
    which would show them as escapes), and a wide fixed width when output is not a terminal so
    piped tables stay readable."""
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(markup=False, highlight=False, emoji=False, color_system=None, stderr=stderr,
                   width=None if stream.isatty() else 240)


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table on stdout. Every cell, header and the title is one line of text: control
    characters (newlines and tabs included) show as escapes, so a name cannot break the table
    (a missing cell, None, is empty)."""
    from rich.table import Table

    from evalcore.common.inert_text import visible

    table = Table(title=visible(title) if title is not None else None)
    for c in columns:
        table.add_column(visible(c))
    for r in rows:
        table.add_row(*("" if v is None else visible(v) for v in r))
    console().print(table)


def echo_line(text: str, err: bool = False) -> None:
    """One line of output that quotes data (a name, an id, an error message): every control
    character in it, a newline included, shows as an escape, so what it quotes cannot forge a
    second line. (Control characters in any other output are escaped by the stream guard.)"""
    import typer

    from evalcore.common.inert_text import visible

    typer.echo(visible(text), err=err)
