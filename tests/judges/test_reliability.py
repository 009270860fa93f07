"""Cohen's kappa, spot checks with a second judge, judge-human agreement, rejudge CLI."""

import json
import math

import pytest
from typer.testing import CliRunner

from evalcore.analysis.labels.annotations import agreement
from evalcore.metrics.judge_agreement import disagree
from evalcore.scoring.spot_check import spot_check
from evalcore.stats.agreement import cohen_kappa
from evalcore.schemas import Annotation, RunManifest
from evalcore.scoring.engine import score_run
from evalcore.store import FORMAT_VERSION
from tests.optional import requires

from .conftest import good_judge, paris_item


def test_kappa_hand_example():
    # 10 items: both "yes" 4, both "no" 3, rater A yes/B no 2, A no/B yes 1.
    a = ["y"] * 4 + ["n"] * 3 + ["y"] * 2 + ["n"]
    b = ["y"] * 4 + ["n"] * 3 + ["n"] * 2 + ["y"]
    # p_o = 0.7; p_yes(A)=0.6, p_yes(B)=0.5 -> p_e = 0.3 + 0.2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(["x", "x"], ["x", "x"]) is None
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == 1.0


def test_kappa_matches_sklearn_when_available():
    sk = requires("sklearn.metrics", "scikit-learn comes with sentence-transformers")
    import random

    rng = random.Random(3)
    a = [rng.randint(0, 4) for _ in range(200)]
    b = [x if rng.random() < 0.6 else rng.randint(0, 4) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(sk.cohen_kappa_score(a, b), abs=1e-12)


def test_disagreement_rules():
    assert disagree("groundedness", 5, 3) and not disagree("groundedness", 5, 4)
    assert disagree("answer_class", 1, 0)
    assert disagree("faithfulness", 1.0, 0.7) and not disagree("faithfulness", 1.0, 0.8)


def test_normalised_copies_disagree_by_the_native_scale_rule():
    """A 1-point gap on a 1-5 (or 0-5) scale is not a disagreement on the native metric, so not
    on its 0-1 copy either; 2 points is, on both."""
    for native, copy, width in (("groundedness", "groundedness_norm", 5), ("correctness", "correctness_norm", 5),
                                ("judge_correctness", "judge_correctness_norm", 4)):
        for a, b in ((5, 4), (5, 3), (3, 3), (4, 1)):
            low = 0 if width == 5 else 1
            assert disagree(copy, (a - low) / width, (b - low) / width) == disagree(native, a, b), (copy, a, b)


def _scored_run(store, n=10):
    items = [paris_item(3, qid=f"q{i}", answer="Paris is the capital of France." if i % 2 else "Lyon.")
             for i in range(n)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    score_run(store, "r1", metrics=["answer_class", "groundedness", "faithfulness"],
              options={"judge": "heuristic"}, progress=False)
    return items


def test_spot_check_against_a_second_llm_judge(anthropic_env, store):
    _scored_run(store)
    anthropic_env.responder = good_judge  # says CORRECT / groundedness 4 / 2 of 3 claims for everything
    out = spot_check(store, "r1", fraction=0.3, second_judge="anthropic:claude-haiku-4-5-20251001", seed=7)
    assert out["spot_check_n"] == 3 and out["first_judge"] == "heuristic:lexical-v3"
    again = spot_check(store, "r1", fraction=0.3, second_judge="anthropic:claude-haiku-4-5-20251001", seed=7,
                       first_judge="heuristic")  # the CLI passes the --judge spec
    assert again["per_metric"] == out["per_metric"]  # seeded sample, cached verdicts
    pm = out["per_metric"]["answer_class"]
    assert pm["n"] == 3 and 0 <= pm["disagreement_rate"] <= 1
    assert out["disagreement_rate"] is not None
    manifest = store.manifest("r1")
    assert manifest.config["judge_reliability"][-1]["seed"] == 7
    from evalcore.store import query_df

    vals = query_df(store, "SELECT * FROM metrics WHERE metric = 'judge_disagreement'")
    assert len(vals) == 3 and vals.judge_id.str.startswith("anthropic:").all()
    # first judge's values are untouched
    first = query_df(store, "SELECT judge_id FROM metrics WHERE metric = 'answer_class'")
    assert first.judge_id.str.startswith("heuristic:").all()


def test_judge_human_agreement(store):
    _scored_run(store, n=2)
    anns = [Annotation(annotation_id=f"a{i}", who="rev", run_id="r1", method="m", question_id=f"q{i}",
                       target_kind="answer_class", target_ref="answer", judge_label=j, label=h)
            for i, (j, h) in enumerate([("CORRECT", "correct"), ("WRONG", "WRONG"), ("CORRECT", "WRONG"),
                                        ("WRONG", "WRONG")])]
    store.append_annotations(anns)
    res = agreement(store, "r1").set_index("target_kind").loc["answer_class"]
    assert res["n"] == 4 and res["agreement_rate"] == 0.75
    assert res["cohen_kappa"] == pytest.approx(cohen_kappa(["c", "w", "c", "w"], ["c", "w", "w", "w"]))
    assert agreement(store, "other-run").empty


def test_rejudge_cli(store):
    _scored_run(store, n=4)
    from evalcore.cli.main import app

    runner = CliRunner()
    res = runner.invoke(app, ["--store", str(store.root), "rejudge", "r1", "--judge", "heuristic", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert set(data["metrics"]) == {"answer_class", "groundedness", "faithfulness"}
    assert data["metrics"]["faithfulness"]["disagreement_rate"] == 0.0
    res = runner.invoke(app, ["--store", str(store.root), "rejudge", "r1", "--judge", "heuristic",
                              "--metrics", "exact_match"])
    assert res.exit_code != 0
    dry = runner.invoke(app, ["--store", str(store.root), "rejudge", "r1", "--judge", "heuristic", "--dry-run"])
    assert dry.exit_code == 0 and '"calls"' in dry.output
    assert not math.isnan(json.loads(dry.output)["calls"])
