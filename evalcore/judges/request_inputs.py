"""What judge requests are built from: the pieces of a question and an answer that several
tasks quote (the retrieved texts in rank order, every acceptable gold answer, the expected
text). One home, so each task's `TaskDef.inputs` and the ragas-style request builders put
the same strings in front of a judge (and hit the same cache entries)."""

from __future__ import annotations


def contexts_of(r) -> list[str]:
    """The answer's retrieved passages with text, best rank first."""
    return [c.text for c in sorted(r.retrieved, key=lambda c: c.rank) if c.text and c.text.strip()]


def has_truth(q) -> bool:
    return bool((q.ground_truth or "").strip())


def gold_list(q) -> list[str]:
    """Every acceptable gold answer (ground truth first, blanks and repeats dropped), sent as
    the `answers` input: the heuristic judge takes the best match over them, as SQuAD does.
    LLM prompts do not show it (TaskDef.offline_only), so their requests are unchanged."""
    return list(dict.fromkeys(a.strip() for a in [q.ground_truth, *q.answers] if a and a.strip()))


def expected_text(q) -> str:
    """The expected answer and keywords, as the Korean plan's prompt quotes them."""
    parts = []
    if q.ground_truth:
        parts.append(f"Expected answer: {q.ground_truth}")
    if q.expected_keywords:
        parts.append("Keywords: " + ", ".join(q.expected_keywords))
    return "\n".join(parts)
