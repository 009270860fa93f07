"""The Korean plan's keyword and negative metrics on the shipped plan-format example (issue 16, item 4).

Seed 001: keyword_hit / keyword_coverage apply to the 45 non-negative questions (single_hop,
multi_hop_2, multi_hop_3, aggregation, inference); negative questions are scored by
negative_detection, whose should_correct_premise check needs the correcting term, which the
plan's own questions carry only in `expected_answer`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evalcore.analysis.runs.means import overall_score_run
from evalcore.datasets import load_questions
from evalcore.scoring.importer import import_recorded
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.registry import METRICS
from evalcore.store import query_df
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring.engine import score_run

EXAMPLE = Path(__file__).resolve().parents[2] / "evalcore" / "examples" / "eval_questions_ko.yaml"

ANSWERS = {
    "SH-01": "기초지수는 나스닥100 지수입니다.",
    "MH2-01": "한빛자산운용이 운용하며 본사는 서울에 있습니다.",  # one of two keywords
    "MH3-01": "잘 모르겠습니다.",
    "AG-01": "모두 7개입니다.",
    "IN-01": "장기국채 ETF가 듀레이션이 길어 유리합니다.",
    "NG-01": "해당 상품에 대한 정보는 문서에 없습니다.",  # refuses: keywords of the expected answer too
    "NG-02": "HANBIT ETF는 다온자산운용이 아니라 한빛자산운용의 브랜드입니다.",
}


def one(name, q, answer, **options):
    r = EvalResponse(question_id=q.id, method="m", answer=answer)
    return METRICS[name].compute([(q, r)], ScoringContext(run_id="t", options=options))[0]


@pytest.fixture(scope="module")
def plan():
    return {q.id: q for q in load_questions(EXAMPLE)}


def test_keywords_are_not_scored_on_negative_questions(plan):
    for qid in ("NG-01", "NG-02"):
        for name in ("keyword_hit", "keyword_coverage"):
            s = one(name, plan[qid], ANSWERS[qid])
            assert math.isnan(s.value) and "negative question" in s.reason, (qid, name)
    assert one("keyword_hit", plan["SH-01"], ANSWERS["SH-01"]).value == 1.0
    assert one("keyword_coverage", plan["MH2-01"], ANSWERS["MH2-01"]).value == 0.5


def test_correct_premise_reads_the_term_from_the_expected_answer(plan):
    q = plan["NG-02"]
    assert q.negative_check == "should_correct_premise" and not q.expected_keywords
    good = one("negative_detection", q, ANSWERS["NG-02"])
    assert good.value == 1.0 and good.details["term_source"] == "expected_answer"
    assert "한빛자산운용" in good.details["terms"]
    assert not {"HANBIT ETF", "HANBIT ETF는"} & set(good.details["terms"])  # the question's own words
    accepts_premise = one("negative_detection", q, "다온자산운용의 HANBIT ETF 라인업은 나스닥100, 반도체TOP10입니다.")
    assert accepts_premise.value == 0.0


def test_correct_premise_prefers_the_checks_own_term():
    q = EvalQuestion(id="n", question="다온자산운용이 운용하는 HANBIT ETF는?", category="negative",
                     negative_check="should_correct_premise", ground_truth="HANBIT ETF는 한빛자산운용의 브랜드입니다.",
                     metadata={"correcting_term": "한빛"})
    s = one("negative_detection", q, "한빛 계열입니다.")
    assert s.value == 1.0 and s.details["term_source"] == "correcting_term" and s.details["terms"] == ["한빛"]
    bare = EvalQuestion(id="n", question="Who founded it?", negative_check="should_correct_premise")
    s = one("negative_detection", bare, "Jonas Vire.")
    assert math.isnan(s.value) and "correcting term" in s.reason


def test_plan_check_mapping_carries_the_term(tmp_path):
    path = tmp_path / "eval_questions.yaml"
    path.write_text("negative:\n  - id: NG-09\n    question: 삼성이 운용하는 TIGER ETF는?\n"
                    "    check: {type: should_correct_premise, correcting_term: 미래에셋}\n", encoding="utf-8")
    q = load_questions(path)[0]
    assert q.negative_check == "should_correct_premise" and q.metadata["correcting_term"] == "미래에셋"
    assert one("negative_detection", q, "TIGER ETF는 미래에셋자산운용이 운용합니다.").value == 1.0


def test_overall_score_uses_keywords_of_non_negative_questions_only(plan, store, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"question_id": k, "method": "m", "answer": v}, ensure_ascii=False) + "\n"
                            for k, v in ANSWERS.items()), encoding="utf-8")
    run_id = import_recorded(store, path, dataset=EXAMPLE).run_id
    score_run(store, run_id, metrics=["keyword_hit", "keyword_coverage", "negative_detection", "overall_score"],
              progress=False)
    df = query_df(store, "SELECT question_id, metric, value FROM metrics WHERE run_id=?", [run_id])
    values = {(r.question_id, r.metric): r.value for r in df.itertuples()}
    hit = [values[(q, "keyword_hit")] for q in ANSWERS if not q.startswith("NG")]
    assert hit == [1.0, 1.0, 0.0, 1.0, 1.0]
    for q in ("NG-01", "NG-02"):
        assert math.isnan(values[(q, "keyword_hit")])
        assert values[(q, "negative_detection")] == 1.0
        assert values[(q, "overall_score")] == 1.0  # only negative_detection applies
    means = df[df.metric.isin(["keyword_hit", "keyword_coverage", "negative_detection"])].groupby("metric")["value"].mean()
    assert means["keyword_hit"] == pytest.approx(4 / 5)  # over the 5 non-negative questions
    run = overall_score_run(dict(means))
    cov = means["keyword_coverage"]
    expected = (0.15 * 0.8 + 0.10 * cov + 0.15 * 1.0) / 0.40
    assert run["overall_score"] == pytest.approx(expected)
