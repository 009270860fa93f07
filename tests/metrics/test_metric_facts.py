"""A metric's facts live on its MetricSpec (issue 26, item 1): a metric registered through the
public API gets the right judge-agreement rule, order, key-metric place and correctness vote
from its spec alone, and no module keeps a side list of metric names."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from evalcore.analysis.read.correctness import classify, correct_metrics
from evalcore.analysis.runs.leaderboard import key_metric_names
from evalcore.analysis.questions.question_drilldown import key_metrics, metric_order
from evalcore.metrics.judge_agreement import category, disagree
from evalcore.metrics.base import ANSWER_QUALITY, FAITHFULNESS, MetricSpec, Score, per_item
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
    "evalcore/analysis/labels/label_units.py": "UNITS: what a person labels for a judged metric (claim, context)",
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
