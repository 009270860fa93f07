"""BERTScore equals the bert-score library (same model and layer) to 1e-4 on real pairs.

The library is called with batch_size=1: with larger batches it floors each token's best
cosine at 0 whenever the batch had padding (an artefact of its masking, see metrics/bertscore.py),
so its own numbers then depend on which pairs share a batch. Unpadded, it is the formula.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.errors import EvalcoreError
from evalcore.metrics.bertscore import BertScorer

TOL = 1e-4


@pytest.fixture(scope="module")
def pairs(halueval_rows, squad_questions):
    """Real candidate/reference pairs: HaluEval right vs hallucinated answers (both directions
    of difficulty), SQuAD gold answers written differently by two annotators."""
    cands, refs = [], []
    for row in halueval_rows[:10]:
        cands += [row["hallucinated_answer"], row["right_answer"]]
        refs += [row["right_answer"], row["knowledge"][:200]]
    for q in [q for q in squad_questions if len(q["answers"]) >= 2][:10]:
        cands.append(q["answers"][1])
        refs.append(q["answers"][0])
    return cands, refs


def library(model_path, cands, refs, **kwargs):
    """The library's numbers, one pair per batch, on one torch thread: batch-of-one forward
    passes are several times slower with two threads on a busy two-core machine (the threads
    only change the order of float sums, far below TOL)."""
    import torch
    from bert_score import BERTScorer as Library

    scorer = Library(model_type=model_path, **kwargs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        p, r, f = scorer.score(cands, refs, batch_size=1)
    finally:
        torch.set_num_threads(threads)
    return np.stack([p.numpy(), r.numpy(), f.numpy()], axis=1)


def test_default_layer_matches_library(pairs, minilm_path):
    cands, refs = pairs
    ours = BertScorer(progress=False)
    assert ours.layer == 6 and not ours.idf and ours.baseline is None
    expected = library(minilm_path, cands, refs, num_layers=6)
    got = ours.score(cands, refs)
    assert np.abs(got - expected).max() < TOL
    assert got[:, 2].std() > 0.05  # real variety, not a degenerate all-equal sample


def test_idf_and_other_layer_match_library(pairs, minilm_path):
    cands, refs = pairs[0][:14], pairs[1][:14]
    expected = library(minilm_path, cands, refs, num_layers=6, idf=True, idf_sents=refs)
    assert np.abs(BertScorer(idf=True).score(cands, refs) - expected).max() < TOL
    expected = library(minilm_path, cands, refs, num_layers=3)
    assert np.abs(BertScorer(layer=3).score(cands, refs) - expected).max() < TOL


def test_rescale_with_baseline_file_matches_library(pairs, minilm_path, tmp_path):
    baseline = tmp_path / "baseline.tsv"
    lines = ["LAYER,P,R,F"] + [f"{i},{0.2 + i / 50:.4f},{0.25 + i / 60:.4f},{0.22 + i / 55:.4f}" for i in range(7)]
    baseline.write_text("\n".join(lines) + "\n")
    cands, refs = pairs[0][:8], pairs[1][:8]
    expected = library(minilm_path, cands, refs, num_layers=6, lang="en", rescale_with_baseline=True,
                       baseline_path=str(baseline))
    got = BertScorer(rescale=True, baseline_path=str(baseline)).score(cands, refs)
    assert np.abs(got - expected).max() < TOL


def test_dedup_batches_and_pair_cache(store, minilm_path):
    cands = ["the cat sat", "a dog barked loudly", "the cat sat", ""]
    refs = ["a cat was sitting", "the dog barked", "a cat was sitting", "anything"]
    scorer = BertScorer(store=store)
    out = scorer.score(cands, refs)
    assert np.array_equal(out[0], out[2]) and list(out[3]) == [0.0, 0.0, 0.0]  # empty side -> 0, as library
    passes = scorer.forward_passes
    assert passes >= 1
    again = BertScorer(store=store)  # a later process: pair results come from the store
    again.encoder._states.clear()  # forget in-memory token states: only the store may help
    np.testing.assert_allclose(again.score(cands, refs), out, atol=1e-7)
    assert again.forward_passes == passes  # no forward pass at all


def test_clear_errors(minilm_path):
    with pytest.raises(EvalcoreError, match="deberta-xlarge-mnli.*not available offline"):
        BertScorer(model="microsoft/deberta-xlarge-mnli")
    with pytest.raises(EvalcoreError, match="layer 9 out of range"):
        BertScorer(layer=9)
    with pytest.raises(EvalcoreError, match="no BERTScore rescale baseline"):
        BertScorer(rescale=True)
