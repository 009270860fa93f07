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
from evalcore.schemas.bounds import MAX_JSON_DEPTH, json_depth_over
from evalcore.common.value_budget import loads as bounded_loads

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

    @property
    def place(self) -> str:
        """Where the span is, for an error's record: its record and id, or at least its id."""
        return self.where if isinstance(self.where, str) and "span" in self.where else f"span {self.span_id}"


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


def span_id(value: Any, nbytes: int, file: str, where: Any, name: str) -> str | None:
    """A span id (8 bytes) or trace id (16 bytes) in its one canonical form, lowercase hex, or
    None when absent; every reader of every shape uses it, so the same span written `ABCDEF01...`
    in one record and `abcdef01...` (or base64, as protobuf's JSON writes ids) in another is one
    span, and an uppercase parent id still reaches its parent. Any other text is refused: it
    names no OpenTelemetry span, and keeping it as written would make case matter again."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(file, f"expected an id as text, got {type(value).__name__}", record=where, field=name)
    text = value.strip()
    if len(text) == nbytes * 2 and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != nbytes:
        kind = "span" if nbytes == 8 else "trace"
        raise InputError(file, f"not a {kind} id: expected {nbytes * 2} hex digits ({nbytes} bytes) or their base64, "
                         f"got {text[:40]!r}", record=where, field=name)
    return raw.hex()


def _required_id(value: Any, nbytes: int, file: str, where: Any, name: str) -> str:
    found = span_id(value, nbytes, file, where, name)
    if found is None:
        raise InputError(file, "missing", record=where, field=name)
    return found


def _shallow(attributes: dict[str, Any], file: str, where: Any) -> dict[str, Any]:
    """The attributes, each an entry nested at most MAX_JSON_DEPTH levels deep, as in every
    free-form JSON field (evalcore/schemas/bounds.py): a deeper one is refused naming it,
    before it can reach a stored answer's metadata (pydantic's serializer gives up near 250
    levels) or the comparison of two copies of a span."""
    for key, value in attributes.items():
        if json_depth_over(value, MAX_JSON_DEPTH - 1):
            raise InputError(file, f"nested more than {MAX_JSON_DEPTH} levels deep (the bound for free-form JSON)",
                             record=where, field=key)
    return attributes


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
    span = _required_id(rec.get("context.span_id"), 8, file, recno, "context.span_id")
    where = f"{recno} (span {span})"
    attributes = _shallow(flatten(nested), file, where)
    trace = _required_id(rec.get("context.trace_id"), 16, file, where, "context.trace_id")
    return _phoenix_span(rec, file, where, span, trace, attributes)


def from_rest_span(rec: dict[str, Any], file: str, recno: int | str, project: str | None = None) -> Span:
    """A span as Phoenix's REST API returns it (`context: {trace_id, span_id}`)."""
    context = _obj(rec.get("context"), file, recno, "context")
    span = _required_id(context.get("span_id"), 8, file, recno, "context.span_id")
    where = f"{recno} (span {span})" if isinstance(recno, int) else f"span {span}"
    attributes = _shallow(flatten(_obj(rec.get("attributes"), file, where, "attributes")), file, where)
    trace = _required_id(context.get("trace_id"), 16, file, where, "context.trace_id")
    return _phoenix_span(rec, file, where, span, trace, attributes, project)


def _phoenix_span(rec: dict[str, Any], file: str, where: str, span: str, trace: str,
                  attributes: dict[str, Any], project: str | None = None) -> Span:
    """The fields a span-dataframe row and a REST span name alike (parent, name, kind, times,
    status), read and checked once for both shapes."""
    return Span(span_id=span, trace_id=trace,
                parent_id=span_id(rec.get("parent_id"), 8, file, where, "parent_id"), name=str(rec.get("name") or ""),
                kind=str(rec.get("span_kind") or attributes.get(KIND_ATTRIBUTE) or "UNKNOWN").upper(),
                start=_time(rec.get("start_time"), 1e3, file, where, "start_time"),
                end=_time(rec.get("end_time"), 1e3, file, where, "end_time"),
                status=str(rec.get("status_code") or "UNSET").upper(), attributes=attributes,
                status_message=str(rec.get("status_message") or ""), project=project, where=where)


def _short(value: Any, limit: int = 80) -> str:
    """A value for a message, cut to `limit` characters (a refused value may be megabytes)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _otlp_value(value: Any, file: str, where: Any, name: str) -> Any:
    """An OTLP JSON AnyValue -> Python (intValue comes as text in OTLP JSON)."""
    value = _obj(value, file, where, name)
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            number = value["intValue"]
            if isinstance(number, bool) or not isinstance(number, (int, str)):
                raise ValueError(_short(number))
            return int(number)
        if "doubleValue" in value:
            number = value["doubleValue"]
            if isinstance(number, bool) or not isinstance(number, (int, float, str)):
                raise ValueError(_short(number))
            return float(number)
        if "boolValue" in value:
            return bool(value["boolValue"])
    except ValueError as exc:  # int() and float() quote the text they refused: shortened too
        raise InputError(file, f"not a number: {_short(str(exc))}", record=where, field=name) from None
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
                span = _required_id(raw.get("spanId"), 8, file, recno, "spanId")
                where = f"{recno} (span {span})"
                trace = _required_id(raw.get("traceId"), 16, file, where, "traceId")
                attributes = _shallow(flatten(_otlp_attributes(raw.get("attributes"), file, where, "attributes")),
                                      file, where)
                status = _obj(raw.get("status"), file, where, "status")
                code = str(status.get("code", "UNSET")).upper()
                code = {"0": "UNSET", "1": "OK", "2": "ERROR", "STATUS_CODE_OK": "OK",
                        "STATUS_CODE_ERROR": "ERROR", "STATUS_CODE_UNSET": "UNSET"}.get(code, code)
                yield Span(span_id=span, trace_id=trace,
                           parent_id=span_id(raw.get("parentSpanId"), 8, file, where, "parentSpanId"),
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


def _record_spans(rec: dict[str, Any], file: str, recno: int) -> list[Span]:
    shape = span_shape(rec)
    if shape == "otlp":
        return list(from_otlp_record(rec, file, recno))
    if shape == "dataframe":
        return [from_dataframe_record(rec, file, recno)]
    if shape == "rest":
        return [from_rest_span(rec, file, recno)]
    raise InputError(file, "not a span: expected 'context.span_id' (Phoenix span dataframe), "
                     "'context' (Phoenix REST span) or 'resourceSpans' (OTLP JSON)", record=recno)


def read_span_file(path: str | Path) -> Iterator[Span]:
    """Every span of a span export file (Parquet, JSONL, JSON), whatever its shape."""
    from evalcore.datasets.records import read_records

    file = str(path)
    for recno, rec in read_records(path):
        try:
            spans = _record_spans(rec, file, recno)
        except RecursionError:  # a record the JSON parser took, nested too deeply to walk
            raise InputError(file, "nested too deeply", record=recno) from None
        yield from spans
