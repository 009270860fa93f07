"""Reading record files (JSONL / JSON / CSV / Parquet / YAML) with record numbers for errors.

Each reader yields (record_number, dict). Record numbers are 1-based: the line for JSONL,
the data row for CSV (header excluded), the position for JSON arrays, YAML lists and Parquet.

Memory: JSONL, CSV and Parquet are streamed (one line / row / 2048-row batch at a time), so a
file of any size is read in bounded memory. A JSON array is streamed too, one element at a
time (`_ArrayStream`); a JSON object wrapping the records (`{"records": [...]}`, SQuAD's
`{"data": [...]}`) is parsed whole, its text released before the records are handed out.

Whatever the bytes, a reader raises InputError naming the file (and the record where one
applies): invalid UTF-8, invalid syntax, nesting too deep for the parser, a corrupt Parquet
row group. Non-finite numbers are refused where they would be stored (`check_finite`).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import sys
import tokenize
from pathlib import Path
from typing import Any, Iterator

from evalcore.errors import InputError
from evalcore.schemas.csv_safety import unguard

LIST_KEYS = ("records", "data", "results", "test_cases", "samples", "questions", "items", "examples")


def _strict_json_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_strict_json_constant)
    except RecursionError:  # e.g. 100 000 nested '[': Python's parser gives up, we report it
        raise ValueError("nested too deeply") from None


def check_finite(value: Any, file: str, record: int | str | None, field: str = "") -> None:
    """Refuse NaN/inf anywhere in a record: JSON has no such numbers, and a stored NaN or inf
    (a relevance, a latency, a check's number) silently poisons every mean computed from it.
    Parquet NaN never gets here: `read_parquet` turns it into a missing value first."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(file, f"{value!r} is not a finite number", record=record, field=field or None)
    if isinstance(value, dict):
        for k, v in value.items():
            check_finite(v, file, record, f"{field}.{k}" if field else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_finite(v, file, record, f"{field}.{i}" if field else str(i))


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror}") from exc
    with fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                raise InputError(str(path), f"not valid UTF-8 ({exc.reason})", record=lineno + 1) from exc
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            try:
                obj = _loads(line)
            except ValueError as exc:
                raise InputError(str(path), f"invalid JSON: {exc}", record=lineno) from exc
            if not isinstance(obj, dict):
                raise InputError(str(path), f"expected a JSON object, got {type(obj).__name__}", record=lineno)
            yield lineno, obj


def _records_in(obj: Any, path: Path) -> list[Any]:
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        for key in LIST_KEYS:
            if isinstance(obj.get(key), list):
                return obj[key]
    raise InputError(str(path), "expected a list of records, or an object with one of the keys "
                     + ", ".join(LIST_KEYS))


def _parse_json_file(path: Path) -> Any:
    """The parsed document; the text goes out of scope on return, before records are used."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not valid UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror}") from exc
    try:
        return _loads(text)
    except ValueError as exc:
        raise InputError(str(path), f"invalid JSON: {exc}") from exc


JSON_CHUNK = 1 << 20


class _ArrayStream:
    """The elements of a top-level JSON array, decoded one at a time from chunks of the file.

    `raw_decode` needs a whole element in the buffer: when it fails before the end of the
    file, the buffer grows by at least its own size (so a huge element costs O(n), not O(n^2))
    and decoding is retried. Only the elements of a top-level array stream; an object
    wrapping the records (`{"records": [...]}`) is parsed whole by `read_json`.
    """

    def __init__(self, fh: Any, path: Path, buf: str):
        self.fh, self.path, self.buf, self.pos, self.eof = fh, path, buf, 0, False
        self.decoder = json.JSONDecoder(parse_constant=_strict_json_constant)

    def _more(self, at_least: int = 0) -> bool:
        try:
            chunk = self.fh.read(max(at_least, JSON_CHUNK))
        except UnicodeDecodeError as exc:
            raise InputError(str(self.path), f"not valid UTF-8 ({exc.reason})") from exc
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        self.eof = not chunk
        return bool(chunk)

    def _skip_space(self) -> str:
        """The next non-space character ('' at the end of the file), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos:self.pos + 1]

    def __iter__(self) -> Iterator[Any]:
        self.pos += 1  # the opening '['
        record = 0
        while True:
            char = self._skip_space()
            if char == "":
                raise InputError(str(self.path), "invalid JSON: the array is not closed", record=record or None)
            if char == "]":
                self.pos += 1
                if self._skip_space():
                    raise InputError(str(self.path), "invalid JSON: extra data after the array")
                return
            if record:
                if char != ",":
                    raise InputError(str(self.path), "invalid JSON: expected ',' or ']' after the record",
                                     record=record)
                self.pos += 1
                self._skip_space()
            record += 1
            while True:
                try:
                    obj, end = self.decoder.raw_decode(self.buf, self.pos)
                    break
                except RecursionError:
                    raise InputError(str(self.path), "invalid JSON: nested too deeply", record=record) from None
                except ValueError as exc:
                    if self.eof or not self._more(len(self.buf)):
                        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                        raise InputError(str(self.path), f"invalid JSON: {msg}", record=record) from exc
            self.pos = end
            yield obj


