"""Span records of any of the shapes users have, read into one `Span` with flat attributes.

Three shapes exist in the wild for the same OpenInference spans:
- Phoenix's span dataframe (`client.spans.get_spans_dataframe()` written with `to_parquet` or
  `to_json(orient="records", lines=True)`): columns `context.span_id`, `span_kind`,
  `attributes.<name>`, with lists and objects nested (`attributes.retrieval.documents` is a list
  of `{"document.content": ...}`, `attributes.metadata` an object);
- Phoenix's REST spans (`client.spans.get_spans()`, also what the server import reads):
  `context: {trace_id, span_id}` and attributes already flat (`retrieval.documents.0.document.id`);
- OTLP JSON lines (one `ExportTraceServiceRequest` per line, `resourceSpans` ...), with typed
  attribute values and the project name as the resource attribute `openinference.project.name`.
Attributes are flattened to the dotted names the OpenInference conventions define, so the rest
of the code reads one shape. `metadata` given as JSON text (how OpenTelemetry carries it) is
parsed and flattened too, so `metadata.method` names the same thing in every shape.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from evalcore.errors import InputError
from evalcore.value_budget import loads as bounded_loads

PROJECT_ATTRIBUTE = "openinference.project.name"
KIND_ATTRIBUTE = "openinference.span.kind"


@dataclass
class Span:
    """One span: its ids, OpenInference kind, times and flat attributes; `where` locates it in
    its source (a record number) for error messages."""

    span_id: str
    trace_id: str
    parent_id: str | None
    name: str
    kind: str
    start: datetime | None
    end: datetime | None
    status: str
    attributes: dict[str, Any] = field(default_factory=dict)
    status_message: str = ""
    project: str | None = None
    where: int | str | None = None


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested objects and lists of objects -> dotted names (`a.b`, `docs.0.id`); lists of plain
    values stay lists; missing values (None, NaN) are dropped, as pandas writes them for the
    columns a span does not have."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for i, item in enumerate(value):
            flatten(item, f"{prefix}.{i}", out)
    elif value is None or (isinstance(value, float) and math.isnan(value)):
        pass
    elif prefix == "metadata" and isinstance(value, str):
        try:
            parsed = bounded_loads(value)  # JSON text inside a record: the record's value budget
        except ValueError:  # TooManyValues included: kept as the text it is
            parsed = None
        if isinstance(parsed, dict):
            flatten(parsed, prefix, out)
        else:
            out[prefix] = value
    else:
        out[prefix] = value
    return out


def _time(value: Any, unit_per_second: float, file: str, where: Any, name: str) -> datetime | None:
    """A timestamp as datetime: a datetime (Parquet), ISO text, or a number in the shape's unit
    (pandas' to_json writes milliseconds, OTLP nanoseconds as text)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        if isinstance(value, (int, float)) or (isinstance(value, str) and value.strip().isdigit()):
            return datetime.fromtimestamp(float(value) / unit_per_second, tz=timezone.utc)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError, OSError) as exc:
        raise InputError(file, f"not a timestamp: {value!r} ({exc})", record=where, field=name) from exc


