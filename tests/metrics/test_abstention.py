"""dont_know detection, abstention rates and the Korean plan's negative-question rules."""

import pytest

from evalcore.metrics.abstention import SPECS, detect_dont_know
from evalcore.metrics.base import ScoringContext
from evalcore.schemas import EvalQuestion, EvalResponse

BY_NAME = {s.name: s for s in SPECS}


def run(name, q, answer="", options=None, **resp):
    r = EvalResponse(question_id=q.id, method="m", answer=answer, **resp)
    return BY_NAME[name].compute([(q, r)], ScoringContext(run_id="t", options=options or {}))[0]


def resp(answer, **kw):
    return EvalResponse(question_id="q", method="m", answer=answer, **kw)


@pytest.mark.parametrize("answer", ["I don't know.", "I don’t have enough information to answer.",
                                    "N/A", "  unknown ", "", "해당 정보를 찾을 수 없습니다.", "잘 모르겠습니다",
                                    "확인 불가", "관련 내용이 없습니다"])
def test_dont_know_phrases(answer):
    assert detect_dont_know(resp(answer))[0] is True


@pytest.mark.parametrize("answer", ["The Normans were in Normandy in the 10th century.",
                                    "The author is unknown to most readers, but it was Voss.",
                                    "Knowledge graphs help.", "1987년에 공개되었습니다."])
def test_answers_are_not_dont_know(answer):
    assert detect_dont_know(resp(answer))[0] is False


def test_explicit_field_wins_and_phrases_configurable():
    assert detect_dont_know(resp("I don't know", abstained=False))[0] is False
    assert detect_dont_know(resp("Paris", abstained=True))[1] == {"by": "abstained_field"}
    opts = {"dont_know_phrases": {"en": ["no idea"], "ko": []}}
    assert detect_dont_know(resp("No idea, sorry"), opts)[0] is True
    assert detect_dont_know(resp("정보가 없습니다"), opts)[0] is False  # ko list replaced by an empty one


def test_rates_are_per_question_indicators_with_reasons():
    ans = EvalQuestion(id="a", question="?", ground_truth="x")
    una = EvalQuestion(id="u", question="?", answerable=False)
    assert run("abstention_false_positive_rate", ans, "I don't know").value == 1.0
    assert run("abstention_false_positive_rate", una, "x").reason == "answerable questions only"
    assert run("abstention_false_negative_rate", una, "It was 2.6 million").value == 1.0
    assert run("abstention_false_negative_rate", ans, "x").reason == "unanswerable questions only"
    assert run("unanswerable_accuracy", una, "I cannot answer that").value == 1.0
    assert run("unanswerable_accuracy", ans, "x").value == 1.0
    err = run("unanswerable_accuracy", ans, "", error="HTTP 500")
    assert err.value != err.value and err.reason == "target error"


KOREAN_NEGATIVES = [
    ("should_not_hallucinate", [], "해당 ETF는 존재하지 않습니다.", "해당 ETF의 수익률은 12%입니다."),
    ("should_correct_premise", ["미래에셋"], "TIGER ETF는 삼성이 아니라 미래에셋자산운용이 운용합니다.",
     "네, 삼성자산운용이 운용합니다."),
    ("should_not_fabricate_data", [], "2031년 자료는 확인 불가합니다.", "2031년 수익률은 8.1%였습니다."),
    ("should_provide_accurate_disclaimer", [], "원금이 보장되는 상품이 아닙니다.", "원금이 보장됩니다."),
]


@pytest.mark.parametrize("check,keywords,good,bad", KOREAN_NEGATIVES)
def test_korean_negative_rules(check, keywords, good, bad):
    q = EvalQuestion(id="n", question="?", category="negative", answerable=False,
                     negative_check=check, expected_keywords=keywords)
    passed = run("negative_detection", q, good)
    assert passed.value == 1.0 and passed.details["check_type"] == check
    assert run("negative_detection", q, bad).value == 0.0


def test_negative_rules_english_and_configurable():
    q = EvalQuestion(id="n", question="?", category="negative", negative_check="should_provide_accurate_disclaimer")
    assert run("negative_detection", q, "Returns are not guaranteed.").value == 1.0
    assert run("negative_detection", q, "Returns are guaranteed.").value == 0.0
    custom = {"negative_rules": {"should_provide_accurate_disclaimer": {"en": [["risk"]]}}}
    assert run("negative_detection", q, "There is risk.", options=custom).value == 1.0


def test_negative_needs_correcting_term_and_category():
    q = EvalQuestion(id="n", question="?", category="negative", negative_check="should_correct_premise")
    assert "expected_keywords" in run("negative_detection", q, "x").reason
    assert run("negative_detection", EvalQuestion(id="p", question="?"), "x").reason == "not a negative question"
    default = run("negative_detection", EvalQuestion(id="d", question="?", category="negative"), "정보가 없습니다")
    assert default.value == 1.0 and default.details["defaulted"] is True