def read_json(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of a JSON array (streamed) or of an object wrapping a list (parsed whole)."""
    try:
        fh = open(path, encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror}") from exc
    with fh:
        stream = _ArrayStream(fh, path, "")
        if stream._skip_space() == "[":
            items: Any = stream
        else:
            fh.close()
            items = _records_in(_parse_json_file(path), path)
        for i, rec in enumerate(items, start=1):
            if not isinstance(rec, dict):
                raise InputError(str(path), f"expected an object, got {type(rec).__name__}", record=i)
            yield i, rec


def read_yaml(path: Path) -> Any:
    """A YAML file through evalcore's one loader (aliases refused: see evalcore/safe_yaml.py)."""
    from evalcore.safe_yaml import read_yaml as _read

    return _read(path)


def _csv_cell(value: str) -> Any:
    """CSV cells are text; list/object cells are JSON (e.g. a `contexts` column), or a list
    as pandas `to_csv` writes one (Python text: `['a', "it's"]`), which a ragas dataset saved
    with pandas holds in every list column. Anything else that merely starts with a bracket
    stays text ("[1] see the manual" is an answer). The apostrophe evalcore's CSV writers put
    before a cell a spreadsheet would run as a formula is taken off first (csv_safety.unguard)."""
    value = unguard(value)
    stripped = value.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return _loads(stripped)
        except ValueError:
            pass
        if stripped[:1] == "[" and stripped[-1:] == "]":
            parsed = python_list_literal(stripped)
            if parsed is not None:
                return parsed
        return value
    return value if stripped else None


class NotAList(ValueError):
    """Text that looks like a list a program printed but cannot be read back as one."""


# Python list text longer than this is not parsed (the parser's memory grows with the text);
# a file that big should hold JSON lists, which are read at any size.
PY_LIST_MAX_CHARS = 8_000_000


def python_list_literal(text: str) -> list[Any] | None:
    """The list a Python list literal of plain values stands for, or None when `text` is not
    one. Read with ast.literal_eval on this one field (never eval: nothing runs). Refused
    (NotAList) when the text is a numpy array's print-out: `['a' 'b']` has no commas, and
    Python would silently join the two strings into 'ab'."""
    if len(text) > PY_LIST_MAX_CHARS:
        return None
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
# (128 KiB per field) would refuse those. The file itself bounds a field's size.
CSV_FIELD_LIMIT = 2**31 - 1


def read_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV file with a header, refusing the shapes that silently corrupt records.

    The csv module is forgiving in ways that hurt here: an unterminated quote swallows the
    following lines into one cell, a repeated header name keeps only the last column, a short
    row fills its missing cells with nothing. Each of these is an error naming the line
    (strict mode catches broken quoting; the rest is checked per row).
    """
    csv.field_size_limit(min(CSV_FIELD_LIMIT, sys.maxsize))
    try:
        fh = open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror}") from exc
    with fh:
        reader = csv.reader(fh, strict=True)
        header: list[str] | None = None
        i, line = 0, 1
        try:
            header = next(reader, None)
            if header is None:
                return
            _check_header(header, path)
            line = reader.line_num + 1
            for row in reader:
                if not any(cell.strip() for cell in row):  # blank line
                    line = reader.line_num + 1
                    continue
                i += 1
                if len(row) != len(header):
                    ends = f"-{reader.line_num}" if reader.line_num != line else ""
                    raise InputError(str(path), f"line {line}{ends}: {len(row)} cells, but the header has "
                                     f"{len(header)} columns (an unterminated quote or a missing/extra "
                                     "delimiter?)", record=i)
                yield i, _csv_row(header, row, path, i)
                line = reader.line_num + 1
        except UnicodeDecodeError as exc:
            raise InputError(str(path), f"not valid UTF-8 ({exc.reason})") from exc
        except csv.Error as exc:
            hint = " (a quote opened there is never closed?)" if "end of data" in str(exc) else ""
            raise InputError(str(path), f"invalid CSV in the row starting at line {line}: {exc}{hint}",
                             record=i + 1 if header else None) from exc


def _csv_row(header: list[str], row: list[str], path: Path, record: int) -> dict[str, Any]:
    out = {}
    for name, cell in zip(header, row):
        if not name:
            continue
        try:
            out[name] = _csv_cell(cell)
        except NotAList as exc:
            raise InputError(str(path), f"looks like a list but cannot be read as one: {exc}",
                             record=record, field=name) from None
    return out


def _check_header(header: list[str], path: Path) -> None:
    """A header names each column once; a blank name is allowed only for an unnamed index
    column (pandas' `to_csv` default), whose cells are ignored."""
    seen: set[str] = set()
    for col in header:
        name = col.strip()
        if name and name in seen:
            raise InputError(str(path), f"line 1: column {name!r} appears twice in the header; "
                             "only one can be imported", field=name)
        seen.add(name)


def _plain(value: Any) -> Any:
    """Arrow values -> JSON-like Python: NaN -> None (pandas writes NaN for missing values),
    binary -> text (it must be UTF-8: records are text)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise InputError(str(path), f"not a readable Parquet file: {exc}") from exc
    i = 0
    batches = pf.iter_batches(batch_size=2048)
    while True:
        try:
            batch = next(batches, None)
            rows = batch.to_pylist() if batch is not None else None
        except Exception as exc:  # a corrupt row group, an unsupported type
            raise InputError(str(path), f"unreadable Parquet data: {exc}", record=i + 1) from exc
        if rows is None:
            return
        for row in rows:
            i += 1
            out = {}
            for k, v in row.items():
                try:
                    out[k] = _plain(v)
                except UnicodeDecodeError as exc:
                    raise InputError(str(path), f"binary value is not UTF-8 text ({exc.reason})",
                                     record=i, field=k) from exc
            yield i, out


READERS = {".jsonl": read_jsonl, ".ndjson": read_jsonl, ".json": read_json, ".csv": read_csv,
           ".parquet": read_parquet}


def read_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of a JSONL/JSON/CSV/Parquet file, chosen by extension."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise InputError(str(path), f"unsupported file type {path.suffix!r}: use .jsonl, .json, .csv or .parquet")
    return reader(path)
