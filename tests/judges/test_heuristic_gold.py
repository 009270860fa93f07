"""The heuristic judge against every gold answer, and its AUCs on the labelled shared sets.

The AUC checks run bench/bench_heuristic_judge.py's own labelled sets and scorers (the numbers
docs/judges.md reports), so the test and the published table cannot drift apart.
"""

import importlib.util
import sys
from pathlib import Path

from evalcore.judges.offline.judge import HeuristicJudge, run_task
from evalcore.judges.tasks import get_task
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged.specs import SPECS
from evalcore.schemas import EvalQuestion, EvalResponse, RetrievedChunk

BY_NAME = {s.name: s for s in SPECS}
BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_heuristic_judge.py"


def _bench():
    """The bench script as a module (registered first: its dataclass needs its module)."""
    name = "bench_heuristic_judge"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _second_gold_item(answer: str):
    """A question with two gold answers; the answer matches only the second one."""
    q = EvalQuestion(id="q", question="Who led the Norse settlers of Normandy?", ground_truth="Rollo",
                     answers=["Rollo", "Hrolfr Ganger"])
    r = EvalResponse(question_id="q", method="m", answer=answer,
                     retrieved=[RetrievedChunk(rank=1, text="Hrolfr Ganger, a Norse chieftain, led the settlers.")])
    return q, r


def _value(metric: str, item) -> float:
    ctx = ScoringContext(run_id="gold", options={"judge": "heuristic"})
    return BY_NAME[metric].compute([item], ctx)[0].value


def test_a_match_with_the_second_gold_answer_counts():
    right = _second_gold_item("Hrolfr Ganger led them.")
    wrong = _second_gold_item("William the Conqueror led them.")
    assert _value("answer_correctness", right) >= 0.9 > _value("answer_correctness", wrong)
    assert _value("answer_class", right) == 1.0 and _value("answer_class", wrong) == 0.0
    assert _value("judge_correctness", right) == 5.0 > _value("judge_correctness", wrong)
    assert _value("factual_accuracy", right) > _value("factual_accuracy", wrong)


def test_heuristic_takes_the_best_gold_answer_and_says_which():
    inp = {"question": "Who led them?", "ground_truth": "Rollo", "answers": ["Rollo", "Hrolfr Ganger"],
           "answer": "Hrolfr Ganger"}
    out = run_task("answer_correctness", inp)
    assert out["score"] == 1.0 and "gold answer 2 of 2" in out["reason"]
    # without the list only the ground truth counts
    assert run_task("answer_correctness", {**inp, "answers": []})["score"] == 0.0


def test_the_gold_list_does_not_change_an_llm_prompt():
    """`answers` is read by the heuristic only: an LLM judge's prompt (and so its cache key)
    is byte for byte what it was without it."""
    base = {"question": "Who led them?", "ground_truth": "Rollo", "answer": "Hrolfr Ganger"}
    for task in ("answer_correctness", "answer_class", "factual_accuracy"):
        with_list = get_task(task).prompt({**base, "answers": ["Rollo", "Hrolfr Ganger"]})
        assert with_list == get_task(task).prompt(base), task


def test_containment_ranks_below_an_exact_match_and_above_partial_overlap():
    golds = {"question": "Where is Normandy?", "ground_truth": "France"}
    exact = run_task("answer_correctness", {**golds, "answer": "France"})["score"]
    inside = run_task("answer_correctness", {**golds, "answer": "Normandy is a region in northern France."})["score"]
    other = run_task("answer_correctness", {**golds, "answer": "Normandy is a region in Italy."})["score"]
    assert exact == 1.0 > inside == 0.9 > other


