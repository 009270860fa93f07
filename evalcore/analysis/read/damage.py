"""Which runs the store left out of every reading because one of their files cannot be read.

Why here: the CLI's `runs` and the dashboard's Runs page both list them apart from the healthy
runs, with the one-line reason the store gave (naming the file); both read it through this one
function. It costs nothing extra: the store finds damaged runs while it builds its views.
"""

from __future__ import annotations

import pandas as pd

from evalcore.store import RunStore, query_df


def damaged_runs(store: RunStore) -> pd.DataFrame:
    """One row per damaged run: run_id, name, file (relative to the run, when one file is the
    cause) and reason."""
    return query_df(store, "SELECT run_id, name, file, reason FROM damaged_runs ORDER BY run_id")


def damaged_annotations(store: RunStore) -> pd.DataFrame:
    """One row per annotation file the store left out of every reading because its footer
    cannot be read: file (under the store) and reason. Its labels are missing from agreement
    and corrected estimates until it is restored or removed."""
    return query_df(store, "SELECT file, reason FROM damaged_annotations ORDER BY file")
