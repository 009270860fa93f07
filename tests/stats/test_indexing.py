"""Indexing coverage figures from a target's index statistics."""

import pytest

from evalcore.errors import EvalcoreError
from evalcore.analysis.runs.indexing import indexing_coverage, run_indexing_coverage


def test_rates_and_token_figures_from_raw_counts():
    figures = indexing_coverage({"docs_processed": 40, "docs_skipped": 2, "zero_chunk_docs": 4,
                                 "chunks": 90, "chunks_skipped": 10, "chunk_tokens": [10, 20, 30, 40, 100],
                                 "versions": {"chunker": "h2/1"}})
    assert figures["zero_chunk_rate"] == 0.1 and figures["doc_skip_rate"] == 0.05
    assert figures["skipped_chunk_rate"] == 0.1  # 10 of the 100 chunks produced were skipped
    tokens = figures["tokens_per_chunk"]
    assert (tokens["min"], tokens["mean"], tokens["max"]) == (10.0, 40.0, 100.0)
    assert tokens["p95"] == pytest.approx(88.0)  # linear interpolation between 40 and 100
    assert figures["versions"] == {"chunker": "h2/1"}


def test_absent_figures_stay_absent_not_zero():
    figures = indexing_coverage({"chunks": 12})
    assert figures == {"chunks": 12}
    assert indexing_coverage(None) is None and indexing_coverage({}) is None


@pytest.mark.parametrize("bad", [{"chunks": -1}, {"chunks": "many"}, {"chunk_tokens": [1, float("nan")]}])
def test_bad_stats_are_clear_errors(bad):
    with pytest.raises(EvalcoreError):
        indexing_coverage(bad)


def test_demo_server_stats_through_a_run(tmp_path):
    """The demo server reports /index/stats; the live runner snapshots them into the manifest."""
    from evalcore.demo.corpus import load_corpus
    from evalcore.demo.server import index_stats

    stats = index_stats(load_corpus())
    per_target = run_indexing_coverage({"targets": {"default": {"index_stats": stats}}})
    figures = per_target["default"]
    assert figures["docs_processed"] == stats["docs_processed"] > 0
    assert figures["zero_chunk_rate"] == stats["zero_chunk_docs"] / stats["docs_processed"]


def test_coverage_by_doc_type(store):
    from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
    from evalcore.analysis.runs.indexing import coverage_by_doc_type
    from evalcore.store import FORMAT_VERSION

    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r", name="r",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([
        EvalQuestion(id="a", question="A?", gold_passages=[{"doc": "x/a.pdf"}]),
        EvalQuestion(id="b", question="B?", gold_passages=[{"doc": "x/b.md"}, {"doc": "x/c.pdf"}]),
        EvalQuestion(id="c", question="C?", gold_passages=[{"chunk_id": "k1"}]),
        EvalQuestion(id="d", question="D?"),
    ])
    writer.write_responses([EvalResponse(question_id=q, method="m") for q in "abcd"])
    values = {"a": 1.0, "b": 0.0, "c": 1.0, "d": float("nan")}
    writer.write_metrics([MetricValue(run_id="r", method="m", question_id=q, metric="hit_rate@5", value=v,
                                      group="retrieval", reason="no gold passages" if v != v else None)
                          for q, v in values.items()])
    writer.publish()
    rows = {r["doc_type"]: (r["mean"], r["n"]) for r in coverage_by_doc_type(store, "r")}
    assert rows == {"pdf": (0.5, 2), "md": (0.0, 1), "(unknown)": (1.0, 1)}


def test_coverage_by_doc_type_follows_the_one_question_rule(store):
    """The SQL grouping gives each question the types `_doc_types` gives it (extension of the last
    path segment only, metadata.doc_type when a string, lower case; several types count in each)."""
    from evalcore.analysis.runs.indexing import _doc_types, coverage_by_doc_type
    from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
    from evalcore.store import FORMAT_VERSION

    questions = [
        EvalQuestion(id="a", question="A?", gold_passages=[{"doc": "dir.v2/README"}], metadata={"doc_type": "HTML"}),
        EvalQuestion(id="b", question="B?", gold_passages=[{"doc": "x/b.tar.GZ"}], metadata={"doc_type": 5}),
        EvalQuestion(id="c", question="C?", gold_passages=[{"doc": "x/c.pdf"}, {"doc": "y/d.pdf"}]),
        EvalQuestion(id="d", question="D?", gold_passages=[{"doc": "dir.v2/README"}]),
    ]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="t", name="t",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions(questions)
    writer.write_responses([EvalResponse(question_id=q.id, method="m") for q in questions])
    values = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 1.0}
    writer.write_metrics([MetricValue(run_id="t", method="m", question_id=q, metric="hit_rate@5", value=v,
                                      group="retrieval") for q, v in values.items()])
    writer.publish()
    want: dict[str, list[float]] = {}
    for q in questions:
        for t in _doc_types(q) or {"(unknown)"}:
            want.setdefault(t, []).append(values[q.id])
    got = {r["doc_type"]: (r["mean"], r["n"]) for r in coverage_by_doc_type(store, "t")}
    assert got == {t: (sum(v) / len(v), len(v)) for t, v in want.items()}
    assert set(got) == {"html", "gz", "pdf", "(unknown)"}
