"""Lexical metrics: SQuAD parity on the real SQuAD 2.0 / HotpotQA files, keywords, numbers."""

import json
import re
import string
from collections import Counter

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.lexical import SPECS
from evalcore.schemas import EvalQuestion, EvalResponse

BY_NAME = {s.name: s for s in SPECS}


def score(name, q, answer, **resp):
    r = EvalResponse(question_id=q.id, method="m", answer=answer, **resp)
    return BY_NAME[name].compute([(q, r)], ScoringContext(run_id="t"))[0]


# The official SQuAD 2.0 evaluation rules, restated here as the parity reference.
def _ref_norm(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def _ref_f1(pred, gold):
    p, g = _ref_norm(pred).split(), _ref_norm(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    pr, rc = same / len(p), same / len(g)
    return 2 * pr * rc / (pr + rc)


def _squad(shared_data):
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    return [qa for para in data["data"][0]["paragraphs"] for qa in para["qas"]]


def test_squad_em_f1_parity_over_several_gold_answers(shared_data):
    qas = [qa for qa in _squad(shared_data) if not qa["is_impossible"]]
    assert len(qas) == 96
    checked = 0
    for i, qa in enumerate(qas):
        golds = [a["text"] for a in qa["answers"]]
        q = EvalQuestion(id=qa["id"], question=qa["question"], ground_truth=golds)
        # predictions: another annotator's span, a padded variant, or a truncated one
        base = golds[-1]
        pred = [base, f"The {base}.", " ".join(base.split()[: max(1, len(base.split()) // 2)]) + " extra"][i % 3]
        want_em = float(max(_ref_norm(pred) == _ref_norm(g) for g in golds))
        want_f1 = max(_ref_f1(pred, g) for g in golds)
        assert score("squad_em", q, pred).value == want_em, qa["id"]
        assert score("token_f1", q, pred).value == pytest.approx(want_f1, abs=1e-12), qa["id"]
        checked += 1
    assert checked == 96


def test_squad_hand_worked_cases(shared_data):
    qa = next(x for x in _squad(shared_data) if x["id"] == "56ddde6b9a695914005b9629")
    q = EvalQuestion(id=qa["id"], question=qa["question"], ground_truth=[a["text"] for a in qa["answers"]])
    assert score("squad_em", q, "In the 10th and 11th centuries!").value == 1.0
    # "10th century" vs "10th and 11th centuries": 1 shared token, P=1/2, R=1/4 -> F1 = 1/3
    assert score("token_f1", q, "10th century").value == pytest.approx(1 / 3)
    assert score("exact_match", q, "10th and 11th centuries.").value == 1.0
    assert score("exact_match", q, "the 10th and 11th centuries").value == 0.0  # no article stripping here


def test_unanswerable_follows_squad_v2_no_answer_rule(shared_data):
    qa = next(x for x in _squad(shared_data) if x["is_impossible"])
    q = EvalQuestion(id=qa["id"], question=qa["question"], answerable=False)
    assert score("squad_em", q, "").value == 1.0
    assert score("token_f1", q, "I don't know.").value == 1.0
    plausible = qa["plausible_answers"][0]["text"]
    assert score("exact_match", q, plausible).value == 0.0
    assert score("token_f1", q, "whatever", error="boom").value == 0.0


def test_hotpotqa_em_f1(shared_data):
    rows = json.loads((shared_data / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json").read_text())
    assert len(rows) == 53
    for i, row in enumerate(rows):
        q = EvalQuestion(id=row["_id"], question=row["question"], ground_truth=row["answer"])
        gold = row["answer"]
        pred = gold if i % 2 == 0 else f"I think it is {gold}"
        assert score("squad_em", q, pred).value == float(_ref_norm(pred) == _ref_norm(gold))
        assert score("token_f1", q, pred).value == pytest.approx(_ref_f1(pred, gold))
    yes_q = next(r for r in rows if r["answer"] == "yes")
    q = EvalQuestion(id=yes_q["_id"], question=yes_q["question"], ground_truth="yes")
    assert score("token_f1", q, "no").value == 0.0 and score("squad_em", q, "Yes.").value == 1.0


def test_no_ground_truth_is_nan_with_reason():
    q = EvalQuestion(id="x", question="q?")
    s = score("token_f1", q, "anything")
    assert s.value != s.value and s.reason == "no ground truth"
    s = score("keyword_hit", q, "anything")
    assert s.value != s.value and "no expected_keywords" in s.reason


def test_keywords_expected_and_extracted():
    q = EvalQuestion(id="k", question="?", expected_keywords=["Tavel", "Marsk", "1987"])
    s = score("keyword_coverage", q, "The Tavel river reaches the sea.")
    assert s.value == pytest.approx(1 / 3) and s.details["missing"] == ["Marsk", "1987"]
    assert score("keyword_hit", q, "nothing relevant").value == 0.0
    q2 = EvalQuestion(id="k2", question="?", ground_truth="Territory 118 has a rate change of 0.305%.")
    s = score("keyword_coverage", q2, "For territory 118 the rate change is 0.305%")
    assert s.value == 1.0 and s.details["source"] == "extracted"


def test_korean_keywords_with_particles():
    q = EvalQuestion(id="ko", question="운용사는?", expected_keywords=["미래에셋", "ETF", "1987"])
    s = score("keyword_coverage", q, "미래에셋자산운용은 1987년에 ETF를 출시했습니다.")
    assert s.value == 1.0
    assert score("keyword_hit", q, "삼성자산운용입니다").value == 0.0


def test_number_match():
    q = EvalQuestion(id="n", question="?", ground_truth="The premium is $1,604.50, a change of -0.133% (3 steps).")
    assert score("number_match", q, "It costs 1604.5 dollars; -0.133 %; 3").value == 1.0
    s = score("number_match", q, "It costs $1,604.50 and rises 0.133%")
    assert s.value == pytest.approx(1 / 3)  # the sign matters; 3 missing
    assert score("number_match", EvalQuestion(id="z", question="?", ground_truth="no numbers"), "1").reason


def test_answer_completeness():
    q = EvalQuestion(id="c", question="?", ground_truth="Ingrid Voss founded it; she studied variable stars.",
                     expected_keywords=["Ingrid Voss", "variable stars"])
    full = score("answer_completeness", q, "Ingrid Voss founded the observatory and studied variable stars.")
    assert full.value == 1.0
    short = score("answer_completeness", q, "Ingrid Voss.")  # 2 of 8 words, 1 of 2 keywords
    assert short.value == pytest.approx((2 / 8 + 0.5) / 2)
