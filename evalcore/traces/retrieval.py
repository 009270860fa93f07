"""A trace's retrieved contexts: the RETRIEVER spans' documents, each retrieval taken once.

Retriever spans nest. A framework's retriever span (LangChain, LlamaIndex) wraps the span of
the vector store it calls and reports the same documents again; a reranking, compressing,
fusing or parent-document retriever wraps the searches it is built on and reports its own
result. Taking every RETRIEVER span's documents stored the first kind twice (4 contexts for 2,
or a refused trace when the documents had ids) and mixed the second kind's candidates into its
result. The rule:

- a retriever span that reports documents and has no retriever span reporting documents
  above it is one retrieval of the trace; what retriever spans below it report are steps of
  it (or repeats of it) and are left out, counted;
- when a retriever span below it reports the same documents in the same order (the same ids
  where both give one, the same content otherwise), the retrieval was recorded twice (stacked
  instrumentors): each document is taken from the innermost such span, the outer spans'
  fields filling in what it lacks (the store's span carries ids and scores a framework's span
  often drops);
- a retriever span that reports no documents hides nothing: the retrievals below it count;
- separate retrievals (side by side, or under a span of another kind) add up, in the order
  they started, ranked 1..n; a document id may still appear once in the whole ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.errors import InputError
from evalcore.schemas.bounds import MAX_SCORE
from evalcore.traces.llm_usage import span_number
from evalcore.traces.spans import Span
from evalcore.traces.trace_tree import TraceTree

DOCS = "retrieval.documents"


@dataclass
class Retrieved:
    """The documents one trace retrieved, ranked; `nested` counts the documents of retriever
    spans inside another retriever span that were left out (the module's rule)."""

    documents: list[dict[str, Any]]
    nested: int = 0


def span_documents(span: Span, file: str) -> list[dict[str, Any]]:
    """The documents of one RETRIEVER span, in their listed order."""
    prefix = DOCS + "."
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if not index.isdigit() or not rest.startswith("document."):
            raise InputError(file, "not an OpenInference document attribute "
                             "(expected retrieval.documents.N.document.<field>)", record=span.place, field=key)
        by_index.setdefault(int(index), {})[rest[len("document."):]] = (key, value)
    return [_document(span, prefix, index, by_index[index], file) for index in sorted(by_index)]


def _document(span: Span, prefix: str, index: int, fields: dict[str, Any], file: str) -> dict[str, Any]:
    content = fields.get("content", (None, ""))[1]
    if not isinstance(content, str):
        raise InputError(file, f"expected text, got {type(content).__name__}", record=span.place,
                         field=f"{prefix}{index}.document.content")
    doc: dict[str, Any] = {"text": content}
    if "id" in fields:
        doc["chunk_id"] = str(fields["id"][1])
    if "score" in fields:
        doc["score"] = span_number(span, fields["score"][0], file, MAX_SCORE, signed=True)
    meta = {k[len("metadata."):]: v for k, (_, v) in fields.items() if k.startswith("metadata.")}
    if "metadata" in fields:
        meta["metadata"] = fields["metadata"][1]
    if meta:
        doc["metadata"] = meta
    return doc


def _same_documents(outer: list[dict[str, Any]], inner: list[dict[str, Any]]) -> bool:
    """The same documents in the same order: position by position the same id where both
    spans give one, else the same content."""
    if len(outer) != len(inner):
        return False
    for a, b in zip(outer, inner):
        if "chunk_id" in a and "chunk_id" in b:
            if a["chunk_id"] != b["chunk_id"]:
                return False
        elif a["text"] != b["text"]:
            return False
    return True


def _retrievals(tree: TraceTree, docs: dict[str, list[dict[str, Any]]]) -> tuple[list[Span], dict[str, list[Span]]]:
    """The outermost retriever spans that report documents, and for each (by span id) the
    spans below it that report the same documents, outermost first."""
    owner: dict[str, str | None] = {}  # span id -> the outermost documented retriever at or above it
    outermost: list[Span] = []
    repeats: dict[str, list[Span]] = {}
    for span in tree.parents_first():
        above = owner.get(span.parent_id) if span is not tree.root and span.parent_id else None
        owner[span.span_id] = above
        if span.span_id not in docs:
            continue
        if above is None:
            owner[span.span_id] = span.span_id
            outermost.append(span)
        elif _same_documents(docs[above], docs[span.span_id]):
            repeats.setdefault(above, []).append(span)
    return outermost, repeats


def trace_documents(tree: TraceTree, file: str) -> Retrieved:
    """The trace's retrieved documents by the module's rule, ranked 1..n; InputError naming
    the span when a document id comes twice in the ranking."""
    docs = {s.span_id: d for s in tree.spans if s.kind == "RETRIEVER" and (d := span_documents(s, file))}
    outermost, repeats = _retrievals(tree, docs)
    source_order = {id(s): n for n, s in enumerate(tree.spans)}
    outermost.sort(key=lambda s: (s.start is None, s.start or 0, source_order[id(s)]))  # ties: source order
    ranking: list[dict[str, Any]] = []
    seen: dict[str, Span] = {}
    for span in outermost:
        layers = [docs[span.span_id], *(docs[inner.span_id] for inner in repeats.get(span.span_id, ()))]
        for position, doc in enumerate(layers[0]):
            for layer in layers[1:]:  # parents first: the innermost span's fields win
                doc = {**doc, **layer[position]}
            cid = doc.get("chunk_id")
            if cid is not None and cid in seen:
                raise InputError(file, f"document id {cid!r} was already retrieved in this trace "
                                 f"(span {seen[cid].span_id}); a ranking may list a document once",
                                 record=span.place, field=DOCS)
            if cid is not None:
                seen[cid] = span
            ranking.append({"rank": len(ranking) + 1, **doc})
    return Retrieved(ranking, sum(len(d) for d in docs.values()) - len(ranking))
