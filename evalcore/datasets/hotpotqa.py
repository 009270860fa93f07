"""HotpotQA (distractor setting): multi-hop questions over 10 Wikipedia paragraphs.

Two shapes of the same record exist and both go through `hotpot_question`:
- the official JSON file: `_id`, `supporting_facts` [[title, sent_id], ...],
  `context` [[title, [sentence, ...]], ...];
- the Hugging Face rows (`hotpot_qa`, config `distractor`): `id`,
  `supporting_facts` {title: [...], sent_id: [...]}, `context` {title: [...], sentences: [[...]]}.

Mapping: answer -> ground_truth, type (bridge/comparison) -> question_type, level -> difficulty.
One gold passage per distinct supporting title, in first-mention order: chunk_id = the paragraph
title (titles are the paragraph identity in HotpotQA), text = the supporting sentences, snippet =
the first of them (a verbatim quote, so containment matching works). required_support_groups =
one group per supporting title: recall_all needs every hop. The 10 paragraphs are kept in
metadata["paragraphs"] ({chunk_id, text}) so a demo retriever can index them, and the raw
sentence-level facts in metadata["supporting_facts"] for sentence-level evidence recall.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

KNOWN = {"_id", "id", "question", "answer", "type", "level", "supporting_facts", "context"}


def _pairs(value: Any, keys: tuple[str, str], file: str, record: int | str, field: str) -> list[tuple[Any, Any]]:
    """[[a, b], ...] (file shape) or {keys[0]: [...], keys[1]: [...]} (HF shape) -> pairs."""
    if isinstance(value, dict):
        first, second = value.get(keys[0]), value.get(keys[1])
        if not isinstance(first, list) or not isinstance(second, list) or len(first) != len(second):
            raise InputError(file, f"expected lists '{keys[0]}' and '{keys[1]}' of equal length",
                             record=record, field=field)
        return list(zip(first, second))
    if not isinstance(value, list):
        raise InputError(file, f"expected a list, got {type(value).__name__}", record=record, field=field)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InputError(file, "expected a [title, value] pair", record=record, field=f"{field}.{i}")
        out.append((item[0], item[1]))
    return out


def _paragraphs(row: dict[str, Any], file: str, record: int | str) -> list[tuple[str, list[str]]]:
    paragraphs = []
    for i, (title, sentences) in enumerate(_pairs(row.get("context", []), ("title", "sentences"),
                                                   file, record, "context")):
        if not isinstance(title, str) or not isinstance(sentences, list) \
                or not all(isinstance(s, str) for s in sentences):
            raise InputError(file, "expected a title and a list of sentences", record=record,
                             field=f"context.{i}")
        paragraphs.append((title, sentences))
    return paragraphs


def hotpot_question(row: dict[str, Any], file: str, record: int | str) -> EvalQuestion:
    """One HotpotQA record (file or Hugging Face shape) -> EvalQuestion."""
    qid = row.get("_id", row.get("id"))
    if qid is None:
        raise InputError(file, "missing field", record=record, field="_id")
    for key in ("question", "answer"):
        if row.get(key) is None:
            raise InputError(file, "missing field", record=record, field=key)
        if not isinstance(row[key], str):
            raise InputError(file, f"expected text, got {type(row[key]).__name__}", record=record, field=key)
    paragraphs = _paragraphs(row, file, record)
    by_title = {title: sentences for title, sentences in reversed(paragraphs)}  # first wins
    facts = _pairs(row.get("supporting_facts", []), ("title", "sent_id"), file, record, "supporting_facts")
    support: dict[str, list[str]] = {}
    missing = []
    for i, (title, sent_id) in enumerate(facts):
        if not isinstance(title, str) or isinstance(sent_id, bool) or not isinstance(sent_id, int):
            raise InputError(file, "expected [title, sentence index]", record=record,
                             field=f"supporting_facts.{i}")
        sentences = support.setdefault(title, [])
        if 0 <= sent_id < len(by_title.get(title, [])):
            sentences.append(by_title[title][sent_id].strip())
        else:  # a known HotpotQA quirk: a fact pointing past its paragraph
            missing.append([title, sent_id])
    gold = []
    for title, sentences in support.items():
        passage: dict[str, Any] = {"chunk_id": title}
        if sentences:
            passage["text"] = " ".join(sentences)
            passage["snippet"] = sentences[0]
        gold.append(passage)
    metadata: dict[str, Any] = {
        "paragraphs": [{"chunk_id": title, "text": "".join(sentences).strip()}
                       for title, sentences in paragraphs],
        "supporting_facts": [[t, s] for t, s in facts],
    }
    if missing:
        metadata["missing_supporting_facts"] = missing
    metadata.update({k: v for k, v in row.items() if k not in KNOWN})
    data = {
        "id": qid,
        "question": row["question"],
        "ground_truth": row["answer"],
        "question_type": row.get("type"),
        "difficulty": row.get("level"),
        "gold_passages": gold,
        "required_support_groups": [[title] for title in support],
        "metadata": metadata,
    }
    return question_from_record(data, file, record)  # type: ignore[arg-type]


def load_hotpotqa(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Load a HotpotQA JSON file (a list of records, e.g. hotpot_dev_distractor_v1.json)."""
    path = Path(path)
    file = str(path)
    labelled = [(recno, hotpot_question(rec, file, recno)) for recno, rec in read_records(path)]  # one record held at a time
    return check_unique([q for _, q in labelled], file, on_duplicate, records=[recno for recno, _ in labelled])
