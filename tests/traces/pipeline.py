"""A tiny RAG pipeline traced with opentelemetry-sdk and the OpenInference conventions.

Each question becomes one trace: a CHAIN root span (question in, answer out, the method in
`metadata`), a RETRIEVER child listing its documents and an LLM child with token counts, the
model and the cost, the way OpenInference instrumentors record them. `trace_pipeline` sends the
spans to any SpanExporter: Phoenix's OTLP endpoint, or memory for writing files.
"""

from __future__ import annotations

import json
from typing import Any

from tests.optional import requires

QUESTIONS = [
    {"id": "q1", "question": "What is the boiling point of water at sea level?",
     "answer": "Water boils at 100 degrees Celsius at sea level.",
     "docs": [("d1", "At sea level water boils at 100 degrees Celsius.", 0.92),
              ("d2", "Salt raises the boiling point of water slightly.", 0.41)]},
    {"id": "q2", "question": "Who wrote Pride and Prejudice?",
     "answer": "Jane Austen wrote Pride and Prejudice.",
     "docs": [("d3", "Pride and Prejudice is an 1813 novel by Jane Austen.", 0.88)]},
    {"id": "q3", "question": "What is the capital of Australia?",
     "answer": "The capital of Australia is Sydney.",
     "docs": [("d4", "Canberra is the capital city of Australia.", 0.77),
              ("d5", "Sydney is the largest city in Australia.", 0.52)]},
]


def trace_pipeline(exporter: Any, project: str, method: str = "bm25", questions: list[dict] = QUESTIONS,
                   question_attr: str = "input.value") -> None:
    """Run the pipeline over `questions`, one trace each, exporting every span synchronously."""
    requires("opentelemetry.sdk", "the Phoenix tests trace a pipeline")
    semconv = requires("openinference.semconv.trace", "the Phoenix tests use the OpenInference conventions")
    from openinference.semconv.resource import ResourceAttributes
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    A, D, K = semconv.SpanAttributes, semconv.DocumentAttributes, semconv.OpenInferenceSpanKindValues
    provider = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: project}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("evalcore-tests")
    for item in questions:
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(A.OPENINFERENCE_SPAN_KIND, K.CHAIN.value)
            root.set_attribute(question_attr, item["question"])
            root.set_attribute(A.METADATA, json.dumps({"method": method, "question_id": item["id"]}))
            with tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute(A.OPENINFERENCE_SPAN_KIND, K.RETRIEVER.value)
                retriever.set_attribute(A.INPUT_VALUE, item["question"])
                for i, (doc_id, text, score) in enumerate(item["docs"]):
                    prefix = f"{A.RETRIEVAL_DOCUMENTS}.{i}."
                    retriever.set_attribute(prefix + D.DOCUMENT_ID, doc_id)
                    retriever.set_attribute(prefix + D.DOCUMENT_CONTENT, text)
                    retriever.set_attribute(prefix + D.DOCUMENT_SCORE, score)
            with tracer.start_as_current_span("generate") as llm:
                llm.set_attribute(A.OPENINFERENCE_SPAN_KIND, K.LLM.value)
                llm.set_attribute(A.LLM_MODEL_NAME, "tiny-llm")
                llm.set_attribute(A.LLM_TOKEN_COUNT_PROMPT, 120)
                llm.set_attribute(A.LLM_TOKEN_COUNT_COMPLETION, 15)
                llm.set_attribute(A.LLM_COST_TOTAL, 0.0005)
                llm.set_attribute(A.OUTPUT_VALUE, item["answer"])
            root.set_attribute(A.OUTPUT_VALUE, item["answer"])
    provider.shutdown()


def otlp_json_lines(project: str, hex_ids: bool = True, **kwargs: Any) -> list[str]:
    """The pipeline's spans as OTLP JSON lines (one ExportTraceServiceRequest per trace).

    OTLP/JSON writes ids as hex; protobuf's generic JSON mapping writes them as base64, which
    some tools emit: `hex_ids=False` gives that variant."""
    requires("opentelemetry.exporter.otlp.proto.common", "OTLP encoding for the span files")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    trace_pipeline(memory, project, **kwargs)
    by_trace: dict[int, list] = {}
    for span in memory.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    lines = []
    for spans in by_trace.values():
        message = MessageToDict(encode_spans(spans))
        if hex_ids:
            for rs in message["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if span.get(key):
                                import base64

                                span[key] = base64.b64decode(span[key]).hex()
        lines.append(json.dumps(message))
    return lines
