"""Retrieval metrics per question: matching rules, edge cases, graded nDCG, support groups."""

from __future__ import annotations

import json
import math

import pytest

from evalcore.errors import InputError
from evalcore.metrics import retrieval as R
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.matching import gold_matches, heading_parts, judge_ranking, ranked_chunks
from evalcore.metrics.registry import METRICS
from evalcore.schemas import EvalQuestion, EvalResponse, GoldPassage
from evalcore.schemas.response import Citation, RetrievedChunk


def question(gold=(), **kw) -> EvalQuestion:
    return EvalQuestion(id=kw.pop("id", "q1"), question="what?", gold_passages=list(gold), **kw)


def response(chunks, **kw) -> EvalResponse:
    retrieved = [c if isinstance(c, dict) else {"chunk_id": c} for c in chunks]
    return EvalResponse(question_id=kw.pop("question_id", "q1"), method="m",
                        retrieved=[{"rank": i + 1, **c} for i, c in enumerate(retrieved)], **kw)


def score(name: str, q: EvalQuestion, r: EvalResponse):
    return METRICS[name].compute([(q, r)], ScoringContext(run_id="t"))[0]


def ids(*names):
    return [GoldPassage(chunk_id=n) for n in names]


RANKED = [n for n in METRICS if METRICS[n].group == "retrieval" and n.split("@")[0] in
          {"recall", "hit_rate", "precision", "mrr", "ndcg", "ndcg_exp", "map"}]


def test_registered_names():
    names = {s.name for s in R.SPECS}
    assert {"recall@1", "recall@3", "recall@5", "recall@10", "hit_rate@10", "recall_all@5", "precision@1",
            "precision@5", "mrr", "ndcg@5", "ndcg@10", "ndcg_exp@10", "map@10", "scope_miss_rate",
            "attribution_hit_rate"} <= names
    assert all(s.group == "retrieval" for s in R.SPECS)
    assert not METRICS["scope_miss_rate"].higher_is_better


@pytest.mark.parametrize("name", RANKED)
def test_no_gold_is_nan_with_reason(name):
    s = score(name, question(), response(["a", "b"]))
    assert math.isnan(s.value) and s.reason == "no gold passages"


def test_basic_values_against_hand_computation():
    q = question(ids("g1", "g2"))
    r = response(["x", "g2", "y", "z", "w", "v", "u", "t", "s", "g1", "extra"])
    assert score("recall@1", q, r).value == 0.0
    assert score("recall@3", q, r).value == 0.5
    assert score("recall@10", q, r).value == 1.0
    assert score("hit_rate@1", q, r).value == 0.0
    assert score("hit_rate@3", q, r).value == 1.0
    assert score("precision@3", q, r).value == pytest.approx(1 / 3)
    assert score("mrr", q, r).value == 0.5
    # AP@10 = (1/2 + 2/10) / 2
    assert score("map@10", q, r).value == pytest.approx((0.5 + 0.2) / 2)
    idcg = 1 + 1 / math.log2(3)
    assert score("ndcg@10", q, r).value == pytest.approx((1 / math.log2(3) + 1 / math.log2(11)) / idcg)


def test_fewer_retrieved_than_k():
    q = question(ids("g1", "g2"))
    r = response(["g1", "x"])
    assert score("precision@5", q, r).value == pytest.approx(1 / 5)  # divide by k, as trec_eval
    assert score("recall@10", q, r).value == 0.5
    assert score("ndcg@10", q, r).value == pytest.approx(1 / (1 + 1 / math.log2(3)))
    empty = response([])
    assert score("recall@5", q, empty).value == 0.0
    assert score("mrr", q, empty).value == 0.0


def test_mrr_cutoff():
    q = question(ids("g"))
    r = response([f"x{i}" for i in range(10)] + ["g"])
    assert score("mrr", q, r).value == 0.0
    assert score("recall@10", q, r).value == 0.0


def test_duplicate_ids_error_names_the_record():
    r = EvalResponse.model_construct(
        question_id="q7", method="m", retrieved=[RetrievedChunk(rank=1, chunk_id="a"), RetrievedChunk(rank=2, chunk_id="a")],
        citations=[], scope=None)
    with pytest.raises(InputError) as err:
        score("recall@5", question(ids("a"), id="q7"), r)
    assert "q7" in str(err.value) and "'a'" in str(err.value) and err.value.field == "retrieved.chunk_id"


