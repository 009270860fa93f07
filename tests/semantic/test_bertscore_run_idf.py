"""BERTScore with idf through the real scoring path (issue 16, item 2).

idf belongs to the run: it is computed once over the run's references, whatever chunks
score_run cuts the answers into, and the cached values of a pair are keyed by that idf.
The reference is the bert-score library given every pair at once (`idf_sents` = the run's
references), called with batch_size=1 (see test_bertscore_parity.py for why).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalcore.scoring.importer import import_recorded
from evalcore.store import query_df
from evalcore.scoring.engine import score_run
from tests.semantic.test_bertscore_parity import library

TOL = 1e-4
N_PAIRS = 420  # > 400, split into 3 chunks of 200/200/20 below


@pytest.fixture(scope="module")
def halueval_pairs(halueval_rows):
    """HaluEval: the hallucinated answer (candidate) against the right answer (reference); short,
    real, and with many tokens shared across references, so idf weights matter."""
    rows = [r for r in halueval_rows if r["right_answer"].strip() and r["hallucinated_answer"].strip()]
    assert len(rows) >= N_PAIRS
    return [(f"h{i:03d}", r["question"], r["hallucinated_answer"], r["right_answer"])
            for i, r in enumerate(rows[:N_PAIRS])]


def _import(store, tmp_path, pairs, name):
    path = tmp_path / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for qid, question, cand, ref in pairs:
            fh.write(json.dumps({"question_id": qid, "question": question, "ground_truth": ref,
                                 "answer": cand, "method": "m"}, ensure_ascii=False) + "\n")
    return import_recorded(store, path, name=name).run_id


def _stored(store, run_id, metric):
    df = query_df(store, "SELECT question_id, value FROM metrics WHERE run_id=? AND metric=? ORDER BY question_id",
                  [run_id, metric])
    return dict(zip(df.question_id, df.value))


def _library(model_path, cands, refs):
    """The library's numbers with the run's references as its idf sentences (one pair per
    batch, one torch thread: test_bertscore_parity.library)."""
    return library(model_path, cands, refs, num_layers=6, idf=True, idf_sents=refs)


def test_idf_is_run_wide_and_matches_the_library(halueval_pairs, store, tmp_path, minilm_path):
    run_id = _import(store, tmp_path, halueval_pairs, "idf-run")
    options = {"bertscore_idf": True, "progress": False}
    score_run(store, run_id, metrics=["bert_score_p", "bert_score_r", "bert_score_f1"], options=options,
              progress=False, chunk_size=200)
    cands = [c for _, _, c, _ in halueval_pairs]
    refs = [r for _, _, _, r in halueval_pairs]
    expected = _library(minilm_path, cands, refs)
    ids = [qid for qid, *_ in halueval_pairs]
    for column, metric in enumerate(["bert_score_p", "bert_score_r", "bert_score_f1"]):
        got = _stored(store, run_id, metric)
        diff = np.abs(np.array([got[q] for q in ids]) - expected[:, column])
        assert diff.max() < TOL, (metric, int((diff >= TOL).sum()), float(diff.max()))
    assert expected[:, 2].std() > 0.05  # real variety


def test_a_pair_scored_under_another_idf_is_not_reused(halueval_pairs, store, tmp_path, minilm_path):
    """The same (answer, reference) pair in a run with other references has another idf, so it
    must not take the value cached for the first run. The first run needs only other references
    than the second, not many: 60 pairs (twice the second's 30) give its pairs another idf."""
    small = halueval_pairs[:30]
    options = {"bertscore_idf": True, "progress": False}
    big_run = _import(store, tmp_path, halueval_pairs[:60], "big")
    small_run = _import(store, tmp_path, small, "small")
    score_run(store, big_run, metrics=["bert_score_f1"], options=options, progress=False, chunk_size=200)
    score_run(store, small_run, metrics=["bert_score_f1"], options=options, progress=False, chunk_size=7)
    expected = _library(minilm_path, [c for *_, c, _ in small], [r for *_, r in small])[:, 2]
    got = _stored(store, small_run, "bert_score_f1")
    assert np.abs(np.array([got[q] for q, *_ in small]) - expected).max() < TOL
    big = _stored(store, big_run, "bert_score_f1")
    assert any(abs(big[q] - got[q]) > 1e-3 for q, *_ in small)  # the idf really differs
