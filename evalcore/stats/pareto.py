"""Pareto front of compared methods: quality up, cost down, latency down.

Why: a single weighted score hides trade-offs; the front shows which methods are worth
considering at all (no other method is at least as good on every axis and better on one).
An axis with a missing value for any point is dropped for everyone (and reported): comparing
some methods on cost and others not would make "dominated" meaningless.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

DIRECTIONS = {"quality": "max", "cost": "min", "latency": "min"}


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def dominates(a: dict[str, float], b: dict[str, float], directions: dict[str, str]) -> bool:
    """a dominates b: no worse on every axis and strictly better on at least one."""
    better = False
    for axis, way in directions.items():
        x, y = a[axis], b[axis]
        if (x < y) if way == "max" else (x > y):
            return False
        if x != y:
            better = True
    return better


def pareto_front(points: list[dict[str, Any]], directions: dict[str, str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """points: [{"label": ..., "quality": q, "cost": c, "latency": l}, ...].
    Returns (table with on_front and dominated_by, axes dropped for missing values)."""
    directions = dict(directions or DIRECTIONS)
    dropped = [axis for axis in directions if any(_missing(p.get(axis)) for p in points)]
    axes = {k: v for k, v in directions.items() if k not in dropped}
    rows = []
    for p in points:
        if not axes:
            dominated_by: list[str] = []
        else:
            dominated_by = [o["label"] for o in points if o is not p and dominates(o, p, axes)]
        rows.append({**p, "on_front": not dominated_by, "dominated_by": ", ".join(dominated_by)})
    return pd.DataFrame(rows), dropped
