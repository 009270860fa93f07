"""Each claim with its evidence: where it sits in the answer, the passage the judge cited for it,
and the sentence of that passage that backs it.

Why: the Questions page listed claims in a table below the answer and the contexts in another,
so a reader matched them by hand. The judge's context review names, for each claim, the number
of the passage that supports it (`context`, 1-based over the answer's non-empty retrieved
contexts in rank order, stored in the claim metric's details as `statements`); the judge does
not name a sentence, so the sentence shown is the one of that passage sharing the most words
with the claim (analysis.highlight.best_sentence), and the page says so.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from evalcore.analysis.questions.highlight import Span, best_sentence, claim_spans, word_spans
from evalcore.store import RunStore, query_df


def numbered_contexts(response_record: str | None) -> list[dict[str, Any]]:
    """The retrieved contexts as the judge numbered them: non-empty texts in rank order
    (passage 1 is the first of these)."""
    if not isinstance(response_record, str):
        return []
    chunks = [c for c in json.loads(response_record).get("retrieved", []) if isinstance(c, dict)]
    return sorted([c for c in chunks if isinstance(c.get("text"), str) and c["text"].strip()],
                  key=lambda c: c.get("rank") or 0)


def cited_numbers(details: Any) -> list[int | None]:
    """Per statement of a claim metric's details (in claim order), the passage number the judge
    cited; None where it cited none. [] for details without statements."""
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return []
    statements = details.get("statements") if isinstance(details, dict) else None
    if not isinstance(statements, list):
        return []
    return [s.get("context") if isinstance(s, dict) and isinstance(s.get("context"), int) else None
            for s in statements]


def _cited_rank(number: int | None, passages: list[dict]) -> dict | None:
    return passages[number - 1] if isinstance(number, int) and 1 <= number <= len(passages) else None


def answer_evidence(detail: dict[str, pd.DataFrame], method: str) -> dict[str, Any]:
    """For one method's answer in a question_detail: `answer_spans` (its claims marked by
    verdict), `claims` (one row per answer claim: idx, text, verdict, reason, placed in the
    answer, the cited passage's rank, its sentence and that sentence's words of the claim) and
    `context_spans` (rank -> the cited sentences of that passage)."""
    resp = detail["responses"][detail["responses"].method == method]
    answer = resp["answer"].iloc[0] if len(resp) else None
    record = resp["record"].iloc[0] if len(resp) else None
    claims = detail["claims"][(detail["claims"].method == method) & (detail["claims"].source == "answer")]
    metrics = detail["metrics"][detail["metrics"].method == method]
    passages = numbered_contexts(record)
    cites: dict[str, list[int | None]] = {}
    for name in set(claims["metric"]):
        row = metrics[metrics.metric == name]
        cites[name] = cited_numbers(row["details"].iloc[0]) if len(row) else []
    answer_text = answer if isinstance(answer, str) else ""
    spans, placed = claim_spans(answer_text, [(int(c.idx), c.text, c.verdict) for c in claims.itertuples()])
    rows, by_sentence = [], {}
    for c in claims.itertuples():
        numbers = cites.get(c.metric, [])
        passage = _cited_rank(numbers[int(c.idx)] if int(c.idx) < len(numbers) else None, passages)
        sent = best_sentence(c.text, passage["text"]) if passage else None
        sentence = passage["text"][sent[0]:sent[1]] if sent else None
        rows.append({"idx": int(c.idx), "text": c.text, "verdict": c.verdict, "reason": c.reason,
                     "placed": int(c.idx) in placed, "rank": passage.get("rank") if passage else None,
                     "sentence": sentence, "sentence_spans": word_spans(sentence, c.text) if sentence else []})
        if sent:
            by_sentence.setdefault((passage.get("rank"), sent), []).append(int(c.idx) + 1)
    context_spans: dict[Any, list[Span]] = {}
    for (rank, (s, e)), numbers in sorted(by_sentence.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        title = f"cited by the judge for claim{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
        context_spans.setdefault(rank, []).append(Span(s, e, "cited", title))
    return {"answer_spans": spans, "claims": rows, "context_spans": context_spans}


def cited_ranks(store: RunStore, run_id: str, method: str, question_id: str, metric: str,
                idx: int | None = None) -> list[int]:
    """Ranks of the passages the judge cited for claim `idx` of `metric` (every claim when None),
    first cited first: the Annotate page shows these passages before the others."""
    rows = query_df(store, """SELECT details FROM metrics WHERE run_id = $run AND method = $m AND question_id = $q
                        AND metric = $metric""", {"run": run_id, "m": method, "q": question_id, "metric": metric},
              runs=[run_id])
    resp = query_df(store, "SELECT record FROM responses WHERE run_id = $run AND method = $m AND question_id = $q",
              {"run": run_id, "m": method, "q": question_id}, runs=[run_id])
    if rows.empty or resp.empty:
        return []
    numbers = cited_numbers(rows["details"].iloc[0])
    if idx is not None:
        numbers = numbers[idx:idx + 1]
    passages = numbered_contexts(resp["record"].iloc[0])
    ranks = [p.get("rank") for n in numbers if (p := _cited_rank(n, passages))]
    return list(dict.fromkeys(r for r in ranks if r is not None))


def claim_ref(target_ref: str) -> tuple[str, str, int] | None:
    """A claim item's `metric:source:idx` as (metric, source, idx); None if it is not one."""
    parts = str(target_ref).rsplit(":", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])
