"""Parity of evalcore.metrics.trec_eval (and the per-question retrieval metrics) with trec_eval's own
expected outputs, pytrec_eval (trec_eval's C code) and, for what trec_eval lacks, scikit-learn,
on real qrels.

- trec_eval_reference: results.test against qrels.test (binary) and qrels.rel_level (graded,
  -l2); out.test.aq / out.test.aql print 4 decimals, so we compare the printed strings.
- pytrec_eval: 1e-9 on the same files and on MS MARCO qrels with seeded synthetic runs full of
  ties, which checks our tie-breaking (trec_eval: docno descending).
- MRR@10 and the exponential-gain nDCG@10 (not trec_eval measures): pytrec_eval's recip_rank
  on the run cut at 10, and scikit-learn's ndcg_score, on tie-free runs. ranx is compared in
  bench/bench_trec.py (its numba compilation costs minutes of a fresh install).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from evalcore.datasets.trec import load_trec, read_qrels, read_qrels_table, read_run, read_run_table
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.registry import METRICS
from evalcore.schemas import EvalResponse
from evalcore.metrics.trec_eval import evaluate, rankings_from_tables
from tests.optional import requires

pytrec_eval = requires("pytrec_eval", "trec_eval's C code, the reference")

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_NAMES = (["map", "recip_rank", "ndcg", "num_rel", "num_ret", "num_rel_ret", "success_1", "success_5", "success_10"]
              + [f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in CUTS])
PYTREC_MEASURES = {"map", "recip_rank", "ndcg", "num_rel", "num_ret", "num_rel_ret", "success.1,3,5,10",
                   "P.1,3,5,10,100", "recall.1,3,5,10,100,1000", "ndcg_cut.5,10,100", "map_cut.10,100"}


@pytest.fixture(scope="module")
def ref(shared_data) -> Path:
    return shared_data / "trec_eval_reference"


def expected_output(path: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        out.setdefault(qid, {})[measure] = value
    return out


def scored(qrels: Path, run: Path, names, level=1):
    rankings, coverage = rankings_from_tables(read_run_table(run), read_qrels_table(qrels), level=level)
    return rankings, coverage, evaluate(rankings, names)


def printed(name: str, value: float) -> str:
    return str(int(round(value))) if name.startswith("num_") else f"{value:.4f}"


@pytest.mark.parametrize("qrels_name, out_name, level", [
    ("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)])
def test_equal_to_trec_eval_expected_output(ref, qrels_name, out_name, level):
    exp = expected_output(ref / out_name)
    names = [n for n in TREC_NAMES if n in exp["all"]]
    assert len(names) == len(TREC_NAMES)
    rankings, coverage, values = scored(ref / qrels_name, ref / "results.test", names, level)
    assert list(rankings.qids) == ["301", "302", "303"] and coverage.evaluated == 3
    for name in names:
        for i, qid in enumerate(rankings.qids):
            assert printed(name, values[name][i]) == exp[qid][name], (name, qid)
        total = values[name].sum() if name.startswith("num_") else values[name].mean()
        assert printed(name, total) == exp["all"][name], name


def test_summary_output_without_q(ref):
    exp = expected_output(ref / "out.test.a")["all"]
    names = [n for n in TREC_NAMES if not n.startswith("num_")]
    _, _, values = scored(ref / "qrels.test", ref / "results.test", names)
    for name in names:
        assert f"{values[name].mean():.4f}" == exp[name], name


def pytrec(qrels: dict, run: dict, level: int) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=level).evaluate(run)


def assert_same_as_pytrec(qrels_path: Path, run_path: Path, level: int) -> int:
    reference = pytrec(read_qrels(qrels_path), read_run(run_path), level)
    names = sorted(next(iter(reference.values())))
    rankings, _, values = scored(qrels_path, run_path, names, level)
    assert sorted(rankings.qids) == sorted(reference)
    for name in names:
        ref_values = np.array([reference[q][name] for q in rankings.qids])
        np.testing.assert_allclose(values[name], ref_values, rtol=0, atol=1e-9, err_msg=name)
    return len(rankings.qids)


@pytest.mark.parametrize("qrels_name, level", [("qrels.test", 1), ("qrels.rel_level", 1), ("qrels.rel_level", 2)])
def test_equal_to_pytrec_eval_on_reference_files(ref, qrels_name, level):
    assert assert_same_as_pytrec(ref / qrels_name, ref / "results.test", level) == 3


def synthetic_run(qrels: dict[str, dict[str, int]], path: Path, seed: int, ties: bool, extra_queries: int = 0,
                  depth: int = 100) -> Path:
    """`depth` documents per judged query: judged ones at random ranks (some left out) plus random
    passage ids. With ties=True scores take few values, so many documents tie."""
    rng = np.random.default_rng(seed)
    lines = []
    qids = list(qrels) + [f"unjudged{i}" for i in range(extra_queries)]
    for qid in qids:
        judged = [d for d in qrels.get(qid, {}) if rng.random() < 0.7]
        docs = list(dict.fromkeys(judged + [str(x) for x in rng.integers(0, 8_841_823, size=depth)]))[:depth]
        rng.shuffle(docs)
        scores = np.round(rng.random(len(docs)) * 3, 1) if ties else np.arange(len(docs), 0, -1) + 0.5
        lines += [f"{qid} Q0 {d} {i + 1} {s} synthetic\n" for i, (d, s) in enumerate(zip(docs, scores))]
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def msmarco(shared_data) -> Path:
    return shared_data / "msmarco_passage_qrels"


def test_pytrec_eval_msmarco_dev_with_ties(msmarco, tmp_path):
    qrels_path = msmarco / "qrels.msmarco-passage.dev-subset.txt"
    run = synthetic_run(read_qrels(qrels_path), tmp_path / "run.txt", seed=7, ties=True, extra_queries=5,
                        depth=30)
    assert assert_same_as_pytrec(qrels_path, run, 1) == 6980


@pytest.mark.parametrize("level", [1, 2])
def test_pytrec_eval_dl19_graded(msmarco, tmp_path, level):
    qrels_path = msmarco / "qrels.dl19-passage.txt"
    run = synthetic_run(read_qrels(qrels_path), tmp_path / "run.txt", seed=11, ties=True)
    assert assert_same_as_pytrec(qrels_path, run, level) == 43


def tie_free_copy(run_path: Path, out: Path) -> Path:
    """The same ranking (trec_eval order) with distinct scores, so ranx cannot reorder ties."""
    lines = []
    for qid, ranked in read_run(run_path).items():
        order = sorted(ranked, key=lambda d: (ranked[d], d), reverse=True)
        lines += [f"{qid} Q0 {d} {i + 1} {len(order) - i} tiefree\n" for i, d in enumerate(order)]
    out.write_text("".join(lines))
    return out


def top_k_run(run_path: Path, k: int, out: Path) -> Path:
    """The first k documents of each query in trec_eval's order (score descending, docno
    descending): recip_rank on it is MRR@k, which trec_eval itself has no cutoff for."""
    lines = []
    for qid, ranked in read_run(run_path).items():
        order = sorted(ranked, key=lambda d: (ranked[d], d), reverse=True)[:k]
        lines += [f"{qid} Q0 {d} {i + 1} {ranked[d]} top{k}\n" for i, d in enumerate(order)]
    out.write_text("".join(lines))
    return out


def exp_gain_ndcg_by_sklearn(qrels: dict, run: dict, qids, k: int) -> np.ndarray:
    """nDCG@k with gain 2^rel - 1 from scikit-learn, given the gains as y_true: the retrieved
    documents in trec_eval's order (tie-free scores) and the relevant documents the run missed
    below them, so the ideal ranking sees every judged document.

    All queries in one call (one call per query took 9 s on MS MARCO dev's 6,980): each row is
    padded to the longest with documents of gain 0 ranked below every real one, which change
    neither its DCG nor its ideal DCG, and `_ndcg_sample_scores` gives the per-query values that
    `ndcg_score` averages (the first rows are checked against `ndcg_score` itself, one by one)."""
    from sklearn.metrics import ndcg_score
    from sklearn.metrics._ranking import _ndcg_sample_scores

    rows = []
    for q in qids:
        ranked = sorted(run[q], key=lambda d: (run[q][d], d), reverse=True)
        missed = [d for d, rel in qrels[q].items() if rel > 0 and d not in run[q]]
        rows.append([2.0 ** max(qrels[q].get(d, 0), 0) - 1 for d in ranked + missed])
    width = max(2, max(map(len, rows)))
    gains = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        gains[i, :len(row)] = row
    scores = np.tile(np.arange(width, 0, -1, dtype=float), (len(rows), 1))  # the order given, pads last
    out = _ndcg_sample_scores(gains, scores, k=k)
    checked = [i for i, row in enumerate(rows) if len(row) > 1][:50]  # ndcg_score needs two documents
    for i in checked:
        gain, score = np.array([rows[i]]), np.array([[float(len(rows[i]) - j) for j in range(len(rows[i]))]])
        assert abs((ndcg_score(gain, score, k=k) if gain.any() else 0.0) - out[i]) <= 1e-12, i
    return out


@pytest.mark.parametrize("data", ["reference", "reference-graded", "msmarco-dev", "dl19"])
def test_metrics_trec_eval_lacks_equal_a_second_reference(ref, msmarco, tmp_path, data):
    """MRR@k and the exponential-gain nDCG (ranx's ndcg_burges) are not trec_eval measures:
    MRR@10 is pytrec_eval's recip_rank on the run cut at 10, nDCG_exp@10 is scikit-learn's
    ndcg_score with 2^rel - 1 as the relevance. (ranx agrees too: bench/bench_trec.py compares
    with it; its numba compilation took 150-270 s of a fresh install, too long for the suite.)"""
    if data.startswith("reference"):
        qrels_path = ref / ("qrels.test" if data == "reference" else "qrels.rel_level")
        run_path = tie_free_copy(ref / "results.test", tmp_path / "run.txt")
    else:
        qrels_path = msmarco / ("qrels.msmarco-passage.dev-subset.txt" if data == "msmarco-dev" else "qrels.dl19-passage.txt")
        run_path = synthetic_run(read_qrels(qrels_path), tmp_path / "run.txt", seed=3, ties=False,
                                 depth=20 if data == "msmarco-dev" else 100)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    levels = (1, 2) if data in ("reference-graded", "dl19") else (1,)
    for level in levels:
        rankings, _, ours = scored(qrels_path, run_path, ["mrr@10", "ndcg_exp@10"], level)
        cut = pytrec(qrels, read_run(top_k_run(run_path, 10, tmp_path / "top10.txt")), level)
        theirs = np.array([cut[q]["recip_rank"] for q in rankings.qids])
        np.testing.assert_allclose(ours["mrr@10"], theirs, rtol=0, atol=1e-9, err_msg=f"mrr@10 level {level}")
    rankings, _, ours = scored(qrels_path, run_path, ["ndcg_exp@10"], 1)
    theirs = exp_gain_ndcg_by_sklearn(qrels, run, rankings.qids, 10)
    np.testing.assert_allclose(ours["ndcg_exp@10"], theirs, rtol=0, atol=1e-9, err_msg="ndcg_exp@10")


# --- the per-question metrics agree with trec_eval on the same data ---------------------------------

PER_QUESTION = {"recall@5": "recall_5", "recall@10": "recall_10", "precision@5": "P_5", "mrr": None,
                "ndcg@5": "ndcg_cut_5", "ndcg@10": "ndcg_cut_10", "map@10": "map_cut_10",
                "hit_rate@1": "success_1", "hit_rate@5": "success_5", "hit_rate@10": "success_10",
                "recall@1": None, "recall@3": None, "precision@1": None, "precision@3": None,
                "ndcg_exp@5": None, "ndcg_exp@10": None}
# our stored `mrr` is cut at 10 (docs/metrics/retrieval.md); in the TREC evaluator that is `mrr@10` (bare `mrr` = recip_rank)
EVALUATOR_NAME = {"mrr": "mrr@10"}


def per_question_items(qrels_path: Path, run_path: Path, tmp_path: Path, level: int):
    run = read_run(run_path)
    topics = tmp_path / "topics.txt"
    topics.write_text("".join(f"{q}\ttopic {q}\n" for q in run))
    questions = load_trec(topics, qrels_path, relevance_threshold=level)
    items = []
    for q in questions:
        ranked = sorted(run[q.id], key=lambda d: (run[q.id][d], d), reverse=True)  # trec_eval's order
        items.append((q, EvalResponse(question_id=q.id, method="run", retrieved=[
            {"rank": i + 1, "chunk_id": d, "score": run[q.id][d]} for i, d in enumerate(ranked)])))
    return items


@pytest.mark.parametrize("qrels_name, out_name, level", [
    ("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)])
def test_per_question_metrics_agree_with_trec_eval(ref, tmp_path, qrels_name, out_name, level):
    items = per_question_items(ref / qrels_name, ref / "results.test", tmp_path, level)
    exp = expected_output(ref / out_name)
    names = [EVALUATOR_NAME.get(n, n) for n in PER_QUESTION]
    _, _, trec = scored(ref / qrels_name, ref / "results.test", names, level)
    ctx = ScoringContext(run_id="parity")
    for name, trec_name in PER_QUESTION.items():
        values = [s.value for s in METRICS[name].compute(items, ctx)]
        np.testing.assert_allclose(values, trec[EVALUATOR_NAME.get(name, name)], rtol=0, atol=1e-12, err_msg=name)
        if trec_name:
            assert [f"{v:.4f}" for v in values] == [exp[q.id][trec_name] for q, _ in items], name


def test_per_question_metrics_on_dl19_graded(msmarco, tmp_path):
    qrels_path = msmarco / "qrels.dl19-passage.txt"
    run_path = synthetic_run(read_qrels(qrels_path), tmp_path / "run.txt", seed=11, ties=True)
    items = per_question_items(qrels_path, run_path, tmp_path, 2)
    reference = pytrec(read_qrels(qrels_path), read_run(run_path), 2)
    ctx = ScoringContext(run_id="parity")
    for name, trec_name in {"ndcg@10": "ndcg_cut_10", "recall@10": "recall_10", "precision@5": "P_5",
                            "map@10": "map_cut_10", "hit_rate@5": "success_5"}.items():
        values = [s.value for s in METRICS[name].compute(items, ctx)]
        expected = [reference[q.id][trec_name] for q, _ in items]
        assert not any(math.isnan(v) for v in values)
        np.testing.assert_allclose(values, expected, rtol=0, atol=1e-9, err_msg=name)
