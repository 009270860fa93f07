"""What a run's pointer (tables.json) may say: the names of the files it holds, and its counts.

Why this module: writers delete what the pointer's `retired` and `absorbed` lists name, readers
open what `files` names, and every one of those names is read back from a file anybody can
edit. A name with `..` once made `evalcore score` unlink files outside the store; a 300-letter
name ended every later write in "File name too long"; `files.questions` naming the run's
responses file ended `score` in fifteen validation errors; a key `../../evil` under `files`
was accepted silently. So a pointer is trusted only if every name in it is one evalcore itself
writes, for the table its key names:

* `files` maps a known table (a run table or a derived one) to `data/<that table>-g<N>-<tag>.parquet`;
* `previous` lists such data files (of any known table);
* `retired` maps such data files, or a format-1 part file `<run table>/<part name>`, to a time;
* `absorbed` lists part files, `parts/<run table>/<part name>` or `<run table>/<part name>`;
* `rows` and `replaced` map run tables to counts; `generation` is a count below 10^12 - 1.

Every name is bounded: a table name of at most 40 letters, a generation of at most 12 digits, a
tag of at most 32 hex digits, a part file name of at most 128 plain characters (letters,
digits, `.`, `_`, `-`), ending `.parquet`, not hidden. Part files named otherwise are never
absorbed (layout.pending_parts), so a compaction never writes a pointer this module refuses.
"""

from __future__ import annotations

import math
import re
from typing import Any

from evalcore.store import safe_paths as _safe
from evalcore.store.summary import DERIVED_TABLES
from evalcore.store.columns import COLUMNS, KEY_DEFAULTS, KEYS, ORDER_COLUMN, SET_KEYS, column_names

RUN_TABLES = tuple(COLUMNS)
KNOWN_TABLES = frozenset(RUN_TABLES) | frozenset(DERIVED_TABLES)
DATA_DIR = "data"
PARTS_DIR = "parts"
MAX_GENERATION = 10 ** 12 - 1  # below it, a compaction's generation + 1 still fits the name's 12 digits

# data/<table>-g<N>-<tag>.parquet, and the hidden temporary name a compaction writes it under
DATA_NAME_RE = re.compile(r"^\.?(?P<table>[a-z][a-z_]{0,39})-g(?P<generation>[0-9]{1,12})-(?P<tag>[0-9a-f]{1,32})"
                          r"\.parquet(?:\.tmp)?$")
# what a writer names a part file (parquet_write.write_part: part-<time>-<random>.parquet), and any
# other plain name of that shape a person or an older evalcore may have put there
PART_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}\.parquet$")


def data_generation(name: str) -> tuple[str, int, str] | None:
    """(table, generation, tag) of a file name in data/ (or its temporary name); None if the name
    is not one a compaction writes."""
    match = DATA_NAME_RE.match(name)
    return (match["table"], int(match["generation"]), match["tag"]) if match else None


def is_part_name(name: str) -> bool:
    """Whether a file in a parts folder is a part file a compaction may absorb."""
    return bool(PART_NAME_RE.match(name))