def test_rank_order_not_score_order_decides():
    """Ties (or any score order) never re-sort: the target's ranks are the ranking."""
    q = question(ids("g"))
    r = EvalResponse(question_id="q1", method="m", retrieved=[
        {"rank": 2, "chunk_id": "g", "score": 0.5}, {"rank": 1, "chunk_id": "x", "score": 0.5}])
    assert [c.chunk_id for c in ranked_chunks(r)] == ["x", "g"]
    assert score("mrr", q, r).value == 0.5


def test_heading_normalisation_and_prefix():
    assert heading_parts(" Setup>  Install  >Linux ") == ("setup", "install", "linux")
    gold = GoldPassage(rel_path="guide/setup.md", heading_path="Setup > Install")
    hit = RetrievedChunk(rank=1, rel_path="./guide/setup.md", heading_path="Setup>  Install > Linux")
    assert gold_matches(gold, hit)
    for miss in (RetrievedChunk(rank=1, rel_path="guide/setup.md", heading_path="Setup > Installer"),
                 RetrievedChunk(rank=1, rel_path="guide/setup.md", heading_path="Setup"),
                 RetrievedChunk(rank=1, rel_path="guide/other.md", heading_path="Setup > Install")):
        assert not gold_matches(gold, miss)
    whole_doc = GoldPassage(rel_path="guide/setup.md")
    assert gold_matches(whole_doc, RetrievedChunk(rank=1, rel_path="guide/setup.md", heading_path="Anything"))


def test_snippet_rule():
    gold = GoldPassage(rel_path="a.md", heading_path="H", snippet="the  Tavel river")
    inside = RetrievedChunk(rank=1, rel_path="a.md", heading_path="H > x", text="Halden lies on THE Tavel\nriver.")
    outside = RetrievedChunk(rank=1, rel_path="a.md", heading_path="H > x", text="Halden lies on a lake.")
    assert gold_matches(gold, inside)
    assert not gold_matches(gold, outside)
    assert gold_matches(gold, outside, use_snippets=False)
    q = question([gold])
    r = response([{"rel_path": "a.md", "heading_path": "H", "text": "nothing here"}])
    assert score("recall@1", q, r).value == 0.0
    ctx = ScoringContext(run_id="t", options={"match_snippets": False})
    assert METRICS["recall@1"].compute([(q, r)], ctx)[0].value == 1.0


def test_anchor_credited_once_but_every_matching_chunk_is_precise():
    gold = GoldPassage(rel_path="a.md", heading_path="Intro")
    q = question([gold])
    r = response([{"rel_path": "a.md", "heading_path": "Intro > p1", "chunk_id": "c1"},
                  {"rel_path": "a.md", "heading_path": "Intro > p2", "chunk_id": "c2"}])
    assert score("recall@5", q, r).value == 1.0
    assert score("precision@1", q, r).value == 1.0
    assert score("precision@3", q, r).value == pytest.approx(2 / 3)
    assert score("ndcg@5", q, r).value == pytest.approx(1.0)  # never above 1
    assert score("map@10", q, r).value == pytest.approx(1.0)


def test_graded_ndcg_linear_and_exponential():
    q = question([GoldPassage(chunk_id="A", relevance=3), GoldPassage(chunk_id="B", relevance=1)])
    r = response(["B", "x", "A"])
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert score("ndcg@5", q, r).value == pytest.approx(dcg / idcg, abs=1e-12)
    dcg_exp = 1 + 7 / 2
    idcg_exp = 7 + 1 / math.log2(3)
    assert score("ndcg_exp@5", q, r).value == pytest.approx(dcg_exp / idcg_exp, abs=1e-12)
    assert score("ndcg@5", q, response(["A", "B"])).value == pytest.approx(1.0)


def test_relevance_level_from_metadata():
    """Like trec_eval -l2: grade-1 gold adds nDCG gain but is not 'relevant' for recall/MRR."""
    gold = [GoldPassage(chunk_id="A", relevance=2), GoldPassage(chunk_id="B", relevance=1)]
    q = question(gold, metadata={"relevance_level": 2})
    r = response(["B", "A"])
    assert score("recall@1", q, r).value == 0.0
    assert score("mrr", q, r).value == 0.5
    assert score("recall@5", q, r).value == 1.0
    assert score("ndcg@5", q, r).value == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    only_low = question([GoldPassage(chunk_id="B", relevance=1)], metadata={"relevance_level": 2})
    assert math.isnan(score("recall@5", only_low, r).value)


def test_recall_all_groups():
    q = question(ids("a", "b"), required_support_groups=[["a", "docs/a.md"], ["b"]])
    assert score("recall_all@5", q, response(["a", "b"])).value == 1.0
    assert score("recall_all@1", q, response(["a", "b"])).value == 0.0
    via_path = response([{"chunk_id": "zz", "rel_path": "docs/a.md"}, "b"])
    assert score("recall_all@3", q, via_path).value == 1.0
    missing = score("recall_all@10", q, response(["a", "x"]))
    assert missing.value == 0.0 and missing.details["missing_groups"] == [1]
    s = score("recall_all@5", question(ids("a")), response(["a"]))
    assert math.isnan(s.value) and s.reason == "no support groups"


