"""Users' text files read in bounded memory: binary data refused, every line and record bounded.

Why: a 2 GB file of NUL bytes (what a crash can leave behind) given to `evalcore import` or
`labels import` passed 1 GB of memory in seconds. NUL is valid UTF-8, and the file has no
newline, so `readline()` read all of it as one line (the CSV reader likewise, as one field).
Every reader of a user's text file (records, labels, traces, questions, YAML, TREC) goes
through here instead, and so holds the same promises:

* binary data is refused at once, in one line naming the file and the byte offset of the
  first NUL byte (no text format evalcore reads has one) or of the first byte that is not
  UTF-8;
* a line, a CSV record (its lines together) or a JSON record is at most `record_limit()`
  bytes: MAX_RECORD_MB (32 MB), or EVALCORE_MAX_RECORD_MB. A longer one is refused naming
  the file, the line or record, and where it starts; the reader never holds more than that
  plus one piece of PIECE bytes. Raw text that JSON stores longer (a CSV cell, a Parquet
  string of control characters) counts at its stored size (`stored_size`);
* a file parsed whole (YAML) is at most `document_limit()` bytes: MAX_DOCUMENT_MB (64 MB),
  or the record bound when that is set higher.

The readers themselves stay in their modules (evalcore/datasets/records.py and the loaders);
this module only hands them checked text.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import BinaryIO, Iterator

from evalcore.errors import EvalcoreError, InputError

# Why 32 MB, not 64: importing one record costs a multiple of its size, however lean the
# path (the text as read, as parsed, as a validated answer, as Arrow, as Parquet pages, and again
# when the run is compacted; the store keeps an answer twice, in its column and in the record's
# JSON, and a ground truth three times). Measured (tests/reliability/test_record_cost.py,
# docs/reliability.md "Bounds"): about 5-7 times for plain text, up to 13 for text with a
# character beyond U+FFFF (Python then holds four bytes per character). At 64 MB the worst
# came to about 800 MB over what the command needs anyway; at 32 MB it stays near 400 MB.
MAX_RECORD_MB = 32
MAX_DOCUMENT_MB = 64
LIMIT_ENV = "EVALCORE_MAX_RECORD_MB"
PIECE = 1 << 20  # bytes read at a time: a NUL file is refused after the first piece
BOM = b"\xef\xbb\xbf"
MB = 2 ** 20


# Characters JSON stores in more than one: a control character in six (\u0001), these in two
# (\b \t \n \f \r, the backslash, the double quote). evalcore keeps every record as JSON
# beside its columns, so raw text (a CSV cell, a Parquet string) is bounded at the size it
# will be stored at: a 10 MB cell of control characters is 60 MB of JSON once imported.
_STORED_IN_SIX = bytes(c for c in range(32) if c not in b"\b\t\n\f\r")
_STORED_IN_TWO = b'\b\t\n\f\r\\"'
JSON_SIX_CHARS = "[" + "".join(f"\\x{c:02x}" for c in _STORED_IN_SIX) + "]"  # (a regular expression)
JSON_TWO_CHARS = r'[\x08\x09\x0a\x0c\x0d\\"]'


def stored_size(text: str, quotes_doubled: bool = False) -> int:
    """The characters `text` takes as the content of a JSON string: its length, plus five for
    each control character and one for each character escaped with a backslash. With
    `quotes_doubled` (a CSV line, whose quotes already take two) quotes add nothing. Counted
    a megabyte at a time, at the speed of bytes.translate."""
    two = _STORED_IN_TWO.replace(b'"', b"") if quotes_doubled else _STORED_IN_TWO
    extra = 0
    for at in range(0, len(text), MB):
        data = text[at:at + MB].encode("utf-8", "surrogatepass")
        extra += 5 * (len(data) - len(data.translate(None, _STORED_IN_SIX)))
        extra += len(data) - len(data.translate(None, two))
    return len(text) + extra


def record_limit() -> int:
    """The most bytes one line or record may take (EVALCORE_MAX_RECORD_MB, else 32 MB)."""
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if not raw:
        return MAX_RECORD_MB * MB
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1 << 20:  # also refuses NaN
        raise EvalcoreError(f"{LIMIT_ENV} must be a number of megabytes above 0, got {raw!r}")
    return max(1, int(value * MB))


def document_limit() -> int:
    """The most bytes of a file parsed whole (YAML)."""
    return max(MAX_DOCUMENT_MB * MB, record_limit())


def shown_mb(limit: int) -> str:
    return f"{limit / MB:g} MB"


def _too_long(what: str, limit: int) -> str:
    return (f"{what} is longer than {shown_mb(limit)} (the bound on one record; set {LIMIT_ENV} "
            "to raise it)")


def open_binary(path: str | Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror or exc}") from exc


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-32's begin with these too


def refuse_nul(data: bytes, offset: int, path: str | Path, record: int | None = None) -> None:
    """InputError when `data` (which starts at byte `offset` of the file) holds a NUL byte;
    a file that starts with a UTF-16 or UTF-32 byte-order mark is named as such instead."""
    if offset == 0 and data.startswith(UTF16_BOMS):
        raise InputError(str(path), "the file is UTF-16 or UTF-32 text (it starts with that byte-order mark); "
                         "save it as UTF-8")
    at = data.find(b"\0")
    if at >= 0:
        raise InputError(str(path), f"binary data, not text: a NUL byte at byte offset {offset + at:,} "
                         "(a file cut short or overwritten by a crash?)", record=record)


def decode_utf8(data: bytes, offset: int, path: str | Path, record: int | None = None) -> str:
    """`data` (starting at byte `offset`) as text, or InputError naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not valid UTF-8 ({exc.reason}) at byte offset {offset + exc.start:,}",
                         record=record) from None


