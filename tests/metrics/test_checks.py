"""Declarative per-question checks and the is_correct rule (the seeds' EF_1/EF_2/EF_3 cases)."""

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.checks import RuleError, SPECS, evaluate_rule
from evalcore.schemas import EvalQuestion, EvalResponse

BY_NAME = {s.name: s for s in SPECS}


def run(name, q, answer):
    r = EvalResponse(question_id=q.id, method="m", answer=answer)
    return BY_NAME[name].compute([(q, r)], ScoringContext(run_id="t"))[0]


EF3 = EvalQuestion(
    id="EF_3", question="What is the premium?", ground_truth="$604",
    checks=[{"type": "number", "name": "has_604", "number": 604},
            {"type": "contains_any", "name": "cannot_calculate",
             "values": ["cannot calculate", "unable to calculate", "계산할 수 없"]},
            {"type": "regex", "name": "has_calculation", "value": r"(×|\*|multipl)"}],
    is_correct_rule="has_604 and not cannot_calculate")


def test_ef3_rule():
    assert run("checks_pass", EF3, "293 × 2.061 = $604").value == 1.0
    assert run("checks_pass", EF3, "I cannot calculate it; maybe $604?").value == 0.0
    assert run("checks_pass", EF3, "About $600").value == 0.0
    s = run("checks_score", EF3, "293 × 2.061 = $604")
    assert s.value == pytest.approx(2 / 3) and s.details["failed"] == ["cannot_calculate"]


def test_each_check_type():
    q = EvalQuestion(id="q", question="?", checks=[
        {"type": "contains", "value": "Territory 118"},
        {"type": "not_contains", "value": "Territory 117"},
        {"type": "number", "number": -0.133, "tolerance": 0.001},
        {"type": "list_coverage", "values": ["Rule C-1", "Rule C-2", "Rule C-3"], "min_fraction": 0.6}])
    good = "Territory 118: -0.1335%. Rules: Rule C-1, Rule C-3"
    assert run("checks_pass", q, good).value == 1.0
    s = run("checks_pass", q, "Territory 117 and Territory 118, -0.2%, Rule C-1")
    assert s.value == 0.0
    flags = {k: v["pass"] for k, v in s.details["checks"].items()}
    assert flags == {"contains_1": True, "not_contains_2": False, "number_3": False, "list_coverage_4": False}
    assert s.details["checks"]["list_coverage_4"]["fraction"] == pytest.approx(1 / 3)


def test_rule_grammar_and_errors():
    res = {"a": True, "b": False, "c": True}
    assert evaluate_rule("a and (b or c)", res) is True
    assert evaluate_rule("not a or b", res) is False
    assert evaluate_rule("all", res) is False
    for bad in ("a and", "a b", "(a", "a and zzz", "a + b"):
        with pytest.raises(RuleError):
            evaluate_rule(bad, res)


def test_bad_rule_is_nan_with_reason_and_no_checks_is_nan():
    q = EvalQuestion(id="q", question="?", checks=[{"type": "contains", "value": "x"}], is_correct_rule="y")
    s = run("checks_pass", q, "x")
    assert s.value != s.value and "unknown check 'y'" in s.reason
    s = run("checks_pass", EvalQuestion(id="n", question="?"), "x")
    assert s.value != s.value and s.reason == "no checks on this question"
