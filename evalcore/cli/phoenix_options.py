"""The two deadline flags of a Phoenix import or export (`--phoenix-timeout`,
`--phoenix-request-timeout`), shared by `evalcore import` and `evalcore export --to`.

Why flags and not settings: a Phoenix server far away or holding a large project needs more
time than the defaults, and a test or a script wants less; docs/phoenix.md says what each bounds.
"""

from __future__ import annotations

from typing import Optional

import typer

from evalcore.errors import EvalcoreError
from evalcore.traces.phoenix_http import DEFAULT_REQUEST_S, DEFAULT_TOTAL_S, Deadlines

PHOENIX_TIMEOUT = typer.Option(
    None, "--phoenix-timeout", metavar="SECONDS",
    help=f"phoenix:// only: the most the whole import or export may take (default {DEFAULT_TOTAL_S:g} s).")
PHOENIX_REQUEST_TIMEOUT = typer.Option(
    None, "--phoenix-request-timeout", metavar="SECONDS",
    help=f"phoenix:// only: the most one request to Phoenix may take, reply included "
         f"(default {DEFAULT_REQUEST_S:g} s).")


def phoenix_deadlines(total: Optional[float], request: Optional[float], phoenix: bool,
                      what: str = "sources") -> Optional[Deadlines]:
    """The Deadlines of a Phoenix import or export; the flags refused where no Phoenix is asked."""
    if not phoenix:
        if total is not None or request is not None:
            raise EvalcoreError(f"--phoenix-timeout and --phoenix-request-timeout apply to phoenix:// {what} only")
        return None
    return Deadlines(DEFAULT_TOTAL_S if total is None else total, DEFAULT_REQUEST_S if request is None else request)
