"""How many values one record may make, counted before a parser builds them.

Why: the byte bounds of evalcore/common/text_input.py bound what is read, not what parsing builds
from it. `{}` is 3 bytes of JSON, but once imported it is a retrieved chunk of about 2 KB (a
dict, a validated model, an Arrow row); a 900 KB answers file of 300 000 `{}` took 1 GB, a
6 KB gzipped target reply 600 MB, an 11 MB YAML config 1.8 GB. So every parser of a user's
data (answers, questions, labels, spans, target replies, YAML) counts the values a record
would make before it builds them, and a record over the budget is refused in one line
naming it.

The bounds (each documented in docs/reliability.md, "Bounds"):

* MAX_RECORD_VALUES (50 000, `EVALCORE_MAX_RECORD_VALUES`): JSON values in one record (a
  JSONL line, an element of a JSON array, a CSV row with the JSON in its cells, a Parquet row)
  and in one target reply. A value is an object, an array, a string, a number, true, false or
  null; object keys are not counted. Real records hold a few thousand at most (a SQuAD
  article about 2 500).
* MAX_YAML_NODES (500 000, `EVALCORE_MAX_YAML_NODES`): nodes (scalars, keys included, and
  collections) in a YAML question file, which is parsed whole; about 200 MB while loading.
* SETTINGS_MAX_BYTES / SETTINGS_MAX_NODES (1 MB, 20 000): a run config, an options file, a
  price table or a prompt template, which are small by nature.

Counting JSON is cheap: every value but the first of a text follows a `,` or opens a
container, so `1 + count(",") + count("[") + count("{")` bounds the values from above at
memchr speed (str.count), a small fraction of what json.loads costs. Only when that bound
passes the budget is the exact count taken: the same count between the strings (commas in
prose are not values), less the empty containers, stopping once past the budget. A reader
holding more text than the value at hand (json_stream.py) also needs where the value ends:
`count_values` finds it by a scan in Python, used only when the exact count of all the text
held passes the budget.
"""

from __future__ import annotations

import json
import os
import re

from typing import NamedTuple

from evalcore.errors import EvalcoreError

MAX_RECORD_VALUES = 50_000
VALUES_ENV = "EVALCORE_MAX_RECORD_VALUES"
MAX_YAML_NODES = 500_000
YAML_NODES_ENV = "EVALCORE_MAX_YAML_NODES"
SETTINGS_MAX_BYTES = 2 ** 20
SETTINGS_MAX_NODES = 20_000


class RecordSize(NamedTuple):
    """What one record cost to read: its characters (bytes for binary formats) and an upper
    bound of the values it made. An importer batches records by these (evalcore/scoring/importer.py)."""

    chars: int
    values: int


class TooManyValues(ValueError):
    """A text would make more values than its budget allows (a ValueError, as a parser's is)."""

    def __init__(self, at_least: int, limit: int, what: str = "JSON values", env: str = VALUES_ENV,
                 scope: str = "record"):
        self.at_least, self.limit = at_least, limit
        super().__init__(f"more than {limit:,} {what} (the bound on one {scope}; set {env} to raise it)")


