"""TREC files: qrels ("qid iter docno rel"), runs ("qid Q0 docno rank score tag") and topics
("qid<TAB>query"), plus `load_trec` turning topics + qrels into EvalQuestions.

Runs can be tens of millions of lines, so the readers hand the bytes to Arrow's multi-threaded
CSV parser instead of splitting lines in Python. TREC files are whitespace-separated, which a
CSV parser does not understand, so irregular whitespace (tabs, runs of spaces, CRLF) is first
rewritten to single spaces; well-formed single-space files skip that step. When Arrow rejects a
file, a slow line-by-line pass finds the first bad line and reports it as an InputError naming
the file, the line and the field.

Memory: the bytes go to Arrow in blocks of whole lines (BLOCK bytes), never the whole file at
once, so only the parsed columns grow with the file. Every line passes evalcore/common/text_input.py's
checks: binary data (a NUL byte, bytes that are not UTF-8) is refused naming its byte offset,
and a line longer than the record bound (32 MB unless EVALCORE_MAX_RECORD_MB) is refused.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterator

import numpy as np

from evalcore.datasets.native import DUPLICATE_HINT, OnDuplicate, check_on_duplicate, warn_dropped
from evalcore.errors import DroppedDuplicate, InputError
from evalcore.schemas import EvalQuestion, GoldPassage
from evalcore.schemas.ids import canonical_id
from evalcore.common.text_input import BOM, LIMIT_ENV, iter_lines, open_binary, record_limit, refuse_nul, shown_mb

RUN_FIELDS = ("qid", "q0", "docno", "rank", "score", "tag")
QRELS_FIELDS = ("qid", "iter", "docno", "rel")
_WS = bytes.maketrans(b"\t\r\f\v", b"    ")
SNIFF_BYTES = 64 * 1024


BLOCK = 16 * 2 ** 20  # bytes of whole lines handed to Arrow at a time
ARROW_BLOCK = 1 << 22  # Arrow's own parsing block; raised for a block holding a longer line


def _blocks(path: Path) -> Iterator[tuple[bytes, int]]:
    """The file's bytes in blocks that end at a line end (BOM dropped, CRLF made LF), each
    refused when it holds a NUL byte, with the length of its longest line (Arrow's CSV
    parser refuses a line longer than its block: "straddling object"); a line longer than
    the record bound is refused."""
    limit = record_limit()
    carry, offset = b"", 0
    with open_binary(path) as fh:
        while True:
            data = fh.read(BLOCK)
            refuse_nul(data, offset, path)
            if not offset and data.startswith(BOM):
                offset, data = len(BOM), data[len(BOM):]
            offset += len(data)
            if not data:
                if carry:
                    yield _lf(carry), len(carry)
                return
            start = offset - len(data) - len(carry)
            data = carry + data
            cut = data.rfind(b"\n") + 1
            block, carry = data[:cut], data[cut:]
            longest = _check_lines(path, block, carry, start, limit)
            if block:
                yield _lf(block), longest


def _check_lines(path: Path, block: bytes, carry: bytes, start: int, limit: int) -> int:
    """The length of the longest line of `block` (whole lines from byte `start`); refuse
    one, or a `carry` (the start of a line still being read), longer than `limit` bytes."""
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1)
    at = int(np.argmax(lengths)) if len(lengths) else 0
    if len(lengths) and lengths[at] > limit + 1:  # + 1: the line end itself
        line_start = start + int(ends[at] - lengths[at] + 1)
    elif len(carry) > limit:
        line_start = start + len(block)
    else:
        return int(lengths[at]) if len(lengths) else 0
    raise InputError(str(path), f"the line starting at byte offset {line_start:,} is longer than "
                     f"{shown_mb(limit)} (the bound on one line; set {LIMIT_ENV} to raise it)")


def _lf(block: bytes) -> bytes:
    return block.replace(b"\r\n", b"\n") if b"\r" in block else block


def _normalise(data: bytes) -> bytes:
    """Every whitespace run inside a line becomes one space; lines lose edge spaces."""
    data = re.sub(rb" +", b" ", data.translate(_WS))
    return re.sub(rb"(?m)^ | $", b"", data)


def _parse(data: bytes, names: tuple[str, ...], types: dict, keep: list[str], longest: int = 0):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    block_size = max(ARROW_BLOCK, 1 << (longest + 1).bit_length())  # room for the longest line
    return pcsv.read_csv(
        pa.BufferReader(data),
        read_options=pcsv.ReadOptions(column_names=list(names), use_threads=True, block_size=block_size),
        parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                                        double_quote=False, ignore_empty_lines=True),
        convert_options=pcsv.ConvertOptions(column_types=types, include_columns=keep, null_values=[],
                                            strings_can_be_null=False, quoted_strings_can_be_null=False))


def _arrow_table(path: Path, names: tuple[str, ...], types: dict, keep: list[str], check_line):
    """Parse TREC lines with Arrow, a block at a time; on failure, locate the bad line.

    Single-space blocks parse directly. Other whitespace is found cheaply: tabs, CR, FF and VT
    by a byte search; extra spaces because they create empty fields, so the column count is
    wrong and Arrow refuses the block. Either way the bytes are normalised and parsed once more.
    Empty qid/docno fields (a missing column hidden by a double space) are rejected afterwards.
    """
    import pyarrow as pa

    tables = []
    for data, longest in _blocks(path):
        if re.search(rb"\S", data):
            tables.append(_arrow_block(path, data, names, types, keep, check_line, longest))
    if not tables:
        raise InputError(str(path), "the file has no records")
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    for column in ("qid", "docno"):
        row = _first_empty(table.column(column))
        if row is not None:
            _locate_problem(path, check_line)
            raise InputError(str(path), "empty field", record=line_of_row(path, row), field=column)
    return table


def _arrow_block(path: Path, data: bytes, names: tuple[str, ...], types: dict, keep: list[str], check_line,
                 longest: int = 0):
    import pyarrow as pa

    if not any(c in data for c in (b"\t", b"\r", b"\f", b"\v")):
        try:
            return _parse(data, names, types, keep, longest)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    try:
        return _parse(_normalise(data), names, types, keep, longest)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        _locate_problem(path, check_line)
        raise InputError(str(path), f"unreadable TREC file: {exc}") from exc


def _first_empty(column) -> int | None:
    """Row of the first empty string in an Arrow string column, read from its offsets buffer."""
    seen = 0
    for chunk in column.chunks:
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset: chunk.offset + len(chunk) + 1]
        empty = np.flatnonzero(offsets[1:] == offsets[:-1])
        if len(empty):
            return seen + int(empty[0])
        seen += len(chunk)
    return None


def _locate_problem(path: Path, check_line) -> None:
    """Slow pass: raise an InputError for the first line `check_line` rejects (if any)."""
    for lineno, _, line in iter_lines(path):
        parts = line.split()
        if parts:
            check_line(path, lineno, parts)


def _check_run_line(path: Path, lineno: int, parts: list[str]) -> None:
    if len(parts) != 6:
        raise InputError(str(path), f"expected 6 fields 'qid Q0 docno rank score tag', found {len(parts)}",
                         record=lineno)
    _finite(path, lineno, parts[4], "score")


def _finite(path: Path, lineno: int, text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(str(path), f"{text!r} is not a number", record=lineno, field=field) from None
    if not math.isfinite(value):
        raise InputError(str(path), f"{text!r} is not a finite number", record=lineno, field=field)
    return value


def _check_qrels_line(path: Path, lineno: int, parts: list[str]) -> None:
    if len(parts) != 4:
        raise InputError(str(path), f"expected 4 fields 'qid iter docno relevance', found {len(parts)}",
                         record=lineno)
    try:
        int(parts[3])
    except ValueError:
        raise InputError(str(path), f"{parts[3]!r} is not an integer", record=lineno, field="relevance") from None


def line_of_row(path: str | Path, row: int) -> int:
    """1-based line number of the `row`-th (0-based) non-blank line, for error messages."""
    seen = -1
    for lineno, _, line in iter_lines(path):
        if line.strip():
            seen += 1
            if seen == row:
                return lineno
    return row + 1


def read_run_table(path: str | Path):
    """A TREC run as a pyarrow Table (qid, docno, score), in file order. The rank column is read
    for validation only: trec_eval (and `evalcore trec`) order documents by score."""
    import pyarrow as pa
    import pyarrow.compute as pc

    path = Path(path)
    table = _arrow_table(path, RUN_FIELDS, {"qid": pa.string(), "docno": pa.string(), "score": pa.float64()},
                         ["qid", "docno", "score"], _check_run_line)
    finite = pc.is_finite(table.column("score"))
    if pc.all(finite).as_py() is False:
        row = int(np.flatnonzero(~np.asarray(finite.to_numpy(), dtype=bool))[0])
        raise InputError(str(path), "score is not a finite number", record=line_of_row(path, row), field="score")
    return table


def read_qrels_table(path: str | Path):
    """TREC qrels as a pyarrow Table (qid, docno, rel:int64), in file order."""
    import pyarrow as pa

    path = Path(path)
    return _arrow_table(path, QRELS_FIELDS, {"qid": pa.string(), "docno": pa.string(), "rel": pa.int64()},
                        ["qid", "docno", "rel"], _check_qrels_line)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """qid -> {docno: relevance}. A document judged twice for a query is an error."""
    table = read_qrels_table(path)
    out: dict[str, dict[str, int]] = {}
    for row, (qid, docno, rel) in enumerate(zip(*(table.column(c).to_pylist() for c in ("qid", "docno", "rel")))):
        judged = out.setdefault(canonical_id(qid), {})  # the id rule: pairs with the topics' ids
        if docno in judged:
            raise InputError(str(path), f"document {docno!r} is judged twice for query {qid!r}",
                             record=line_of_row(path, row), field="docno")
        judged[docno] = rel
    return out


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """qid -> {docno: score}. A document listed twice for a query is an error (trec_eval agrees)."""
    table = read_run_table(path)
    out: dict[str, dict[str, float]] = {}
    for row, (qid, docno, score) in enumerate(zip(*(table.column(c).to_pylist() for c in ("qid", "docno", "score")))):
        ranked = out.setdefault(canonical_id(qid), {})
        if docno in ranked:
            raise InputError(str(path), f"document {docno!r} is listed twice for query {qid!r}",
                             record=line_of_row(path, row), field="docno")
        ranked[docno] = score
    return out


def read_topics(path: str | Path, on_duplicate: OnDuplicate = "error") -> dict[str, str]:
    """qid -> query text from a tab-separated "qid<TAB>query" file (Anserini/MS MARCO style).

    A repeated qid is an error naming both lines; with `on_duplicate="keep_first"` the later
    lines are dropped with a DuplicateIdsDropped warning, as the question loaders do.
    """
    check_on_duplicate(on_duplicate)
    path = Path(path)
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    dropped: list[DroppedDuplicate] = []
    for lineno, _, line in iter_lines(path):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        qid, sep, query = line.partition("\t")
        qid, query = canonical_id(qid), query.strip()
        if not sep:
            raise InputError(str(path), "expected 'qid<TAB>query'", record=lineno)
        if not qid:
            raise InputError(str(path), "empty query id", record=lineno, field="qid")
        if not query:
            raise InputError(str(path), "empty query text", record=lineno, field="query")
        if qid in out:
            if on_duplicate == "error":
                raise InputError(str(path), f"query id {qid!r} appears twice (first at record "
                                            f"{first_line[qid]}); {DUPLICATE_HINT}", record=lineno, field="qid")
            dropped.append(DroppedDuplicate(id=qid, record=lineno, kept_record=first_line[qid]))
            continue
        out[qid] = query
        first_line[qid] = lineno
    warn_dropped(str(path), dropped)
    return out


def load_trec(topics: str | Path, qrels: str | Path, relevance_threshold: int = 1,
              on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Topics + qrels -> EvalQuestions whose gold passages are the judged documents (chunk ids).

    Every document with relevance > 0 becomes a GoldPassage with that relevance, so graded nDCG
    sees every gain; `relevance_threshold` (trec_eval -l) is stored as metadata.relevance_level
    and decides which of them count as relevant for recall, precision, MRR and MAP.
    Topics without judgements become questions without gold (their retrieval metrics are NaN).
    `on_duplicate` applies to repeated topic ids (see `read_topics`).
    """
    if relevance_threshold < 1:
        raise InputError(str(qrels), "relevance threshold must be at least 1 (relevance <= 0 is non-relevant)")
    queries = read_topics(topics, on_duplicate)
    if not queries:
        raise InputError(str(topics), "no topics found (expected 'qid<TAB>query' lines)")
    judged = read_qrels(qrels)
    out = []
    for qid, text in queries.items():
        docs = judged.get(qid, {})
        gold = [GoldPassage(chunk_id=docno, relevance=float(rel)) for docno, rel in docs.items() if rel > 0]
        out.append(EvalQuestion(id=qid, question=text, gold_passages=gold,
                                metadata={"source": "trec", "relevance_level": relevance_threshold,
                                          "judged": len(docs)}))
    return out


