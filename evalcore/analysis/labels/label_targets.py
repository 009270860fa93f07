"""`evalcore labels targets`: the next answers of a random sample as a template to fill in.

Why: people label in spreadsheets and labelling tools as well as on the Annotate page, and a
label made there feeds estimates only if its answer was drawn the way the page draws. So the
template lists exactly what the page would offer next: the answers of the seed's order that the
sample has not fully labelled yet (label_sampling.next_answers, the function the page calls),
numbered as the page numbers them (answer `position` of N in the order, `item` k of the answer:
"Claim k" / "item k" in the whole-answer form), each with the fields `labels import` reads
already filled (the sample id, the inclusion probability of the answer's place, the claim index
or context rank as `target`). Filled in, the file imports as it is; rows left empty are "not yet
labelled" and must come last (docs/labels.md).
"""

from __future__ import annotations

from typing import Any

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.store import RunStore

# what the template adds for the person filling it in; `labels import` reads and drops them
TEMPLATE_FIELDS = ("position", "item", "question", "answer", "reference", "text")
COLUMNS = ["position", "item", "run", "method", "question_id", "metric", "target", "question", "answer", "reference",
           "text", "judge_label", "label", "who", "note", "sample_id", "inclusion_prob"]


def template_rows(store: RunStore, run_id: str, method: str, metric: str, seed: int = S.DEFAULT_SEED,
                  n: int = S.BATCH) -> list[dict[str, Any]]:
    """One row per item of the next `n` answers of the seed's order not yet labelled by its
    sample (none when every answer is)."""
    kind = U.unit(metric).kind
    rows = []
    for draw in S.next_answers(store, run_id, method, metric, seed, n):
        if draw.question_id is None:
            break
        ctx = A.item_context(store, run_id, method, draw.question_id)
        first = ctx.iloc[0].to_dict() if len(ctx) else {}
        contexts = {c.get("rank"): c.get("text") for c in A.retrieved_contexts(store, run_id, method, draw.question_id)}
        items = S.answer_items(store, run_id, method, metric, draw.question_id)
        for i, it in enumerate(items.to_dict("records")):
            target = it["target_ref"].rpartition(":")[2] if kind in ("claim", "context") else ""
            text = it.get("text") if kind == "claim" else contexts.get(int(target)) if kind == "context" else None
            rows.append({"position": draw.position + 1, "item": i + 1, "run": run_id, "method": method,
                         "question_id": draw.question_id, "metric": metric, "target": target,
                         "question": _text(first.get("question")), "answer": _text(first.get("answer")),
                         "reference": _text(first.get("ground_truth")), "text": _text(text),
                         "judge_label": it.get("judge_label"), "label": None, "who": None, "note": None,
                         "sample_id": draw.sample_id, "inclusion_prob": draw.inclusion_prob})
    return rows


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
