"""Breakdowns on the real GraphRAG-Bench Cornwall questions, operations SQL, best/worst, grades."""

import json
from collections import Counter

import numpy as np
import pytest

from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.analysis.runs import means as A
from evalcore.analysis.read.sql import operations


@pytest.fixture(scope="module")
def bench(shared_data, tmp_path_factory):
    from evalcore.store import RunStore

    rows = json.loads((shared_data / "graphrag_bench" / "novel_questions_Novel-44557_cornwall.json").read_text())
    store = RunStore(tmp_path_factory.mktemp("gb") / "runs")
    recs = []
    for i, row in enumerate(rows):
        kind = row["question_type"]
        answer = row["answer"] if kind == "Fact Retrieval" else \
            ("I don't know." if kind in ("Creative Generation", "Contextual Summarize") else "No idea but " + row["answer"])
        recs.append({"question_id": row["id"], "question": row["question"], "ground_truth": row["answer"],
                     "question_type": kind, "tags": [row["source"]] + (["even"] if i % 2 == 0 else []),
                     "answer": answer, "latency_ms": 100 + i,
                     "error": "HTTP 502" if i % 25 == 3 else None})
    path = tmp_path_factory.mktemp("rec") / "gb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs))
    run_id = import_recorded(store, path, method="graph").run_id
    score_run(store, run_id, groups=["lexical", "abstention", "performance"], progress=False)
    return store, run_id, rows, recs


def test_breakdown_by_question_type(bench):
    store, run_id, rows, recs = bench
    by = A.summarize(store, run_id, by="question_type", metrics=["squad_em", "dont_know"])
    counts = Counter(r["question_type"] for r in rows)
    em = by[by.metric == "squad_em"].set_index("bucket")
    assert dict(em.n) == dict(counts)
    errors = Counter(r["question_type"] for r in recs if r["error"])
    fact = em.loc["Fact Retrieval"]
    # every Fact Retrieval answer is the gold answer, except the ones whose target failed (scored 0)
    assert fact["mean"] == pytest.approx(1 - errors["Fact Retrieval"] / counts["Fact Retrieval"])
    assert em.loc["Creative Generation", "mean"] == 0.0
    dk = by[by.metric == "dont_know"].set_index("bucket")
    for kind, n_err in errors.items():
        assert dk.loc[kind, "n_scored"] == counts[kind] - n_err
        assert f"target error ({n_err})" in dk.loc[kind, "nan_reasons"]
    assert sum(errors.values()) == 4  # questions 3, 28, 53, 78
    for row in by.itertuples():
        assert row.ci_low - 1e-12 <= row.mean <= row.ci_high + 1e-12


def test_breakdown_by_tag_counts_a_question_in_every_tag(bench):
    store, run_id, rows, _ = bench
    by = A.summarize(store, run_id, by="tag", metrics=["latency_ms"]).set_index("bucket")
    assert by.loc["Novel-44557", "n"] == len(rows) and by.loc["even", "n"] == (len(rows) + 1) // 2


def test_operations_sql_matches_numpy(bench):
    store, run_id, _, recs = bench
    ops = operations(store, run_id).iloc[0]
    lat = np.array([r["latency_ms"] for r in recs], dtype=float)
    assert ops.latency_p50_ms == pytest.approx(np.percentile(lat, 50))
    assert ops.latency_p95_ms == pytest.approx(np.percentile(lat, 95))
    assert ops.error_rate == pytest.approx(sum(1 for r in recs if r["error"]) / len(recs))
    assert np.isnan(ops.cost_per_query_usd)  # nothing was priced: unknown, not free
    by_type = operations(store, run_id, by="question_type")
    assert by_type.n.sum() == len(recs)


def test_answer_classes_by_question_type(bench):
    store, run_id, rows, recs = bench
    classes = A.answer_classes(store, run_id, by="question_type").set_index("bucket")
    counts = Counter(r["question_type"] for r in rows)
    errors = Counter(r["question_type"] for r in recs if r["error"])
    assert classes.loc["Creative Generation", "dont_know"] == counts["Creative Generation"] - errors["Creative Generation"]
    assert classes.loc["Fact Retrieval", "correct"] == counts["Fact Retrieval"] - errors["Fact Retrieval"]


def test_unknown_dimension_is_an_error(bench):
    store, run_id, _, _ = bench
    from evalcore.errors import EvalcoreError

    with pytest.raises(EvalcoreError, match="cannot group by"):
        A.summarize(store, run_id, by="answer; DROP TABLE x")


def test_overall_score_run_formula():
    means = {"keyword_hit": 0.8, "keyword_coverage": 0.6, "negative_detection": 1.0, "judge_correctness": 4.0,
             "judge_faithfulness": 5.0, "judge_completeness": 3.0}
    out = A.overall_score_run(means)
    assert out["overall_score"] == pytest.approx(.15 * .8 + .10 * .6 + .15 * 1 + .25 * .8 + .20 * 1 + .15 * .6)
    assert out["missing"] == []
