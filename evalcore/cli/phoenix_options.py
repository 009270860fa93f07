"""The flags bounding a Phoenix import or export: two deadlines (`--phoenix-timeout`,
`--phoenix-request-timeout`, shared by `evalcore import` and `evalcore export --to`) and, for
the import, what it may hold (`--phoenix-max-mb`, `--phoenix-max-spans`).

Why flags and not settings: a Phoenix server far away or holding a large project needs more
time or memory than the defaults, and a test or a script wants less; docs/phoenix.md says what
each bounds.
"""

from __future__ import annotations

from typing import Optional

import typer

from evalcore.errors import EvalcoreError
from evalcore.traces.phoenix_http import (
    DEFAULT_MAX_MB,
    DEFAULT_MAX_SPANS,
    DEFAULT_REQUEST_S,
    DEFAULT_TOTAL_S,
    Limits,
)

PHOENIX_TIMEOUT = typer.Option(
    None, "--phoenix-timeout", metavar="SECONDS",
    help=f"phoenix:// only: the most the whole import or export may take (default {DEFAULT_TOTAL_S:g} s).")
PHOENIX_REQUEST_TIMEOUT = typer.Option(
    None, "--phoenix-request-timeout", metavar="SECONDS",
    help=f"phoenix:// only: the most one request to Phoenix may take, reply included "
         f"(default {DEFAULT_REQUEST_S:g} s).")
PHOENIX_MAX_MB = typer.Option(
    None, "--phoenix-max-mb", metavar="MB",
    help=f"phoenix:// only: the most the span pages of one import may take together, as sent "
         f"(default {DEFAULT_MAX_MB:g} MB; every span is held in memory until the traces are assembled).")
PHOENIX_MAX_SPANS = typer.Option(
    None, "--phoenix-max-spans", metavar="N",
    help=f"phoenix:// only: the most spans one import may hold (default {DEFAULT_MAX_SPANS:,}).")


def phoenix_limits(total: Optional[float], request: Optional[float], phoenix: bool, what: str = "sources",
                   max_mb: Optional[float] = None, max_spans: Optional[int] = None) -> Optional[Limits]:
    """The Limits of a Phoenix import or export; the flags refused where no Phoenix is asked."""
    if not phoenix:
        if any(flag is not None for flag in (total, request, max_mb, max_spans)):
            names = "--phoenix-timeout and --phoenix-request-timeout" if what != "sources" else \
                "--phoenix-timeout, --phoenix-request-timeout, --phoenix-max-mb and --phoenix-max-spans"
            raise EvalcoreError(f"{names} apply to phoenix:// {what} only")
        return None
    return Limits(DEFAULT_TOTAL_S if total is None else total, DEFAULT_REQUEST_S if request is None else request,
                  DEFAULT_MAX_MB if max_mb is None else max_mb, DEFAULT_MAX_SPANS if max_spans is None else max_spans)
