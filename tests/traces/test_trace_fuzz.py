"""Property-based: whatever a span file holds (any of the three shapes, any field replaced by any
JSON value), reading its traces gives answers or an InputError naming the file, never another
exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.traces.spans import read_span_file
from evalcore.traces.trace_import import _pair, answers_from_traces
from evalcore.traces.trace_tree import assemble_traces

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)

DATAFRAME = {"name": "rag", "span_kind": "CHAIN", "parent_id": None, "start_time": "2026-01-01T00:00:00+00:00",
             "end_time": "2026-01-01T00:00:01+00:00", "status_code": "OK", "context.span_id": "00000000000000a1",
             "context.trace_id": "0" * 31 + "1", "attributes.input.value": "q?", "attributes.output.value": "a",
             "attributes.metadata": {"method": "m"},
             "attributes.retrieval.documents": [{"document.id": "d", "document.content": "t", "document.score": 1}],
             "attributes.llm.token_count.prompt": 3}
REST = {"name": "rag", "span_kind": "CHAIN", "parent_id": None, "start_time": "2026-01-01T00:00:00+00:00",
        "end_time": "2026-01-01T00:00:01+00:00", "status_code": "OK",
        "context": {"trace_id": "0" * 31 + "2", "span_id": "00000000000000b1"},
        "attributes": {"input.value": "q?", "output.value": "a", "retrieval.documents.0.document.id": "d"}}
OTLP = {"resourceSpans": [{"resource": {"attributes": [{"key": "openinference.project.name",
                                                         "value": {"stringValue": "p"}}]},
                           "scopeSpans": [{"spans": [{"traceId": "0" * 31 + "3", "spanId": "00000000000000c1",
                                                      "name": "rag", "startTimeUnixNano": "1",
                                                      "endTimeUnixNano": "2",
                                                      "attributes": [{"key": "input.value",
                                                                      "value": {"stringValue": "q?"}},
                                                                     {"key": "output.value",
                                                                      "value": {"intValue": "7"}}]}]}]}]}


def _paths(rec):
    """(container, key) pairs reaching every value in a nested record."""
    out = []
    if isinstance(rec, dict):
        for k, v in rec.items():
            out.append((rec, k))
            out += _paths(v)
    elif isinstance(rec, list):
        for i, v in enumerate(rec):
            out.append((rec, i))
            out += _paths(v)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from([DATAFRAME, REST, OTLP]), picks=st.lists(st.integers(0, 10**6), max_size=3),
       replacement=st.lists(values, min_size=3, max_size=3), method_from=st.sampled_from([None, "metadata.method"]))
def test_any_span_file_gives_answers_or_a_clear_error(tmp_path_factory, base, picks, replacement, method_from):
    rec = json.loads(json.dumps(base))
    for pick, value in zip(picks, replacement):
        paths = _paths(rec)
        if paths:
            container, key = paths[pick % len(paths)]
            container[key] = value
    path = tmp_path_factory.mktemp("spans") / "spans.jsonl"
    path.write_text(json.dumps(rec, allow_nan=True) + "\n", encoding="utf-8")
    try:
        for answer in answers_from_traces(assemble_traces(read_span_file(path), str(path)), str(path), "m", method_from):
            _pair(answer, str(path), {}, {}, None, None)
    except InputError as exc:
        assert exc.file == str(path)
