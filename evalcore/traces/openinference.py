"""One trace -> one answer, read the way the OpenInference conventions define the attributes.

- question: the root span's `input.value` (a JSON object input: its `question`/`query`/`input` text);
- answer: the root span's `output.value` (a root span with status ERROR and no output is a
  failed answer, its status message the error);
- retrieved contexts: the RETRIEVER spans' `retrieval.documents.N.document.{content,id,score}`,
  each retrieval taken once when retriever spans nest (retrieval.py), in the retrievals' start
  order, ranked 1..n;
- tokens and cost: the sums over LLM spans of `llm.token_count.{prompt,completion}` and
  `llm.cost.total`, each model call counted once when LLM spans nest (llm_usage.py), the model
  from `llm.model_name`;
- latency: the root span's end minus its start.
Every span-level problem is an InputError naming the file, the span id and the attribute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.errors import InputError
from evalcore.schemas import ids
from evalcore.traces.llm_usage import trace_usage
from evalcore.traces.retrieval import trace_documents
from evalcore.traces.spans import Span
from evalcore.traces.trace_tree import TraceTree
from evalcore.common.value_budget import TooManyValues
from evalcore.common.value_budget import loads as bounded_loads

QUESTION = "input.value"
ANSWER = "output.value"
_QUESTION_KEYS = ("question", "query", "input", "user_input", "text")


@dataclass
class TraceAnswer:
    """What one trace says: enough for an EvalQuestion and an EvalResponse."""

    trace_id: str
    root: Span
    question: str
    answer: str
    error: str | None
    retrieved: list[dict[str, Any]]
    token_usage: dict[str, Any] | None
    latency_ms: float | None
    method: str
    question_id: str | None  # from --id-from; None: joined on the question text
    nested_llm_spans: int = 0  # LLM spans whose counts an LLM span below them reports (llm_usage.py)
    nested_retriever_documents: int = 0  # documents of retriever spans inside another one, left out (retrieval.py)


def _where(span: Span) -> str:
    return span.place


def attribute(span: Span, name: str, file: str) -> Any:
    """The attribute `name` of `span`, or an InputError naming the span and the attribute."""
    if name not in span.attributes:
        known = ", ".join(sorted(span.attributes)[:12]) or "none"
        raise InputError(file, f"the {span.kind} span {span.name!r} has no attribute {name!r} "
                         f"(it has: {known})", record=_where(span), field=name)
    return span.attributes[name]


def _text(span: Span, name: str, file: str) -> str:
    value = attribute(span, name, file)
    mime = span.attributes.get(name.replace(".value", ".mime_type"))
    if isinstance(value, str) and (mime == "application/json" or value.lstrip().startswith("{")):
        try:
            parsed = bounded_loads(value)  # JSON text inside a span: the record's value budget
        except TooManyValues as exc:
            raise InputError(file, f"the JSON value holds {exc}", record=_where(span), field=name) from None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            for key in _QUESTION_KEYS if name == QUESTION else ("answer", "output", "response", "text"):
                if isinstance(parsed.get(key), str):
                    return parsed[key]
            if mime == "application/json":
                raise InputError(file, f"JSON value without a text field ({', '.join(sorted(parsed)[:8])})",
                                 record=_where(span), field=name)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise InputError(file, f"expected text, got {type(value).__name__}", record=_where(span), field=name)
    return str(value)


def trace_answer(tree: TraceTree, file: str, method: str, method_from: str | None = None,
                 id_from: str | None = None) -> TraceAnswer:
    """The answer one trace records (its root and the spans the root reaches: trace_tree.py);
    InputError naming span and attribute when it cannot."""
    root = tree.root
    question = _text(root, QUESTION, file)
    if not question.strip():
        raise InputError(file, "the question is empty", record=_where(root), field=QUESTION)
    error = None
    if ANSWER in root.attributes:
        answer = _text(root, ANSWER, file)
    elif root.status == "ERROR":
        answer, error = "", root.status_message or "the root span ended with status ERROR"
    else:
        answer = _text(root, ANSWER, file)  # raises: names the span and output.value
    latency = None
    if root.start is not None and root.end is not None:
        latency = max(0.0, (root.end - root.start).total_seconds() * 1000.0)
    if method_from:
        method = str(attribute(root, method_from, file))
        if not method.strip():
            raise InputError(file, "the method name is empty", record=_where(root), field=method_from)
    qid = None
    if id_from:
        qid = str(attribute(root, id_from, file))
    usage = trace_usage(tree, file)
    retrieved = trace_documents(tree, file)
    return TraceAnswer(trace_id=root.trace_id, root=root, question=question, answer=answer, error=error,
                       retrieved=retrieved.documents, token_usage=usage.fields, latency_ms=latency,
                       method=method, question_id=qid, nested_llm_spans=usage.nested,
                       nested_retriever_documents=retrieved.nested)


def text_question_id(question: str) -> str:
    """The id a question without one gets: the recorded-answers import's (evalcore.schemas.ids)."""
    return ids.text_question_id(question)
