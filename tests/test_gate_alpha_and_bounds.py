"""The gate's numbers (issue 34, item 3, round 4): any alpha in (0, 1) works, and a bound is
a plain decimal number inside the metric's range.

A hostile tester found `compare --alpha 1e-17` (and 5e-324, and the pytest gate's
`regression_alpha: 1e-17`) ending as "unexpected StatisticsError": the minimum detectable
effect took the normal quantile of 1 - alpha/2m, which rounds to 1.0. And MIN_DELTA spellings
that switch the gate off were accepted: `token_f1:1_0` (read as 10), a full-width `１`,
`token_f1:1e308`, all with a Δ of -1.0 on a 0-1 metric passing. Real questions: SQuAD 2.0 dev.
"""

from __future__ import annotations

import json
import math

import pytest

from evalcore.errors import EvalcoreError
from tests.test_gate_compared_nothing import _cli, _code, _import, _records

N = 16
TINY = ["1e-17", "5e-324", "1e-300", "2.2250738585072014e-308"]
TINY_CLI = ["1e-17", "5e-324"]  # each costs a few compares: two are enough for the command


@pytest.fixture(scope="module")
def pair(shared_data, tmp_path_factory):
    """(store root, baseline id, candidate id): the candidate answers every other question wrong."""
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for p in data["data"][0]["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]][:N]
    root = tmp_path_factory.mktemp("bounds") / "runs"
    folder = tmp_path_factory.mktemp("answers")
    return (root, _import(root, folder, "base", _records(qas)),
            _import(root, folder, "worse", _records(qas, wrong_every=2)))


@pytest.mark.parametrize("alpha", TINY_CLI)
def test_a_tiny_alpha_compares(pair, alpha):
    """Nothing can be significant at alpha = 1e-17 with 16 questions: the gate passes (the
    regression is real but not provable at that level), and says so through the statistics."""
    root, base, worse = pair
    res = _cli(root, "compare", base, worse, "--metrics", "token_f1", "--fail-on-regression", "token_f1",
               "--alpha", alpha, "--json")
    assert _code(res) == 0, res.output
    out = json.loads(res.stdout)
    row = out["metrics"][0]
    assert out["alpha"] == float(alpha) and row["n_pairs"] == N and not row["significant"]
    assert row["mde"] is None or math.isfinite(row["mde"])
    for args in ([], ["--markdown"]):  # the terminal and Markdown renderings as well
        res = _cli(root, "compare", base, worse, "--metrics", "token_f1", "--alpha", alpha, *args)
        assert _code(res) == 0, res.output


@pytest.mark.parametrize("alpha", TINY)
def test_the_pytest_gate_takes_a_tiny_alpha(pair, alpha):
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    root, base, worse = pair
    out = check_gate(RunStore(root), worse, {"token_f1": 0.1}, baseline=base, alpha=float(alpha))
    assert out.ok and not out.regressions, out.failures
    out = check_gate(RunStore(root), worse, {"token_f1": 0.1}, baseline=base, alpha=0.05)
    assert not out.ok and out.regressions  # the same regression at an ordinary level


def test_the_normal_quantile_holds_for_any_level():
    """Every quantile the statistics take goes through one function that takes the level in
    logs, so it holds to the smallest positive double; 0 and 1 are refused in one line."""
    from statistics import NormalDist

    from evalcore.stats.normal import two_sided_z

    assert two_sided_z(0.05) == pytest.approx(NormalDist().inv_cdf(0.975), rel=1e-12)
    assert two_sided_z(0.05, 4) == pytest.approx(NormalDist().inv_cdf(1 - 0.05 / 8), rel=1e-12)
    tiny = [two_sided_z(float(a)) for a in TINY]
    assert all(math.isfinite(z) and z > 8 for z in tiny)
    assert two_sided_z(5e-324, 1000) > two_sided_z(5e-324)
    for bad in (0.0, 1.0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError):
            two_sided_z(bad)


def test_every_normal_interval_takes_its_quantile_from_the_one_function():
    from evalcore.analysis.runs.means import normal_ci
    from evalcore.analysis.comparison.verdict import minimum_detectable_effect
    from evalcore.stats.resample import normal_mean_ci

    for alpha in (1e-17, 5e-324):
        assert math.isfinite(minimum_detectable_effect(0.3, 20, 4, alpha=alpha))
    lo, hi = normal_ci(0.5, 0.1, 100, confidence=1 - 1e-15)
    assert math.isfinite(lo) and math.isfinite(hi) and lo < 0.5 < hi
    lo, hi = normal_mean_ci([0.1, 0.2, 0.4, 0.8], confidence=1 - 1e-15)
    assert math.isfinite(lo) and math.isfinite(hi)


@pytest.mark.parametrize("delta", [
    "1_0", "0_5", "１", "０.５", "٠.5", "1e308", "1", "1.0", "2", "0x1", "1e", ".", "+-1", "0.5.1", "½", "infinity",
])
def test_a_min_delta_that_is_no_plain_decimal_inside_the_range_is_refused(pair, delta):
    """token_f1 lies in [0, 1]: a MIN_DELTA of 1 or more can never be exceeded (the gate is
    off); underscores and non-ASCII digits are not a plain decimal number."""
    root, base, worse = pair
    res = _cli(root, "compare", base, worse, "--metrics", "token_f1", "--fail-on-regression", f"token_f1:{delta}")
    assert _code(res) == 2, res.output
    assert len(str(res.exception).splitlines()) == 1 and "MIN_DELTA" in str(res.exception)


@pytest.mark.parametrize("flag,value", [
    ("--alpha", "0_05"), ("--alpha", "０.０５"), ("--alpha", "5E-2_0"), ("--min-paired", "0_9"),
    ("--min-paired", "０.９"),
])
def test_alpha_and_min_paired_are_plain_decimals(pair, flag, value):
    root, base, worse = pair
    res = _cli(root, "compare", base, worse, "--metrics", "token_f1", "--fail-on-regression", "token_f1", flag, value)
    assert _code(res) == 2, res.output
    assert flag in str(res.exception)


@pytest.mark.parametrize("delta", ["0.25", "2.5e-1", ".1", "0", "+0.1", "1E-1"])
def test_a_min_delta_inside_the_range_is_taken(pair, delta):
    root, base, worse = pair
    res = _cli(root, "compare", base, worse, "--metrics", "token_f1", "--fail-on-regression", f"token_f1:{delta}")
    assert _code(res) == 1 and "REGRESSION" in res.stderr, res.output  # Δ = -0.5 at p < 0.05


def test_the_range_comes_from_the_metric_spec():
    """A 0-5 judge scale takes a MIN_DELTA below 5; latency (no upper end) any finite one; a
    name no registry knows (a custom metric stored by a side) only the finiteness rule."""
    from evalcore.analysis.comparison.regression_gate import parse_gate

    assert parse_gate("groundedness:4.5").min_delta == 4.5
    assert parse_gate("factual_grade:3.5").min_delta == 3.5
    assert parse_gate("latency_ms:1e6").min_delta == 1e6
    assert parse_gate("my_custom_metric:12").min_delta == 12
    for bad in ("groundedness:5", "factual_grade:4", "judge_correctness:4", "answer_correct:1", "answer_correct:1e3"):
        with pytest.raises(EvalcoreError, match="MIN_DELTA"):
            parse_gate(bad)


def test_every_points_metric_declares_its_range():
    """evalcore's own point metrics declare their scale; a plug-in's that does not is unbounded."""
    from evalcore.metrics.base import MetricSpec
    from evalcore.metrics.registry import METRICS

    assert MetricSpec("toy", "toy", compute=list, scale="points").value_range == (-math.inf, math.inf)
    with pytest.raises(ValueError):
        MetricSpec("toy", "toy", compute=list, point_range=(0, 5))
    for name, spec in METRICS.items():
        low, high = spec.value_range
        if spec.scale == "open":
            assert (low, high) == (-math.inf, math.inf), name
        else:
            assert math.isfinite(low) and math.isfinite(high) and low < high, name
    assert METRICS["groundedness"].value_range == (0, 5) and METRICS["judge_faithfulness"].value_range == (1, 5)


@pytest.mark.parametrize("thresholds", [
    {"token_f1": 1e308}, {"token_f1": 10}, {"token_f1": -0.5}, {"token_f1": {"max": 1e308}},
    {"token_f1": {"max": -1}}, {"token_f1": {"min": 1.5}}, {"groundedness": 6}, {"judge_correctness": {"min": 0.5}},
    {"token_f1": "1_0"}, {"token_f1": "０.５"}, {"token_f1": "0x1"}, {"token_f1": " 0.5x"},
])
def test_a_threshold_beyond_the_metric_range_or_not_plain_is_refused(thresholds):
    """The pytest plugin's config refuses it when read (the `thresholds:` of a YAML file, where
    `1_0` is already the number 10), and so does check_gate when called from Python."""
    from pydantic import ValidationError

    from evalcore.runner.config import EvalConfig

    with pytest.raises(ValidationError):
        EvalConfig(target="http://127.0.0.1:9", dataset="q.jsonl", thresholds=thresholds)


def test_check_gate_refuses_a_bound_beyond_the_range(pair):
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    root, base, worse = pair
    for bad in ({"token_f1": 1e308}, {"token_f1": {"max": 2}}, {"token_f1": "1_0"}):
        with pytest.raises(EvalcoreError, match="token_f1"):
            check_gate(RunStore(root), worse, bad)
    assert check_gate(RunStore(root), base, {"token_f1": 1.0, "latency_ms": {"max": 1e9}}).failures == [
        "reader: latency_ms was not scored (cannot check the threshold)"]


@pytest.mark.parametrize("text", ["regression_alpha: 1_0e-2", "regression_alpha: '0_05'", "min_paired: '０.９'",
                                  "thresholds: {token_f1: '1_0'}", "thresholds: {token_f1: 1_0}"])
def test_a_config_file_spelling_is_refused_naming_the_file(tmp_path, text):
    from evalcore.runner.config import load_config
    from evalcore.errors import InputError

    path = tmp_path / "eval.yaml"
    path.write_text(f"target: http://127.0.0.1:9\ndataset: q.jsonl\n{text}\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_a_config_takes_a_tiny_alpha_and_plain_numbers(tmp_path):
    from evalcore.runner.config import EvalConfig

    cfg = EvalConfig(target="http://127.0.0.1:9", dataset="q.jsonl", regression_alpha=1e-17, min_paired="0.5",
                     thresholds={"token_f1": "0.5", "latency_ms": {"max": 3000}, "groundedness": 4})
    assert cfg.regression_alpha == 1e-17 and cfg.min_paired == 0.5 and cfg.thresholds["token_f1"] == 0.5
