"""Retrieval metrics per question (docs/metrics/retrieval.md): recall, hit rate, recall_all,
precision, MRR, nDCG (linear and exponential gain), MAP, scope misses and attribution.

Each metric is a small pure function of (question, response) returning a Score. The ranking
formulas are not re-implemented here: the question's gold is matched against the ranking
(`matching.judge_ranking`) and the resulting relevance vector is scored by the same functions
`evalcore trec` uses (`evalcore.metrics.trec_eval`), so per-question values agree with trec_eval when
gold passages are chunk ids. Questions without relevant gold get NaN ("no gold passages") and
are left out of means; the mean's n says how many were scored.
"""

from __future__ import annotations

from typing import Callable

from pydantic import StrictBool

from evalcore.metrics import trec_eval
from evalcore.metrics.base import Item, MetricOption, MetricSpec, RETRIEVAL, Score, ScoringContext
from evalcore.metrics.matching import (
    Judgement, gold_matches, judge_ranking, normalise_path, ranked_chunks, relevant_gold, resolve_citation,
    support_entry_gold,
)
from evalcore.schemas import EvalQuestion, EvalResponse

RECALL_KS = (1, 3, 5, 10)
PRECISION_KS = (1, 3, 5)
NDCG_KS = (5, 10)
MRR_K = 10
MAP_K = 10
NO_GOLD = "no gold passages"


def match_against_gold(question: EvalQuestion, response: EvalResponse, use_snippets: bool = True) -> Judgement:
    """The answer's ranking matched against the question's gold passages (no judge involved:
    "judged" in trec_eval's sense, a relevance vector every ranking metric here scores)."""
    return judge_ranking(question, ranked_chunks(response), use_snippets=use_snippets)


def _ranking(j: Judgement) -> trec_eval.Rankings:
    return trec_eval.Rankings.single(j.gains, j.judged, level=j.level)


def _first(values) -> float:
    return float(values[0])


def recall_at_k(j: Judgement, k: int) -> Score:
    """recall@k = |gold ∩ top-k| / |gold| (relevant gold passages matched in the first k)."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    return Score(_first(trec_eval.recall(_ranking(j), k)), details={"k": k, "n_gold": j.n_relevant})


def hit_rate_at_k(j: Judgement, k: int) -> Score:
    """hit_rate@k (= recall_any@k) = 1[any relevant gold passage is matched in the first k]."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    return Score(_first(trec_eval.hit_rate(_ranking(j), k)), details={"k": k})


def precision_at_k(j: Judgement, k: int) -> Score:
    """precision@k = chunks among the first k that match any relevant gold / k (k even when fewer
    were retrieved, as trec_eval's P_k)."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    r = trec_eval.Rankings.single(j.hits, j.judged, level=0)
    return Score(_first(trec_eval.precision(r, k)), details={"k": k, "retrieved": len(j.hits)})


def mrr_at_k(j: Judgement, k: int = MRR_K) -> Score:
    """mrr@k = 1 / rank of the first chunk matching relevant gold within the first k, else 0."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    return Score(_first(trec_eval.reciprocal_rank(_ranking(j), k)), details={"k": k})


