"""The Korean evaluation plan's `eval_questions.yaml` (seed 001): categories -> questions.

Two layouts are read, because the plan names the file but not its exact shape:

    single_hop:                 categories:
      - id: SH-01                 single_hop:
        query: ...                  difficulty: easy        # optional category default
        expected_keywords: [...]    questions:
                                      - id: SH-01 ...

A category value may be a list of questions or a mapping with `questions:`; other top-level
scalars (`version:`, `description:`) are ignored. Per question: `question` or `query`,
`expected_keywords`, `expected_answer` (-> ground_truth), `check` (negative check type ->
negative_check), `hops` / `aggregation_type` / `inference_type` (-> metadata), optional
`difficulty` and `answerable`. Any field of our native format (tags, gold_chunk_ids, checks...)
passes through; anything else lands in metadata, exactly as the native loader does.

Answerability of `negative` questions follows what the check expects of a good system:
- should_not_hallucinate, should_not_fabricate_data: the fact is absent from the corpus, the
  right reply is "not found" -> answerable=False (scored by the abstention metrics).
- should_correct_premise, should_provide_accurate_disclaimer: the corpus does answer, only the
  question's framing is wrong (a false premise, "is the principal guaranteed?"); the right
  reply is a correcting answer, not an abstention -> answerable=True. Counting them as
  unanswerable would mark every correct correction as a hallucination.
A check on a question outside `negative` sets answerability the same way; a `negative`
question without a check is unanswerable. An explicit `answerable:` always wins.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalcore.datasets.native import OnDuplicate, check_unique, question_from_record
from evalcore.datasets.records import read_yaml
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

CATEGORIES = ("single_hop", "multi_hop_2", "multi_hop_3", "aggregation", "inference", "negative")

# The plan's table: difficulty per category. aggregation is "medium/hard" and negative
# "easy/medium" there; the lower one is the default, a question may state its own.
CATEGORY_DIFFICULTY = {
    "single_hop": "easy",
    "multi_hop_2": "medium",
    "multi_hop_3": "hard",
    "aggregation": "medium",
    "inference": "hard",
    "negative": "easy",
}

# check type -> answerable (see the module docstring for why).
NEGATIVE_CHECKS = {
    "should_not_hallucinate": False,
    "should_not_fabricate_data": False,
    "should_correct_premise": True,
    "should_provide_accurate_disclaimer": True,
}

# Plan fields with no EvalQuestion field of their own: kept in metadata under the same name.
PLAN_METADATA = ("hops", "aggregation_type", "inference_type")

_TOP_LEVEL_KEY = re.compile(r"^(categories|" + "|".join(CATEGORIES) + r")\s*:", re.MULTILINE)


def looks_like_plan(head: str) -> bool:
    """True when a YAML head has a top-level `categories:` or one of the six category keys."""
    return bool(_TOP_LEVEL_KEY.search(head))


def _category_items(doc: Any, file: str) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """(category, question list, category defaults) in file order."""
    if not isinstance(doc, dict):
        raise InputError(file, "expected a mapping of categories to question lists")
    if "categories" in doc:
        doc = doc["categories"]
        if not isinstance(doc, dict):
            raise InputError(file, "expected a mapping of category names", field="categories")
    out = []
    for name, value in doc.items():
        if isinstance(value, list):
            out.append((str(name), value, {}))
        elif isinstance(value, dict) and "questions" in value:
            questions = value["questions"]
            if not isinstance(questions, list):
                raise InputError(file, "expected a list of questions", field=f"{name}.questions")
            defaults = {k: v for k, v in value.items() if k != "questions"}
            out.append((str(name), questions, defaults))
        elif str(name) in CATEGORIES:
            raise InputError(file, "expected a list of questions (or a mapping with 'questions:')",
                             field=str(name))
        # other top-level scalars / mappings (version, description, ...) carry no questions
    if not out:
        raise InputError(file, "no categories with questions found (expected e.g. 'single_hop:' "
                         "or 'categories:')")
    return out


def record_label(category: str, position: int) -> str:
    """How errors name a plan question: its category and 1-based place in it."""
    return f"{category} #{position}"


def _check_mapping(check: dict[str, Any], file: str, record: str) -> tuple[Any, Any]:
    """`check: {type: should_correct_premise, correcting_term: 미래에셋}` -> (type, term): the
    check may carry its own correcting term (negative_detection reads metadata.correcting_term)."""
    unknown = sorted(set(check) - {"type", "correcting_term"})
    if unknown or "type" not in check:
        raise InputError(file, "a check mapping has 'type' and optionally 'correcting_term'"
                         + (f", not {', '.join(map(repr, unknown))}" if unknown else ""),
                         record=record, field="check")
    return check["type"], check.get("correcting_term")


def plan_question(item: Any, category: str, position: int, file: str,
                  defaults: dict[str, Any] | None = None) -> EvalQuestion:
    """Map one plan question (the `position`-th, 1-based, of `category`) to an EvalQuestion."""
    record = record_label(category, position)
    if not isinstance(item, dict):
        raise InputError(file, f"expected a mapping, got {type(item).__name__}", record=record)
    item = dict(item)
    if "question" in item and "query" in item:
        raise InputError(file, "give 'question' or 'query', not both", record=record, field="query")
    text = item.pop("question", item.pop("query", None))
    if text is None:
        raise InputError(file, "missing question text ('question' or 'query')", record=record,
                         field="question")
    if not isinstance(text, str):
        raise InputError(file, f"expected text, got {type(text).__name__}", record=record, field="question")
    qid = item.pop("id", None)
    data: dict[str, Any] = {"id": qid if qid is not None else f"{category}-{position:02d}",
                            "question": text, "category": category}
    if "expected_answer" in item:
        if "ground_truth" in item:
            raise InputError(file, "give 'expected_answer' or 'ground_truth', not both",
                             record=record, field="expected_answer")
        data["ground_truth"] = item.pop("expected_answer")
        if data["ground_truth"] is not None and not isinstance(data["ground_truth"], str):
            raise InputError(file, f"expected text, got {type(data['ground_truth']).__name__}",
                             record=record, field="expected_answer")
    keywords = item.pop("expected_keywords", None)
    if keywords is not None:
        if isinstance(keywords, (str, int, float)):
            keywords = [keywords]
        if not isinstance(keywords, list) or not all(isinstance(k, (str, int, float)) for k in keywords):
            raise InputError(file, "expected a list of keywords", record=record, field="expected_keywords")
        data["expected_keywords"] = [str(k) for k in keywords]
    check = item.pop("check", None)
    term = None
    if isinstance(check, dict):
        check, term = _check_mapping(check, file, record)
    if check is not None:
        if "negative_check" in item:
            raise InputError(file, "give 'check' or 'negative_check', not both", record=record, field="check")
        data["negative_check"] = check
    check = data.get("negative_check", item.get("negative_check"))
    if check is not None and (not isinstance(check, str) or check not in NEGATIVE_CHECKS):
        raise InputError(file, f"unknown check type {check!r}; known: {', '.join(NEGATIVE_CHECKS)}",
                         record=record, field="check")
    given = item.pop("metadata", None)
    if given is not None and not isinstance(given, dict):
        raise InputError(file, f"expected a mapping, got {type(given).__name__}", record=record, field="metadata")
    metadata = dict(given or {})
    for key in PLAN_METADATA:
        if key in item:
            metadata[key] = item.pop(key)
    if term is not None:
        metadata["correcting_term"] = term
    defaults = defaults or {}
    data["difficulty"] = item.pop("difficulty", defaults.get("difficulty", CATEGORY_DIFFICULTY.get(category)))
    if "answerable" not in item:
        if check is not None:  # the check type decides, in whichever category it appears
            data["answerable"] = NEGATIVE_CHECKS[check]
        elif category == "negative":
            data["answerable"] = False
    data.update(item)  # native fields pass through; unknown ones go to metadata in the validator
    data["metadata"] = metadata
    return question_from_record(data, file, record)  # type: ignore[arg-type]  # record may be text


def questions_from_plan(doc: Any, file: str, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """All questions of a parsed plan document, categories flattened in file order.

    Repeated ids are reported with the plan's own labels ("inference #1"), like other errors.
    """
    questions: list[EvalQuestion] = []
    labels: list[str] = []
    for category, items, defaults in _category_items(doc, file):
        for position, item in enumerate(items, start=1):
            questions.append(plan_question(item, category, position, file, defaults))
            labels.append(record_label(category, position))
    return check_unique(questions, file, on_duplicate, records=labels)


def load_korean_plan(path: str | Path, on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """Load an `eval_questions.yaml` in the Korean plan's layout."""
    path = Path(path)
    return questions_from_plan(read_yaml(path), str(path), on_duplicate)
