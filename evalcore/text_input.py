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
  bytes: MAX_RECORD_MB (64 MB), or EVALCORE_MAX_RECORD_MB. A longer one is refused naming
  the file, the line or record, and where it starts; the reader never holds more than that
  plus one piece of PIECE bytes;
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

MAX_RECORD_MB = 64
MAX_DOCUMENT_MB = 64
LIMIT_ENV = "EVALCORE_MAX_RECORD_MB"
PIECE = 1 << 20  # bytes read at a time: a NUL file is refused after the first piece
BOM = b"\xef\xbb\xbf"
MB = 2 ** 20


def record_limit() -> int:
    """The most bytes one line or record may take (EVALCORE_MAX_RECORD_MB, else 64 MB)."""
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
            yield lineno, start, decode_utf8(raw, start, path, record=lineno)


def _read_line(fh: BinaryIO, offset: int, limit: int, lineno: int, path: str | Path) -> bytes:
    """One line's bytes, read a piece at a time so a NUL file is refused after one piece."""
    pieces: list[bytes] = []
    size = 0
    while True:
        piece = fh.readline(min(PIECE, limit + 1 - size))
        if b"\0" in piece or not offset + size:  # (the file's first piece: a UTF-16 mark is named)
            refuse_nul(piece, offset + size, path, record=lineno)
        size += len(piece)
        ended = not piece or piece.endswith(b"\n")
        if ended and not pieces:  # the usual case: the whole line in one piece
            return piece
        pieces.append(piece)
        if ended:
            return b"".join(pieces)
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
