"""Descriptive statistics of a question set: what a user checks before spending judge money."""

from __future__ import annotations

from collections import Counter
from typing import Any

from evalcore.schemas import EvalQuestion


def dataset_stats(questions: list[EvalQuestion]) -> dict[str, Any]:
    n = len(questions)

    def share(count: int) -> float:
        return round(count / n, 4) if n else 0.0

    gold_counts = [len(q.gold_passages) for q in questions]
    return {
        "n_questions": n,
        "answerable": sum(q.answerable for q in questions),
        "unanswerable": sum(not q.answerable for q in questions),
        "with_ground_truth": sum(q.ground_truth is not None for q in questions),
        "with_several_answers": sum(len(q.answers) > 1 for q in questions),
        "with_gold_passages": sum(bool(q.gold_passages) for q in questions),
        "gold_passages_per_question": round(sum(gold_counts) / n, 3) if n else 0.0,
        "with_support_groups": sum(bool(q.required_support_groups) for q in questions),
        "with_expected_keywords": sum(bool(q.expected_keywords) for q in questions),
        "with_checks": sum(bool(q.checks) for q in questions),
        "share_with_ground_truth": share(sum(q.ground_truth is not None for q in questions)),
        "by_category": dict(Counter(q.category or "(none)" for q in questions).most_common()),
        "by_question_type": dict(Counter(q.question_type or "(none)" for q in questions).most_common()),
        "by_difficulty": dict(Counter(q.difficulty or "(none)" for q in questions).most_common()),
        "question_words_mean": round(sum(len(q.question.split()) for q in questions) / n, 2) if n else 0.0,
    }
