"""Citation metrics: does the answer cite the gold sources, the right section, and say where
its facts come from?

Matching a citation to a gold passage follows the retrieval rule of docs/metrics/retrieval.md: equal chunk_id,
or the same rel_path with the citation's heading_path starting with the gold heading_path
(after collapsing spaces and using " > " as delimiter). A citation that names only a chunk_id
is resolved through the response's own retrieved list (which usually carries rel_path and
heading_path), so chunk-id citations can still be checked for document + section.

Recency/conflict rules need to know which source is newer. The question says so in
`metadata["recency"] = {"newer": REF, "older": REF, "newer_terms": [...], "older_terms": [...]}`
where REF is a chunk_id or a rel_path; without it the rule cannot be judged (NaN + reason).
"""

from __future__ import annotations

from typing import Any

from evalcore.metrics.matching import gold_matches, heading_parts, normalise_path
from evalcore.metrics.base import FAITHFULNESS, Item, MetricOption, MetricSpec, Score, ScoringContext, per_item
from evalcore.metrics.text import find, normalize
from evalcore.schemas import Citation, EvalQuestion, EvalResponse, GoldPassage

# Seed 002's indicators plus Korean equivalents. Counted once each (distinct indicators).
DEFAULT_INDICATORS = ["source:", "table:", "page", "document", "pdf", "according to", "based on", "from",
                      "출처", "문서", "페이지", "에 따르면", "근거"]
ACKNOWLEDGE_PHRASES = ["however", "previously", "earlier", "was updated", "has been updated", "changed",
                       "conflict", "whereas", "older", "newer", "superseded", "이전", "변경", "최신", "반면"]

# one definition of "the same document / section" for retrieval and citation metrics
norm_heading = heading_parts
_norm_path = normalise_path


def resolve(c: Citation, r: EvalResponse) -> Citation:
    """Fill a chunk-id-only citation's rel_path/heading_path/section from the retrieved list."""
    if c.chunk_id and not c.rel_path:
        for chunk in r.retrieved:
            if chunk.chunk_id == c.chunk_id:
                return c.model_copy(update={"rel_path": chunk.rel_path,
                                            "heading_path": c.heading_path or chunk.heading_path,
                                            "section": c.section or chunk.section})
    return c


def matches(c: Citation, g: GoldPassage) -> bool:
    """Does citation `c` point at gold passage `g`? The retrieval matching rule, without snippets
    (a citation carries no chunk text)."""
    return gold_matches(g, c, use_snippets=False)


def _section_right(c: Citation, golds: list[GoldPassage]) -> bool:
    """Same document and same section: heading-path prefix, or equal `section` names."""
    for g in golds:
        if not (c.rel_path and g.rel_path and _norm_path(c.rel_path) == _norm_path(g.rel_path)):
            continue
        if g.heading_path:
            gold_head = norm_heading(g.heading_path)
            if norm_heading(c.heading_path)[: len(gold_head)] == gold_head:
                return True
        elif g.section:
            if normalize(c.section) == normalize(g.section) or \
                    (c.heading_path and normalize(g.section) in [normalize(p) for p in norm_heading(c.heading_path)]):
                return True
        else:
            return True  # the gold names only the document: any section of it is right
    return False


def _cited(r: EvalResponse) -> list[Citation]:
    """Distinct citations (duplicates would inflate precision), resolved through `retrieved`."""
    seen, out = set(), []
    for c in r.citations:
        key = (c.chunk_id, c.rel_path, c.heading_path, c.section)
        if key not in seen:
            seen.add(key)
            out.append(resolve(c, r))
    return out


def _citation_precision(q: EvalQuestion, r: EvalResponse) -> Score:
    if not q.gold_passages:
        return Score.nan("no gold passages")
    cited = _cited(r)
    if not cited:
        return Score.nan("no citations")
    good = [c for c in cited if any(matches(c, g) for g in q.gold_passages)]
    return Score(len(good) / len(cited), details={"n_cited": len(cited), "n_correct": len(good)})


def _citation_recall(q: EvalQuestion, r: EvalResponse) -> Score:
    if not q.gold_passages:
        return Score.nan("no gold passages")
    cited = _cited(r)
    found = [i for i, g in enumerate(q.gold_passages) if any(matches(c, g) for c in cited)]
    return Score(len(found) / len(q.gold_passages),
                 details={"n_gold": len(q.gold_passages), "gold_cited": found, "n_cited": len(cited)})


def _section_accuracy(q: EvalQuestion, r: EvalResponse) -> Score:
    anchored = [g for g in q.gold_passages if g.rel_path]
    if not anchored:
        return Score.nan("gold passages name no document (chunk ids only)")
    cited = _cited(r)
    if not cited:
        return Score.nan("no citations")
    right = [c for c in cited if _section_right(c, anchored)]
    unresolved = sum(1 for c in cited if not c.rel_path)
    return Score(len(right) / len(cited), details={"n_cited": len(cited), "n_right": len(right),
                                                   "n_without_document": unresolved})