def test_support_is_graded_and_the_reason_says_what_was_not_found():
    """A swapped name or number costs more than a changed verb, and a verbatim claim scores 1;
    the fitted threshold (0.882) is strict: one paraphrased verb in six words is already
    "not supported" (a limit docs/judges.md names), though it still ranks above the swaps."""
    ctx = ["The Nile flows north through Egypt and Sudan into the Mediterranean Sea, about 6,650 km."]
    claims = ["The Nile flows north through Egypt and Uganda into the Mediterranean Sea.",
              "The Nile is about 7,000 km long.",
              "The Nile travels north through Egypt into the sea.",
              "The Nile flows north through Egypt into the Mediterranean Sea."]
    out = run_task("context_review", {"question": "?", "ground_truth": "", "contexts": ctx, "statements": [],
                                      "claims": claims})["claims"]
    assert [c["verdict"] for c in out] == [0, 0, 0, 1]
    assert out[1]["support"] < out[0]["support"] < out[2]["support"] < out[3]["support"] == 1.0
    assert "name/number not found: uganda" in out[0]["reason"] and "7000" in out[1]["reason"]
    assert "not found: travels" in out[2]["reason"] and out[3]["context"] == 1


def test_heuristic_faithfulness_is_the_mean_support_of_the_claims():
    """The value ranks answers by graded support; the verdicts (and n_supported) stay 0/1."""
    q = EvalQuestion(id="q", question="Where does the Nile flow?", ground_truth="North.")
    r = EvalResponse(question_id="q", method="m",
                     answer="The Nile flows north through Egypt. The Nile is about 7,000 km long.",
                     retrieved=[RetrievedChunk(rank=1, text="The Nile flows north through Egypt and Sudan, "
                                                             "about 6,650 km.")])
    score = BY_NAME["faithfulness"].compute([(q, r)], ScoringContext(run_id="x", options={"judge": "heuristic"}))[0]
    supports = [s["support"] for s in score.details["statements"]]
    assert supports[0] == 1.0 > supports[1]
    assert abs(score.value - sum(supports) / 2) < 1e-9 and score.details["n_supported"] == 1


def test_stored_values_name_the_new_heuristic():
    assert HeuristicJudge.model == "lexical-v3"
    assert BY_NAME["answer_correctness"].compute(
        [_second_gold_item("Rollo")], ScoringContext(run_id="x", options={"judge": "heuristic"})
    )[0].judge_id.startswith("heuristic:lexical-v3/")


def test_answer_correctness_auc_at_least_the_best_lexical_metric(shared_data):
    bench = _bench()
    for name, build in bench.CORRECTNESS_SETS.items():
        cases = build(shared_data)
        labels = [c.label for c in cases]
        ours = bench.auc(labels, bench.metric("answer_correctness", cases))
        lexical = {m: bench.auc(labels, bench.metric(m, cases)) for m in ("token_f1", "exact_match")}
        print(f"\n{name}: heuristic {ours:.3f}, " + ", ".join(f"{m} {v:.3f}" for m, v in lexical.items()))
        assert ours >= max(lexical.values()), name


def test_the_support_rule_is_the_fit_on_the_tuning_set_alone(shared_data):
    """The protocol: refitting on the tuning rows (and nothing else) gives the frozen weights and
    threshold, and no hold-out set shares a case with the tuning set."""
    bench = _bench()
    ok, lines = bench.check_frozen(shared_data)
    assert ok, "\n".join(lines)
    tuning = {(c.question, c.answer) for c in bench.FAITHFULNESS_SETS[bench.TUNING_SET](shared_data)}
    assert bench.TUNING_SET not in bench.HOLD_OUT_SETS and len(bench.HOLD_OUT_SETS) >= 3
    for name in bench.HOLD_OUT_SETS:
        assert not tuning & {(c.question, c.answer) for c in bench.FAITHFULNESS_SETS[name](shared_data)}, name


def test_faithfulness_never_ranks_below_word_overlap_off_its_tuning_set(shared_data):
    """On every hold-out set the heuristic's faithfulness AUC is >= plain word overlap's and
    above the previous rule set's (lexical-v2); on the tuning set too."""
    bench = _bench()
    for name in [bench.TUNING_SET, *bench.HOLD_OUT_SETS]:
        cases = bench.FAITHFULNESS_SETS[name](shared_data)
        labels = [c.label for c in cases]
        ours = bench.auc(labels, bench.metric("faithfulness", cases))
        overlap = bench.auc(labels, bench.word_overlap(cases))
        previous = bench.auc(labels, bench.FAITHFULNESS_SCORES["lexical-v2"](cases))
        print(f"\n{name}: heuristic {ours:.3f}, word overlap {overlap:.3f}, lexical-v2 {previous:.3f}")
        assert ours >= overlap, name
        assert ours > previous, name
