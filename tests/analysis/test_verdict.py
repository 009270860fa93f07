"""A verdict says what the statistics say (issue 23, item 3): Holm-not-significant with a CI that
excludes 0 is "not significant after testing m metrics", too few questions says so with the
minimum detectable effect, `evalcore compare` tests the key metrics and opens with one summary
line, and a change of judge, dataset, question set or scoring options is flagged."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.analysis.comparison import verdict as V
from evalcore.analysis.comparison.compare import compare, pair_table
from evalcore.cli.main import app
from evalcore.scoring.importer import import_recorded
from evalcore.schemas import MetricValue
from evalcore.scoring.engine import score_run
from evalcore.store import RunStore


def _row(metric, delta, lo, hi, p_holm, n, sd=0.1, span=1.0, hib=True):
    return {"metric": metric, "higher_is_better": hib, "n_pairs": n, "delta": delta, "ci_low": lo, "ci_high": hi,
            "p_holm": p_holm, "sd_diff": sd, "span": span}


def test_ci_excluding_zero_but_not_holm_is_not_significant_after_testing():
    table = pd.DataFrame([_row("faithfulness", -0.0318, -0.0681, -0.0035, 0.25, 40),
                          _row("token_f1", 0.2, 0.1, 0.3, 0.001, 40),
                          _row("context_recall", 0.01, -0.02, 0.04, 0.9, 40, sd=0.05),
                          _row("latency_ms", 30.0, 10.0, 50.0, 0.01, 40, hib=False, sd=40, span=900)])
    lines = V.verdict_lines(table, "A", "B").set_index("metric")
    assert lines.loc["faithfulness", "outcome"] == "not significant"
    assert "not significant after testing 4 metrics" in lines.loc["faithfulness", "verdict"]
    assert lines.loc["token_f1", "outcome"] == "better"
    assert lines.loc["latency_ms", "outcome"] == "worse"
    assert lines.loc["context_recall", "outcome"] == "no significant difference"
    assert "detectable" in lines.loc["context_recall", "verdict"]
    summary = V.verdict_summary(lines.reset_index(), table, "A", "B")
    assert summary.startswith("B is better than A on 1 of 4 tested metrics and worse on 1, n = 40")
    assert "1 not significant after testing 4 metrics" in summary


def test_too_few_questions_names_the_minimum_detectable_effect():
    # n = 3: even three wins out of three cannot reach 0.05 / 4
    tiny = pd.DataFrame([_row("answer_correctness", -0.474, -0.731, -0.206, 0.5, 3, sd=0.3)])
    line = V.verdict_lines(tiny, "A", "B").iloc[0]
    assert line.outcome == "too few questions" and "too few questions" in line.verdict
    # n = 10 with noisy differences: the smallest detectable Δ is over half the scale
    noisy = pd.DataFrame([_row("answer_correctness", -0.474, -0.731, -0.206, 0.09, 10, sd=0.6)])
    line = V.verdict_lines(noisy, "A", "B").iloc[0]
    mde = V.minimum_detectable_effect(0.6, 10, 1)
    assert mde > 0.5 and line.outcome == "too few questions"
    assert f"|Δ| ≥ {mde:.3g}" in line.verdict


def test_identical_systems_say_so():
    same = pd.DataFrame([_row("token_f1", 0.0, 0.0, 0.0, 1.0, 40, sd=0.0)])
    line = V.verdict_lines(same, "A", "B").iloc[0]
    assert line.outcome == "no significant difference" and "the same value on every paired question" in line.verdict


def test_minimum_detectable_effect_grows_with_tests_and_shrinks_with_n():
    assert V.minimum_detectable_effect(0.3, 40, 4) > V.minimum_detectable_effect(0.3, 40, 1)
    assert V.minimum_detectable_effect(0.3, 400, 4) < V.minimum_detectable_effect(0.3, 40, 4)
    assert math.isnan(V.minimum_detectable_effect(0.3, 1, 4))
    assert V.min_p_value(3) == pytest.approx(0.25) and V.min_p_value(100) < 1e-3


def _answers(path, n=30, right_every=3, questions=None, method="m"):
    rows = []
    for i in questions if questions is not None else range(n):
        right = i % right_every != 0
        rows.append({"question_id": f"q{i}", "method": method, "question": f"What is item {i}?",
                     "ground_truth": f"item {i} is blue", "answer": f"item {i} is blue" if right else "no idea",
                     "latency_ms": 100.0 + i})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _cli(root, *args):
    res = CliRunner().invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


METRICS = ["token_f1", "exact_match", "latency_ms", "weighted_score", "citation_precision", "keyword_coverage"]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    base = tmp_path_factory.mktemp("verdict")
    store = RunStore(base / "runs")
    a = import_recorded(store, _answers(base / "a.jsonl"), name="a").run_id
    b = import_recorded(store, _answers(base / "b.jsonl", right_every=2, questions=range(2, 32)), name="b").run_id
    score_run(store, a, metrics=METRICS, progress=False)
    score_run(store, b, metrics=METRICS, options={"weights": {"accuracy": 1.0}}, progress=False)
    for run_id, judge in ((a, "anthropic:claude-x/faithfulness@1"), (b, "heuristic:lexical-v3/faithfulness@2")):
        writer = store.open_run(run_id)
        writer.write_metrics([MetricValue(run_id=run_id, method="m", question_id=f"q{i}", metric="faithfulness",
                                          value=1.0, group="judged", judge_id=judge) for i in range(2, 30)])
        writer.publish()
        fp = f"sha256:{run_id[:1] * 64}"
        writer.edit_manifest(lambda m: {"dataset": {**m.dataset, "fingerprint": fp}})
    return store, a, b


def test_compare_without_metrics_tests_the_key_metrics_and_opens_with_a_summary(two):
    store, a, b = two
    out = _cli(store.root, "compare", f"{a}:m", f"{b}:m")
    tested = V.default_tested_metrics(store, [f"{a}:m", f"{b}:m"])
    assert tested == ["weighted_score", "faithfulness", "token_f1", "keyword_coverage"]
    lines = [x for x in out.splitlines() if x.strip()]
    warnings = [x for x in lines if x.startswith("WARNING")]
    summary = lines[len(warnings)]
    assert summary.startswith(f"{b}:m is better than {a}:m on ") and "of 4 tested metrics" in summary
    assert "n = 28" in summary
    data = json.loads(_cli(store.root, "compare", f"{a}:m", f"{b}:m", "--json"))
    assert [r["metric"] for r in data["metrics"]] == tested
    assert data["verdicts"][f"{b}:m"]["summary"] == summary
    # all metrics: one never scored on either side (no citations anywhere) is left out
    everything = compare(store, [f"{a}:m", f"{b}:m"], metrics=None).table
    assert "citation_precision" not in set(everything.metric) and "exact_match" in set(everything.metric)


def test_a_change_of_judge_dataset_questions_or_options_is_flagged(two):
    store, a, b = two
    warnings = V.comparability(store, f"{a}:m", f"{b}:m", ["faithfulness", "weighted_score", "token_f1"])
    text = "\n".join(warnings)
    assert "faithfulness was judged differently" in text and "anthropic:claude-x" in text
    assert "different datasets" in text
    assert "different question sets: 2 only in baseline, 2 only in candidate" in text
    assert "scored with a different 'weights' option" in text and "weighted_score" in text
    assert not any("faithfulness" in w for w in warnings[1:])  # its judge, not its options, differs
    out = _cli(store.root, "compare", f"{a}:m", f"{b}:m")
    assert out.startswith("WARNING not comparable as scored: faithfulness was judged differently")
    # the same system against itself is comparable
    assert V.comparability(store, f"{a}:m", f"{a}:m", ["faithfulness", "token_f1"]) == []


def test_page_table_carries_the_minimum_detectable_effect(two):
    store, a, b = two
    table = pair_table(store, f"{a}:m", f"{b}:m", ("token_f1", "exact_match")).set_index("metric")
    cli = compare(store, [f"{a}:m", f"{b}:m"], metrics=["token_f1", "exact_match"]).table.set_index("metric")
    for m in ("token_f1", "exact_match"):
        assert table.loc[m, "mde"] == pytest.approx(cli.loc[m, "mde"]) and table.loc[m, "mde"] > 0


def test_markdown_report_uses_the_same_outcomes():
    from evalcore.analysis.comparison.compare import Comparison, Selection
    from evalcore.outputs.markdown_report import comparison_markdown

    rows = [{**_row("faithfulness", -0.0318, -0.0681, -0.0035, 0.25, 40), "candidate": "b:m", "mean_a": 1.0,
             "mean_b": 0.97, "significant": False, "improved": 0, "regressed": 4, "unchanged": 36},
            {**_row("token_f1", 0.2, 0.1, 0.3, 0.001, 40), "candidate": "b:m", "mean_a": 0.4, "mean_b": 0.6,
             "significant": True, "improved": 20, "regressed": 2, "unchanged": 18}]
    text = comparison_markdown(Comparison(Selection("a", "m"), [Selection("b", "m")], pd.DataFrame(rows), {}))
    faith = next(line for line in text.splitlines() if "| faithfulness |" in line)
    assert "| not significant |" in faith and "▲ better" in next(x for x in text.splitlines() if "| token\\_f1 |" in x)


def test_too_few_questions_names_its_real_reason_when_no_p_could_be_small_enough():
    """At n = 6 the smallest p the paired tests can return is 2·0.5⁶ = 0.031, above α/4: the
    sentence says that, not "only |Δ| ≥ 0.205 is detectable" beside a Δ of 0.368 (issue 36)."""
    import pandas as pd

    from evalcore.analysis.comparison.verdict import verdict_lines

    rows = pd.DataFrame([{"metric": f"m{i}", "n_pairs": 6, "delta": 0.368, "ci_low": 0.1, "ci_high": 0.6,
                          "p_holm": 0.12, "higher_is_better": True, "sd_diff": 0.1, "span": 1.0} for i in range(4)])
    line = verdict_lines(rows, "a", "b").iloc[0]
    assert line.outcome == "too few questions"
    assert "smallest p any result could reach, 0.031" in line.verdict and "α/4 = 0.013" in line.verdict
    assert "is detectable" not in line.verdict


def test_the_headline_says_when_metrics_were_compared_on_different_n():
    """n = 40 for two metrics and 34 for two others: the headline says both, not just 40."""
    import pandas as pd

    from evalcore.analysis.comparison.verdict import verdict_lines, verdict_summary

    rows = pd.DataFrame([{"metric": f"m{i}", "n_pairs": n, "delta": 0.0, "ci_low": -0.1, "ci_high": 0.1,
                          "p_holm": 1.0, "higher_is_better": True, "sd_diff": 0.2, "span": 1.0}
                         for i, n in enumerate((40, 40, 34, 34))])
    lines = verdict_lines(rows, "a", "b")
    assert verdict_summary(lines, rows, "a", "b").endswith("n = 40 (34 for 2 of them)")
    same = rows.assign(n_pairs=40)
    assert verdict_summary(verdict_lines(same, "a", "b"), same, "a", "b").endswith("n = 40")


def test_the_judge_call_design_is_a_change_of_judge_not_of_options(two):
    """`judge_calls` (issue 38) chooses the prompts, which the values' judge ids name: compare
    says the metric was judged differently, once, not also that an option differs."""
    store, a, b = two
    history = {}
    for run_id, design in ((a, "combined"), (b, "separate")):
        history[run_id] = store.manifest(run_id).config.get("scoring", [])
        entry = {"metrics": ["faithfulness"], "options": {"judge_calls": design}}
        store.open_run(run_id).edit_manifest(lambda m, e=entry: {"config": {**m.config,
                                                                           "scoring": [*m.config.get("scoring", []), e]}})
    try:
        warnings = V.comparability(store, f"{a}:m", f"{b}:m", ["faithfulness"])
        assert any("faithfulness was judged differently" in w for w in warnings)
        assert not any("judge_calls" in w for w in warnings)
    finally:
        for run_id, scoring in history.items():
            store.open_run(run_id).edit_manifest(lambda m, s=scoring: {"config": {**m.config, "scoring": s}})
