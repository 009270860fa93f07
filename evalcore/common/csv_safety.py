"""Every CSV evalcore writes, and how its cells read back: the one spreadsheet-formula guard.

Why: a CSV is opened in a spreadsheet, and a spreadsheet runs a cell that starts with `=`, `+`,
`-` or `@` (and, in some, one that starts with a tab or carriage return, or with spaces before
the `=`) as a formula: `=HYPERLINK(...)` in an imported note or answer becomes a live link, a
DDE payload a command. The usual guard (OWASP's "CSV injection") puts an apostrophe in front;
a spreadsheet then shows the cell as text without the apostrophe.

The guard must also be undone when evalcore reads a CSV back (`labels import` of a `labels
export`, `import` of answers), or every round trip would add an apostrophe. To make that exact,
text that already *looks* guarded (apostrophes followed by a risky cell) gets one more
apostrophe too, so reading strips exactly the one writing added:

    guard("=1+1") == "'=1+1"      unguard("'=1+1") == "=1+1"
    guard("'=1+1") == "''=1+1"    unguard("''=1+1") == "'=1+1"
    guard("it's") == "it's"       unguard("it's") == "it's"

A plain number (`-1`, `+0.5`, `-2e3`) is a number to every spreadsheet, not a formula, and is
left as it is.

Two more things a CSV cannot say, handled here so every export re-imports to the same text:
text made only of spaces (a reader takes a blank cell for a missing value) is written with the
apostrophe too (`'  `), so it reads back as itself; and a NUL character, which every reader of
text refuses as binary data (evalcore/common/text_input.py), is written as U+FFFD (what evalcore's
readers make of a NUL on the way in: evalcore/schemas/storable.py; a store written before that
may still hold one). Lives with the schemas because every layer that writes or reads a CSV (the
dataset readers, the exports, the dashboard's download buttons) may import it.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import pandas as pd

# What starts a formula: the ASCII signs and their full-width forms (which some spreadsheets
# and input methods turn into the ASCII ones).
FORMULA_SIGNS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
GUARD = "'"
NUL_REPLACEMENT = "\ufffd"
# Rows end in CR LF (RFC 4180, what spreadsheets write): the csv module quotes a cell only when
# it holds a character of the line ending, so with a bare LF a carriage return inside a note
# was written unquoted and split the row when read back.
LINE_END = "\r\n"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _leading_blank(ch: str) -> bool:
    """Whitespace, a control or an invisible format character (zero-width space, BOM, bidi
    marks): what a spreadsheet may skip, or a reader not see, before a formula sign."""
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf")


def is_risky(text: str) -> bool:
    """Would a spreadsheet run this cell (or could it, after skipping leading blanks)?

    Risky: a first character that is a control character (tab, carriage return, ...; OWASP's
    list), or a formula sign as the first character after any leading whitespace, controls or
    invisible format characters, unless the whole cell is a plain number."""
    if not text:
        return False
    if unicodedata.category(text[0]) == "Cc":
        return True
    i = 0
    while i < len(text) and _leading_blank(text[i]):
        i += 1
    if i == len(text) or text[i] not in FORMULA_SIGNS:
        return False
    return not (i == 0 and _NUMBER.fullmatch(text))


def _blank(text: str) -> bool:
    """Text of spaces only: a reader would take the cell for an empty one."""
    return bool(text) and not text.strip()


def _needs_guard(text: str) -> bool:
    return is_risky(text) or _blank(text)


def is_guarded(text: str) -> bool:
    """One or more apostrophes followed by a risky or blank cell: what `guard` writes (or would)."""
    rest = text.lstrip(GUARD)
    return len(rest) < len(text) and _needs_guard(rest)


def guard(value: Any) -> Any:
    """A cell as written to a CSV: risky or blank text (and text that looks guarded) gets one
    leading apostrophe; anything that is not text (numbers, None) is returned as it is."""
    if isinstance(value, str) and (_needs_guard(value) or is_guarded(value)):
        return GUARD + value
    return value


def unguard(text: str) -> str:
    """A CSV cell as evalcore reads it: the apostrophe `guard` added is taken off (only that one,
    so text that really began with an apostrophe keeps it)."""
    return text[1:] if is_guarded(text) else text


def csv_cell(value: Any) -> Any:
    """A value as evalcore's CSV writers write it: NUL as U+FFFD (a file holding one is refused as
    binary by every reader), then `guard`."""
    if isinstance(value, str) and "\x00" in value:
        value = value.replace("\x00", NUL_REPLACEMENT)
    return guard(value)


def guard_frame(df: "pd.DataFrame") -> "pd.DataFrame":
    """A copy of `df` with every text cell guarded (numeric columns are left alone)."""
    from pandas.api.types import is_string_dtype

    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or is_string_dtype(out[col].dtype):
            out[col] = [csv_cell(v) for v in out[col]]
    return out


def frame_to_csv(df: "pd.DataFrame") -> str:
    """A data frame as CSV text (no index), every text cell guarded; the header too."""
    guarded = guard_frame(df)
    guarded.columns = [csv_cell(str(c)) for c in guarded.columns]
    return guarded.to_csv(index=False, lineterminator=LINE_END)


def rows_to_csv(rows: Iterable[Mapping[str, Any]], fields: Sequence[str]) -> str:
    """Records as CSV text with the header `fields`, every text cell guarded (None -> empty)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator=LINE_END)
    writer.writerow({f: csv_cell(f) for f in fields})
    for row in rows:
        writer.writerow({k: ("" if v is None else csv_cell(v)) for k, v in row.items()})
    return buf.getvalue()