def iter_lines(path: str | Path, limit: int | None = None) -> Iterator[tuple[int, int, str]]:
    """(line number, byte offset, text) of every line, its line end kept; a BOM is dropped.

    Lines end at "\\n" only (CRLF ends in "\\r\\n"); a line longer than `limit` bytes, a NUL
    byte or bytes that are not UTF-8 raise InputError naming the file, line and offset."""
    limit = record_limit() if limit is None else limit
    with open_binary(path) as fh:
        offset, lineno = 0, 0
        while True:
            raw = _read_line(fh, offset, limit, lineno + 1, path)
            if not raw:
                return
            lineno += 1
            start = offset
            offset += len(raw)
            if lineno == 1 and raw.startswith(BOM):
                raw, start = raw[len(BOM):], start + len(BOM)
            # Handed over from a list, so that while the caller works on the line this
            # generator holds neither its bytes nor its text (a long line would cost twice).
            line = [(lineno, start, decode_utf8(raw, start, path, record=lineno))]
            del raw
            yield line.pop()


def _read_line(fh: BinaryIO, offset: int, limit: int, lineno: int, path: str | Path) -> bytes | bytearray:
    """One line's bytes, read a piece at a time so a NUL file is refused after one piece. A
    long line gathers in one bytearray (a list of pieces joined at the end held it twice)."""
    gathered = bytearray()
    size = 0
    while True:
        piece = fh.readline(min(PIECE, limit + 1 - size))
        if b"\0" in piece or not offset + size:  # (the file's first piece: a UTF-16 mark is named)
            refuse_nul(piece, offset + size, path, record=lineno)
        size += len(piece)
        ended = not piece or piece.endswith(b"\n")
        if ended and not gathered:  # the usual case: the whole line in one piece
            return piece
        gathered += piece
        if ended:
            return gathered
        if size > limit:
            raise InputError(str(path), _too_long(f"the line starting at byte offset {offset:,}", limit),
                             record=lineno)


def iter_text(path: str | Path, piece: int = PIECE) -> Iterator[str]:
    """The file's text in pieces of about `piece` bytes (for parsers that find their own
    boundaries), each checked for NUL bytes and decoded with the offset of any bad byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open_binary(path) as fh:
        offset, first = 0, True
        while True:
            data = fh.read(piece)
            refuse_nul(data, offset, path)
            start = offset
            offset += len(data)
            if first and data.startswith(BOM):
                data, start = data[len(BOM):], start + len(BOM)
            first = False
            held = len(decoder.getstate()[0])
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                raise InputError(str(path), f"not valid UTF-8 ({exc.reason}) at byte offset "
                                 f"{start - held + exc.start:,}") from None
            if text:
                yield text
            if not data:
                return


def read_document(path: str | Path, limit: int | None = None) -> str:
    """A whole file's text, for formats parsed whole: refused past `limit` bytes, or binary."""
    limit = document_limit() if limit is None else limit
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise InputError(str(path), f"cannot open: {exc.strerror or exc}") from exc
    if size > limit:
        raise InputError(str(path), f"the file is {size / MB:,.1f} MB; files read whole (YAML) may be at most "
                         f"{shown_mb(limit)} (set {LIMIT_ENV} to raise it, or use JSONL)")
    parts: list[str] = []
    total = 0
    for text in iter_text(path):
        total += len(text)
        if total > limit:  # the file grew since it was measured
            raise InputError(str(path), f"the file is larger than {shown_mb(limit)}")
        parts.append(text)
    return "".join(parts)