def qrels_beside(topics: str | Path) -> Path:
    """The qrels file named like the topics file (Anserini convention: topics.X.txt -> qrels.X.txt)."""
    topics = Path(topics)
    if "topics" not in topics.name:
        raise InputError(str(topics), "cannot find its qrels: the file name should contain 'topics' "
                                      "(e.g. topics.dl19-passage.txt beside qrels.dl19-passage.txt)")
    candidate = topics.with_name(topics.name.replace("topics", "qrels", 1))
    if not candidate.exists():
        raise InputError(str(topics), f"no qrels file beside it (looked for {candidate.name})")
    return candidate


def load_trec_topics(path: Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Dataset-registry loader: a topics file whose qrels sit beside it (see `qrels_beside`)."""
    return load_trec(path, qrels_beside(path), on_duplicate=on_duplicate)


def sniff_trec_topics(path: Path) -> bool:
    """True for a 'topics*' file whose first non-blank line is 'qid<TAB>text'."""
    if "topics" not in path.name or path.suffix not in {".txt", ".tsv", ""}:
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    if b"\0" in head:
        return False  # binary: the loader it falls to says so, with the offset
    for line in head.decode("utf-8-sig", errors="ignore").splitlines():
        if line.strip():
            return bool(re.fullmatch(r"\S+\t.*\S.*", line))
    return False
