"""The judge tasks: which prompt each uses and how its inputs become a prompt.

A task is the unit both judge kinds implement: an LLM judge renders the task's prompt and
parses the reply; the heuristic judge computes the same output shape without a model. Metrics
ask for tasks, never for prompts, so switching judges never changes metric code.
"""

from __future__ import annotations

from typing import Any

from evalcore.judges.prompts import RenderedPrompt, render

# task -> prompt version in use. Bump here (and add the new file) when a prompt changes.
PROMPT_VERSIONS: dict[str, str] = {
    "decompose": "1",
    "support": "1",
    "context_relevance": "1",
    "question_generation": "1",
    "answer_relevance_direct": "1",
    "factual_accuracy": "1",
    "answer_class": "1",
    "abstention": "1",
    "groundedness": "1",
    "correctness": "1",
    "answer_correctness": "1",
    "plan_scores": "1",
}
REPAIR_VERSION = "1"
ABSENT = "(absent)"


def build_prompt(task: str, inputs: dict[str, Any], version: str | None = None) -> RenderedPrompt:
    """Untrusted strings/lists are fenced; `n_*` counts are ours and written as-is;
    a missing optional text becomes the plain word (absent), outside any fence."""
    data: dict[str, Any] = {}
    plain: dict[str, str] = {}
    for key, value in inputs.items():
        if key.startswith("n_"):
            plain[key] = str(int(value))
        elif value is None or (isinstance(value, str) and not value.strip()):
            plain[key] = ABSENT
        else:
            data[key] = value
    return render(task, data, version or PROMPT_VERSIONS[task], plain)


def inputs_for(task: str, **kw: Any) -> dict[str, Any]:
    """Inputs dict with the derived counts the prompts quote."""
    out = dict(kw)
    if task == "support":
        out["n_claims"] = len(kw["claims"])
        out["n_statements"] = len(kw["statements"])
    elif task == "context_relevance":
        out["n_contexts"] = len(kw["contexts"])
    return out
