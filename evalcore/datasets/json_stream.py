"""The records of a JSON file, decoded one at a time, so no file size costs its size in memory.

Two shapes hold records: a top-level array, or an object wrapping one under a known key
(`{"records": [...]}`, SQuAD's `{"data": [...]}`; records.LIST_KEYS, in order of preference).
Both are streamed: the text comes in pieces (evalcore/common/text_input.py, which refuses binary
data), and each record is decoded alone with `raw_decode`, its text held only until then and
never longer than the record bound. An object is read twice: once to learn which of its
keys holds the records (a later key may be preferred over an earlier one, and a repeated key
counts by its last value, as `json.loads` would have it), once to stream that list. Any syntax
error anywhere is found by the first pass, before a record is handed out.

What a record makes is bounded as well as its text: before a value is decoded, the values its
text could make are counted (evalcore/common/value_budget.py) and a record of more than the budget
(50 000, EVALCORE_MAX_RECORD_VALUES) is refused naming it. The text is held in CHUNK-sized
steps, so the text past the record in hand is short and counting it is needless: a record
whose text (with what follows it) is under twice the budget in characters cannot make more
values than the budget, and only a longer one is counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from evalcore.errors import InputError
from evalcore.common.text_input import LIMIT_ENV, PIECE, iter_text, record_limit, shown_mb
from evalcore.common.value_budget import (
    RecordSize,
    TooManyValues,
    count_values,
    exact_values,
    value_limit,
    values_at_most,
)


_SPACE = re.compile(r"[ \t\r\n]*")
TEXT_PIECE = PIECE  # bytes of text read at a time (tests make it tiny, so records straddle pieces)
CHUNK = 64 * 1024  # characters added to the text held at a time


def _strict_json_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


class JsonCursor:
    """A position in a JSON file's text, with just enough of the text around it in memory."""

    def __init__(self, path: Path, limit: int | None = None):
        self.path, self.file = path, str(path)
        self.limit = record_limit() if limit is None else limit
        self.values = value_limit()
        self.pieces = iter_text(path, TEXT_PIECE)
        self.piece, self.piece_pos = "", 0
        self.buf, self.pos, self.eof = "", 0, False
        self.counted = False  # all the text held past pos makes at most the budget (until more is added)
        self.decoder = json.JSONDecoder(parse_constant=_strict_json_constant)
        self.last_size = RecordSize(0, 0)  # what the last value() cost

    def _chunk(self) -> str:
        """The next CHUNK characters of the file ('' at the end)."""
        if self.piece_pos >= len(self.piece):
            self.piece, self.piece_pos = next(self.pieces, ""), 0
        chunk = self.piece[self.piece_pos:self.piece_pos + CHUNK]
        self.piece_pos += len(chunk)
        return chunk

    def _more(self, at_least: int = 1) -> bool:
        """Append at least `at_least` characters (or up to the end); False at the end."""
        added = [self.buf[self.pos:]]
        got = 0
        while got < at_least:
            piece = self._chunk()
            if not piece:
                self.eof = True
                break
            added.append(piece)
            got += len(piece)
        self.buf, self.pos = "".join(added), 0
        self.counted = False
        return got > 0

    def peek(self) -> str:
        """The next character that is not white space ('' at the end), not consumed."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos:self.pos + 1]

    def fail(self, message: str, record: int | None = None) -> InputError:
        return InputError(self.file, f"invalid JSON: {message}", record=record)

    def value(self, record: int | None = None) -> Any:
        """The whole JSON value at the cursor, which moves past it. The text held grows by
        doubling (a long record costs O(n), not O(n^2)) and never past the record bound."""
        while True:
            held = len(self.buf) - self.pos
            if held > self.limit:
                what = f"record {record}" if record else "a value"
                raise InputError(self.file, f"{what} is longer than {shown_mb(self.limit)} (the bound on one "
                                 f"record; set {LIMIT_ENV} to raise it)", record=record)
            more = max(1, min(max(held, CHUNK), self.limit + 1 - held))
            if held > 2 * self.values and not self._within_budget(record):
                if self.eof or not self._more(more):
                    raise self.fail("the text ends inside a value", record)
                continue
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise self.fail("nested too deeply", record) from None
            except ValueError as exc:
                if self.eof or not self._more(more):
                    msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise self.fail(msg, record) from exc
                continue
            if end < len(self.buf) or self.eof or not self._more(more):  # a number may go on
                self.last_size = RecordSize(end - self.pos, values_at_most(self.buf, self.pos, end))
                self.pos = end
                return obj

    def _within_budget(self, record: int | None) -> bool:
        """True when the value at the cursor makes at most the budget of values; False when the
        text held ends before it does (more is needed to tell); TooManyValues, as an
        InputError naming the record, when it makes more."""
        if self.counted:
            return True  # the text held was counted whole from an earlier position: this is part of it
        if (values_at_most(self.buf, self.pos) <= self.values
                or exact_values(self.buf, self.pos, limit=self.values) <= self.values):
            self.counted = True  # all the text held makes no more than the budget: so does this value
            return True
        values, end = count_values(self.buf, self.pos, self.values)
        if values > self.values:
            what = "the record" if record else "a value outside the records"
            raise InputError(self.file, f"{what} holds {TooManyValues(values, self.values)}", record=record)
        return end is not None

    def array(self) -> Iterator[Any]:
        """The elements of the array at the cursor, one at a time."""
        self.pos += 1  # the '['
        n = 0
        while True:
            char = self.peek()
            if char == "":
                raise self.fail("the array is not closed", n or None)
            if char == "]":
                self.pos += 1
                return
            if n:
                if char != ",":
                    raise self.fail("expected ',' or ']' after the record", n)
                self.pos += 1
                self.peek()
            n += 1
            yield self.value(n)

    def members(self) -> Iterator[str]:
        """The keys of the object at the cursor; at each, the caller consumes the value."""
        self.pos += 1  # the '{'
        n = 0
        while True:
            char = self.peek()
            if char == "}":
                self.pos += 1
                return
            if n:
                if char != ",":
                    raise self.fail("expected ',' or '}' after a member of the object")
                self.pos += 1
                char = self.peek()
            if char != '"':
                raise self.fail("expected a key (a string in double quotes)")
            key = self.value()
            if self.peek() != ":":
                raise self.fail(f"expected ':' after the key {key[:100]!r}")
            self.pos += 1
            self.peek()
            n += 1
            yield key

    def skip(self) -> None:
        """Move past the value at the cursor (an array element by element)."""
        if self.peek() == "[":
            for _ in self.array():
                pass
        else:
            self.value()

    def end(self) -> None:
        if self.peek():
            raise self.fail("extra data after the records")


def _records_member(path: Path, keys: tuple[str, ...]) -> int:
    """Which member (by position) of the top-level object holds the records."""
    cursor = JsonCursor(path)
    cursor.peek()
    last: dict[str, tuple[int, bool]] = {}
    for i, key in enumerate(cursor.members()):
        is_list = cursor.peek() == "["
        cursor.skip()
        last[key] = (i, is_list)
    cursor.end()
    for key in keys:
        if key in last and last[key][1]:
            return last[key][0]
    raise InputError(str(path), "expected a list of records, or an object with one of the keys " + ", ".join(keys))


def json_records(path: Path, keys: tuple[str, ...]) -> Iterator[tuple[Any, RecordSize]]:
    """The records of a JSON file, each with what it cost to read: the elements of a top-level
    array, or of the list an object holds under the first of `keys` it has."""
    cursor = JsonCursor(path)
    first = cursor.peek()
    if first == "[":
        for record in cursor.array():
            yield record, cursor.last_size
        cursor.end()
        return
    if not first:
        raise InputError(str(path), "invalid JSON: the file holds no JSON value")
    if first != "{":
        raise InputError(str(path), "expected a list of records, or an object with one of the keys " + ", ".join(keys))
    chosen = _records_member(path, keys)
    for i, _ in enumerate(cursor.members()):
        if i == chosen:
            for record in cursor.array():
                yield record, cursor.last_size
            return
        cursor.skip()
