"""A trace's retrieved documents are taken once when RETRIEVER spans nest (issue 34, round 4,
R3-5). A framework's retriever span wrapping the vector store's retriever span, both reporting
the same two documents, stored four contexts with exit 0 and no warning (and with document ids
the trace was refused as listing a document twice). Now each retrieval counts once: the
outermost retriever span that reports documents is the retrieval, a repeat of its documents
below it gives their fields from the innermost span, other documents below it (a reranker's
or a fusion's candidates) are its steps; separate retrievals still add up in start order; the
import says how many documents it left out. EMBEDDING and RERANKER spans add nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import InputError
from evalcore.traces.spans import Span
from evalcore.traces.trace_import import answers_from_traces
from evalcore.traces.trace_tree import assemble_traces
from tests.traces.test_trace_counting import ROOT, SHAPES, T1, _answers, _import, _span

runner = CliRunner()
OUTER, INNER = ROOT[:8] + "5" * 8, ROOT[:8] + "6" * 8
TWO = ["x is y per doc A", "doc B says z"]


def docs(texts, ids=None, scores=None):
    """`retrieval.documents.N.document.*` attributes of the given texts (and ids, scores)."""
    out = {}
    for n, text in enumerate(texts):
        out[f"retrieval.documents.{n}.document.content"] = text
        if ids:
            out[f"retrieval.documents.{n}.document.id"] = ids[n]
        if scores:
            out[f"retrieval.documents.{n}.document.score"] = scores[n]
    return out


def root_span(trace=T1):
    return _span(trace, ROOT, None, "CHAIN", **{"input.value": "what is x?", "output.value": "x is y"})


def nested_pair(ids=None):
    """The reported shape: a framework's retriever span; under it the vector store's, with the
    same documents (the store's span also scores them)."""
    return [root_span(),
            _span(T1, OUTER, ROOT, "RETRIEVER", **docs(TWO, ids)),
            _span(T1, INNER, OUTER, "RETRIEVER", **docs(TWO, ids, [0.9, 0.8]))]


def retrieved(spans, starts=None):
    """The trace's ranking, read from the abstract spans (`starts`: span id -> start second)."""
    from datetime import datetime, timezone

    def start(s):
        return datetime.fromtimestamp(starts[s["span"]], tz=timezone.utc) if starts else None

    traces = assemble_traces([Span(span_id=s["span"], trace_id=s["trace"], parent_id=s["parent"], name="s",
                                   kind=s["attributes"]["openinference.span.kind"], start=start(s), end=None,
                                   status="OK", attributes=s["attributes"]) for s in spans], "t.jsonl")
    [answer] = answers_from_traces(traces, "t.jsonl", "m")
    return answer


@pytest.mark.parametrize("ids", [None, ["A", "B"]], ids=["no-ids", "ids"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_retriever_span_wrapping_one_with_the_same_documents_counts_them_once(tmp_path, shape, ids):
    root, res = _import(tmp_path, nested_pair(ids), shape)
    [record], manifest = _answers(root, res)
    assert [(d["rank"], d["text"], d.get("chunk_id"), d["score"]) for d in record["retrieved"]] == \
        [(1, TWO[0], ids and "A", 0.9), (2, TWO[1], ids and "B", 0.8)]  # the inner span's fields
    assert "left out 2 document(s) of retriever spans inside another retriever span" in res.output
    assert manifest.source["retriever_documents_nested"] == 2


def test_the_reported_trace_stores_two_contexts_through_the_cli(tmp_path):
    """The report's generator: REST span JSONL, ids 1000000000000001/2/3, each span the parent
    of the next, imported and exported by `python -m evalcore`."""
    ids = ["100000000000000" + str(n) for n in (1, 2, 3)]
    spans = [("root", "CHAIN", None, {"input.value": "what is x?", "output.value": "x is y"}),
             ("framework.retrieve", "RETRIEVER", ids[0], docs(TWO)),
             ("vectorstore.search", "RETRIEVER", ids[1], docs(TWO))]
    path = tmp_path / "nested_ret.jsonl"
    path.write_text("".join(json.dumps({
        "name": name, "parent_id": parent, "start_time": f"2026-01-01T00:00:0{n}Z", "end_time": "2026-01-01T00:00:09Z",
        "status_code": "OK", "context": {"trace_id": "a" * 32, "span_id": ids[n]},
        "attributes": {"openinference.span.kind": kind, **attributes}}) + "\n"
        for n, (name, kind, parent, attributes) in enumerate(spans)))
    store = str(tmp_path / "str")
    imported = subprocess.run([sys.executable, "-m", "evalcore", "--store", store, "import", str(path), "-n", "nr"],
                              capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr
    assert "left out 2 document(s)" in imported.stderr
    exported = runner.invoke(app, ["--store", store, "export", "nr", "-f", "json"])
    assert exported.exit_code == 0, exported.output
    [row] = json.loads(exported.stdout)["rows"]
    assert json.loads(row["contexts"]) == TWO


def test_a_retrieval_recorded_at_three_depths_is_taken_once_from_the_innermost_span():
    """Stacked instrumentors, a chain step between them; the outer spans lack what the inner one
    gives, and an outer span's own field (metadata) is kept where the inner one has none."""
    mid, inner = ROOT[:8] + "7" * 8, ROOT[:8] + "8" * 8
    spans = [root_span(),
             _span(T1, OUTER, ROOT, "RETRIEVER", **docs(TWO), **{"retrieval.documents.0.document.metadata.page": 3}),
             _span(T1, mid[:8] + "0" * 8, OUTER, "CHAIN"),
             _span(T1, mid, mid[:8] + "0" * 8, "RETRIEVER", **docs(TWO, ["A", "B"])),
             _span(T1, inner, mid, "RETRIEVER", **docs(TWO, ["A", "B"], [0.9, 0.8]))]
    answer = retrieved(spans)
    assert answer.retrieved == [{"rank": 1, "text": TWO[0], "chunk_id": "A", "score": 0.9, "metadata": {"page": 3}},
                                {"rank": 2, "text": TWO[1], "chunk_id": "B", "score": 0.8}]
    assert answer.nested_retriever_documents == 4


def test_separate_retrievals_still_add_up_in_the_order_they_started():
    """Two retrieval calls, each recorded twice; the one listed first started second."""
    late, early = ROOT[:8] + "a" * 8, ROOT[:8] + "b" * 8
    spans = [root_span(),
             _span(T1, late, ROOT, "RETRIEVER", **docs(["late"], ["L"])),
             _span(T1, late[:8] + "c" * 8, late, "RETRIEVER", **docs(["late"], ["L"])),
             _span(T1, early, ROOT, "RETRIEVER", **docs(["early 1", "early 2"])),
             _span(T1, early[:8] + "d" * 8, early, "RETRIEVER", **docs(["early 1", "early 2"]))]
    starts = {ROOT: 0, late: 5, late[:8] + "c" * 8: 6, early: 1, early[:8] + "d" * 8: 2}
    answer = retrieved(spans, starts)
    assert [(d["rank"], d["text"]) for d in answer.retrieved] == [(1, "early 1"), (2, "early 2"), (3, "late")]
    assert answer.nested_retriever_documents == 3


@pytest.mark.parametrize("outer, inner_calls, ranking", [
    pytest.param((["b", "a", "c"], ["B", "A", "C"]), [(["a", "b"], ["A", "B"]), (["b", "c"], ["B", "C"])],
                 ["b", "a", "c"], id="fusion"),
    pytest.param((["b", "a"], ["B", "A"]), [(["a", "b", "c"], ["A", "B", "C"])], ["b", "a"], id="rerank"),
    pytest.param((["parent"], None), [(["child 1", "child 2"], None)], ["parent"], id="parent-document"),
])
def test_a_wrapping_retriever_reports_the_result_and_its_steps_are_left_out(outer, inner_calls, ranking):
    """A fusing retriever over two overlapping searches was refused (document B twice); a
    reranker's or a parent-document retriever's candidates were added to its result."""
    spans = [root_span(), _span(T1, OUTER, ROOT, "RETRIEVER", **docs(*outer))]
    for n, (texts, ids) in enumerate(inner_calls):
        spans.append(_span(T1, OUTER[:8] + f"{n:08x}", OUTER, "RETRIEVER", **docs(texts, ids)))
    answer = retrieved(spans)
    assert [d["text"] for d in answer.retrieved] == ranking
    assert answer.nested_retriever_documents == sum(len(texts) for texts, _ in inner_calls)


def test_a_retriever_span_without_documents_hides_nothing():
    spans = [root_span(), _span(T1, OUTER, ROOT, "RETRIEVER"),
             _span(T1, OUTER[:8] + "3" * 8, OUTER, "RETRIEVER", **docs(["one"], ["1"])),
             _span(T1, OUTER[:8] + "4" * 8, OUTER, "RETRIEVER", **docs(["two"], ["2"]))]
    answer = retrieved(spans)
    assert [(d["rank"], d["chunk_id"]) for d in answer.retrieved] == [(1, "1"), (2, "2")]
    assert answer.nested_retriever_documents == 0


def test_a_repeat_is_matched_on_content_where_a_span_gives_no_id():
    """The framework's span names the documents, the store's span scores them but gives no ids."""
    spans = [root_span(), _span(T1, OUTER, ROOT, "RETRIEVER", **docs(TWO, ["A", "B"])),
             _span(T1, INNER, OUTER, "RETRIEVER", **docs(TWO, None, [0.9, 0.8]))]
    answer = retrieved(spans)
    assert [(d["chunk_id"], d["score"]) for d in answer.retrieved] == [("A", 0.9), ("B", 0.8)]


def test_one_document_in_two_separate_retrievals_is_still_refused():
    """Side by side, the same id twice is one ranking listing a document twice, as before."""
    spans = [root_span(), _span(T1, OUTER, ROOT, "RETRIEVER", **docs(["t"], ["A"])),
             _span(T1, INNER, ROOT, "RETRIEVER", **docs(["t"], ["A"]))]
    with pytest.raises(InputError, match="document id 'A' was already retrieved"):
        retrieved(spans)


def test_embedding_and_reranker_spans_add_nothing():
    """Their documents and token counts are not read, so they cannot double a retrieval or a
    call: a reranker listing the retrieved documents again, an embedding call with tokens."""
    spans = nested_pair(["A", "B"]) + [
        _span(T1, ROOT[:8] + "e" * 8, ROOT, "RERANKER", **{
            "reranker.input_documents.0.document.content": TWO[0], "reranker.input_documents.0.document.id": "A",
            "reranker.output_documents.0.document.content": TWO[0], "reranker.output_documents.0.document.id": "A"}),
        _span(T1, INNER[:8] + "f" * 8, INNER, "EMBEDDING", **{"llm.token_count.prompt": 7,
                                                              "embedding.embeddings.0.embedding.text": "what is x?"}),
        _span(T1, ROOT[:8] + "9" * 8, ROOT, "LLM", **{"llm.token_count.prompt": 100})]
    answer = retrieved(spans)
    assert [d["chunk_id"] for d in answer.retrieved] == ["A", "B"] and answer.token_usage["input_tokens"] == 100


def test_separate_retrievals_without_start_times_keep_their_source_order():
    """The first retrieval sits deeper (under a chain step) than the second: still first."""
    step = ROOT[:8] + "c" * 8
    spans = [root_span(), _span(T1, step, ROOT, "CHAIN"),
             _span(T1, OUTER, step, "RETRIEVER", **docs(["first"])),
             _span(T1, INNER, ROOT, "RETRIEVER", **docs(["second"]))]
    assert [d["text"] for d in retrieved(spans).retrieved] == ["first", "second"]