def _text_id(value: Any, file: str, where: Any, name: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(file, "missing", record=where, field=name)
    if not isinstance(value, str):
        raise InputError(file, f"expected an id as text, got {type(value).__name__}", record=where, field=name)
    return value


def _parent(value: Any, file: str, where: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    return _text_id(value, file, where, name)


def _obj(value: Any, file: str, where: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(file, f"expected an object, got {type(value).__name__}", record=where, field=name)
    return value


def _items(value: Any, file: str, where: Any, name: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(file, f"expected a list, got {type(value).__name__}", record=where, field=name)
    return value


def from_dataframe_record(rec: dict[str, Any], file: str, recno: int) -> Span:
    """A row of Phoenix's span dataframe (columns `context.span_id`, `attributes.*`)."""
    nested: dict[str, Any] = {}
    for key, value in rec.items():
        if key.startswith("attributes."):
            nested[key[len("attributes."):]] = value
    attributes = flatten(nested)
    span_id = _text_id(rec.get("context.span_id"), file, recno, "context.span_id")
    where = f"{recno} (span {span_id})"
    trace_id = _text_id(rec.get("context.trace_id"), file, where, "context.trace_id")
    return _phoenix_span(rec, file, where, span_id, trace_id, attributes)


def from_rest_span(rec: dict[str, Any], file: str, recno: int | str, project: str | None = None) -> Span:
    """A span as Phoenix's REST API returns it (`context: {trace_id, span_id}`)."""
    context = _obj(rec.get("context"), file, recno, "context")
    span_id = _text_id(context.get("span_id"), file, recno, "context.span_id")
    where = f"{recno} (span {span_id})" if isinstance(recno, int) else f"span {span_id}"
    attributes = flatten(_obj(rec.get("attributes"), file, where, "attributes"))
    trace_id = _text_id(context.get("trace_id"), file, where, "context.trace_id")
    return _phoenix_span(rec, file, where, span_id, trace_id, attributes, project)


def _phoenix_span(rec: dict[str, Any], file: str, where: str, span_id: str, trace_id: str,
                  attributes: dict[str, Any], project: str | None = None) -> Span:
    """The fields a span-dataframe row and a REST span name alike (parent, name, kind, times,
    status), read and checked once for both shapes."""
    return Span(span_id=span_id, trace_id=trace_id,
                parent_id=_parent(rec.get("parent_id"), file, where, "parent_id"), name=str(rec.get("name") or ""),
                kind=str(rec.get("span_kind") or attributes.get(KIND_ATTRIBUTE) or "UNKNOWN").upper(),
                start=_time(rec.get("start_time"), 1e3, file, where, "start_time"),
                end=_time(rec.get("end_time"), 1e3, file, where, "end_time"),
                status=str(rec.get("status_code") or "UNSET").upper(), attributes=attributes,
                status_message=str(rec.get("status_message") or ""), project=project, where=where)


def _otlp_value(value: Any, file: str, where: Any, name: str) -> Any:
    """An OTLP JSON AnyValue -> Python (intValue comes as text in OTLP JSON)."""
    value = _obj(value, file, where, name)
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            number = value["intValue"]
            if isinstance(number, bool) or not isinstance(number, (int, str)):
                raise ValueError(f"{number!r}")
            return int(number)
        if "doubleValue" in value:
            number = value["doubleValue"]
            if isinstance(number, bool) or not isinstance(number, (int, float, str)):
                raise ValueError(f"{number!r}")
            return float(number)
        if "boolValue" in value:
            return bool(value["boolValue"])
    except ValueError as exc:
        raise InputError(file, f"not a number: {exc}", record=where, field=name) from None
    if "arrayValue" in value:
        items = _items(_obj(value["arrayValue"], file, where, name).get("values"), file, where, name)
        return [_otlp_value(v, file, where, name) for v in items]
    if "kvlistValue" in value:
        items = _items(_obj(value["kvlistValue"], file, where, name).get("values"), file, where, name)
        return _otlp_attributes(items, file, where, name)
    return None


def _otlp_attributes(items: Iterable[Any] | None, file: str, where: Any, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in _items(items, file, where, name):
        item = _obj(item, file, where, name)
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise InputError(file, "an attribute without a name", record=where, field=name)
        out[key] = _otlp_value(item.get("value"), file, where, f"{name}.{key}")
    return out


def _otlp_id(value: Any, length: int, file: str, where: Any, name: str) -> str | None:
    """Span and trace ids as lowercase hex: OTLP JSON writes hex, protobuf's own JSON base64."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(file, f"expected an id as text, got {type(value).__name__}", record=where, field=name)
    text = value
    if len(text) == length * 2 and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != length:
        raise InputError(file, f"not a {length}-byte id in hex or base64: {text[:40]!r}", record=where, field=name)
    return raw.hex()


def from_otlp_record(rec: dict[str, Any], file: str, recno: int) -> Iterator[Span]:
    """The spans of one OTLP JSON line (an ExportTraceServiceRequest)."""
    for rs in _items(rec.get("resourceSpans"), file, recno, "resourceSpans"):
        rs = _obj(rs, file, recno, "resourceSpans")
        resource = _otlp_attributes(_obj(rs.get("resource"), file, recno, "resource").get("attributes"),
                                    file, recno, "resource.attributes")
        project = resource.get(PROJECT_ATTRIBUTE)
        for ss in _items(rs.get("scopeSpans"), file, recno, "scopeSpans"):
            for raw in _items(_obj(ss, file, recno, "scopeSpans").get("spans"), file, recno, "spans"):
                raw = _obj(raw, file, recno, "spans")
                span_id = _otlp_id(raw.get("spanId"), 8, file, recno, "spanId")
                if span_id is None:
                    raise InputError(file, "missing", record=recno, field="spanId")
                where = f"{recno} (span {span_id})"
                trace_id = _otlp_id(raw.get("traceId"), 16, file, where, "traceId")
                if trace_id is None:
                    raise InputError(file, "missing", record=where, field="traceId")
                attributes = flatten(_otlp_attributes(raw.get("attributes"), file, where, "attributes"))
                status = _obj(raw.get("status"), file, where, "status")
                code = str(status.get("code", "UNSET")).upper()
                code = {"0": "UNSET", "1": "OK", "2": "ERROR", "STATUS_CODE_OK": "OK",
                        "STATUS_CODE_ERROR": "ERROR", "STATUS_CODE_UNSET": "UNSET"}.get(code, code)
                yield Span(span_id=span_id, trace_id=trace_id,
                           parent_id=_otlp_id(raw.get("parentSpanId"), 8, file, where, "parentSpanId"),
                           name=str(raw.get("name") or ""),
                           kind=str(attributes.get(KIND_ATTRIBUTE) or "UNKNOWN").upper(),
                           start=_time(raw.get("startTimeUnixNano"), 1e9, file, where, "startTimeUnixNano"),
                           end=_time(raw.get("endTimeUnixNano"), 1e9, file, where, "endTimeUnixNano"),
                           status=code, attributes=attributes, status_message=str(status.get("message") or ""),
                           project=str(project) if project else None, where=where)


def span_shape(rec: dict[str, Any]) -> str | None:
    """Which span shape a record has ('dataframe', 'rest', 'otlp'), or None when it is no span."""
    if "resourceSpans" in rec:
        return "otlp"
    if "context.span_id" in rec:
        return "dataframe"
    if isinstance(rec.get("context"), dict) and "span_id" in rec["context"]:
        return "rest"
    return None


def is_span_file(path: str | Path) -> bool:
    """True when the file's first record is a span in one of the shapes above."""
    from evalcore.datasets.records import read_records

    try:
        for _, rec in read_records(path):
            return span_shape(rec) is not None
    except InputError:
        return False  # the recorded-answers import reports what is wrong with it
    return False


def read_span_file(path: str | Path) -> Iterator[Span]:
    """Every span of a span export file (Parquet, JSONL, JSON), whatever its shape."""
    from evalcore.datasets.records import read_records

    file = str(path)
    for recno, rec in read_records(path):
        shape = span_shape(rec)
        if shape == "otlp":
            yield from from_otlp_record(rec, file, recno)
        elif shape == "dataframe":
            yield from_dataframe_record(rec, file, recno)
        elif shape == "rest":
            yield from_rest_span(rec, file, recno)
        else:
            raise InputError(file, "not a span: expected 'context.span_id' (Phoenix span dataframe), "
                             "'context' (Phoenix REST span) or 'resourceSpans' (OTLP JSON)", record=recno)
