"""evalcore's own question format (JSONL / JSON / YAML / CSV / Parquet).

Fields: id, question, ground_truth (str or list), answers, category, question_type, difficulty,
tags, answerable, expected_keywords, gold_chunk_ids or gold_passages, required_support_groups,
checks, is_correct_rule, negative_check, recency_conflict_rule, metadata.
Unknown fields are kept in `metadata` (a documented coercion) unless they look like a typo of
a known field, which is an error: a misspelt `ground_truth` must not silently disable metrics.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from evalcore.errors import InputError, from_validation
from evalcore.datasets.records import read_records, read_yaml
from evalcore.schemas import EvalQuestion

QUESTION_FIELDS = set(EvalQuestion.model_fields) | {"gold_chunk_ids"}


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


def question_from_record(rec: dict[str, Any], file: str, recno: int, keep_unknown: bool = True) -> EvalQuestion:
    """Validate one native record into an EvalQuestion, with a precise error on failure."""
    data: dict[str, Any] = {}
    metadata = dict(rec.get("metadata") or {}) if isinstance(rec.get("metadata"), dict) else {}
    for key, value in rec.items():
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
        data["gold_passages"] = [{"chunk_id": str(i)} for i in ids] + list(data.get("gold_passages") or [])
    for field in ("tags", "expected_keywords"):
        if field in data:
            data[field] = [str(x) for x in _as_list(data[field])]
    if "answerable" in data and data["answerable"] is not None:
        data["answerable"] = _as_bool(data["answerable"], file, recno, "answerable")
    elif "answerable" in data:
        del data["answerable"]
    data["metadata"] = metadata
    try:
        return EvalQuestion.model_validate(data)
    except ValidationError as exc:
        raise from_validation(file, recno, exc) from exc


def check_unique(questions: Iterable[EvalQuestion], file: str) -> list[EvalQuestion]:
    out, seen = [], {}
    for i, q in enumerate(questions, start=1):
        if q.id in seen:
            raise InputError(file, f"duplicate question id {q.id!r} (first at record {seen[q.id]})",
                             record=i, field="id")
        seen[q.id] = i
        out.append(q)
    if not out:
        raise InputError(file, "no questions found")
    return out


def load_native(path: str | Path) -> list[EvalQuestion]:
    path = Path(path)
    if path.suffix.lower() in {".yaml", ".yml"}:
        doc = read_yaml(path)
        records = doc.get("questions") if isinstance(doc, dict) else doc
        if not isinstance(records, list):
            raise InputError(str(path), "expected a list of questions or a 'questions:' list")
        items = []
        for i, rec in enumerate(records, start=1):
            if not isinstance(rec, dict):
                raise InputError(str(path), f"expected a mapping, got {type(rec).__name__}", record=i)
            items.append((i, rec))
    else:
        items = list(read_records(path))
    questions = [question_from_record(rec, str(path), i) for i, rec in items]
    return check_unique(questions, str(path))