def ndcg_at_k(j: Judgement, k: int, exponential: bool = False) -> Score:
    """ndcg@k = DCG@k / IDCG@k, DCG@k = Σ_{i≤k} gain(rel_i) / log2(i+1); gain = rel (linear,
    `ndcg@k`) or 2^rel − 1 (`ndcg_exp@k`); rel = the gold passage's graded relevance."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    value = _first(trec_eval.ndcg(_ranking(j), k, exponential=exponential))
    return Score(value, details={"k": k, "gain": "exp" if exponential else "linear"})


def map_at_k(j: Judgement, k: int = MAP_K) -> Score:
    """map@k (per question: AP@k) = Σ_{relevant i≤k} P@i / |gold| — every relevant gold passage in
    the denominator, retrieved or not."""
    if j.n_relevant == 0:
        return Score.nan(NO_GOLD)
    return Score(_first(trec_eval.average_precision(_ranking(j), k)), details={"k": k})


def recall_all_at_k(question: EvalQuestion, response: EvalResponse, k: int, use_snippets: bool = True) -> Score:
    """recall_all@k = 1[every required support group has an entry matched in the first k].
    A group lists alternatives; all groups are needed (multi-hop). Entries are matched with the
    gold-passage rules (`gold_matches` on `support_entry_gold`), so a group naming a section is
    not satisfied by another section of the same document."""
    if not question.required_support_groups:
        return Score.nan("no support groups")
    top = ranked_chunks(response)[:k]
    gold = relevant_gold(question, 0.0)
    missing = [i for i, group in enumerate(question.required_support_groups)
               if not any(gold_matches(g, c, use_snippets) for entry in group
                          for g in support_entry_gold(entry, gold) for c in top)]
    return Score(0.0 if missing else 1.0,
                 details={"k": k, "groups": len(question.required_support_groups), "missing_groups": missing})


def _in_scope(rel_path: str, scope: list[str]) -> bool:
    path = normalise_path(rel_path)
    for folder in scope:
        root = normalise_path(folder).rstrip("/")
        if root in {"", "."} or path == root or path.startswith(root + "/"):
            return True
    return False


def scope_miss(question: EvalQuestion, response: EvalResponse) -> Score:
    """scope_miss_rate (per question) = 1[the target's scope (folder selection) excludes every
    gold passage]. Needs a reported scope and gold passages with rel_path."""
    if response.scope is None:
        return Score.nan("no scope reported")
    gold = relevant_gold(question)
    if not gold:
        return Score.nan(NO_GOLD)
    paths = [g.rel_path for g in gold if g.rel_path]
    if not paths:
        return Score.nan("gold passages have no rel_path")
    inside = [p for p in paths if _in_scope(p, response.scope)]
    return Score(0.0 if inside else 1.0, details={"scope": list(response.scope), "gold_in_scope": len(inside)})


def attribution_hit(question: EvalQuestion, response: EvalResponse) -> Score:
    """attribution_hit_rate (per question, answerable only) = 1[any citation matches a relevant gold
    passage], with the retrieval matching rules (snippets are not required of citations; a citation
    giving only a chunk id is resolved through the response's retrieved chunks)."""
    if not question.answerable:
        return Score.nan("unanswerable question")
    gold = relevant_gold(question)
    if not gold:
        return Score.nan(NO_GOLD)
    cited = [resolve_citation(c, response) for c in response.citations]
    hit = any(gold_matches(g, c, use_snippets=False) for c in cited for g in gold)
    return Score(1.0 if hit else 0.0, details={"citations": len(response.citations)})


# --- registration ------------------------------------------------------------------------------
MATCH_SNIPPETS = MetricOption("match_snippets", StrictBool, True,
                              "retrieval: an anchor with a snippet also needs the snippet in the chunk text")

def _ranked_metric(fn: Callable[[Judgement], Score]):
    """Batch form sharing one Judgement per item across every ranked metric of a scoring pass."""

    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        cache = ctx.resource("retrieval.judgements", dict)
        use_snippets = bool(ctx.options.get("match_snippets", True))
        out = []
        for q, r in items:
            key = (id(q), id(r), use_snippets)
            if key not in cache:
                cache[key] = (q, r, match_against_gold(q, r, use_snippets))  # q, r kept so ids stay unique
            out.append(fn(cache[key][2]))
        return out

    return batch


def _recall_all_metric(k: int):
    """recall_all@k honouring the scoring option `match_snippets`, like the ranked metrics."""

    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        use_snippets = bool(ctx.options.get("match_snippets", True))
        return [recall_all_at_k(q, r, k, use_snippets) for q, r in items]

    return batch


def _item_metric(fn: Callable[[EvalQuestion, EvalResponse], Score]):
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r) for q, r in items]

    return batch


def _specs() -> list[MetricSpec]:
    ranked = frozenset({"gold", "retrieved"})
    specs = []

    # where a reader weighs the headline retrieval metrics (MetricSpec.importance, key_rank), and
    # the gold-passage evidence of a retrieval miss the failure diagnosis reads, hit rate first
    reader = {"hit_rate@5": {"importance": (RETRIEVAL, 2), "retrieval_miss_evidence": 0},
              "recall@5": {"importance": (RETRIEVAL, 3), "key_rank": 9, "retrieval_miss_evidence": 1},
              "mrr": {"importance": (RETRIEVAL, 4), "key_rank": 10},
              "ndcg@10": {"importance": (RETRIEVAL, 5)}}

    def add(name, compute, description, needs=ranked, binary=False, higher=True, version="1", error_value=None,
            options=(MATCH_SNIPPETS,)):
        specs.append(MetricSpec(name=name, group="retrieval", compute=compute, needs=needs, binary=binary,
                                higher_is_better=higher, description=description, version=version,
                                error_value=error_value, options=options, **reader.get(name, {})))

    for k in RECALL_KS:
        add(f"recall@{k}", _ranked_metric(lambda j, k=k: recall_at_k(j, k)), "gold passages found in the top k / gold")
        add(f"hit_rate@{k}", _ranked_metric(lambda j, k=k: hit_rate_at_k(j, k)),
            "1 if any gold passage is in the top k (recall_any)", binary=True)
        add(f"recall_all@{k}", _recall_all_metric(k),
            "1 if every required support group is matched in the top k (multi-hop)", binary=True,
            version="2")
    for k in PRECISION_KS:
        add(f"precision@{k}", _ranked_metric(lambda j, k=k: precision_at_k(j, k)), "gold-matching chunks in the top k / k")
    add("mrr", _ranked_metric(lambda j: mrr_at_k(j, MRR_K)), "1 / rank of the first gold match (top 10)")
    for k in NDCG_KS:
        add(f"ndcg@{k}", _ranked_metric(lambda j, k=k: ndcg_at_k(j, k)), "nDCG, linear gain (trec_eval ndcg_cut)")
        add(f"ndcg_exp@{k}", _ranked_metric(lambda j, k=k: ndcg_at_k(j, k, exponential=True)),
            "nDCG, exponential gain 2^rel - 1")
    add(f"map@{MAP_K}", _ranked_metric(lambda j: map_at_k(j, MAP_K)), "average precision in the top 10 over all gold")
    add("scope_miss_rate", _item_metric(scope_miss), "1 if the reported scope excludes every gold passage",
        needs=frozenset({"gold"}), binary=True, higher=False, options=())
    add("attribution_hit_rate", _item_metric(attribution_hit), "1 if a citation matches a gold passage",
        needs=frozenset({"gold", "citations"}), binary=True, error_value=0.0, options=())
    return specs


SPECS: list[MetricSpec] = _specs()