def _source_quality(q: EvalQuestion, r: EvalResponse, opts: dict[str, Any]) -> Score:
    """Seed 002's rule: indicator phrases in the answer text. It reads no structured citation,
    so a run whose method cites nothing still scores (0 = the answer never says where its facts
    come from, which is what the seed defines). Only an answer that is missing is not scored:
    a failed or blank answer said nothing, which is not the same as citing nothing."""
    if not r.answer.strip():
        reason = f"no answer ({r.error_kind or 'error'})" if r.error else "empty answer"
        return Score.nan(reason)
    indicators = opts.get("citation_indicators") or DEFAULT_INDICATORS
    per_full = float(opts.get("citation_indicators_for_full", 3))
    answer = normalize(r.answer)
    found = [ind for ind in indicators if normalize(ind) and normalize(ind) in answer]
    details: dict[str, Any] = {"indicators_found": found, "n_structured_citations": len(r.citations)}
    if r.error:
        details["target_error"] = r.error_kind
    return Score(min(len(found) / per_full, 1.0), details=details)


NO_CITATIONS_IN_RUN = "run has no citations"


def _source_quality_batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """On a run where no answer carries a structured citation, every value is NaN with the
    reason the other citation metrics give ("run has no citations"), not a column of 0.000
    that reads as "every answer cites badly" next to metrics that say there is nothing to judge."""
    if not ctx.run_has("citations", items):
        return [Score.nan(NO_CITATIONS_IN_RUN) for _ in items]
    return [_source_quality(q, r, ctx.options) for q, r in items]


def _ref_cited(ref: str, cited: list[Citation]) -> bool:
    return any(c.chunk_id == ref or (c.rel_path and _norm_path(c.rel_path) == _norm_path(ref)) for c in cited)


def _recency_rule(q: EvalQuestion, r: EvalResponse, opts: dict[str, Any]) -> Score:
    rule = q.recency_conflict_rule
    if rule is None:
        return Score.nan("no recency/conflict rule on this question")
    info = q.metadata.get("recency") or {}
    newer, older = info.get("newer"), info.get("older")
    if not newer or not older:
        return Score.nan("recency rule needs metadata.recency.newer and .older (chunk_id or rel_path)")
    cited = _cited(r)
    cites_new, cites_old = _ref_cited(str(newer), cited), _ref_cited(str(older), cited)
    answer = normalize(r.answer)
    details: dict[str, Any] = {"rule": rule, "cites_newer": cites_new, "cites_older": cites_old}
    if rule == "cite_newer":
        ok = cites_new and not cites_old
    elif rule == "cite_both":
        ok = cites_new and cites_old
    else:  # acknowledge_both: both sides' terms appear, else both cited or a conflict phrase
        new_terms, old_terms = info.get("newer_terms") or [], info.get("older_terms") or []
        if new_terms and old_terms:
            has_new = [t for t in new_terms if find(answer, t)]
            has_old = [t for t in old_terms if find(answer, t)]
            details.update(newer_terms_found=has_new, older_terms_found=has_old)
            ok = bool(has_new) and bool(has_old)
        else:
            phrases = opts.get("acknowledge_phrases") or ACKNOWLEDGE_PHRASES
            said = [p for p in phrases if find(answer, p, whole_word=True)]
            details["phrases_found"] = said
            ok = (cites_new and cites_old) or bool(said)
    return Score(float(ok), details=details)


def _with_options(fn):
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r, ctx.options) for q, r in items]
    return batch


INDICATOR_OPTIONS = (
    MetricOption("citation_indicators", list[str], DEFAULT_INDICATORS,
                 "source indicators counted by source_citation_quality"),
    MetricOption("citation_indicators_for_full", float, 3,
                 "indicators needed for a full source_citation_quality score"),
)
ACKNOWLEDGE_OPTION = MetricOption("acknowledge_phrases", list[str], ACKNOWLEDGE_PHRASES,
                                  "phrases that acknowledge conflicting sources")

SPECS = [
    MetricSpec("citation_precision", "citation", per_item(_citation_precision), error_value=0.0,
               needs=frozenset({"gold", "citations"}), description="Cited sources that are gold / cited.",
               importance=(FAITHFULNESS, 3), key_rank=11),
    MetricSpec("citation_recall", "citation", per_item(_citation_recall), error_value=0.0,
               needs=frozenset({"gold", "citations"}), description="Gold sources that are cited / gold.",
               importance=(FAITHFULNESS, 4)),
    MetricSpec("section_accuracy", "citation", per_item(_section_accuracy),
               needs=frozenset({"gold", "citations"}),
               description="Citations naming the right document and section / citations."),
    MetricSpec("source_citation_quality", "citation", _source_quality_batch, error_value=0.0,
               needs=frozenset({"answer", "citations"}), version="3",
               description="min(distinct source indicators in the answer / 3, 1).", options=INDICATOR_OPTIONS),
    MetricSpec("recency_rule_pass", "citation", _with_options(_recency_rule),
               needs=frozenset({"citations"}), binary=True,
               description="1 if the answer follows the question's cite_newer/cite_both/acknowledge_both rule.",
               options=(ACKNOWLEDGE_OPTION,)),
]
