"""GraphRAG-Bench question files ("When to use Graphs in RAG", arXiv 2506.05690).

A record: id, source (the corpus document, e.g. "Novel-44557"), question, answer,
question_type (Fact Retrieval / Complex Reasoning / Contextual Summarize / Creative
Generation), evidence (gold sentences joined by ';'), evidence_triple (KG triples, one string).
Read from the JSON list the benchmark ships, or its Parquet twin (same columns).

Mapping: answer -> ground_truth; question_type as is; source -> category (so results break
down per novel) and metadata["corpus_name"]; each evidence sentence -> one GoldPassage with
`text` only. The sentences are paraphrases written by the benchmark's generator, not quotes
(on the Cornwall subset 1 of 234 occurs verbatim in the novel), so they must not be used as
`snippet`s for containment matching; they serve judged context recall and the UI.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

REQUIRED = ("id", "question", "answer")
TEXT_FIELDS = ("id", "source", "question", "answer", "question_type", "evidence", "evidence_triple")

# Evidence sentences are joined as "First.; Second." Split only after sentence-final
# punctuation so a ';' inside a sentence stays put.
_EVIDENCE_SPLIT = re.compile(r"(?<=[.!?\"'’”)])\s*;\s*")


def split_evidence(evidence: str) -> list[str]:
    """The individual gold sentences of an `evidence` string (empty parts dropped)."""
    return [part.strip() for part in _EVIDENCE_SPLIT.split(evidence) if part.strip()]


def graphrag_question(rec: dict[str, Any], file: str, record: int | str) -> EvalQuestion:
    """One GraphRAG-Bench record -> EvalQuestion (shared by the JSON and Parquet readers)."""
    for key in REQUIRED:
        if rec.get(key) is None:
            raise InputError(file, "missing field", record=record, field=key)
    for key in TEXT_FIELDS:
        value = rec.get(key)
        if value is not None and not isinstance(value, str) and not (key == "id" and isinstance(value, int)):
            raise InputError(file, f"expected text, got {type(value).__name__}", record=record, field=key)
    evidence = rec.get("evidence") or ""
    metadata: dict[str, Any] = {"corpus_name": rec.get("source")}
    if rec.get("evidence_triple"):
        metadata["evidence_triple"] = rec["evidence_triple"]
    extra = {k: v for k, v in rec.items() if k not in TEXT_FIELDS}
    metadata.update(extra)
    data = {
        "id": rec["id"],
        "question": rec["question"],
        "ground_truth": rec["answer"],
        "question_type": rec.get("question_type"),
        "category": rec.get("source"),
        "gold_passages": [{"text": sentence} for sentence in split_evidence(evidence)],
        "metadata": metadata,
    }
    return question_from_record(data, file, record)  # type: ignore[arg-type]


def load_graphrag_bench(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Load a GraphRAG-Bench questions file (.json list or .parquet).

    A repeated id is an error by default. The published novel_questions.json has one
    (Novel-55f0c0e2, records 330 and 872; the second copy's answer is another question's
    evidence), so the error points at a real upstream defect. `on_duplicate="keep_first"`
    keeps record 330 and drops 872 with a DuplicateIdsDropped warning (see `check_unique`).
    """
    path = Path(path)
    file = str(path)
    labelled = [(recno, graphrag_question(rec, file, recno)) for recno, rec in read_records(path)]  # one record held at a time
    return check_unique([q for _, q in labelled], file, on_duplicate, records=[recno for recno, _ in labelled])
