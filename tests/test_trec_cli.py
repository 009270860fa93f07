"""`evalcore trec` end to end through the real CLI app, on trec_eval's own test files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import InputError

runner = CliRunner()


@pytest.fixture(scope="module")
def ref(shared_data):
    return shared_data / "trec_eval_reference"


def expected_all(path) -> dict[str, str]:
    rows = (line.split() for line in path.read_text().splitlines())
    return {m: v for m, q, v in rows if q == "all"}


def trec(*args):
    return runner.invoke(app, ["trec", *map(str, args)])


def test_json_means_equal_trec_eval(ref):
    res = trec(ref / "qrels.test", ref / "results.test", "--json", "-m", "ndcg_cut_10,recip_rank,map,P_5,recall_100")
    assert res.exit_code == 0, res.output
    means = json.loads(res.stdout)
    exp = expected_all(ref / "out.test.a")
    assert list(means) == ["ndcg_cut_10", "recip_rank", "map", "P_5", "recall_100"]
    assert {k: f"{v:.4f}" for k, v in means.items()} == {k: exp[k] for k in means}
    assert "3 queries scored" in res.stderr


def test_our_names_and_default_metrics(ref):
    res = trec(ref / "qrels.test", ref / "results.test", "--json")
    assert res.exit_code == 0, res.output
    means = json.loads(res.stdout)
    assert set(means) == {"ndcg@10", "mrr@10", "map", "recall@100", "P_10"}
    exp = expected_all(ref / "out.test.a")
    assert f"{means['ndcg@10']:.4f}" == exp["ndcg_cut_10"] and f"{means['P_10']:.4f}" == exp["P_10"]
    # mrr@10 ignores relevant documents below rank 10, so it cannot exceed trec_eval's recip_rank
    assert means["mrr@10"] <= float(exp["recip_rank"]) + 1e-4


def test_text_per_query_graded_level_2(ref):
    res = trec(ref / "qrels.rel_level", ref / "results.test", "-l", "2", "-q", "-m", "ndcg_cut_10,map,num_rel")
    assert res.exit_code == 0, res.output
    rows = [line.split() for line in res.stdout.splitlines()]
    expected = [line.split() for line in (ref / "out.test.aql").read_text().splitlines()]
    wanted = {(m, q): v for m, q, v in expected if m in {"ndcg_cut_10", "map", "num_rel"}}
    assert {(m, q): v for m, q, v in rows} == wanted
    assert [q for m, q, _ in rows if m == "map"] == ["301", "302", "303", "all"]


def test_json_per_query_shape(ref):
    res = trec(ref / "qrels.test", ref / "results.test", "--json", "--per-query", "-m", "P_5")
    data = json.loads(res.stdout)
    assert set(data) == {"all", "queries"} and list(data["queries"]) == ["301", "302", "303"]
    assert data["all"]["P_5"] == pytest.approx(sum(q["P_5"] for q in data["queries"].values()) / 3)


def test_irregular_whitespace_and_complete(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d9 2\n")
    run = tmp_path / "run"
    run.write_text("q1\tQ0  d2 1 3.0 t\r\n  q1 Q0 d1 2 3.0 t \r\n\nq3 Q0 d1 1 1 t\n")
    res = trec(qrels, run, "--json", "-m", "recip_rank,P_1,num_ret")
    assert res.exit_code == 0, res.output
    # tie at 3.0: docno descending puts d2 first, so the relevant d1 is at rank 2
    assert json.loads(res.stdout) == {"recip_rank": 0.5, "P_1": 0.0, "num_ret": 2}
    assert "1 run queries without judgements ignored" in res.stderr
    assert "1 judged queries missing from the run ignored" in res.stderr
    completed = json.loads(trec(qrels, run, "--json", "-c", "-m", "recip_rank").stdout)
    assert completed == {"recip_rank": 0.25}


def test_errors_name_the_line(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n")
    bad = tmp_path / "bad_run"
    bad.write_text("q1 Q0 d1 1 2.0 t\n\nq1 Q0 d2 2 t\n")
    res = trec(qrels, bad)
    assert isinstance(res.exception, InputError) and res.exception.record == 3
    assert "expected 6 fields" in str(res.exception)
    score = tmp_path / "score_run"
    score.write_text("q1 Q0 d1 1 high t\n")
    res = trec(qrels, score)
    assert isinstance(res.exception, InputError) and (res.exception.record, res.exception.field) == (1, "score")
    dup = tmp_path / "dup_run"
    dup.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.5 t\n\nq1 Q0 d1 3 1.0 t\n")
    res = trec(qrels, dup)
    assert isinstance(res.exception, InputError) and res.exception.record == 4  # the second listing
    assert "'d1' twice" in str(res.exception)
    bad_qrels = tmp_path / "bad_qrels"
    bad_qrels.write_text("q1 0 d1 yes\n")
    res = trec(bad_qrels, dup)
    assert isinstance(res.exception, InputError) and res.exception.field == "relevance"


def test_unknown_metric_is_a_usage_error(ref):
    res = trec(ref / "qrels.test", ref / "results.test", "-m", "ndcg@10,bogus")
    assert res.exit_code == 2 and "unknown metric 'bogus'" in res.output


def test_no_overlap_is_an_error(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("a 0 d1 1\n")
    run = tmp_path / "run"
    run.write_text("b Q0 d1 1 1.0 t\n")
    res = trec(qrels, run)
    assert isinstance(res.exception, InputError) and "no query of the run" in str(res.exception)
