"""DuckDB's form of a Ctrl-C: told apart from a bug.

Why: when Ctrl-C comes while the main thread runs a DuckDB query, DuckDB takes the signal and
raises RuntimeError("Query interrupted") (InterruptException in other versions) instead of
KeyboardInterrupt. Read as an error, it made the CLI print "unexpected RuntimeError" (exit 1)
and a live run stopped that way be recorded `failed` instead of `cancelled` (session 15's
hostile reviews). Without importing DuckDB: the CLI checks every failure with it.
"""

from __future__ import annotations


def is_ctrl_c_in_a_query(exc: BaseException) -> bool:
    """Whether `exc` is DuckDB's report of a Ctrl-C during a query (evalcore never calls
    `interrupt()` on a connection, the only other source of it)."""
    return (type(exc) is RuntimeError and str(exc) == "Query interrupted") or type(exc).__name__ == "InterruptException"
