"""Ranking metrics over many queries at once, with trec_eval's semantics.

Every ranking is flattened into one long array (a CSR layout: query i owns rows
``starts[i]:starts[i+1]``, in rank order). Each metric is then a handful of numpy passes
over that array instead of a Python loop per query, which is what makes 100k queries x 100
documents take seconds. The per-question metrics in ``evalcore.metrics.retrieval`` call the
same functions with a single query, so there is one implementation of each formula.

Conventions (those of trec_eval, so results are comparable with published numbers):

- a document is *relevant* when its judged relevance is > 0 and >= the relevance level
  (``-l`` in trec_eval, default 1); unjudged documents are non-relevant;
- nDCG gains are the judged relevance values themselves (negative values count as 0), and
  ignore the relevance level, as trec_eval does;
- a query with no relevant documents scores 0 (trec_eval divides by zero as 0);
- cutoffs larger than the ranking leave the denominator of precision at k (trec_eval's P_k).

``rankings_from_tables`` (bottom of this module) joins a run with its qrels and orders every
ranking as trec_eval does; reading the files is ``evalcore.datasets.trec``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Rankings:
    """Judged rankings for several queries, flattened for vectorised scoring.

    gains[j]    judged relevance of the document at row j (0 when unjudged, may be negative)
    starts      int64, length n_queries + 1; query i owns rows starts[i]:starts[i+1], in rank order
    num_rel     per query: judged documents that are relevant (retrieved or not)
    ideal_*     per query (same CSR layout): positive judged relevance values, sorted descending,
                the best possible ranking that nDCG divides by
    row_query / row_pos: for every row, its query index and 0-based rank (derived, cached)
    """

    qids: np.ndarray
    starts: np.ndarray
    gains: np.ndarray
    num_rel: np.ndarray
    ideal_starts: np.ndarray
    ideal_gains: np.ndarray
    level: float
    row_query: np.ndarray
    row_pos: np.ndarray
    ideal_query: np.ndarray
    ideal_pos: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def relevant(self) -> np.ndarray:
        """Boolean per row: the document counts as relevant for binary metrics."""
        return (self.gains > 0) & (self.gains >= self.level)

    @staticmethod
    def make(qids: Sequence[str], starts: np.ndarray, gains: np.ndarray, num_rel: np.ndarray,
             ideal_starts: np.ndarray, ideal_gains: np.ndarray, level: float = 1,
             row_query: np.ndarray | None = None) -> "Rankings":
        """Assemble Rankings and precompute each row's query index and rank position
        (`row_query` may be passed when the caller already has it)."""
        starts = np.asarray(starts, dtype=np.int64)
        ideal_starts = np.asarray(ideal_starts, dtype=np.int64)
        row_query, row_pos = _rows(starts, row_query)
        ideal_query, ideal_pos = _rows(ideal_starts)
        return Rankings(np.asarray(qids, dtype=object), starts, np.asarray(gains, dtype=np.float64),
                        np.asarray(num_rel, dtype=np.int64), ideal_starts,
                        np.asarray(ideal_gains, dtype=np.float64), float(level),
                        row_query, row_pos, ideal_query, ideal_pos)

    @staticmethod
    def single(gains: Sequence[float], judged: Sequence[float], level: float = 1,
               qid: str = "q") -> "Rankings":
        """One query: `gains` in rank order, `judged` = relevance of every judged document."""
        judged_arr = np.asarray(judged, dtype=np.float64)
        ideal = np.sort(judged_arr[judged_arr > 0])[::-1]
        num_rel = int(np.count_nonzero((judged_arr > 0) & (judged_arr >= level)))
        return Rankings.make([qid], np.array([0, len(gains)]), np.asarray(gains, dtype=np.float64),
                             np.array([num_rel]), np.array([0, len(ideal)]), ideal, level)


def _rows(starts: np.ndarray, row_query: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    if row_query is None:
        row_query = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    row_pos = np.arange(int(starts[-1]), dtype=np.int64) - starts[row_query]
    return row_query, row_pos


def _per_query(r: Rankings, weights: np.ndarray) -> np.ndarray:
    """Sum a per-row quantity within each query (empty queries give 0)."""
    return np.bincount(r.row_query, weights=weights, minlength=r.n_queries).astype(np.float64)


def _top(r: Rankings, k: int | None) -> np.ndarray:
    return np.ones(len(r.gains), dtype=bool) if k is None else r.row_pos < k


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


# --- the metrics: each returns one value per query -------------------------------------------

def hits(r: Rankings, k: int | None = None) -> np.ndarray:
    """Relevant documents among the first k: hits@k = sum_{i<=k} rel_i."""
    return _per_query(r, (r.relevant & _top(r, k)).astype(np.float64))


def precision(r: Rankings, k: int) -> np.ndarray:
    """P@k = hits@k / k. The denominator stays k when fewer than k were retrieved (trec_eval's P_k):
    a short ranking is not rewarded for returning less."""
    return hits(r, k) / float(k)


def recall(r: Rankings, k: int | None = None) -> np.ndarray:
    """R@k = hits@k / |relevant|; 0 when the query has no relevant documents."""
    return _safe_div(hits(r, k), r.num_rel.astype(np.float64))


def hit_rate(r: Rankings, k: int | None = None) -> np.ndarray:
    """HR@k = 1[hits@k > 0] (trec_eval's success_k; also called recall_any@k)."""
    return (hits(r, k) > 0).astype(np.float64)


def reciprocal_rank(r: Rankings, k: int | None = None) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant document within the first k; 0 if there is none.
    trec_eval's recip_rank is RR with no cutoff; MRR is its mean over queries."""
    mask = r.relevant & _top(r, k)
    out = np.zeros(r.n_queries, dtype=np.float64)
    q = r.row_query[mask]
    if len(q):
        first = np.concatenate(([True], q[1:] != q[:-1]))  # rows are grouped by query, in rank order
        out[q[first]] = 1.0 / (r.row_pos[mask][first] + 1)
    return out


def average_precision(r: Rankings, k: int | None = None) -> np.ndarray:
    """AP@k = (sum over relevant documents at rank i <= k of P@i) / |relevant|.

    The denominator is every relevant document, retrieved or not (trec_eval's map / map_cut_k),
    so missing relevant documents lower the score."""
    rel = r.relevant
    running = np.cumsum(rel, dtype=np.int64)
    before = np.concatenate(([0], running))[r.starts[:-1]]  # relevant rows before each query
    hits_so_far = running - before[r.row_query]
    mask = rel & _top(r, k)
    prec = np.where(mask, hits_so_far / (r.row_pos + 1.0), 0.0)
    return _safe_div(_per_query(r, prec), r.num_rel.astype(np.float64))


def _discount(pos: np.ndarray) -> np.ndarray:
    return 1.0 / np.log2(pos + 2.0)


def _gain(values: np.ndarray, exponential: bool) -> np.ndarray:
    positive = np.maximum(values, 0.0)
    return np.exp2(positive) - 1.0 if exponential else positive


def dcg(r: Rankings, k: int | None = None, exponential: bool = False) -> np.ndarray:
    """DCG@k = sum_{i<=k} gain(rel_i) / log2(i + 1), gain = rel (linear) or 2^rel - 1 (exp)."""
    w = np.where(_top(r, k), _gain(r.gains, exponential) * _discount(r.row_pos), 0.0)
    return _per_query(r, w)


def ideal_dcg(r: Rankings, k: int | None = None, exponential: bool = False) -> np.ndarray:
    """IDCG@k: DCG@k of the judged documents sorted by relevance (the best possible ranking)."""
    top = np.ones(len(r.ideal_gains), dtype=bool) if k is None else r.ideal_pos < k
    w = np.where(top, _gain(r.ideal_gains, exponential) * _discount(r.ideal_pos), 0.0)
    return np.bincount(r.ideal_query, weights=w, minlength=r.n_queries).astype(np.float64)


def ndcg(r: Rankings, k: int | None = None, exponential: bool = False) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k (0 when IDCG is 0). Linear gain matches trec_eval's ndcg_cut_k;
    the exponential gain (2^rel - 1, Burges et al.) is ranx's ndcg_burges."""
    return _safe_div(dcg(r, k, exponential), ideal_dcg(r, k, exponential))


# --- metric names -----------------------------------------------------------------------------

MetricFn = Callable[[Rankings], np.ndarray]

# (pattern, builder(k) -> fn). trec_eval's names and ours; k absent means "no cutoff".
_PATTERNS: list[tuple[str, Callable[[int | None], MetricFn]]] = [
    (r"P_(\d+)|precision@(\d+)", lambda k: lambda r: precision(r, k)),
    (r"recall_(\d+)|recall@(\d+)|recall", lambda k: lambda r: recall(r, k)),
    (r"success_(\d+)|hit_rate@(\d+)|recall_any@(\d+)", lambda k: lambda r: hit_rate(r, k)),
    (r"recip_rank|mrr|mrr@(\d+)|recip_rank@(\d+)", lambda k: lambda r: reciprocal_rank(r, k)),
    (r"map|map_cut_(\d+)|map@(\d+)", lambda k: lambda r: average_precision(r, k)),
    (r"ndcg|ndcg_cut_(\d+)|ndcg@(\d+)", lambda k: lambda r: ndcg(r, k)),
    (r"ndcg_exp|ndcg_exp@(\d+)|ndcg_burges@(\d+)", lambda k: lambda r: ndcg(r, k, exponential=True)),
    (r"num_rel_ret", lambda k: lambda r: hits(r, None)),
    (r"num_rel", lambda k: lambda r: r.num_rel.astype(np.float64)),
    (r"num_ret", lambda k: lambda r: np.diff(r.starts).astype(np.float64)),
]

KNOWN_NAMES = ("P_k precision@k recall_k recall@k success_k hit_rate@k recip_rank mrr mrr@k "
               "map map_cut_k map@k ndcg ndcg_cut_k ndcg@k ndcg_exp@k num_rel num_ret num_rel_ret")


def metric_function(name: str) -> MetricFn:
    """Resolve a metric name (trec_eval's `ndcg_cut_10` or ours `ndcg@10`) to its function."""
    for pattern, build in _PATTERNS:
        m = re.fullmatch(pattern, name.strip())
        if m:
            ks = [g for g in m.groups() if g is not None]
            k = int(ks[0]) if ks else None
            if k is not None and k < 1:
                raise ValueError(f"metric {name!r}: the cutoff must be at least 1")
            return build(k)
    raise ValueError(f"unknown metric {name!r}; known: {KNOWN_NAMES}")


def evaluate(r: Rankings, metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query values for each named metric (in the order of `r.qids`)."""
    fns = {name: metric_function(name) for name in metrics}
    return {name: fn(r) for name, fn in fns.items()}


# --- from TREC tables to Rankings ---------------------------------------------------------------

class DuplicateDocument(ValueError):
    """A run (or qrels) lists the same document twice for one query; `row` is its 0-based data row."""

    def __init__(self, qid: str, docno: str, row: int, where: str = "run"):
        self.qid, self.docno, self.row, self.where = qid, docno, row, where
        super().__init__(f"{where} lists document {docno!r} twice for query {qid!r}")


@dataclass(frozen=True)
class Coverage:
    """How the run's queries and the qrels' queries overlapped (trec_eval reports none of this)."""

    evaluated: int
    run_only: int        # queries in the run without judgements: ignored, as trec_eval does
    qrels_only: int      # judged queries missing from the run: ignored unless complete=True
    no_relevant: int     # evaluated queries with no relevant document: they score 0


def rankings_from_tables(run, qrels, level: float = 1, complete: bool = False) -> tuple[Rankings, Coverage]:
    """Join a run (qid, docno, score) with qrels (qid, docno, rel) into trec_eval-ordered Rankings.

    Both are pyarrow tables (see ``evalcore.datasets.trec``). Work is done with Arrow kernels and
    numpy on whole columns: the run's query ids are looked up among the judged queries, each
    query's documents are sorted by score descending with ties broken by docno descending (the
    rank column is ignored, as in trec_eval), and each document's relevance is found by an integer
    key (query code, qrels document code). ``complete=True`` keeps judged queries that the run
    lacks, scoring them 0 (trec_eval -c). A document listed twice for a query raises
    DuplicateDocument.
    """
    import pyarrow.compute as pc

    q_vocab = pc.unique(qrels.column("qid").combine_chunks())
    n_q = len(q_vocab)
    qrels_q = _codes(pc.index_in(qrels.column("qid"), value_set=q_vocab))
    run_q = pc.index_in(run.column("qid"), value_set=q_vocab)
    known = pc.is_valid(run_q)
    run_rows = np.arange(run.num_rows, dtype=np.int64)
    run_only = 0
    if pc.any(pc.invert(known)).as_py():  # drop queries nobody judged (trec_eval ignores them)
        run_only = len(pc.unique(pc.filter(run.column("qid"), pc.invert(known))))
        run = run.filter(known)
        run_q = pc.filter(run_q, known)
        run_rows = run_rows[np.asarray(known.to_numpy(zero_copy_only=False), dtype=bool)]
    codes = _codes(run_q).astype(np.int32)

    rel_values, row_gain = _row_gains(run, qrels, codes, qrels_q)
    final, q_sorted = _trec_order(run, codes, q_vocab, run_rows)
    gains = row_gain[final]

    counts = np.bincount(q_sorted, minlength=n_q)
    keep = np.ones(n_q, dtype=bool) if complete else counts > 0
    relevant = (rel_values > 0) & (rel_values >= level)
    num_rel = np.bincount(qrels_q, weights=relevant, minlength=n_q).astype(np.int64)
    positive = rel_values > 0
    ideal_order = np.lexsort((-rel_values[positive], qrels_q[positive]))
    ideal_q = qrels_q[positive][ideal_order]
    ideal_vals = rel_values[positive][ideal_order]

    # Keep only the evaluated queries; rows belong to kept queries by construction unless
    # complete=False dropped qrels-only queries (which have no rows).
    remap = np.cumsum(keep) - 1
    starts = np.concatenate(([0], np.cumsum(counts[keep])))
    ideal_keep = keep[ideal_q]
    ideal_counts = np.bincount(remap[ideal_q[ideal_keep]], minlength=int(keep.sum()))
    ideal_starts = np.concatenate(([0], np.cumsum(ideal_counts)))
    qids = np.asarray(q_vocab.to_pylist(), dtype=object)[keep]
    rankings = Rankings.make(qids, starts, gains, num_rel[keep], ideal_starts, ideal_vals[ideal_keep], level,
                             row_query=remap[q_sorted])
    coverage = Coverage(evaluated=int(keep.sum()), run_only=run_only,
                        qrels_only=int(np.count_nonzero(counts == 0)),
                        no_relevant=int(np.count_nonzero(num_rel[keep] == 0)))
    return rankings, coverage


def _row_gains(run, qrels, codes: np.ndarray, qrels_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relevance of every run row (file order; 0 when unjudged), found through integer keys
    (query code x n_docs + qrels-document code) and a binary search over the sorted qrels keys.
    Also returns the qrels' relevance values. A document judged twice for a query is an error."""
    import pyarrow.compute as pc

    d_vocab = pc.unique(qrels.column("docno").combine_chunks())
    n_d = max(len(d_vocab), 1)
    qrels_key = qrels_q * n_d + _codes(pc.index_in(qrels.column("docno"), value_set=d_vocab))
    order = np.argsort(qrels_key, kind="stable")
    qrels_key_sorted = qrels_key[order]
    repeated = qrels_key_sorted[1:] == qrels_key_sorted[:-1]
    if np.any(repeated):
        i = int(order[1:][repeated][0])
        raise DuplicateDocument(str(qrels.column("qid")[i]), str(qrels.column("docno")[i]), i, "qrels")
    rel_values = qrels.column("rel").to_numpy().astype(np.float64)
    doc_codes = pc.index_in(run.column("docno"), value_set=d_vocab)
    judged = np.flatnonzero(np.asarray(pc.is_valid(doc_codes).to_numpy(zero_copy_only=False), dtype=bool))
    row_gain = np.zeros(len(codes), dtype=np.float64)
    if len(judged):
        keys = codes[judged].astype(np.int64) * n_d + _codes(pc.drop_null(doc_codes))
        pos = np.searchsorted(qrels_key_sorted, keys)
        pos[pos >= len(qrels_key_sorted)] = 0
        found = qrels_key_sorted[pos] == keys
        row_gain[judged[found]] = rel_values[order[pos[found]]]
    return rel_values, row_gain


def _trec_order(run, codes: np.ndarray, q_vocab, run_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval's order as a permutation of the run rows, plus each ordered row's query code.

    First by query, then docno descending, which puts a repeated document next to itself (the
    duplicate check); then a stable sort by (query, score descending), which keeps tied scores
    in docno-descending order: trec_eval's tie rule, without a string comparison in the second sort.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    by_doc = pc.sort_indices(pa.table({"q": codes, "d": run.column("docno")}),
                             sort_keys=[("q", "ascending"), ("d", "descending")]).to_numpy()
    docs = run.column("docno").take(by_doc)
    q_by_doc = codes[by_doc]
    if len(docs) > 1:
        same = np.asarray(pc.equal(docs.slice(1), docs.slice(0, len(docs) - 1)).to_numpy(zero_copy_only=False),
                          dtype=bool)
        dup = np.flatnonzero(same & (q_by_doc[1:] == q_by_doc[:-1]))
        if len(dup):
            j = int(dup[0]) + 1
            raise DuplicateDocument(str(q_vocab[int(q_by_doc[j])]), str(docs[j]), int(run_rows[by_doc[j]]))
    scores = run.column("score").to_numpy()[by_doc]
    by_score = pc.sort_indices(pa.table({"q": q_by_doc, "s": scores}),
                               sort_keys=[("q", "ascending"), ("s", "descending")]).to_numpy()
    return by_doc[by_score], q_by_doc[by_score].astype(np.int64)


def _codes(arr) -> np.ndarray:
    """Arrow int32 index array (possibly chunked, no nulls) -> int64 numpy array."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64)
