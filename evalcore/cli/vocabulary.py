"""One vocabulary for every command's options, and the old spellings it replaced.

The rule (README.md, "Everyday commands"):
- `--metrics` / `-m`: comma-separated metric names (score, compare, rejudge, trec; run's `-m`
  still means --methods for one release, with a deprecation line);
- `--groups`: comma-separated metric groups (run, score); `--group` is its old spelling;
- `--option K=V` (repeatable) and `--options-file FILE` (score); `--options` is the old spelling;
- `--engine local|ray`: the same choice in run and score.

Old spellings keep working for one release: `deprecated` prints one line on stderr naming the
new spelling, and refuses the old and new spelling given together.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

import typer

from evalcore.errors import EvalcoreError

T = TypeVar("T")


class Engine(str, Enum):
    """Where a command asks and scores: this process, or a Ray cluster (evalcore[scale])."""

    local = "local"
    ray = "ray"


def deprecated(new_value: T | None, old_value: T | None, old: str, new: str, note: str = "") -> T | None:
    """The option's value, given under its new name or under its old one. The old one prints
    `warning: <old> is deprecated ...; use <new>` on stderr (it goes in the next release)."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise EvalcoreError(f"{old} is the old spelling of {new}: give one of them")
    typer.echo(f"warning: {old} is deprecated and goes in the next release; use {new}"
               + (f" ({note})" if note else ""), err=True)
    return old_value
