"""Readers and writers agree on every table's columns.

Readers build their typed tables (a view over no file yet, the runs' manifests) from
store/columns.py in SQL, without pyarrow; writers build their Arrow schemas from the same lists
(store/tables.py). A wrong entry in the type map between the two would make a view over no file
disagree with the same view over files, so DuckDB must see the same types either way.
"""

from __future__ import annotations

import duckdb

from evalcore.store.columns import ANNOTATION_COLUMNS, COLUMNS, create_table_sql
from evalcore.store.tables import arrow_schema


def _types(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in con.execute(f"DESCRIBE {name}").fetchall()]


def test_a_typed_table_in_sql_has_the_types_of_the_arrow_schema_writers_use():
    con = duckdb.connect(":memory:")
    tables = {**COLUMNS, "annotations": ANNOTATION_COLUMNS}
    for table, columns in tables.items():
        con.execute(create_table_sql(f"sql_{table}", columns))
        con.register(f"arrow_{table}", arrow_schema(columns).empty_table())
        assert _types(con, f"sql_{table}") == _types(con, f"arrow_{table}"), table
    con.close()
