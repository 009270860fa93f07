"""The heuristic judge against every gold answer, and its AUCs on the labelled shared sets.

The AUC checks run bench/bench_heuristic_judge.py's own labelled sets and scorers (the numbers
docs/judges.md reports), so the test and the published table cannot drift apart.
"""

import importlib.util
import sys
from pathlib import Path

from evalcore.judges.heuristic import HeuristicJudge, run_task
from evalcore.judges.tasks import build_prompt
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged import SPECS
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
        with_list = build_prompt(task, {**base, "answers": ["Rollo", "Hrolfr Ganger"]})
        assert with_list == build_prompt(task, base), task


def test_containment_ranks_below_an_exact_match_and_above_partial_overlap():
    golds = {"question": "Where is Normandy?", "ground_truth": "France"}
    exact = run_task("answer_correctness", {**golds, "answer": "France"})["score"]
    inside = run_task("answer_correctness", {**golds, "answer": "Normandy is a region in northern France."})["score"]
    other = run_task("answer_correctness", {**golds, "answer": "Normandy is a region in Italy."})["score"]
    assert exact == 1.0 > inside == 0.9 > other


def test_names_and_numbers_must_be_found_for_support():
    """A missing name or number sinks a claim however many other words it shares (the old
    85%-of-words rule accepted the first claim); one paraphrased verb in four other words does
    not (the old rule rejected the third)."""
    ctx = ["The Nile flows north through Egypt and Sudan into the Mediterranean Sea, about 6,650 km."]
    claims = ["The Nile flows north through Egypt and Uganda into the Mediterranean Sea.",
              "The Nile is about 7,000 km long.",
              "The Nile travels north through Egypt into the sea."]
    out = run_task("context_review", {"question": "?", "ground_truth": "", "contexts": ctx, "statements": [],
                                      "claims": claims})
    assert [c["verdict"] for c in out["claims"]] == [0, 0, 1]
    assert "uganda" in out["claims"][0]["reason"] and "7000" in out["claims"][1]["reason"]


def test_stored_values_name_the_new_heuristic():
    assert HeuristicJudge.model == "lexical-v2"
    assert BY_NAME["answer_correctness"].compute(
        [_second_gold_item("Rollo")], ScoringContext(run_id="x", options={"judge": "heuristic"})
    )[0].judge_id.startswith("heuristic:lexical-v2/")


def test_answer_correctness_auc_at_least_the_best_lexical_metric(shared_data):
    bench = _bench()
    for name, build in bench.CORRECTNESS_SETS.items():
        cases = build(shared_data)
        labels = [c.label for c in cases]
        ours = bench.auc(labels, bench.metric("answer_correctness", cases))
        lexical = {m: bench.auc(labels, bench.metric(m, cases)) for m in ("token_f1", "exact_match")}
        print(f"\n{name}: heuristic {ours:.3f}, " + ", ".join(f"{m} {v:.3f}" for m, v in lexical.items()))
        assert ours >= max(lexical.values()), name


# Measured when the names-and-numbers rule went in (bench/bench_heuristic_judge.py): HaluEval
# held-out half 0.888 (0.866 with the previous 85%-of-words rule), RAGChecker 0.841 (0.750).
# The floors sit between the two, so the previous rule fails them.
FAITHFULNESS_FLOORS = {"halueval_held_out": 0.88, "ragchecker": 0.82}


def test_faithfulness_improves_off_its_tuning_set(shared_data):
    bench = _bench()
    for name, floor in FAITHFULNESS_FLOORS.items():
        cases = bench.FAITHFULNESS_SETS[name](shared_data)
        value = bench.auc([c.label for c in cases], bench.metric("faithfulness", cases))
        print(f"\n{name}: heuristic faithfulness AUC {value:.3f} (floor {floor})")
        assert value >= floor, name


def test_faithfulness_holds_on_its_tuning_set(shared_data):
    bench = _bench()
    cases = bench.FAITHFULNESS_SETS["halueval_tune"](shared_data)
    value = bench.auc([c.label for c in cases], bench.metric("faithfulness", cases))
    assert value >= 0.91, value  # 0.920 measured; 0.908 with the previous rule
