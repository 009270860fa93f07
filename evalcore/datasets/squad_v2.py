"""SQuAD 2.0: extractive questions, about a third of them unanswerable from their paragraph.

The official file nests articles -> paragraphs -> qas; `squad_rows` flattens it into rows
shaped like the Hugging Face `rajpurkar/squad_v2` rows (id, title, context, question,
answers), so the file loader and the public loader share `squad_question`. The flat row may
carry `answers` as a list of {text, answer_start} (file) or {text: [...], answer_start: [...]}
(HF), plus the file's `is_impossible` and `plausible_answers`. HF rows have no
`is_impossible`: there, no answer means unanswerable, the SQuAD 2.0 definition.

Mapping: every distinct gold answer text in order -> answers (ground_truth = the first);
is_impossible -> answerable=False; plausible_answers -> metadata; title -> category. An
answerable question gets its paragraph as the gold passage, with chunk_id
"<title>#<first 10 hex of sha1(context)>", an id derived from the text alone so a retriever
indexing the same paragraphs (from either source) produces the same ids. Unanswerable
questions have no gold passage; their paragraph id and text stay in metadata.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

KNOWN = {"id", "title", "context", "question", "answers", "is_impossible", "plausible_answers"}


def paragraph_id(title: str, context: str) -> str:
    """Stable id of a paragraph: its article title plus a hash of its text."""
    return f"{title}#{hashlib.sha1(context.encode('utf-8')).hexdigest()[:10]}"


def _answer_texts(value: Any, file: str, record: int | str, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):  # HF shape: {"text": [...], "answer_start": [...]}
        texts = value.get("text", [])
    elif isinstance(value, list):
        texts = [a.get("text") if isinstance(a, dict) else None for a in value]
    else:
        raise InputError(file, f"expected a list of answers, got {type(value).__name__}",
                         record=record, field=field)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InputError(file, "expected answers with a 'text' string", record=record, field=field)
    return list(dict.fromkeys(t for t in texts if t.strip()))


def squad_question(row: dict[str, Any], file: str, record: int | str) -> EvalQuestion:
    """One flat SQuAD row (file or Hugging Face shape) -> EvalQuestion."""
    for key in ("id", "question", "context"):
        if row.get(key) is None:
            raise InputError(file, "missing field", record=record, field=key)
        if not isinstance(row[key], str):
            raise InputError(file, f"expected text, got {type(row[key]).__name__}", record=record, field=key)
    title = row.get("title") or ""
    if not isinstance(title, str):
        raise InputError(file, f"expected text, got {type(title).__name__}", record=record, field="title")
    answers = _answer_texts(row.get("answers"), file, record, "answers")
    impossible = row.get("is_impossible")
    if impossible is None:
        impossible = not answers
    elif not isinstance(impossible, bool):
        raise InputError(file, f"expected true/false, got {impossible!r}", record=record, field="is_impossible")
    if not impossible and not answers:
        raise InputError(file, "an answerable question needs at least one answer", record=record,
                         field="answers")
    context = row["context"]
    pid = paragraph_id(title, context)
    metadata: dict[str, Any] = {"paragraph_id": pid}
    plausible = _answer_texts(row.get("plausible_answers"), file, record, "plausible_answers")
    if plausible:
        metadata["plausible_answers"] = plausible
    if impossible:
        metadata["context"] = context
    metadata.update({k: v for k, v in row.items() if k not in KNOWN})
    data: dict[str, Any] = {
        "id": row["id"],
        "question": row["question"],
        "category": title or None,
        "answerable": not impossible,
        "metadata": metadata,
    }
    if not impossible:
        data["ground_truth"] = answers[0]
        data["answers"] = answers
        data["gold_passages"] = [{"chunk_id": pid, "text": context}]
    return question_from_record(data, file, record)  # type: ignore[arg-type]


def squad_rows(articles: Iterator[tuple[int, dict[str, Any]]], file: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Flatten (article number, article) into (record label, flat row)."""
    for a, article in articles:
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list):
            raise InputError(file, "expected a list", record=f"article {a}", field="paragraphs")
        for p, paragraph in enumerate(paragraphs, start=1):
            where = f"article {a} paragraph {p}"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("qas"), list):
                raise InputError(file, "expected a paragraph with a 'qas' list", record=where, field="qas")
            for q, qa in enumerate(paragraph["qas"], start=1):
                if not isinstance(qa, dict):
                    raise InputError(file, f"expected an object, got {type(qa).__name__}",
                                     record=f"{where} question {q}")
                yield f"{where} question {q}", {"title": article.get("title"),
                                                "context": paragraph.get("context"), **qa}


def load_squad_v2(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Load an official SQuAD (2.0 or 1.1) JSON file: {"version", "data": [articles]}.

    Duplicate ids are reported by position label ("article 1 paragraph 3 question 2").
    """
    path = Path(path)
    file = str(path)
    labelled = [(where, squad_question(row, file, where)) for where, row in squad_rows(read_records(path), file)]
    return check_unique([q for _, q in labelled], file, on_duplicate, records=[where for where, _ in labelled])
