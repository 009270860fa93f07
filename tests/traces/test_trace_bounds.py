"""Numbers and nesting in spans are bounded as the answer contract bounds them (issue 34, round 4,
F5/F6/F11), in every span shape: a token count of 10**19 crashed the write of the run
("OverflowError: Python int too large to convert to C long"), two of 9e18 crashed through their
sum, 400 nines crashed `math.isfinite`, the same for a document score; two costs of 1e308 summed
to inf and were stored as "unknown"; a RETRIEVER document's metadata nested 260 levels deep
crashed pydantic's serializer. Each is now one `error:` line naming the span and the attribute,
exit 2, nothing stored."""

from __future__ import annotations

import json

import pytest

from evalcore.errors import InputError
from evalcore.schemas.bounds import MAX_JSON_DEPTH
from evalcore.store import RunStore
from tests.traces.test_trace_counting import ROOT, SHAPES, T1, _import, _span, good_trace

LLM = ROOT[:8] + "3" * 8
NINES = int("9" * 400)


def _nest(levels: int):
    value: object = 1
    for _ in range(levels - 1):
        value = [value]
    return [value]  # `levels` lists, one inside the other


def _refused(tmp_path, spans, shape, field, *fragments):
    root, res = _import(tmp_path, spans, shape)
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.field == field, str(res.exception)
    for fragment in fragments:
        assert fragment in str(res.exception), str(res.exception)
    assert not root.exists() or RunStore(root).run_ids() == []
    return res.exception


def _with(attributes: dict, span: int = 2, spans=None):
    spans = spans or good_trace()
    spans[span]["attributes"].update(attributes)
    return spans


# 400 digits fit no Parquet column, so that case is written in the JSON shapes only
JSON_SHAPES = [s for s in SHAPES if s != "dataframe.parquet"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("field, value", [("llm.token_count.prompt", 10**19), ("llm.token_count.completion", 10**13),
                                          ("llm.cost.total", 1e308)], ids=["prompt-1e19", "completion-1e13", "cost"])
def test_a_count_past_its_bound_is_refused_naming_the_span(tmp_path, shape, field, value):
    exc = _refused(tmp_path, _with({field: value}), shape, field, "past the bound")
    assert f"span {LLM}" in str(exc)


@pytest.mark.parametrize("shape", JSON_SHAPES)
@pytest.mark.parametrize("field", ["llm.token_count.prompt", "llm.cost.total", "retrieval.documents.0.document.score"])
def test_four_hundred_nines_are_refused_not_a_crash(tmp_path, shape, field):
    span = 1 if field.startswith("retrieval") else 2
    _refused(tmp_path, _with({field: NINES}, span), shape, field, "past the bound", "about 10^400")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("field, each, bound", [("llm.token_count.prompt", 9 * 10**11, "1e+12"),
                                                ("llm.cost.total", 9e5, "1e+06")], ids=["tokens", "cost"])
def test_counts_summing_past_the_bound_are_refused(tmp_path, shape, field, each, bound):
    """Two spans each within the bound (the report: 9e18 twice, and 1e308 twice summing to inf)."""
    spans = _with({field: each})
    spans.append(_span(T1, ROOT[:8] + "9" * 8, ROOT, "LLM", **{field: each}))
    exc = _refused(tmp_path, spans, shape, field, f"sum past the bound of {bound}")
    assert "span " in str(exc)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_score_past_its_bound_is_refused(tmp_path, shape):
    _refused(tmp_path, _with({"retrieval.documents.0.document.score": -1e300}, 1), shape,
             "retrieval.documents.0.document.score", "past the bound of 1e+15")


@pytest.mark.parametrize("shape", JSON_SHAPES)
def test_document_metadata_nested_past_the_bound_is_refused(tmp_path, shape):
    """The reported case: a RETRIEVER document's metadata, a list nested 260 deep."""
    exc = _refused(tmp_path, _with({"retrieval.documents.0.document.metadata": _nest(260)}, 1), shape,
                   "retrieval.documents.0.document.metadata", f"nested more than {MAX_JSON_DEPTH} levels")
    assert f"span {ROOT[:8]}{'2' * 8}" in str(exc)


@pytest.mark.parametrize("shape", JSON_SHAPES)
def test_metadata_nested_within_the_bound_is_stored(tmp_path, shape):
    from tests.traces.test_trace_counting import _answers

    root, res = _import(tmp_path, _with({"retrieval.documents.0.document.metadata": _nest(MAX_JSON_DEPTH - 2)}, 1),
                        shape)
    records, _ = _answers(root, res)
    assert records[0]["retrieved"][0]["metadata"]["metadata"] == _nest(MAX_JSON_DEPTH - 2)


@pytest.mark.parametrize("levels", [900, 950, 990])
def test_a_record_nested_near_what_python_walks_reads_or_is_one_input_error(tmp_path, levels):
    """A dataframe row whose attribute nests objects about as deep as JSON reads: flattening it
    (recursive) must not end as a RecursionError; it reads (one long dotted name) or is refused."""
    from evalcore.traces.spans import read_span_file

    row = {"context.span_id": ROOT, "context.trace_id": T1, "name": "s", "parent_id": None,
           "attributes.input.value": "q?", "attributes.output.value": "a"}
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(row)[:-1] + ', "attributes.deep": ' + '{"k": ' * levels + "1" + "}" * levels + "}\n")
    try:
        assert [s.span_id for s in read_span_file(path)] == [ROOT]
    except InputError as exc:
        assert exc.file == str(path)