def test_scope_miss_rate():
    q = question([GoldPassage(rel_path="guide/setup.md"), GoldPassage(rel_path="faq/x.md")])
    assert score("scope_miss_rate", q, response([], scope=["other/"])).value == 1.0
    assert score("scope_miss_rate", q, response([], scope=["guide"])).value == 0.0
    assert score("scope_miss_rate", q, response([], scope=["gui"])).value == 1.0  # folder, not prefix
    assert math.isnan(score("scope_miss_rate", q, response([])).value)
    no_paths = score("scope_miss_rate", question(ids("a")), response([], scope=["x"]))
    assert math.isnan(no_paths.value) and "rel_path" in no_paths.reason


def test_attribution_hit_rate():
    q = question([GoldPassage(chunk_id="g"), GoldPassage(rel_path="a.md", heading_path="H", snippet="zzz")])
    assert score("attribution_hit_rate", q, response([], citations=[Citation(chunk_id="g")])).value == 1.0
    by_anchor = response([], citations=[Citation(rel_path="a.md", heading_path="H > sub")])
    assert score("attribution_hit_rate", q, by_anchor).value == 1.0  # snippets not required of citations
    assert score("attribution_hit_rate", q, response([], citations=[Citation(chunk_id="x")])).value == 0.0
    assert score("attribution_hit_rate", q, response([])).value == 0.0
    unanswerable = question(ids("g"), answerable=False)
    assert math.isnan(score("attribution_hit_rate", unanswerable, response([])).value)


def _hotpot(shared_data):
    records = json.loads((shared_data / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json").read_text())
    out = []
    for rec in records:
        titles = list(dict.fromkeys(t for t, _ in rec["supporting_facts"]))
        q = EvalQuestion(id=rec["_id"], question=rec["question"], gold_passages=ids(*titles),
                         required_support_groups=[[t] for t in titles])
        ranking = [title for title, _ in rec["context"]]
        out.append((q, ranking, titles))
    return out


@pytest.mark.parametrize("reverse", [False, True])
def test_hotpotqa_support_groups(shared_data, reverse):
    """Each supporting title is a gold chunk; the 10 context paragraphs are the ranking."""
    data = _hotpot(shared_data)
    assert len(data) == 53
    ctx = ScoringContext(run_id="t")
    for k in (1, 3, 5, 10):
        items = []
        expected_all, expected_recall, expected_hit = [], [], []
        for q, ranking, titles in data:
            ranking = ranking[::-1] if reverse else ranking
            items.append((q, response(ranking, question_id=q.id)))
            top = set(ranking[:k])
            expected_all.append(float(all(t in top for t in titles)))
            expected_recall.append(sum(t in top for t in titles) / len(titles))
            expected_hit.append(float(any(t in top for t in titles)))
        got_all = [s.value for s in METRICS[f"recall_all@{k}"].compute(items, ctx)]
        got_recall = [s.value for s in METRICS[f"recall@{k}"].compute(items, ctx)]
        got_hit = [s.value for s in METRICS[f"hit_rate@{k}"].compute(items, ctx)]
        assert got_all == expected_all
        assert got_recall == pytest.approx(expected_recall)
        assert got_hit == expected_hit
    # the gold paragraphs are always among the 10, and rarely both at the top
    assert all(v == 1.0 for v in got_all)
    at_3 = [s.value for s in METRICS["recall_all@3"].compute(items, ctx)]
    assert 0 < sum(at_3) < len(at_3)


def test_judgement_is_shared_and_consistent():
    q = question(ids("a", "b"))
    j = judge_ranking(q, ranked_chunks(response(["b", "x", "a"])))
    assert j.gains == [1.0, 0.0, 1.0] and j.hits == [1.0, 0.0, 1.0] and j.n_relevant == 2


def test_citation_by_chunk_id_resolves_to_its_anchor():
    q = question([GoldPassage(rel_path="Guide/Setup.md", heading_path="setup")])
    r = response([{"chunk_id": "c9", "rel_path": "guide/setup.md", "heading_path": "Setup > Linux"}],
                 citations=[Citation(chunk_id="c9")])
    assert score("attribution_hit_rate", q, r).value == 1.0
    assert score("attribution_hit_rate", q, response([], citations=[Citation(chunk_id="c9")])).value == 0.0
