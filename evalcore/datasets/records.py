"""Reading record files (JSONL / JSON / CSV / Parquet / YAML) with record numbers for errors.

Each reader yields (record_number, dict). Record numbers are 1-based: the line for JSONL,
the row after the header for CSV (record 1 is the first row under the header, a spreadsheet's
row 2; blank rows count, so record N is always the spreadsheet's row N + 1), the position for
JSON arrays, YAML lists and Parquet. Every error about a CSV record uses that number, those
found while reading its bytes (binary data, bytes that are not UTF-8, a record over the bound)
too, and adds the line where the file has one.

Text that cannot be stored or exported (NUL, lone UTF-16 surrogates: JSON can spell both) is
replaced by U+FFFD in every record read here (evalcore/schemas/storable.py) and reported: to
the caller's `on_repair(record, fields)`, or, without one, in one warning per file.

Memory: every format is streamed (a line, a CSV record, a JSON record, a bounded Parquet batch
at a time: evalcore/datasets/parquet_rows.py), so a file of any size is read in bounded memory;
JSON, whether a top-level array or an object wrapping the records (`{"records": [...]}`,
SQuAD's `{"data": [...]}`), through evalcore/datasets/json_stream.py. The text formats read
through evalcore/common/text_input.py: one line or record is at most its bound (32 MB unless
EVALCORE_MAX_RECORD_MB says otherwise), and binary data (a NUL byte, bytes that are not UTF-8)
is refused naming its byte offset. What a record makes is bounded too (evalcore/common/value_budget.py):
its JSON values (a CSV row's cells and the JSON in them, a Parquet row's values) are counted
before they are built, and a record of more than 50 000 is refused naming it.
`read_sized_records` also says what each record cost to read, for a caller that batches them.

Whatever the bytes, a reader raises InputError naming the file (and the record where one
applies): binary data, a record over the bound, invalid syntax, nesting too deep for the
parser, a corrupt Parquet row group. Non-finite numbers are refused where they would be stored
(`check_finite`).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import logging
import math
import re
import sys
import tokenize
from contextlib import closing
from pathlib import Path
from typing import Any, Callable, Iterator

from evalcore.datasets.json_stream import json_records
from evalcore.datasets.parquet_rows import sized_parquet
from evalcore.errors import InputError
from evalcore.common.csv_safety import is_guarded, unguard
from evalcore.schemas.storable import WHAT, make_storable
from evalcore.common.text_input import LIMIT_ENV, iter_lines, record_limit, shown_mb, stored_size
from evalcore.common.value_budget import (
    VALUES_ENV,
    RecordSize,
    TooManyValues,
    check_json,
    value_limit,
    values_at_most,
)

log = logging.getLogger(__name__)
OnRepair = Callable[[int, list[str]], None]

LIST_KEYS = ("records", "data", "results", "test_cases", "samples", "questions", "items", "examples")


def _strict_json_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


def _loads(text: str, limit: int | None = None) -> Any:
    """json.loads with NaN/Infinity refused; with `limit`, TooManyValues (a ValueError) for a
    text that would make more values, before any is built."""
    if limit is not None:
        check_json(text, limit)
    try:
        return json.loads(text, parse_constant=_strict_json_constant)
    except RecursionError:  # e.g. 100 000 nested '[': Python's parser gives up, we report it
        raise ValueError("nested too deeply") from None


def check_finite(value: Any, file: str, record: int | str | None, field: str = "") -> None:
    """Refuse NaN/inf anywhere in a record: JSON has no such numbers, and a stored NaN or inf
    (a relevance, a latency, a check's number) silently poisons every mean computed from it.
    Parquet NaN never gets here: `parquet_rows.plain` turns it into a missing value first."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(file, f"{value!r} is not a finite number", record=record, field=field or None)
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, file, record, f"{field}.{k}" if field else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_finite(v, file, record, f"{field}.{i}" if field else str(i))


SizedRecords = Iterator[tuple[int, dict[str, Any], RecordSize]]


def sized_jsonl(path: Path) -> SizedRecords:
    limit = value_limit()
    for lineno, _, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            values = check_json(line, limit)
            obj = _loads(line)
        except TooManyValues as exc:
            raise InputError(str(path), f"the record holds {exc}", record=lineno) from None
        except ValueError as exc:
            raise InputError(str(path), f"invalid JSON: {exc}", record=lineno) from exc
        if not isinstance(obj, dict):
            raise InputError(str(path), f"expected a JSON object, got {type(obj).__name__}", record=lineno)
        size = RecordSize(len(line), values)
        del line  # the record is what the caller needs: its text is not held while it works
        yield lineno, obj, size


def sized_json(path: Path) -> SizedRecords:
    """Records of a JSON array, or of an object wrapping a list (both streamed: json_stream.py)."""
    for i, (rec, size) in enumerate(json_records(path, LIST_KEYS), start=1):
        if not isinstance(rec, dict):
            raise InputError(str(path), f"expected an object, got {type(rec).__name__}", record=i)
        yield i, rec, size


def read_yaml(path: Path) -> Any:
    """A YAML file through evalcore's one loader (aliases refused: see evalcore/common/safe_yaml.py);
    NUL and lone surrogates (YAML spells both: "\\0", "\\ud800") become U+FFFD, with a warning."""
    from evalcore.common.safe_yaml import read_yaml as _read

    doc, changed = make_storable(_read(path))
    if changed:
        _warn_repaired(path, len(changed), None)
    return doc


def _warn_repaired(path: Path | str, fields: int, records: list[int] | None) -> None:
    where = ""
    if records:
        where = f" of record(s) {', '.join(map(str, records[:10]))}{', ...' if len(records) > 10 else ''}"
    log.warning("warning: %s: replaced %s with U+FFFD in %d field(s)%s (they cannot be stored or exported)",
                path, WHAT, fields, where)


def _csv_cell(value: str, budget: int) -> tuple[Any, int]:
    """(value, values it made). CSV cells are text; list/object cells are JSON (e.g. a
    `contexts` column), or a list as pandas `to_csv` writes one (Python text: `['a', "it's"]`),
    which a ragas dataset saved with pandas holds in every list column. Anything else that
    merely starts with a bracket stays text ("[1] see the manual" is an answer). The apostrophe
    evalcore's CSV writers put before a cell a spreadsheet would run as a formula is taken off
    first (csv_safety.unguard); a blank cell is missing, but one the guard wrote as text of
    spaces ("'  ") is that text. A list that would make more than `budget` values raises
    TooManyValues before it is built."""
    guarded = is_guarded(value)
    value = unguard(value)
    stripped = value.strip()
    if not stripped:  # blank: missing, unless the writer's guard says it is text of spaces
        return (value if guarded else None), 1
    if stripped[:1] in ("[", "{"):
        made = check_json(stripped, budget)  # TooManyValues before anything is built
        try:
            return _loads(stripped), made
        except ValueError:
            pass
        if stripped[:1] == "[" and stripped[-1:] == "]":
            parsed = python_list_literal(stripped, budget)
            if parsed is not None:
                return parsed, values_at_most(stripped)
        return value, 1
    return value, 1


class NotAList(ValueError):
    """Text that looks like a list a program printed but cannot be read back as one."""


# Python list text longer than this is not parsed (the parser's memory grows with the text);
# a file that big should hold JSON lists, which are read at any size.
PY_LIST_MAX_CHARS = 8_000_000


def python_list_literal(text: str, budget: int | None = None) -> list[Any] | None:
    """The list a Python list literal of plain values stands for, or None when `text` is not
    one. Read with ast.literal_eval on this one field (never eval: nothing runs). Refused
    (NotAList) when the text is a numpy array's print-out: `['a' 'b']` has no commas, and
    Python would silently join the two strings into 'ab'. With `budget`, a text whose commas
    and brackets could make more values raises TooManyValues before Python's parser (hundreds
    of bytes per element) runs."""
    if len(text) > PY_LIST_MAX_CHARS:
        return None
    if budget is not None and values_at_most(text) > budget:
        raise TooManyValues(values_at_most(text), budget)
    try:
        tree = ast.parse(text, mode="eval")
        value = ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    strings = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str))
    try:
        tokens = sum(1 for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return None
    if tokens > strings:
        raise NotAList("strings without commas between them (a numpy array printed as text?); "
                       "save list columns as JSON (to_json, or .apply(list) before to_csv)")
    return value


# A cell may hold a long answer or a JSON list of contexts; the csv module's default limit
# (128 KiB per field) would refuse those. A whole record is bounded instead (_CsvLines).
CSV_FIELD_LIMIT = 2**31 - 1
_LONE_CR = re.compile(r"(?<=\r)(?!\n|$)")


# Past this many characters a CSV record is measured as it will be stored (text_input.stored_size):
# a shorter one can grow only a few MB that way, and is not worth the count.
STORED_SIZE_FROM = 2 ** 20


class _CsvLines:
    """The file's lines for csv.reader, each checked (text_input.iter_lines), with a bound on
    the lines one record spans: an unclosed quote must not gather the rest of the file. Past
    its first STORED_SIZE_FROM characters a record's lines count at the size JSON stores them
    in (a control character as six). A lone CR ends a line too, as it does in a file opened
    with newline="". An error found in the bytes names the record being read (`record`, the
    reader's numbering; "header" while the header is read) and the line. `served` counts the
    lines handed to csv.reader (its line_num, kept here: sized_csv replaces the reader)."""

    def __init__(self, path: Path):
        self.path = path
        self.limit = record_limit()
        self.lines = iter_lines(path, self.limit)
        self.pending: list[str] = []
        self.held = 0
        self.grew = False  # the record counted more than its characters (stored_size)
        self.served = 0
        self.first_line = 1
        self.record: int | str = "header"

    def __iter__(self) -> "_CsvLines":
        return self

    def __next__(self) -> str:
        if not self.pending:
            try:
                lineno, _, text = next(self.lines)
            except InputError as exc:  # numbered by line there: renumbered as the record it is in
                line = f" (line {exc.record})" if exc.record is not None else ""
                raise InputError(exc.file, exc.detail + line, record=self.record) from None
            if not self.held:
                self.first_line = lineno
            self.pending = _LONE_CR.split(text)[::-1] if "\r" in text[:-2] else [text]
            size = len(text) if self.held + len(text) <= STORED_SIZE_FROM else stored_size(text, quotes_doubled=True)
            self.grew = self.grew or size > len(text)
            self.held += size
            if self.held > self.limit:
                stored = " as stored (JSON spells a control character in six characters)" if self.grew else ""
                raise InputError(str(self.path), f"the record starting at line {self.first_line} is longer than "
                                 f"{shown_mb(self.limit)}{stored} (an unclosed quote? the bound on one record; set "
                                 f"{LIMIT_ENV} to raise it)", record=self.record)
        self.served += 1
        return self.pending.pop()

    def record_done(self, next_record: int) -> None:
        """The record read so far is whole; the lines read next belong to `next_record`."""
        self.held = 0
        self.grew = False
        self.record = next_record


def sized_csv(path: Path) -> SizedRecords:
    """Rows of a CSV file with a header, refusing the shapes that silently corrupt records.

    The csv module is forgiving in ways that hurt here: an unterminated quote swallows the
    following lines into one cell, a repeated header name keeps only the last column, a short
    row fills its missing cells with nothing. Each of these is an error naming the record (the
    row after the header, blank rows counted: the module docstring) and the line (strict mode
    catches broken quoting; the rest is checked per row).
    """
    csv.field_size_limit(min(CSV_FIELD_LIMIT, sys.maxsize))
    limit = value_limit()
    lines = _CsvLines(path)
    with closing(lines.lines):
        reader = csv.reader(lines, strict=True)
        header: list[str] | None = None
        i, line = 0, 1
        try:
            header = next(reader, None)
            if header is None:
                return
            lines.record_done(1)
            _check_header(header, path)
            line = lines.served + 1
            while (row := next(reader, None)) is not None:
                i += 1
                chars = lines.held
                lines.record_done(i + 1)  # csv.reader reads a row's lines before handing it over
                if chars > STORED_SIZE_FROM:  # its buffer (4 bytes a character) is not kept for the next
                    reader = csv.reader(lines, strict=True)
                if not any(cell.strip() for cell in row):  # a blank row: counted, not a record
                    line = lines.served + 1
                    continue
                if len(row) != len(header):
                    ends = f"-{lines.served}" if lines.served != line else ""
                    raise InputError(str(path), f"line {line}{ends}: {len(row)} cells, but the header has "
                                     f"{len(header)} columns (an unterminated quote or a missing/extra "
                                     "delimiter?)", record=i)
                rec, values = _csv_row(header, row, path, i, limit)
                del row  # the record's text is in `rec`
                yield i, rec, RecordSize(chars, values)
                line = lines.served + 1
        except csv.Error as exc:
            hint = " (a quote opened there is never closed?)" if "end of data" in str(exc) else ""
            raise InputError(str(path), f"invalid CSV in the row starting at line {line}: {exc}{hint}",
                             record=i + 1 if header else None) from exc


def _csv_row(header: list[str], row: list[str], path: Path, record: int, limit: int) -> tuple[dict[str, Any], int]:
    """The row as a record, and the values it made (one per cell, more for a JSON cell): the
    row's budget (`limit`) is shared by its cells, each JSON cell counted before it is parsed."""
    out = {}
    values = len(row)
    for name, cell in zip(header, row):
        if not name:
            continue
        try:
            out[name], made = _csv_cell(cell, limit - values + 1)
        except NotAList as exc:
            raise InputError(str(path), f"looks like a list but cannot be read as one: {exc}",
                             record=record, field=name) from None
        except TooManyValues:  # said with the record's bound, not what was left of it
            raise InputError(str(path), f"the record holds {TooManyValues(limit + 1, limit)}", record=record,
                             field=name) from None
        values += made - 1
    return out, values


def _check_header(header: list[str], path: Path) -> None:
    """A header names each column once; a blank name is allowed only for an unnamed index
    column (pandas' `to_csv` default), whose cells are ignored. A row may make at most the
    value budget, so a header of more columns is refused before any row is built."""
    limit = value_limit()
    if len(header) > limit:
        raise InputError(str(path), f"line 1: the header has {len(header):,} columns; a record may hold at most "
                         f"{limit:,} values (set {VALUES_ENV} to raise it)")
    seen: set[str] = set()
    for col in header:
        name = col.strip()
        if name and name in seen:
            raise InputError(str(path), f"line 1: column {name!r} appears twice in the header; "
                             "only one can be imported", field=name)
        seen.add(name)


READERS = {".jsonl": sized_jsonl, ".ndjson": sized_jsonl, ".json": sized_json, ".csv": sized_csv,
           ".parquet": sized_parquet}


def read_sized_records(path: str | Path, on_repair: "OnRepair | None" = None) -> SizedRecords:
    """(record number, record, RecordSize) of a JSONL/JSON/CSV/Parquet file, chosen by extension,
    every string storable (NUL and lone surrogates as U+FFFD): each repaired record is reported to
    `on_repair(record number, changed field paths)`, or, without it, counted in one warning once
    the file is read."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise InputError(str(path), f"unsupported file type {path.suffix!r}: use .jsonl, .json, .csv or .parquet")
    return _storable_records(path, reader(path), on_repair)


def _storable_records(path: Path, records: SizedRecords, on_repair: "OnRepair | None") -> SizedRecords:
    repaired: list[int] = []
    fields = 0
    for recno, rec, size in records:
        rec, changed = make_storable(rec)
        if changed:
            if on_repair is not None:
                on_repair(recno, changed)
            repaired.append(recno)
            fields += len(changed)
        yield recno, rec, size
    if repaired and on_repair is None:
        _warn_repaired(path, fields, repaired)


def read_records(path: str | Path, on_repair: "OnRepair | None" = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of a JSONL/JSON/CSV/Parquet file, chosen by extension, every string storable
    (read_sized_records without the sizes)."""
    return ((recno, rec) for recno, rec, _ in read_sized_records(path, on_repair))
