"""Long (key..., metric, value) rows to one column per metric, fast.

Why not DataFrame.pivot_table(aggfunc="first"): on a run of 100,000 questions its groupby spent
seconds (most of it checking every group for dropped NaN keys) where `unstack` takes a tenth of
that. The result is the same: per key and metric the first non-NaN value in row order, NaN when
there is none.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd


def first_wide(rows: pd.DataFrame, index: Sequence[str], column: str = "metric", value: str = "value") -> pd.DataFrame:
    """One row per `index` key (as the frame's index), one column per `column` value."""
    keys = [*index, column]
    frame = rows[keys + [value]]
    if frame.duplicated(keys).any():  # keep the first non-NaN of each key, as pivot_table's "first"
        order = frame[value].isna().to_numpy().argsort(kind="stable")
        frame = frame.iloc[order].drop_duplicates(keys)
    wide = frame.set_index(keys)[value].unstack(column)
    wide.columns.name = None
    return wide
