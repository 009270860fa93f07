"""Which runs the store left out of every reading because one of their files cannot be read.

Why here: the CLI's `runs` and the dashboard's Runs page both list them apart from the healthy
runs, with the one-line reason the store gave (naming the file); both read it through this one
function. It costs nothing extra: the store finds damaged runs while it builds its views.
The rows come as plain tuples (`evalcore runs` imports no pandas); the page's DataFrames are
built from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import RunStore


class DamagedRun(NamedTuple):
    run_id: str
    name: str | None  # unknown when run.json was not read
    file: str | None  # relative to the run, when one file is the cause
    reason: str


class DamagedFile(NamedTuple):
    file: str  # under the store
    reason: str


def damaged_run_rows(store: RunStore) -> list[DamagedRun]:
    """One row per damaged run, by run id."""
    from evalcore.store import open_db  # DuckDB: loaded by a reading, not by naming the rows' types

    with open_db(store) as con:
        rows = con.execute("SELECT run_id, name, file, reason FROM damaged_runs ORDER BY run_id").fetchall()
    return [DamagedRun(*row) for row in rows]


def damaged_annotation_rows(store: RunStore) -> list[DamagedFile]:
    """One row per annotation file the store left out of every reading because its footer
    cannot be read. Its labels are missing from agreement and corrected estimates until it is
    restored or removed."""
    from evalcore.store import open_db

    with open_db(store) as con:
        rows = con.execute("SELECT file, reason FROM damaged_annotations ORDER BY file").fetchall()
    return [DamagedFile(*row) for row in rows]


def damaged_runs(store: RunStore) -> pd.DataFrame:
    """damaged_run_rows as a DataFrame: run_id, name, file, reason."""
    import pandas as pd

    return pd.DataFrame(damaged_run_rows(store), columns=list(DamagedRun._fields))


def damaged_annotations(store: RunStore) -> pd.DataFrame:
    """damaged_annotation_rows as a DataFrame: file, reason."""
    import pandas as pd

    return pd.DataFrame(damaged_annotation_rows(store), columns=list(DamagedFile._fields))
