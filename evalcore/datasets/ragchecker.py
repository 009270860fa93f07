"""RAGChecker input files: {"results": [{query_id, query, gt_answer, response, retrieved_context}]}.

Such a file mixes a question set with one system's recorded output. As a question set
(`load_ragchecker`): query_id -> id, query -> question, gt_answer -> ground_truth. The
`response` and `retrieved_context` describe what a RAG system answered and retrieved, not
gold support, so they go to metadata["recorded_response"] / metadata["recorded_context"]
and never to gold_passages.

To score that recorded output, `ragchecker_records` turns the file into records for
`evalcore import` (question_id, question, ground_truth, answer, retrieved [{chunk_id, text}]).
Importing the raw file directly would also work for question/answer, but the importer would
not recognise `retrieved_context` as the response's contexts (it would end up in question
metadata), hence this mapping: write its records to a JSONL file and import that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

KNOWN = {"query_id", "query", "gt_answer", "response", "retrieved_context"}


def _checked(rec: dict[str, Any], file: str, record: int) -> list[dict[str, Any]]:
    """Validate the record's own fields; return its retrieved contexts as {doc_id, text} dicts."""
    if rec.get("query_id") is None:
        raise InputError(file, "missing field", record=record, field="query_id")
    if isinstance(rec["query_id"], bool) or not isinstance(rec["query_id"], (str, int)):
        raise InputError(file, "expected text or an integer", record=record, field="query_id")
    if rec.get("query") is None:
        raise InputError(file, "missing field", record=record, field="query")
    for key in ("query", "gt_answer", "response"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise InputError(file, f"expected text, got {type(rec[key]).__name__}", record=record, field=key)
    contexts = rec.get("retrieved_context") or []
    if not isinstance(contexts, list):
        raise InputError(file, "expected a list", record=record, field="retrieved_context")
    for i, ctx in enumerate(contexts):
        if not isinstance(ctx, dict) or not isinstance(ctx.get("text"), str):
            raise InputError(file, "expected an object with a 'text' string", record=record,
                             field=f"retrieved_context.{i}")
    return contexts


def ragchecker_question(rec: dict[str, Any], file: str, record: int) -> EvalQuestion:
    """One RAGChecker record -> EvalQuestion (recorded output kept in metadata only)."""
    contexts = _checked(rec, file, record)
    metadata: dict[str, Any] = {k: v for k, v in rec.items() if k not in KNOWN}
    if rec.get("response") is not None:
        metadata["recorded_response"] = rec["response"]
    if contexts:
        metadata["recorded_context"] = contexts
    data = {"id": rec["query_id"], "question": rec["query"], "ground_truth": rec.get("gt_answer"),
            "metadata": metadata}
    return question_from_record(data, file, record)


def load_ragchecker(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """The question set of a RAGChecker checking_inputs-style file."""
    path = Path(path)
    file = str(path)
    labelled = [(recno, ragchecker_question(rec, file, recno)) for recno, rec in read_records(path)]  # one record held at a time
    return check_unique([q for _, q in labelled], file, on_duplicate, records=[recno for recno, _ in labelled])


def ragchecker_records(path: str | Path, method: str | None = None) -> list[dict[str, Any]]:
    """Importer records (one per query) from a RAGChecker file; see the module docstring.

    doc_id becomes the retrieved chunk's chunk_id; a record without a response is skipped
    (there is nothing to score). `method` names the system when the caller knows it.
    """
    path = Path(path)
    file = str(path)
    out = []
    for recno, rec in read_records(path):
        contexts = _checked(rec, file, recno)
        if rec.get("response") is None:
            continue
        item: dict[str, Any] = {
            "question_id": str(rec["query_id"]),
            "question": rec["query"],
            "answer": rec["response"],
            "retrieved": [{"text": c["text"], **({"chunk_id": str(c["doc_id"])} if c.get("doc_id") is not None else {})}
                          for c in contexts],
        }
        if rec.get("gt_answer") is not None:
            item["ground_truth"] = rec["gt_answer"]
        if method:
            item["method"] = method
        out.append(item)
    if not out:
        raise InputError(file, "no records with a response found")
    return out
