"""A metric's facts live on its MetricSpec (issue 26, item 1; issue 37, item 6): a metric
registered through the public API gets the right judge-agreement rule, order, key-metric place,
correctness vote, labelling unit, part in the failure diagnosis, leaderboard rank and options
from its spec alone, and no module keeps a side list of metric names."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest

from evalcore.analysis.read.correctness import classify, correct_metrics
from evalcore.analysis.runs.leaderboard import key_metric_names
from evalcore.analysis.questions.question_drilldown import key_metrics, metric_order
from evalcore.metrics.judge_agreement import category, disagree
from evalcore.errors import EvalcoreError
from evalcore.metrics.base import ANSWER_QUALITY, FAITHFULNESS, MetricOption, MetricSpec, Score, per_item
from evalcore.metrics.registry import METRICS, register_metric, unregister_metric

PKG = Path(__file__).resolve().parents[2] / "evalcore"


def _toy(name: str, **facts) -> MetricSpec:
    return MetricSpec(name, "lexical", per_item(lambda q, r: Score(1.0)), needs=frozenset({"answer"}), **facts)


@pytest.fixture
def registered():
    """Register toy specs for one test; unregistered after it."""
    names = []

    def add(spec: MetricSpec) -> MetricSpec:
        register_metric(spec)
        names.append(spec.name)
        return spec

    yield add
    for name in names:
        unregister_metric(name)


def test_a_point_scale_metric_is_judged_in_points(registered):
    # two judges 1 point apart on a 0-5 scale agree; the same gap read as a 0-1 score would not
    assert disagree("toy_points", 3.0, 4.0)  # unregistered: read as a 0-1 score
    registered(_toy("toy_points", scale="points"))
    assert not disagree("toy_points", 3.0, 4.0) and disagree("toy_points", 2.0, 4.0)
    assert category("toy_points", 3.2) == 3


def test_a_normalised_copy_is_judged_on_its_native_width(registered):
    registered(_toy("toy_points_norm", norm_width=4.0))
    assert not disagree("toy_points_norm", 0.5, 0.75)  # one point on a 1-5 scale
    assert disagree("toy_points_norm", 0.25, 0.75)
    assert category("toy_points_norm", 0.75) == 3


def test_a_class_metric_disagrees_on_any_difference(registered):
    registered(_toy("toy_class", scale="class"))
    assert disagree("toy_class", 0.0, 1.0) and not disagree("toy_class", 1.0, 1.0)


def test_importance_and_key_rank_come_from_the_spec(registered):
    assert "toy_first" not in key_metric_names()
    registered(_toy("toy_first", importance=(ANSWER_QUALITY, -1), key_rank=-1))
    registered(_toy("toy_faith", importance=(FAITHFULNESS, -1)))
    assert key_metric_names()[0] == "toy_first"
    assert metric_order(["zzz_other", "recall@5", "token_f1", "toy_faith", "toy_first"]) == \
        ["toy_first", "token_f1", "toy_faith", "recall@5", "zzz_other"]
    assert key_metrics(["faithfulness", "toy_faith", "toy_first"], per_tier=(1, 1, 0)) == ["toy_first", "toy_faith"]


def test_a_metric_that_decides_correct_is_asked_first(registered):
    wide = pd.DataFrame({"error": [None], "answer_class_label": [None], "token_f1": [0.1], "toy_vote": [0.9]})
    assert classify(wide).iloc[0].tolist() == ["WRONG", "token_f1"]
    registered(_toy("toy_vote", decides_correct=-1))
    assert correct_metrics()[0] == "toy_vote"
    assert classify(wide).iloc[0].tolist() == ["CORRECT", "toy_vote"]


def test_what_a_person_labels_comes_from_the_spec(registered):
    from evalcore.analysis.charts.distributions import grade_metrics
    from evalcore.analysis.labels import label_units as U

    assert U.unit("toy_grade") == U.RATING and "toy_grade" not in U.labelled()
    registered(_toy("toy_grade", label_kind="grade", label_rank=-1))
    registered(_toy("toy_claims", label_kind="claim", claims_from="ground_truth", label_rank=-1))
    assert U.unit("toy_grade") == U.Unit("grade") and grade_metrics()[0] == "toy_grade"
    assert U.unit("toy_claims") == U.Unit("claim", "ground_truth") and U.labelled()[0] == "toy_claims"
    # the built-ins, in the order the pages offered them when the list was kept by hand
    assert [m for m in U.labelled() if not m.startswith("toy_")] == [
        "faithfulness", "context_recall", "context_precision", "answer_class", "factual_grade", "factual_accuracy"]
    with pytest.raises(ValueError, match="claims_from"):
        _toy("toy_bad", label_kind="claim")
    with pytest.raises(ValueError, match="claims_from"):
        _toy("toy_bad", label_kind="grade", claims_from="answer")
    with pytest.raises(ValueError, match="unknown label_kind"):
        _toy("toy_bad", label_kind="stars")


def test_a_registered_grade_metric_is_counted_and_offered_for_review(registered, store):
    from evalcore.analysis.charts.distributions import label_counts
    from evalcore.analysis.labels.annotations import counts, queue
    from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
    from evalcore.store import FORMAT_VERSION

    registered(_toy("toy_grade", label_kind="grade", label_rank=-1))
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="g", name="g",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(3)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="m", answer="a") for i in range(3)])
    writer.write_metrics([MetricValue(run_id="g", method="m", question_id=f"q{i}", metric=metric, value=v,
                                      group="lexical", label=letter)
                          for i, (v, letter) in enumerate([(0.75, "B"), (1.0, "A"), (0.75, "B")])
                          for metric in ("toy_grade", "token_f1")])  # token_f1's labels are no grades
    writer.publish()
    assert label_counts(store, ["g:m"], "grade").set_index("label")["n"].to_dict() == {"A": 1, "B": 2}
    assert counts(store, "g").set_index("target_kind")["n_verdicts"].to_dict() == {"grade": 3}
    assert set(queue(store, "g", "grade", None, limit=5)["target_ref"]) == {"toy_grade"}


def test_the_failure_diagnosis_reads_its_evidence_from_the_spec(registered):
    from tests.analysis.answer_frames import explained_row as explain  # failure_modes.explained on one answer

    row = pd.Series({"answerable": True, "error": None, "dont_know": 0.0, "token_f1": 0.1, "hit_rate@5": 1.0,
                     "faithfulness": 1.0, "toy_miss": 0.0, "toy_faith": 0.5})
    assert explain(row)[0] == "faithful but wrong"  # neither toy has a part yet
    registered(_toy("toy_faith", unfaithful_evidence=-1))
    assert explain(row) == ("unfaithful", "wrong by token_f1 = 0.1; relevant context retrieved "
                                          "(hit_rate@5 = 1), toy_faith = 0.5")
    registered(_toy("toy_miss", retrieval_miss_evidence=-1))
    assert explain(row) == ("retrieval miss", "wrong by token_f1 = 0.1; retrieval miss from gold passages "
                                              "(toy_miss = 0)")
    registered(MetricSpec("toy_judged_miss", "judged", per_item(lambda q, r: Score(0.0)),
                          needs=frozenset({"judge"}), retrieval_miss_evidence=-2))
    assert explain(pd.Series({**row, "toy_judged_miss": 0.0}))[1].endswith(
        "retrieval miss from judge: no retrieved context relevant (toy_judged_miss = 0)")


def test_the_leaderboard_ranks_by_the_metric_whose_spec_says_so(tmp_path):
    from evalcore.analysis.runs.leaderboard import leaderboard
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=12)
    weighted, token_f1 = METRICS["weighted_score"], METRICS["token_f1"]
    with pytest.raises(ValueError, match="already ranked by 'weighted_score'"):
        register_metric(dataclasses.replace(token_f1, ranks_systems=True), replace=True)
    try:
        register_metric(dataclasses.replace(weighted, ranks_systems=False), replace=True)
        register_metric(dataclasses.replace(token_f1, ranks_systems=True), replace=True)
        board = leaderboard(store, metrics=("weighted_score",))
        assert {"token_f1", "token_f1_ci95", "token_f1_ci_low", "token_f1_ci_high"} <= set(board.columns)
        assert "weighted_score_ci95" not in board.columns and "weighted_score" in board.columns  # a metric column
        ranked = board[board["ranked"]]["token_f1"].tolist()
        assert len(ranked) > 1 and ranked == sorted(ranked, reverse=True)
    finally:
        register_metric(token_f1, replace=True)
        register_metric(weighted, replace=True)
    assert "weighted_score_ci95" in leaderboard(store).columns


BUILT_IN_OPTIONS = {
    "judge", "judge_concurrency", "judge_update_manifest", "judge_record_claims", "judge_repeats", "judge_calls",
    "progress", "embedding_model",
    "bertscore_model", "bertscore_layer", "bertscore_idf", "bertscore_rescale", "bertscore_baseline",
    "match_snippets", "dont_know_phrases", "dont_know_forms", "negative_rules", "citation_indicators",
    "citation_indicators_for_full", "acknowledge_phrases", "prices", "rag_model", "weights", "objectives",
    "budgets", "overall_components", "ragas_weights"}


def test_scoring_options_are_the_specs_own_and_typed(registered):
    from pydantic import StrictInt

    from evalcore.metrics.options import check_options, scoring_options

    assert set(scoring_options()) == BUILT_IN_OPTIONS  # the list that was kept by hand
    assert METRICS["weighted_score"].options and METRICS["token_f1"].options == METRICS["dont_know"].options
    limit = MetricOption("toy_limit", StrictInt, 5, "toy: the most words")
    with pytest.raises(EvalcoreError, match="unknown option 'toy_limit'"):
        check_options({"toy_limit": 3})
    registered(_toy("toy_options", options=(limit,)))
    assert scoring_options()["toy_limit"] is limit and check_options({"toy_limit": 3}) == {"toy_limit": 3}
    registered(_toy("toy_options_too", options=(limit,)))  # one declaration, shared
    for bad in ("3", 2.5, True):
        with pytest.raises(EvalcoreError, match="option 'toy_limit' must be an integer"):
            check_options({"toy_limit": bad})
    with pytest.raises(ValueError, match="'toy_limit' is declared differently by metric 'toy_options'"):
        registered(_toy("toy_clash", options=(MetricOption("toy_limit", str, "5", "another"),)))
    with pytest.raises(ValueError, match="'judge' is declared differently by the scoring pass"):
        registered(_toy("toy_clash", options=(MetricOption("judge", str, None, "mine"),)))
    with pytest.raises(ValueError, match="distinct names"):
        _toy("toy_bad", options=(limit, limit))


@pytest.mark.parametrize("options, words", [
    ({"bertscore_layer": "nine"}, "option 'bertscore_layer' must be an integer"),
    ({"bertscore_idf": "yes"}, "option 'bertscore_idf' must be true or false"),
    ({"dont_know_phrases": ["no idea"]}, "option 'dont_know_phrases' must be dict[str, list[str]]"),
    ({"citation_indicators": "source:"}, "option 'citation_indicators' must be list[str]"),
    ({"ragas_weights": {"faithfulness": 0}}, "option 'ragas_weights' must map names to non-negative numbers"),
])
def test_a_built_in_option_of_the_wrong_type_is_refused_before_work(options, words):
    from evalcore.metrics.options import check_options

    with pytest.raises(EvalcoreError, match=re.escape(words)):
        check_options(options, "--option")


def test_register_metric_refuses_a_second_spec_of_a_name_and_bad_facts():
    with pytest.raises(ValueError, match="already registered"):
        register_metric(dataclasses.replace(METRICS["token_f1"]))
    with pytest.raises(ValueError, match="unknown scale"):
        _toy("toy_bad", scale="percent")
    with pytest.raises(ValueError, match="importance tier"):
        _toy("toy_bad", importance=(7, 0))
    with pytest.raises(KeyError):
        unregister_metric("no_such_metric")


def test_the_registry_imports_its_modules_explicitly():
    source = (PKG / "metrics" / "registry.py").read_text(encoding="utf-8")
    assert "importlib" not in source and "import_module" not in source


def test_the_synthetic_store_takes_groups_and_judges_from_the_registry(tmp_path):
    from evalcore.store import query_df
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=4)

    rows = query_df(store, "SELECT DISTINCT metric, \"group\", judge_id IS NOT NULL AS judged FROM metrics")
    assert len(rows)
    for metric, group, judged in rows.itertuples(index=False):
        spec = METRICS[metric]
        assert group == spec.group, metric
        assert bool(judged) == ("judge" in spec.needs), metric


# Literal collections of metric names outside the modules that define metrics. Each remaining one
# is a choice of data or a formula's parts, not a fact about the metrics it names.
ALLOWED_LISTS = {
    "evalcore/demo/synthetic.py": "METRIC_NAMES: which metrics the synthetic store writes",
    "evalcore/store/merge_sql.py": "FORMAT1_LABELS: the metrics whose format-1 rows kept their label in details "
                               "(files written then; the store reads no registry)",
    "evalcore/ui/charts.py": "the judged metrics whose judges the answer-class chart names",
}


def test_no_module_keeps_a_side_list_of_metric_names():
    names = set(METRICS)
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG.parent))
        if rel.startswith(("evalcore/metrics/", "evalcore/judges/")) and "reliability" not in rel:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            elts = node.keys if isinstance(node, ast.Dict) else \
                node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
            hits = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
            if len(hits) >= 3 and rel not in ALLOWED_LISTS:
                found.append(f"{rel}:{node.lineno} {hits}")
    assert not found, "metric facts belong on MetricSpec, not in a list of names: " + "; ".join(found)