def _env_count(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise EvalcoreError(f"{name} must be a whole number above 0, got {raw!r}")
    return value


def value_limit() -> int:
    """The most JSON values one record or reply may make (EVALCORE_MAX_RECORD_VALUES, else 50 000)."""
    return _env_count(VALUES_ENV, MAX_RECORD_VALUES)


def yaml_node_limit() -> int:
    """The most nodes a YAML question file may hold (EVALCORE_MAX_YAML_NODES, else 500 000)."""
    return _env_count(YAML_NODES_ENV, MAX_YAML_NODES)


def values_at_most(text: str | bytes, start: int = 0, end: int | None = None) -> int:
    """An upper bound of the JSON values in text[start:end], at memchr speed."""
    end = len(text) if end is None else end
    if isinstance(text, bytes):
        return 1 + text.count(b",", start, end) + text.count(b"[", start, end) + text.count(b"{", start, end)
    return 1 + text.count(",", start, end) + text.count("[", start, end) + text.count("{", start, end)


# A JSON string, or (the second branch) a quote that opens a string never closed in the text.
# Possessive (`*+`): the regular expression engine keeps no backtracking mark per escape
# (~120 bytes each: a 16 MB answer of escaped quotes took 480 MB only to be counted). The
# unclosed branch ends the scan there: searching on would try a string at every quote inside
# it, each attempt running to the end of the text (a 260 KB line took minutes).
_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|"', re.S)
_BYTES_STRING = re.compile(_STRING.pattern.encode(), re.S)


def _between(text: str | bytes, start: int, end: int) -> int:
    """Values begun in text[start:end], which holds no string: its commas and openers, less
    its empty containers (`[]`, `{}`; one written with spaces inside counts twice)."""
    if end - start <= 2:  # the usual gap between two strings: `,` or `: ` (str.count costs a call each)
        gap = text[start:end]
        return sum(gap.count(m) for m in ((b",", b"[", b"{") if isinstance(text, bytes) else (",", "[", "{"))) \
            - (gap in (b"[]", b"{}", "[]", "{}"))
    if isinstance(text, bytes):
        marks = (b",", b"[", b"{", b"[]", b"{}")
    else:
        marks = (",", "[", "{", "[]", "{}")
    comma, square, curly, squares, curlies = (text.count(m, start, end) for m in marks)
    return comma + square + curly - squares - curlies


def exact_values(text: str | bytes, start: int = 0, end: int | None = None, limit: int | None = None) -> int:
    """The JSON values of text[start:end] (one value or several): 1 + the commas and openers
    outside strings, less the empty containers. The strings are stepped over one by one (a
    copy of the text without them would cost as much as the text, and a regular
    expression's substitution a list entry per match), stopping once the count passes
    `limit`. Invalid JSON gets a number too; its parser says what is wrong with it."""
    end = len(text) if end is None else end
    pattern = _BYTES_STRING if isinstance(text, bytes) else _STRING
    values, at, strings = 1, start, 0
    for match in pattern.finditer(text, start, end):
        values += _between(text, at, match.start())
        if match.end() - match.start() == 1:  # a string that is not closed: the rest is in it
            return values
        at = match.end()
        strings += 1  # keys and string values: at most two per value in valid JSON
        if limit is not None and (values > limit or strings > 2 * limit + 2):
            return max(values, limit + 1)
    return values + _between(text, at, end)


# A string (escapes included; a lone quote: one not closed, as in _STRING), or one structural
# character. Strings are skipped whole, so a comma inside one is not counted.
_TOKEN = re.compile(_STRING.pattern + r'|[\[\]{},]', re.S)
_SPACE = re.compile(r"[ \t\r\n]*")
OPENERS, CLOSERS = "[{", "]}"


def count_values(text: str, start: int, limit: int) -> tuple[int, int | None]:
    """(values, end) of the JSON value that starts at `start` (after white space): `end` is just
    past a container, where a scalar starts (one value, however long: its end is the parser's
    to find), None when `text` stops first or the count passed `limit` (it stops at limit + 1).
    Values are 1 + the commas outside strings + the containers that are not empty. Invalid
    JSON is counted as far as it looks like JSON; the parser that follows reports it."""
    start = _SPACE.match(text, start).end()
    if start >= len(text):
        return 1, None
    if text[start] not in OPENERS:
        return 1, start
    values, strings, depth = 1, 0, 0
    for match in _TOKEN.finditer(text, start):
        char = text[match.start()]
        if char == '"':
            if match.end() - match.start() == 1:  # a string the text does not close
                return values, None
            strings += 1  # keys and string values: at most two per value in valid JSON
            if strings > 2 * limit + 2:
                return limit + 1, None
            continue
        if char in OPENERS:
            depth += 1
            after = match.end()
            if text[after:after + 1] in " \t\r\n":
                after = _SPACE.match(text, after).end()
            values += after < len(text) and text[after] not in CLOSERS  # its first element
        elif char in CLOSERS:
            depth -= 1
            if depth == 0:
                return values, match.end()
        else:  # a comma: one more element
            values += 1
        if values > limit:
            return values, None
    return values, None


def check_json(text: str | bytes, limit: int, start: int = 0, end: int | None = None, scope: str = "record") -> int:
    """The number of values of the JSON text[start:end] (an upper bound when within `limit`);
    TooManyValues when it makes more than `limit`, before anything is built."""
    bound = values_at_most(text, start, end)
    if bound <= limit:
        return bound
    if isinstance(text, bytes) and json.detect_encoding(text[start:start + 4]) != "utf-8":
        text = text[start:end].decode(json.detect_encoding(text[start:end]), "surrogatepass")
        start, end = 0, None
    values = exact_values(text, start, end, limit)
    if values > limit:
        raise TooManyValues(values, limit, scope=scope)
    return values


def loads(text: str | bytes, limit: int | None = None, scope: str = "record", **kwargs) -> object:
    """json.loads, refused with TooManyValues (a ValueError) when the text makes more than
    `limit` values (default: value_limit()); `scope` names the bound in the message."""
    check_json(text, value_limit() if limit is None else limit, scope=scope)
    return json.loads(text, **kwargs)
