"""Semantic metrics (docs/metrics/semantic.md): answer vs ground truth in embedding space.

- `semantic_similarity` = max(0, cos(e(answer), e(ground_truth))) with sentence embeddings from
  the embedding service (default: packaged all-MiniLM-L6-v2). When a question lists several
  acceptable answers (`q.answers`), the best one counts (SQuAD-style max over gold answers).
- `bert_score_p`, `bert_score_r`, `bert_score_f1`: BERTScore (see metrics/bertscore.py) of the
  answer (candidate) against the ground truth (reference); with several gold answers, each of
  P, R and F1 is its maximum over them (as the bert-score library does with lists of references).

Options read from the scoring context (`ctx.options`):
  embedding_model     model for semantic_similarity: a sentence-transformers folder, a cached
                      Hugging Face name, or MODEL@BASE_URL for an OpenAI-compatible endpoint
  bertscore_model     model for BERTScore (a local/cached Hugging Face encoder; default packaged MiniLM)
  bertscore_layer     hidden layer (default: the model's last, or bert-score's choice for known models)
  bertscore_idf       weight tokens by idf over the run's ground truths, one per question, computed
                      once for the whole scoring pass (default false)
  bertscore_rescale   rescale with a baseline (default false); bertscore_baseline = LAYER,P,R,F csv
  progress            show progress bars (default: only on a terminal)

Every score's details name the model (`details["model"]`), so a number is never unlabelled.
An empty answer or a question without ground truth scores NaN with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcore.embeddings import get_embedder
from evalcore.embeddings.cache import text_key
from pydantic import StrictBool, StrictInt

from evalcore.metrics.base import ANSWER_QUALITY, Item, MetricOption, MetricSpec, Score, ScoringContext

NEEDS = frozenset({"embeddings", "ground_truth", "answer"})
# The options above, declared on the specs that read them (answer_relevance shares the first).
EMBEDDING_MODEL_OPTION = MetricOption("embedding_model", str, None,
                                      "model for semantic_similarity and embedding-based judge metrics")
BERTSCORE_OPTIONS = (
    MetricOption("bertscore_model", str, None, "model for BERTScore"),
    MetricOption("bertscore_layer", StrictInt, None, "hidden layer for BERTScore"),
    MetricOption("bertscore_idf", StrictBool, False, "weight BERTScore tokens by idf over the run's references"),
    MetricOption("bertscore_rescale", StrictBool, False, "rescale BERTScore with a baseline"),
    MetricOption("bertscore_baseline", str, None, "LAYER,P,R,F csv for BERTScore rescaling"),
)


def _why_unscorable(item: Item) -> str | None:
    q, r = item
    if not r.answer or not r.answer.strip():
        return f"no answer (target error: {r.error})" if r.error else "empty answer"
    if not _references(q):
        return "no ground truth"
    return None


def _references(q: Any) -> list[str]:
    refs = [a for a in (q.answers or ([q.ground_truth] if q.ground_truth else [])) if a and a.strip()]
    return list(dict.fromkeys(refs))


# ---- semantic_similarity ------------------------------------------------------------------
def _embedder(ctx: ScoringContext):
    model = ctx.options.get("embedding_model")
    return ctx.resource(f"embedder:{model}", lambda: get_embedder(model, ctx.store))


def _warm(ctx: ScoringContext) -> None:
    """Load the embedding model in the background while scoring starts other work."""
    from evalcore.embeddings import warm_up

    warm_up(ctx.options.get("embedding_model"), ctx.store)


def semantic_similarity(items: list[Item], ctx: ScoringContext) -> list[Score]:
    """max(0, cos) between answer and ground-truth sentence vectors; one batched encode for all."""
    reasons = [_why_unscorable(item) for item in items]
    scorable = [i for i, why in enumerate(reasons) if why is None]
    out: list[Score] = [Score.nan(why) if why else Score(0.0) for why in reasons]
    if not scorable:
        return out
    embedder = _embedder(ctx)
    texts: list[str] = []
    for i in scorable:
        q, r = items[i]
        texts.append(r.answer)
        texts.extend(_references(q))
    vectors = dict(zip((text_key(t) for t in texts), embedder.encode(texts)))
    for i in scorable:
        q, r = items[i]
        answer = vectors[text_key(r.answer)]
        refs = _references(q)
        cosines = [float(np.dot(answer, vectors[text_key(ref)])) for ref in refs]
        best = int(np.argmax(cosines))
        details: dict[str, Any] = {"model": embedder.label, "cosine": round(cosines[best], 6)}
        if len(refs) > 1:
            details["best_reference"] = best
        out[i] = Score(min(1.0, max(0.0, cosines[best])), details=details)
    return out


# ---- BERTScore ----------------------------------------------------------------------------
def _bert_scorer(ctx: ScoringContext):
    from evalcore.metrics.bertscore import BertScorer

    o = ctx.options
    settings = (o.get("bertscore_model"), o.get("bertscore_layer"), bool(o.get("bertscore_idf", False)),
                bool(o.get("bertscore_rescale", False)), o.get("bertscore_baseline"))
    return ctx.resource(f"bertscorer:{settings}", lambda: BertScorer(
        model=settings[0], layer=settings[1], idf=settings[2], rescale=settings[3], baseline_path=settings[4],
        store=ctx.store, progress=o.get("progress")))


def idf_corpus(items: list[Item], ctx: ScoringContext) -> list[str]:
    """The texts BERTScore's idf is computed over: the first reference of every question of the
    scoring pass (`ctx.items`; the given items when the context has none), one per question.
    Run-wide on purpose: idf over a scoring chunk would make a pair's value depend on which
    other answers share its chunk, and on how many answers of a question were empty."""
    corpus: dict[str, str] = {}
    for q, _ in ctx.items or items:
        refs = _references(q)
        if refs and q.id not in corpus:
            corpus[q.id] = refs[0]
    return list(corpus.values())


def _bert_results(items: list[Item], ctx: ScoringContext) -> list[dict[str, Any] | str]:
    """P/R/F per item (or the reason it cannot be scored), computed once for all three metrics:
    the first of bert_score_p/r/f1 to run fills a memo the other two read. The memo key holds
    the idf corpus, so a pair is never given a value computed under other idf weights."""
    scorer = _bert_scorer(ctx)
    memo: dict[tuple[str, str], dict[str, Any]] = ctx.resource(f"bertscore-memo:{id(scorer)}", dict)
    corpus = idf_corpus(items, ctx) if scorer.idf else []
    idf_tag = scorer.idf_tag(corpus)
    reasons = [_why_unscorable(item) for item in items]
    keys = [None if why else (idf_tag, text_key(items[i][1].answer, *_references(items[i][0])))
            for i, why in enumerate(reasons)]
    todo = [i for i, k in enumerate(keys) if k is not None and k not in memo]
    if todo:
        cands, refs, owner = [], [], []
        for i in todo:
            for ref in _references(items[i][0]):
                cands.append(items[i][1].answer)
                refs.append(ref)
                owner.append(i)
        prf = scorer.score(cands, refs, idf_corpus=corpus)
        rows_of: dict[int, list[int]] = {}
        for row, i in enumerate(owner):
            rows_of.setdefault(i, []).append(row)
        for i, rows in rows_of.items():
            values = prf[rows].max(axis=0)
            entry: dict[str, Any] = {"model": scorer.label, "precision": round(float(values[0]), 6),
                                     "recall": round(float(values[1]), 6), "f1": round(float(values[2]), 6),
                                     "values": tuple(float(x) for x in values)}
            if len(rows) > 1:
                entry["best_f1_reference"] = int(np.argmax(prf[rows, 2]))
            memo[keys[i]] = entry
    return [reasons[i] if keys[i] is None else memo[keys[i]] for i in range(len(items))]


def _bert_metric(component: int):
    def compute(items: list[Item], ctx: ScoringContext) -> list[Score]:
        out = []
        for result in _bert_results(items, ctx):
            if isinstance(result, str):
                out.append(Score.nan(result))
                continue
            details = {k: v for k, v in result.items() if k != "values"}
            out.append(Score(result["values"][component], details=details))
        return out

    return compute


SPECS = [
    MetricSpec("semantic_similarity", "semantic", semantic_similarity, needs=NEEDS, error_value=0.0, warm=_warm,
               description="max(0, cosine) of answer and ground-truth sentence embeddings",
               importance=(ANSWER_QUALITY, 9), options=(EMBEDDING_MODEL_OPTION,)),
    MetricSpec("bert_score_p", "semantic", _bert_metric(0), needs=NEEDS, error_value=0.0, version="2",
               description="BERTScore precision: answer tokens matched in the ground truth",
               options=BERTSCORE_OPTIONS),
    MetricSpec("bert_score_r", "semantic", _bert_metric(1), needs=NEEDS, error_value=0.0, version="2",
               description="BERTScore recall: ground-truth tokens covered by the answer",
               options=BERTSCORE_OPTIONS),
    MetricSpec("bert_score_f1", "semantic", _bert_metric(2), needs=NEEDS, error_value=0.0, version="2",
               description="BERTScore F1 (harmonic mean of bert_score_p and bert_score_r)",
               importance=(ANSWER_QUALITY, 10), options=BERTSCORE_OPTIONS),
]
