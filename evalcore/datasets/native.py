"""evalcore's own question format (JSONL / JSON / YAML / CSV / Parquet).

Fields: id, question, ground_truth (str or list), answers, category, question_type, difficulty,
tags, answerable, expected_keywords, gold_chunk_ids or gold_passages, required_support_groups,
checks, is_correct_rule, negative_check, recency_conflict_rule, metadata.
Unknown fields are kept in `metadata` (a documented coercion) unless they look like a typo of
a known field, which is an error: a misspelt `ground_truth` must not silently disable metrics.
A chunk id listed twice in `gold_chunk_ids` / `gold_passages` counts once (the first wins):
a duplicate would otherwise count twice in recall's denominator. NaN/inf anywhere is refused.

A repeated question id is an error unless the caller asks for `on_duplicate="keep_first"`
(`check_unique`, shared by every file loader); then later copies are dropped with a
`DuplicateIdsDropped` warning naming each one, never silently.
"""

from __future__ import annotations

import difflib
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence

from pydantic import ValidationError

from evalcore.errors import DroppedDuplicate, DuplicateIdsDropped, InputError, from_validation
from evalcore.datasets.records import check_finite, read_records, read_yaml
from evalcore.schemas import EvalQuestion

QUESTION_FIELDS = set(EvalQuestion.model_fields) | {"gold_chunk_ids"}

OnDuplicate = Literal["error", "keep_first"]
ON_DUPLICATE_MODES: tuple[str, ...] = ("error", "keep_first")
# Appended to every duplicate-id error: the user is usually stuck with a published file
# they cannot fix, so the message says how to go on.
DUPLICATE_HINT = ("to keep the first copy and drop the others, pass --on-duplicate keep-first "
                  "(or set on_duplicate: keep_first in a run config; on_duplicate=\"keep_first\" "
                  "from Python)")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        parts = [p.strip() for p in value.split("|")] if "|" in value else [value]
        return [p for p in parts if p]
    return [value]


