"""The demo server, its corpus/questions, and the Python API end to end against it."""

from __future__ import annotations

import httpx
import pandas as pd

from evalcore.runner.config import EvalConfig
from evalcore.datasets import load_questions
from evalcore.demo import METHODS, questions_path
from evalcore.demo.corpus import default_corpus
from evalcore.scoring.queries import run_responses
from evalcore.store import query_df
from evalcore.pipeline import run_evaluation


def test_demo_questions_gold_matches_the_corpus():
    corpus = default_corpus()
    questions = load_questions(questions_path())
    assert len(questions) == 40 and 25 <= len(corpus.docs) <= 35
    categories = {q.category for q in questions}
    assert {"single_hop", "multi_hop", "aggregation", "inference", "negative"} <= categories
    assert sum("korean" in q.tags for q in questions) >= 3
    for q in questions:
        assert q.answerable == (q.category != "negative")
        for gold in q.gold_passages:
            chunk = corpus.by_id(gold.chunk_id)
            assert (chunk.rel_path, chunk.heading_path) == (gold.rel_path, gold.heading_path)
            assert any(k.casefold() in (chunk.text + q.ground_truth).casefold() for k in q.expected_keywords)
        for group in q.required_support_groups:
            assert set(group) <= set(q.gold_chunk_ids)


def test_demo_endpoints(demo_server):
    with httpx.Client(base_url=demo_server.url) as client:
        assert client.get("/health").json()["status"] == "ok"
        stats = client.get("/index/stats").json()
        assert stats["docs_indexed"] == len(default_corpus().docs) and stats["chunks"] > stats["docs_indexed"]
        assert set(client.get("/models/info").json()["methods"]) == set(METHODS)
        r = client.post("/query", json={"question": "When did the Tarn Observatory open?",
                                        "method": "basic_search", "top_k": 3}).json()
        assert "1972" in r["answer"] and r["retrieved"][0]["chunk_id"] == "tarn-observatory-0"
        assert len(r["retrieved"]) <= 3 and r["citations"] and r["timings"]["retrieval_ms"] >= 0
        neg = client.post("/query", json={"question": "What is the population of Lantern Point?",
                                          "method": "basic_search"}).json()
        assert neg["abstained"] is True
        assert client.post("/query", json={"question": "x", "method": "nope"}).status_code == 400
        assert client.post("/query", content=b"not json", headers={"Content-Type": "application/json"}).status_code == 400


def test_python_api_against_the_demo_server(demo_server, store):
    config = EvalConfig(name="api", target=demo_server.url, dataset=str(questions_path()), methods=list(METHODS),
                        top_k=5, concurrency=6, score=False, progress=False)
    result = run_evaluation(config, store)
    assert result.status == "complete" and result.asked == 120 and result.errors == {}
    responses = run_responses(store, result.run_id)
    assert len(responses) == 120
    by_method = {m: [r for r in responses if r.method == m] for m in METHODS}
    assert all(r.scope for r in by_method["local_search"])
    assert all(r.scope is None for r in by_method["basic_search"])
    assert all(r.timings.get("retrieval_ms") is not None and r.token_usage for r in responses)
    tokens = {m: sum(r.token_usage.input_tokens for r in rs) / len(rs) for m, rs in by_method.items()}
    assert tokens["llm_with_context"] > tokens["basic_search"]   # whole documents cost more
    abstained = {m: sum(bool(r.abstained) for r in rs) for m, rs in by_method.items()}
    assert abstained["llm_with_context"] < abstained["basic_search"]   # the eager method abstains least
    manifest = store.manifest(result.run_id)
    assert manifest.kind == "live" and manifest.methods == list(METHODS)
    assert manifest.target_info["index_stats"]["chunks"] == len(default_corpus().chunks)
    assert manifest.target_info["models_info"]["llm"]["model"] == "demo-extractive-1"
    assert manifest.counts["responses"] == 120 and manifest.counts["questions"] == 40
    assert manifest.config["targets"]["default"]["url"] == demo_server.url


def test_demo_command_scores_and_prints_a_leaderboard(tmp_path):
    import importlib.util

    from evalcore.demo.run_demo import format_leaderboard, run_demo
    from evalcore.store import RunStore

    store = RunStore(tmp_path / "runs")
    demo = run_demo(store, progress=False, semantic=False, judge=False, echo=lambda s: None)
    table = demo.leaderboard
    assert set(table.index) == set(METHODS)
    text = format_leaderboard(table)
    assert all(m in text for m in METHODS) and "latency_p50_ms" in text
    if importlib.util.find_spec("evalcore.scoring.engine") is None:
        assert any("scoring skipped" in n for n in demo.notes)
        return
    assert demo.run.scored
    values = query_df(store, "SELECT method, metric, value FROM metrics WHERE run_id = ?", [demo.run.run_id])
    assert set(values["method"]) == set(METHODS) and len(values) > 1000
    means = values.groupby(["metric", "method"])["value"].mean()
    assert isinstance(means, pd.Series)
    assert means["unanswerable_accuracy"].nunique() > 1 or means["token_f1"].nunique() > 1


def test_resume_after_a_scored_run_asks_nothing(demo_server, store):
    """Scoring adds its own keys to the manifest's config; resume must still read the snapshot."""
    from evalcore.pipeline import resume_run

    config = EvalConfig(target=demo_server.url, dataset=str(questions_path()), methods=["basic_search"],
                        samples=5, progress=False)
    result = run_evaluation(config, store)
    again = resume_run(result.run_id, store, progress=False)
    assert again.asked == 0 and again.status == "complete"