def shown(value: Any) -> str:
    """A name read from the pointer, quoted for a one-line message (a long one cut short)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(str(value))} characters)"


def pointer_problem(data: Any, run_id: str | None = None) -> str | None:
    """Why a parsed pointer cannot be trusted (None if it can): it does not say its generation,
    was written for another run folder (`run_id`: a copied or renamed folder), or one of its
    keys names something that is not a file evalcore writes for that key (module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return "table pointer has no 'files' object"
    generation = data.get("generation")
    if not _count(generation) or generation >= MAX_GENERATION:
        return "table pointer has no valid 'generation'"
    if run_id is not None and "run_id" in data and data["run_id"] != run_id:
        return (f"table pointer was written for run {shown(data['run_id'])}, not for this folder ({run_id!r}): "
                "a copied or renamed run folder")
    return _files_problem(data["files"]) or _lists_problem(data) or _counts_problem(data)


def _files_problem(files: dict) -> str | None:
    for table, rel in files.items():
        if table not in KNOWN_TABLES:
            return f"table pointer's 'files' names an unknown table {shown(table)}"
        problem = _data_problem(rel, table)
        if problem:
            return f"table pointer's 'files' entry {shown(table)} ({shown(rel)}) is not that table's file: it {problem}"
    return None


def _lists_problem(data: dict) -> str | None:
    for key, allowed in (("previous", (_data_problem,)), ("retired", (_data_problem, _legacy_problem)),
                         ("absorbed", (_parts_problem, _legacy_problem))):
        entries = data.get(key, {} if key == "retired" else [])
        if key == "retired" and not isinstance(entries, dict):
            return f"table pointer's {key!r} is not an object"
        if key != "retired" and not isinstance(entries, list):
            return f"table pointer's {key!r} is not a list"
        for rel in entries:
            problems = [check(rel) for check in allowed]
            if all(problems):
                return f"table pointer's {key!r} entry {shown(rel)} is not a file of this run: it {problems[0]}"
    for rel, since in data.get("retired", {}).items():
        if isinstance(since, bool) or not isinstance(since, (int, float)) or not math.isfinite(since):
            return f"table pointer's 'retired' entry {shown(rel)} has no valid time ({shown(since)})"
    return None


def _counts_problem(data: dict) -> str | None:
    for key in ("rows", "replaced"):
        counts = data.get(key, {})
        if not isinstance(counts, dict) or not all(_count(n) for n in counts.values()):
            return f"table pointer's {key!r} is not an object of row counts"
        unknown = [t for t in counts if t not in RUN_TABLES]
        if unknown:
            return f"table pointer's {key!r} names an unknown table {shown(unknown[0])}"
    return None


def _data_problem(rel: Any, table: str | None = None) -> str | None:
    """Why `rel` is not `data/<table>-g<N>-<tag>.parquet` of a known table (of `table`, if given)."""
    problem = _safe.rel_problem(rel)
    if problem:
        return problem
    folder, _, name = rel.partition("/")
    parsed = data_generation(name) if folder == DATA_DIR and not name.startswith(".") else None
    if parsed is None or name.endswith(".tmp"):
        return f"is not in {DATA_DIR}/ under a name a compaction writes (<table>-g<N>-<tag>.parquet)"
    if parsed[0] not in KNOWN_TABLES:
        return f"names the unknown table {shown(parsed[0])}"
    if table is not None and parsed[0] != table:
        return f"is a file of table {parsed[0]!r}, not of {table!r}"
    return None


def _parts_problem(rel: Any) -> str | None:
    """Why `rel` is not `parts/<run table>/<part name>`."""
    problem = _safe.rel_problem(rel)
    if problem:
        return problem
    parts = rel.split("/")
    if len(parts) == 3 and parts[0] == PARTS_DIR and parts[1] in RUN_TABLES and is_part_name(parts[2]):
        return None
    return f"is not a part file in {PARTS_DIR}/<table>/ (a plain name ending .parquet, at most 128 characters)"


def _legacy_problem(rel: Any) -> str | None:
    """Why `rel` is not a format-1 part file `<run table>/<part name>`."""
    problem = _safe.rel_problem(rel)
    if problem:
        return problem
    parts = rel.split("/")
    if len(parts) == 2 and parts[0] in RUN_TABLES and is_part_name(parts[1]):
        return None
    return "is not a format-1 part file in <table>/"


def columns_problem(table: str, names: list[str]) -> str | None:
    """Why a Parquet file with these (top-level) columns is not a file of run table `table`
    (None if it can be; derived tables vary by run and are not judged). Its name is not proof:
    a responses file copied to `data/questions-g1-....parquet` once ended `score` in fifteen
    validation errors, and a compaction would have merged it into the questions. A run table's
    columns have only ever been added, so a file of it has no column outside its schema (every
    run table has a column no other one has), and it has the columns a merge keys on."""
    if table not in COLUMNS:
        return None
    schema = column_names(table)
    foreign = [n for n in names if n not in schema]
    if foreign:
        owner = next((t for t in RUN_TABLES if t != table and set(names) <= set(column_names(t))), None)
        return (f"it is not a {table} file: it has the column(s) {', '.join(map(shown, foreign[:4]))}"
                + (f" of table {owner!r}" if owner else ""))
    needed = [c for c in (*KEYS.get(table, SET_KEYS.get(table, ())), ORDER_COLUMN[table])
              if c not in KEY_DEFAULTS]  # a file from before a key column's time lacks it (trial)
    missing = [c for c in needed if c not in names]
    if missing:
        return f"it is not a {table} file: it lacks the column(s) {', '.join(missing)}"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
