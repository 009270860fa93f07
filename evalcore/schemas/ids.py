"""One rule for the names people type: question ids, method names, run names, judge specs, annotators.

Why: a name reaches evalcore many ways (an answers file, a dataset, a trace attribute, a labels
CSV, a `RUN:method` argument, a dashboard URL) and each way used to treat spaces and Unicode
its own way. A method imported as "alpha " could be labelled, but `labels import` strips its
cells, so its labels named "alpha" and never matched again; two runs whose question ids were
the same words in NFC and NFD (what macOS file names and some editors produce) paired on no
question at all, and a CI gate "passed" on nothing.

The rule, applied on every way in (`canonical_id`):
  1. Unicode NFC normalisation (the composed form: "e" + U+0301 becomes "é");
  2. outer whitespace removed: every character Python's `str.isspace` calls whitespace (tabs,
     line breaks, U+00A0, U+3000, ...) and the invisible U+200B, U+2060, U+FEFF (a byte-order
     mark a spreadsheet leaves in a cell) and U+180E (`SPACES`). Inner characters are kept.

Names written by an older evalcore keep their stored spelling on disk; they are still matched,
by comparing canonical forms (`match_name`, `id_sql` in pairing queries). Records read back from
the store validate with `STORED` as context so their ids stay exactly as stored (a re-score of an
old run must write the same keys as its answers have).
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Annotated, Iterable

from pydantic import AfterValidator, ValidationInfo

# Every code point for which str.isspace() is true (tests/test_id_normalisation.py checks the
# list against Python's own), plus the invisible ones a name can carry unseen (zero-width space,
# word joiner, byte-order mark, Mongolian vowel separator): stripped from both ends of a name.
# Spelled out because SQL needs the same set (id_sql).
INVISIBLE = "\u180e\u200b\u2060\ufeff"
SPACES = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
          "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000" + INVISIBLE)

# Validation context for records read back from the store: their ids are kept as stored.
STORED = {"stored_ids": True}


def canonical_id(text: str) -> str:
    """The canonical form of a typed name: NFC, without outer whitespace (the module's rule)."""
    if text.isascii():
        return text.strip(SPACES)
    return unicodedata.normalize("NFC", text).strip(SPACES)


def match_name(typed: str, names: Iterable[str]) -> str | None:
    """The spelling in `names` (names as stored) that `typed` means: the exact one if present,
    else the one with the same canonical form; None when there is none. Two stored names with
    one canonical form (possible only in a store written before the rule) match the typed name
    only exactly."""
    names = list(names)
    if typed in names:
        return typed
    wanted = canonical_id(typed)
    found = [n for n in names if canonical_id(n) == wanted]
    return found[0] if len(found) == 1 else None


def text_question_id(question: str) -> str:
    """The id a question without one gets, from its text under the same rule (so the same words
    in NFC and NFD, or with a trailing space, get one id): "q-" + 12 hex digits of SHA-1.
    For text already in NFC this is the digest evalcore has always used."""
    return "q-" + hashlib.sha1(canonical_id(question).encode("utf-8")).hexdigest()[:12]


# The longest name accepted. A name is a key: it is held in several columns of every table,
# hashed, compared and summed over, so an 8 MB question id cost twenty times its size to import
# where an 8 MB answer costs seven. No real id or method name comes near this.
MAX_NAME_CHARS = 4096


def _canonical_field(value: str, info: ValidationInfo) -> str:
    """The rule for an input field; a record read back from the store (context STORED) keeps its ids."""
    if info.context and info.context.get("stored_ids"):
        return value
    if len(value) > MAX_NAME_CHARS:
        raise ValueError(f"a name of {len(value):,} characters; names (ids, methods) may be at most "
                         f"{MAX_NAME_CHARS:,} (docs/data-formats.md, 'Bounds')")
    value = canonical_id(value)
    if not value:
        raise ValueError("must not be empty or only spaces")
    return value


# A name field of an input contract (EvalQuestion.id, EvalResponse.question_id / method, ...):
# canonical and not empty.
Id = Annotated[str, AfterValidator(_canonical_field)]


def _sql_class() -> str:
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in SPACES) + "]"


def id_sql(column: str) -> str:
    """The rule in DuckDB SQL for the column expression `column` (our own SQL text, never a
    user's): what pairing queries join on, so ids stored by an older evalcore in another form
    still pair. nfc_normalize is cheap on ASCII; the regex only trims."""
    cls = _sql_class()
    return f"regexp_replace(nfc_normalize({column}), '^{cls}+|{cls}+$', '', 'g')"

