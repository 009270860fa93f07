"""Public question sets fetched by name through the Hugging Face `datasets` library.

Optional: needs `pip install evalcore[datasets]` and network. Without either, loading raises
EvalcoreError with a one-line reason (the CLI prints it without a traceback).

Each set has one mapping function from a Hugging Face row to EvalQuestion(s). squad_v2 and
hotpotqa reuse the very functions the file loaders use (`squad_question`, `hotpot_question`), so
one tested mapping serves both sources. The others exist only on the Hub:
- ragbench (rungalileo/ragbench, one config per source corpus): `documents` are the contexts
  given to the generator; those holding a sentence listed in `all_relevant_sentence_keys`
  (keys like "0a", "1c": leading digits = document index) are the gold passages (all
  documents when none is marked). `response` is a generated answer that annotators judged,
  not a human reference: it becomes ground_truth only when `adherence_score` is true, and it
  is kept in metadata either way with the annotation scores.
- msmarco (microsoft/ms_marco v2.1): passages with is_selected=1 are gold; an answer list of
  only "No Answer Present." means unanswerable; wellFormedAnswers join the answers.
- qasper (allenai/qasper): one row per paper, many questions; each annotator's answer
  (free-form, extractive spans joined, or yes/no) becomes a gold answer; evidence paragraphs
  become gold passages with their section name; unanswerable when every annotator says so.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Callable, Iterable

from evalcore.datasets.hotpotqa import hotpot_question
from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.squad_v2 import squad_question
from evalcore.errors import EvalcoreError, InputError
from evalcore.schemas import EvalQuestion

# name -> (Hub repository, config, default split)
HUB = {
    "squad_v2": ("rajpurkar/squad_v2", None, "validation"),
    "hotpotqa": ("hotpotqa/hotpot_qa", "distractor", "validation"),
    "ragbench": ("rungalileo/ragbench", "covidqa", "test"),
    "msmarco": ("microsoft/ms_marco", "v2.1", "validation"),
    "qasper": ("allenai/qasper", None, "validation"),
}
NO_ANSWER = "No Answer Present."
_KEY_DOC = re.compile(r"^(\d+)")


def fetch_rows(name: str, split: str | None = None, limit: int | None = None,
               subset: str | None = None) -> Iterable[dict[str, Any]]:
    """Rows of a Hub dataset; any failure becomes an EvalcoreError naming the cause."""
    repo, config, default_split = HUB[name]
    try:
        import datasets  # noqa: F401  (optional dependency)
    except ImportError:
        raise EvalcoreError(f"public set {name!r} needs the Hugging Face `datasets` library: "
                            "pip install 'evalcore[datasets]'") from None
    split = split or default_split
    try:
        if limit is not None:  # stream so a sample does not download the whole split
            stream = datasets.load_dataset(repo, subset or config, split=split, streaming=True)
            return list(itertools.islice(stream, limit))
        return datasets.load_dataset(repo, subset or config, split=split)
    except Exception as exc:  # network, missing config, Hub changes: all reported the same way
        reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
        raise EvalcoreError(f"could not load public set {name!r} ({repo}, config {subset or config}, "
                            f"split {split}) - offline, or the Hub refused it: {reason}") from None


def ragbench_question(row: dict[str, Any], source: str, record: int | str) -> EvalQuestion:
    """One RAGBench row -> EvalQuestion (see the module docstring)."""
    documents = row.get("documents") or []
    if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        raise InputError(source, "expected a list of document texts", record=record, field="documents")
    relevant = {int(m.group(1)) for key in row.get("all_relevant_sentence_keys") or []
                if (m := _KEY_DOC.match(str(key)))}
    chosen = [i for i in range(len(documents)) if i in relevant] or list(range(len(documents)))
    qid = row.get("id")
    if qid is None:
        raise InputError(source, "missing field", record=record, field="id")
    qid = str(qid)
    supported = row.get("adherence_score")
    metadata = {k: row.get(k) for k in ("dataset_name", "generation_model_name", "adherence_score",
                                         "relevance_score", "utilization_score", "response")
                if row.get(k) is not None}
    metadata["documents"] = [{"chunk_id": f"{qid}#doc{i}", "text": d} for i, d in enumerate(documents)]
    data = {"id": qid, "question": row.get("question"), "category": row.get("dataset_name"),
            "ground_truth": row.get("response") if supported is True else None,
            "gold_passages": [{"chunk_id": f"{qid}#doc{i}", "text": documents[i]} for i in chosen],
            "metadata": metadata}
    return question_from_record(data, source, record)  # type: ignore[arg-type]


def msmarco_question(row: dict[str, Any], source: str, record: int | str) -> EvalQuestion:
    """One MS MARCO (v2.1) row -> EvalQuestion."""
    passages = row.get("passages") or {}
    texts = passages.get("passage_text") or []
    selected = passages.get("is_selected") or []
    urls = passages.get("url") or []
    if len(selected) != len(texts):
        raise InputError(source, "is_selected and passage_text differ in length", record=record,
                         field="passages")
    if row.get("query_id") is None:
        raise InputError(source, "missing field", record=record, field="query_id")
    qid = str(row["query_id"])
    answers = [a for a in list(row.get("wellFormedAnswers") or []) + list(row.get("answers") or [])
               if isinstance(a, str) and a.strip() and a.strip() != NO_ANSWER]
    gold = [{"chunk_id": f"{qid}#p{i}", "text": t, **({"rel_path": urls[i]} if i < len(urls) else {})}
            for i, (t, s) in enumerate(zip(texts, selected)) if s]
    data = {"id": qid, "question": row.get("query"), "question_type": row.get("query_type"),
            "answers": list(dict.fromkeys(answers)), "answerable": bool(answers),
            "gold_passages": gold,
            "metadata": {"passages": [{"chunk_id": f"{qid}#p{i}", "text": t} for i, t in enumerate(texts)]}}
    return question_from_record(data, source, record)  # type: ignore[arg-type]


def _qasper_answer(answer: dict[str, Any]) -> str | None:
    if answer.get("unanswerable"):
        return None
    if (answer.get("free_form_answer") or "").strip():
        return answer["free_form_answer"].strip()
    spans = [s for s in answer.get("extractive_spans") or [] if s.strip()]
    if spans:
        return ", ".join(spans)
    if answer.get("yes_no") is not None:
        return "Yes" if answer["yes_no"] else "No"
    return None


def qasper_questions(row: dict[str, Any], source: str, record: int | str) -> list[EvalQuestion]:
    """One QASPER paper row -> its questions."""
    full_text = row.get("full_text") or {}
    section_of = {}
    for name, paragraphs in zip(full_text.get("section_name") or [], full_text.get("paragraphs") or []):
        for paragraph in paragraphs or []:
            section_of.setdefault(paragraph, name)
    qas = row.get("qas") or {}
    per_question = qas.get("answers") or []
    out = []
    for i, (text, qid) in enumerate(zip(qas.get("question") or [], qas.get("question_id") or [])):
        annotations = (per_question[i] if i < len(per_question) else {}).get("answer") or []
        answers, evidence, unanswerable = [], [], []
        for ann in annotations:
            unanswerable.append(bool(ann.get("unanswerable")))
            if (value := _qasper_answer(ann)) is not None:
                answers.append(value)
            evidence.extend(e for e in ann.get("evidence") or [] if e.strip())
        gold = [{"text": e, **({"section": section_of[e]} if section_of.get(e) else {})}
                for e in dict.fromkeys(evidence) if not e.startswith("FLOAT SELECTED")]
        data = {"id": qid, "question": text, "category": row.get("title"),
                "answers": list(dict.fromkeys(answers)),
                "answerable": not (unanswerable and all(unanswerable)),
                "gold_passages": gold, "metadata": {"paper_id": row.get("id"), "title": row.get("title")}}
        out.append(question_from_record(data, source, f"{record} question {i + 1}"))  # type: ignore[arg-type]
    return out


def _single(mapper: Callable[[dict[str, Any], str, int | str], EvalQuestion]):
    return lambda row, source, record: [mapper(row, source, record)]


MAPPERS: dict[str, Callable[[dict[str, Any], str, int | str], list[EvalQuestion]]] = {
    "squad_v2": _single(squad_question),
    "hotpotqa": _single(hotpot_question),
    "ragbench": _single(ragbench_question),
    "msmarco": _single(msmarco_question),
    "qasper": qasper_questions,
}


def questions_from_rows(name: str, rows: Iterable[dict[str, Any]],
                        on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Map Hub rows of set `name` to questions (duplicate ids handled as for files)."""
    source = f"hf:{HUB[name][0]}"
    mapper = MAPPERS[name]
    out: list[EvalQuestion] = []
    for i, row in enumerate(rows, start=1):
        out.extend(mapper(dict(row), source, i))
    return check_unique(out, source, on_duplicate)


def load_public(name: str, split: str | None = None, limit: int | None = None,
                subset: str | None = None, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Fetch and map public set `name`; `limit` caps the rows read (qasper: papers)."""
    if name not in HUB:
        raise EvalcoreError(f"unknown public set {name!r}; known: {', '.join(HUB)}")
    return questions_from_rows(name, fetch_rows(name, split, limit, subset), on_duplicate)


def loader(name: str) -> Callable[..., list[EvalQuestion]]:
    """A `load(split=None, limit=None, subset=None, on_duplicate="error")` function for the registry."""
    def load(split: str | None = None, limit: int | None = None, subset: str | None = None,
             on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
        return load_public(name, split, limit, subset, on_duplicate)
    load.__name__ = f"load_{name}"
    return load