def _as_bool(value: Any, file: str, recno: int, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise InputError(file, f"expected true/false, got {value!r}", record=recno, field=field)


def _unique_chunks(passages: list[Any]) -> list[Any]:
    """Drop a gold passage whose chunk id appeared earlier (see the module docstring)."""
    seen: set[str] = set()
    out = []
    for p in passages:
        cid = p.get("chunk_id") if isinstance(p, dict) else None
        if isinstance(cid, str):
            if cid in seen:
                continue
            seen.add(cid)
        out.append(p)
    return out


def question_from_record(rec: dict[str, Any], file: str, recno: int, keep_unknown: bool = True) -> EvalQuestion:
    """Validate one native record into an EvalQuestion, with a precise error on failure."""
    data: dict[str, Any] = {}
    check_finite(rec, file, recno)
    if rec.get("metadata") is not None and not isinstance(rec["metadata"], dict):
        raise InputError(file, f"expected a mapping, got {type(rec['metadata']).__name__}",
                         record=recno, field="metadata")
    metadata = dict(rec.get("metadata") or {})
    for key, value in rec.items():
        if not isinstance(key, str):  # YAML allows numbers, dates, lists as keys
            raise InputError(file, f"field names must be text, got {type(key).__name__}",
                             record=recno, field=str(key))
        if key in QUESTION_FIELDS:
            data[key] = value
            continue
        close = difflib.get_close_matches(key, QUESTION_FIELDS, n=1, cutoff=0.85)
        if close:
            raise InputError(file, f"unknown field; did you mean '{close[0]}'?", record=recno, field=key)
        if not keep_unknown:
            raise InputError(file, "unknown field", record=recno, field=key)
        metadata[key] = value
    ids = _as_list(data.pop("gold_chunk_ids", None))
    if ids:
        for i, item in enumerate(ids):
            if not isinstance(item, (str, int)) or isinstance(item, bool):
                raise InputError(file, f"expected a chunk id (text), got {type(item).__name__}",
                                 record=recno, field=f"gold_chunk_ids.{i}")
        passages = data.get("gold_passages") or []
        if not isinstance(passages, list):
            raise InputError(file, "expected a list", record=recno, field="gold_passages")
        data["gold_passages"] = [{"chunk_id": str(i)} for i in ids] + passages
    if isinstance(data.get("gold_passages"), list):
        data["gold_passages"] = _unique_chunks(data["gold_passages"])
    for field in ("tags", "expected_keywords"):
        if field in data:
            items = _as_list(data[field])
            for i, x in enumerate(items):
                if isinstance(x, (dict, list)):
                    raise InputError(file, f"expected text, got {type(x).__name__}", record=recno,
                                     field=f"{field}.{i}")
            data[field] = [str(x) for x in items]
    if "answerable" in data and data["answerable"] is not None:
        data["answerable"] = _as_bool(data["answerable"], file, recno, "answerable")
    elif "answerable" in data:
        del data["answerable"]
    data["metadata"] = metadata
    try:
        return EvalQuestion.model_validate(data)
    except ValidationError as exc:
        raise from_validation(file, recno, exc) from exc


def check_on_duplicate(on_duplicate: str) -> str:
    """Refuse an unknown mode up front, so a typo cannot quietly mean "error" or "keep"."""
    if on_duplicate not in ON_DUPLICATE_MODES:
        raise ValueError(f"on_duplicate must be one of {', '.join(ON_DUPLICATE_MODES)}, "
                         f"got {on_duplicate!r}")
    return on_duplicate


def warn_dropped(file: str, dropped: Sequence[DroppedDuplicate]) -> None:
    """Emit one DuplicateIdsDropped warning for the file (nothing when nothing was dropped)."""
    if dropped:
        warnings.warn(DuplicateIdsDropped(file, dropped), stacklevel=3)


@contextmanager
def noting_dropped() -> Iterator[list[DroppedDuplicate]]:
    """Collect what loaders inside the block dropped, then pass every warning on unchanged.

    For callers that must record the dropped records (a run manifest) without hiding the
    warning from the user: catching with record=True swallows warnings, so each one is
    re-issued afterwards and meets the caller's own filters (the CLI prints them).
    """
    dropped: list[DroppedDuplicate] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DuplicateIdsDropped)  # even for a file that warned before
        yield dropped
    for w in caught:
        if isinstance(w.message, DuplicateIdsDropped):
            dropped.extend(w.message.dropped)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def check_unique(questions: Iterable[EvalQuestion], file: str, on_duplicate: OnDuplicate = "error",
                 records: Sequence[int | str] | None = None) -> list[EvalQuestion]:
    """The questions with unique ids, and at least one of them.

    `records` are the loader's own labels for the questions (line numbers, "article 1
    paragraph 3 question 2"), so messages point where the user would look; without them
    the 1-based position is used. A repeated id is an InputError naming both records, or
    with `on_duplicate="keep_first"` the later copy is dropped and reported in one
    DuplicateIdsDropped warning for the file.
    """
    check_on_duplicate(on_duplicate)
    out: list[EvalQuestion] = []
    seen: dict[str, int | str] = {}
    dropped: list[DroppedDuplicate] = []
    for i, q in enumerate(questions):
        label = records[i] if records is not None else i + 1
        if q.id in seen:
            if on_duplicate == "error":
                raise InputError(file, f"duplicate question id {q.id!r} (first at record {seen[q.id]}); "
                                       f"{DUPLICATE_HINT}", record=label, field="id")
            dropped.append(DroppedDuplicate(id=q.id, record=label, kept_record=seen[q.id]))
            continue
        seen[q.id] = label
        out.append(q)
    if not out:
        raise InputError(file, "no questions found")
    warn_dropped(file, dropped)
    return out


def load_native(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Load a native question file; see `check_unique` for `on_duplicate`."""
    path = Path(path)
    if path.suffix.lower() in {".yaml", ".yml"}:
        doc = read_yaml(path)
        records = doc.get("questions") if isinstance(doc, dict) else doc
        if not isinstance(records, list):
            raise InputError(str(path), "expected a list of questions or a 'questions:' list")
        items: Iterable[tuple[int, dict[str, Any]]] = []
        for i, rec in enumerate(records, start=1):
            if not isinstance(rec, dict):
                raise InputError(str(path), f"expected a mapping, got {type(rec).__name__}", record=i)
            items.append((i, rec))
    else:
        items = read_records(path)  # streamed: each record becomes a question before the next is read
    labelled = [(i, question_from_record(rec, str(path), i)) for i, rec in items]
    return check_unique([q for _, q in labelled], str(path), on_duplicate, records=[i for i, _ in labelled])
