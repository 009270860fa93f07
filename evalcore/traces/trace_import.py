"""Publish a run from OpenInference traces (a span export file or a Phoenix project).

Every trace is read and validated before anything is written; the run is then built in
staging and published whole (as `evalcore.scoring.importer` does), so a bad span leaves the store as it
was. Each response keeps its trace's ids in `raw["openinference"]` (trace_id, span_id of the
root, project), which is how `evalcore export --to phoenix://` finds the span to annotate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from evalcore import __version__
from evalcore.datasets import load_questions
from evalcore.errors import InputError, from_validation
from evalcore.common.fingerprint import file_fingerprint
from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.schemas.ids import canonical_id
from evalcore.schemas.storable import WHAT, make_storable, storable_path, storable_text
from evalcore.store import FORMAT_VERSION, RunStore, new_run_id
from evalcore.traces.openinference import TraceAnswer, text_question_id, trace_answer
from evalcore.traces.spans import Span
from evalcore.traces.trace_tree import Traces, assemble_traces

RAW_KEY = "openinference"  # EvalResponse.raw entry holding the trace's ids


@dataclass
class TraceImportResult:
    run_id: str
    n_records: int
    n_questions: int
    methods: list[str]
    notes: list[str] = field(default_factory=list)


def answers_from_traces(traces: Traces, file: str, method: str, method_from: str | None = None,
                        id_from: str | None = None) -> list[TraceAnswer]:
    """One TraceAnswer per trace, in the order the traces first appear."""
    if not traces.trees:
        raise InputError(file, "no spans found" if not traces.rootless_traces else
                         f"no trace has a root span ({traces.rootless_traces} trace(s) of only cycles or "
                         "spans claiming a parent in another trace)")
    return [trace_answer(tree, file, method, method_from, id_from) for tree in traces.trees]


def _pair(answer: TraceAnswer, file: str, known: dict[str, EvalQuestion], by_text: dict[str, str],
          project: str | None, id_from: str | None,
          repaired: list[str] | None = None) -> tuple[EvalQuestion, EvalResponse]:
    """The answer's question and response; fields whose NUL or lone surrogates became U+FFFD
    (a Phoenix server's spans are not read through records.py) are added to `repaired`."""
    repaired = [] if repaired is None else repaired
    where = answer.root.where if isinstance(answer.root.where, str) else f"span {answer.root.span_id}"
    if answer.question_id is not None:
        # the id rule (evalcore.schemas.ids) and storable text, before the lookup (a dataset's ids are both)
        qid = storable_text(canonical_id(answer.question_id))[0]
        if known and qid not in known:
            raise InputError(file, f"question id {qid!r} is not in the dataset", record=where, field=id_from)
    else:
        qid = by_text.get(canonical_id(answer.question)) or text_question_id(answer.question)
    if not qid:
        raise InputError(file, "the question id is empty", record=where, field=id_from)
    question = known.get(qid)
    if question is None:
        q_record, changed = make_storable({"id": qid, "question": answer.question})
        repaired.extend(changed)
        try:
            question = EvalQuestion.model_validate(q_record)
        except ValidationError as exc:
            raise from_validation(file, where, exc) from exc
    raw: dict[str, Any] = {RAW_KEY: {"trace_id": answer.trace_id, "span_id": answer.root.span_id,
                                      **({"project": project} if project else {})}}
    record: dict[str, Any] = {"question_id": qid, "method": answer.method, "answer": answer.answer,
                              "retrieved": answer.retrieved, "latency_ms": answer.latency_ms,
                              "token_usage": answer.token_usage, "error": answer.error, "raw": raw}
    record, changed = make_storable(record)
    repaired.extend(changed)
    try:
        response = EvalResponse.model_validate(record)
    except ValidationError as exc:
        raise from_validation(file, where, exc) from exc
    return question, response


def import_traces(store: RunStore, spans: Iterable[Span], source: str, name: str, method: str,
                  project: str | None = None, method_from: str | None = None, id_from: str | None = None,
                  dataset: str | Path | None = None,
                  source_info: dict[str, Any] | None = None) -> TraceImportResult:
    """Validate every trace, then publish one run of their answers; or raise and change nothing.

    `source` names the file or server in messages; `method` is the method of traces that
    `method_from` does not name; `dataset` (joined on `id_from` or the question text) gives
    the ground truths.
    """
    known: dict[str, EvalQuestion] = {}
    dataset_info: dict[str, Any] = {"name": name, "source": "OpenInference traces"}
    if dataset is not None:
        ds = load_questions(dataset)
        known = {q.id: q for q in ds}
        dataset_info = {"name": storable_path(Path(dataset).stem), "path": storable_path(dataset),
                        "fingerprint": file_fingerprint(dataset), "n_questions": len(ds)}
    by_text = {canonical_id(q.question): q.id for q in known.values()}
    questions: dict[str, EvalQuestion] = {}
    responses: list[EvalResponse] = []
    keys: dict[tuple[str, str], str] = {}
    matched = nested = nested_documents = 0
    repaired: list[str] = []
    traces = assemble_traces(spans, source)
    for answer in answers_from_traces(traces, source, method, method_from, id_from):
        nested += answer.nested_llm_spans
        nested_documents += answer.nested_retriever_documents
        question, response = _pair(answer, source, known, by_text, project, id_from, repaired)
        key = (response.method, response.question_id)
        if key in keys:
            raise InputError(source, f"a second answer for question {key[1]!r} and method {key[0]!r} "
                             f"(also in trace {keys[key]}); name the method per trace with --method-from",
                             record=f"span {answer.root.span_id}", field="input.value")
        keys[key] = answer.trace_id
        matched += question.id in known
        questions[question.id] = question
        responses.append(response)
    manifest = RunManifest(
        format_version=FORMAT_VERSION, run_id=new_run_id(name), name=name, kind="import",
        status="complete", evalcore_version=__version__, methods=sorted({r.method for r in responses}),
        dataset=dataset_info,
        source={"kind": "openinference", **(source_info or {}),
                **({"method_from": method_from} if method_from else {}),
                **({"id_from": id_from} if id_from else {}),
                **({"spans_left_out": traces.left_out()} if traces.left_out() else {}),
                **({"llm_spans_nested": nested} if nested else {}),
                **({"retriever_documents_nested": nested_documents} if nested_documents else {}),
                **({"text_repairs": {"fields_replaced": len(repaired), "characters": WHAT}} if repaired else {})},
        counts={"questions": len(questions), "responses": len(responses),
                "errors": sum(bool(r.error) for r in responses)})
    manifest.finished_at = manifest.created_at
    with store.staged_run(manifest) as writer:
        writer.write_questions(list(questions.values()))
        writer.write_responses(responses)
        writer.write_manifest(manifest)
    notes = [f"read {len(responses)} traces from {source}", *(f"warning: {w}" for w in traces.warnings())]
    if nested:
        notes.append(f"{nested} LLM span(s) wrap an LLM span reporting the same tokens or cost (stacked "
                     "instrumentors): each call counted once, from the innermost span")
    if nested_documents:
        notes.append(f"left out {nested_documents} document(s) of retriever spans inside another retriever span "
                     "(a framework's retriever repeating its vector store's, or the steps of a reranking or "
                     "fusing retriever): each retrieval taken once, its outermost span's ranking")
    if repaired:
        notes.append(f"replaced {WHAT} (characters that cannot be stored or exported) with U+FFFD in "
                     f"{len(repaired)} field(s)")
    if dataset is not None:
        notes.append(f"{matched} of {len(responses)} traces matched a question of the dataset "
                     f"(on {'attribute ' + id_from if id_from else 'the question text'})")
    return TraceImportResult(manifest.run_id, len(responses), len(questions), manifest.methods, notes)
