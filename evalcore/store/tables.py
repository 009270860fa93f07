"""Parquet table schemas and the model -> row conversions for the run store (the writing side).

Every part file of a table shares one fixed Arrow schema (built from store/columns.py), so
DuckDB can read them all as one view. Flat columns are what SQL filters and aggregates on;
nested parts (retrieved contexts, details, judge requests) are JSON text columns, and `record`
keeps the whole validated object so it can be read back exactly.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
from pydantic_core import to_json

from evalcore.store.columns import ANNOTATION_COLUMNS, COLUMNS, TS, Column

if TYPE_CHECKING:  # the rows are built from validated models; this module needs only their fields
    from evalcore.schemas import (Annotation, Claim, ContextJudgement, EvalQuestion, EvalResponse, JudgeCall,
                                  MetricRepeat, MetricValue)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def json_text(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str, allow_nan=True)


# The Arrow type of each DuckDB type name store/columns.py uses.
ARROW_TYPES = {"VARCHAR": pa.string(), "VARCHAR[]": pa.list_(pa.string()), "BOOLEAN": pa.bool_(),
               "INTEGER": pa.int32(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(), TS: pa.timestamp("us", tz="UTC")}


def arrow_schema(columns: tuple[Column, ...]) -> pa.Schema:
    """The Arrow schema of a table's columns (store/columns.py), as its files are written."""
    return pa.schema([(name, ARROW_TYPES[sql_type]) for name, sql_type in columns])


SCHEMAS: dict[str, pa.Schema] = {table: arrow_schema(columns) for table, columns in COLUMNS.items()}
ANNOTATIONS_SCHEMA = arrow_schema(ANNOTATION_COLUMNS)


# Columns of people's text (answers, questions, contexts, judges' requests and replies, the
# whole validated record): no reader filters on their minimum and maximum, and Parquet keeps
# both whole, in the file's footer. Writing those statistics cost three copies of the longest
# value (a 12 MB answer grew `import` by 90 MB) and put it twice into every reader's footer.
FREE_TEXT_COLUMNS = frozenset({"question", "ground_truth", "answer", "error", "record", "reason", "details",
                               "request", "response_raw", "parsed", "text", "note"})


def dictionary_columns(schema: pa.Schema, floats: bool = True) -> list[str]:
    """The columns a Parquet file of `schema` dictionary-encodes: all but free text, whose
    values rarely repeat (a dictionary of one 12 MB answer is one more copy of it to write,
    and to read back), times (a row's write time is its own: a live run's 22,000 metric values
    wrote 126 KB with their times in a dictionary, 88 KB without, 15% faster), and floats when
    `floats` is False (distinct scores)."""
    return [f.name for f in schema if f.name not in FREE_TEXT_COLUMNS and not pa.types.is_timestamp(f.type)
            and (floats or not pa.types.is_floating(f.type))]


def statistics_columns(schema: pa.Schema) -> list[str]:
    """The columns a Parquet file of `schema` keeps min/max statistics for: the keys, ids,
    counts and times readers filter on. Not floats (Parquet statistics ignore NaN, which lets a
    reader wrongly conclude a column has none) and not free text (FREE_TEXT_COLUMNS)."""
    return [f.name for f in schema if not pa.types.is_floating(f.type) and f.name not in FREE_TEXT_COLUMNS]


def _record_json(model: Any) -> bytes:
    """The model as UTF-8 JSON bytes, what the `record` column stores. Bytes, not a str: a str
    holding one character beyond U+FFFF takes four bytes for every character, so a long answer
    with one emoji cost four times its size until Arrow encoded it."""
    return to_json(model, by_alias=False)


def _text(text: str | None) -> str | bytes | None:
    """A free-text value for a row: the str itself when ASCII (one byte a character), else its
    UTF-8 bytes, so that once the model is let go of the row does not keep a str of four bytes
    a character alive until Arrow has encoded it (`_record_json` says why that matters)."""
    return text if text is None or text.isascii() else text.encode("utf-8")


def question_row(run_id: str, q: EvalQuestion) -> dict[str, Any]:
    return {
        "run_id": run_id, "question_id": q.id, "question": _text(q.question), "ground_truth": _text(q.ground_truth),
        "category": q.category, "question_type": q.question_type, "difficulty": q.difficulty,
        "tags": list(q.tags), "answerable": q.answerable, "n_gold": len(q.gold_passages),
        "record": _record_json(q), "written_at": _now(),
    }


def response_row(run_id: str, r: EvalResponse) -> dict[str, Any]:
    usage = r.token_usage
    return {
        "run_id": run_id, "method": r.method, "question_id": r.question_id, "answer": _text(r.answer),
        "abstained": r.abstained, "latency_ms": r.latency_ms, "error": _text(r.error), "error_kind": r.error_kind,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "cost_usd": usage.cost_usd if usage else None, "n_retrieved": len(r.retrieved),
        "record": _record_json(r), "written_at": _now(), "trial": r.trial,
    }


def metric_row(m: MetricValue) -> dict[str, Any]:
    # the validated fields as they are (all plain values: model_dump took ten times longer,
    # a third of a second per 20,000 values, to copy `details` that is replaced just below)
    row = dict(m.__dict__)
    row["details"] = json_text(m.details) if m.details else None
    row["value"] = float("nan") if math.isnan(m.value) else m.value
    row["trial"] = m.trial  # the model leaves trial 0 out of its dump; the column always has it
    return row


def judge_call_row(c: JudgeCall) -> dict[str, Any]:
    return {
        "run_id": c.run_id, "call_key": c.call_key, "judge_id": c.judge_id.label,
        "judge": c.judge_id.model_dump_json(), "method": c.method, "question_id": c.question_id,
        "purpose": c.purpose, "request": json_text(c.request), "response_raw": c.response_raw,
        "parsed": json_text(c.parsed), "input_tokens": c.input_tokens, "output_tokens": c.output_tokens,
        "cost_usd": c.cost_usd, "latency_ms": c.latency_ms, "cache_hit": c.cache_hit, "error": c.error,
        "created_at": c.created_at,
    }


def claim_row(c: Claim) -> dict[str, Any]:
    return {**c.model_dump(), "trial": c.trial}


def context_verdict_row(c: ContextJudgement) -> dict[str, Any]:
    return {**c.model_dump(), "trial": c.trial}


def metric_repeat_row(m: MetricRepeat) -> dict[str, Any]:
    row = m.model_dump()
    row["value"] = float("nan") if math.isnan(m.value) else m.value
    row["trial"] = m.trial
    return row


def annotation_row(a: Annotation) -> dict[str, Any]:
    return a.model_dump()


ROW_BUILDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "metrics": metric_row,
    "judge_calls": judge_call_row,
    "claims": claim_row,
    "context_verdicts": context_verdict_row,
    "metric_repeats": metric_repeat_row,
}


def to_arrow(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Build an Arrow table with the table's fixed schema (missing columns become null)."""
    schema = SCHEMAS[table] if table in SCHEMAS else ANNOTATIONS_SCHEMA
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)
