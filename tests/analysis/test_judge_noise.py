"""The judge's noise, measured and shown, and what compare's CIs make of it (issue 36 items 2, 3).

Runs are written directly (values and their repeats), so every figure is known by hand:
- `show` (text and --json): per method x metric, K, the within-answer SD, the flip rate;
- `compare` (text, --json, the HTML report): each side's K, SD and flip rate, the judge's share of
  the Δ's variance, the Δ judge noise alone produces;
- CIs and tests: computed on each answer's mean over its repeats (the variance decomposition), so
  a comparison of K = 1 runs prints exactly what it printed before, and repeats whose means are
  those values change no CI or p; a binary metric whose means are fractions gets the
  randomization test, not McNemar;
- `compare RUN RUN --aa`: the two halves of a run's repeats compared like two systems.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.schemas import EvalQuestion, EvalResponse, MetricRepeat, MetricValue, RunManifest
from evalcore.stats.resample import paired_mean_ci
from evalcore.store import FORMAT_VERSION, RunStore

runner = CliRunner()
N = 12
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _write(store: RunStore, run_id: str, per_method: dict[str, list[list[float]]], metric: str = "answer_correctness",
           labels: dict[str, list[list[str]]] | None = None, stale: bool = False) -> None:
    """A run whose `metric` value of question i of each method is the mean of per_method[m][i]
    (its repeats, stored when there are two or more; `stale`: tied to no value)."""
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="test", methods=sorted(per_method)))
    n = len(next(iter(per_method.values())))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"question {i}?", ground_truth="x") for i in range(n)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method=m, answer="x") for m in per_method
                            for i in range(n)])
    values, repeats = [], []
    for m, rows in per_method.items():
        for i, reps in enumerate(rows):
            at = T0 + timedelta(seconds=i)
            mine = (labels or {}).get(m, [[None] * len(reps)] * n)[i]
            values.append(MetricValue(run_id=run_id, method=m, question_id=f"q{i}", metric=metric,
                                      value=float(np.mean(reps)), group="judged", judge_id="openai:x/t@1",
                                      computed_at=at))
            if len(reps) > 1:
                repeats += [MetricRepeat(run_id=run_id, method=m, question_id=f"q{i}", metric=metric, repeat=r,
                                         value=v, label=mine[r], judge_id="openai:x/t@1",
                                         value_at=at + timedelta(microseconds=1) if stale else at)
                            for r, v in enumerate(reps)]
    writer.write_metrics(values)
    writer.write_metric_repeats(repeats)
    writer.publish()


def _cli(store: RunStore, *args: str):
    return runner.invoke(app, ["--store", str(store.root), *args])


def _json(store: RunStore, *args: str) -> dict:
    res = _cli(store, *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_show_gives_each_metrics_judge_sd_and_flip_rate(store):
    labels = {"m": [["CORRECT"] * 3, ["CORRECT", "WRONG", "CORRECT"], ["WRONG"] * 3]}
    _write(store, "r", {"m": [[1, 1, 1], [1, 0, 1], [0, 0, 0]]}, metric="answer_class", labels=labels)
    noise = _json(store, "show", "r")["judge_noise"]
    assert noise == [{"method": "m", "metric": "answer_class", "k": 3, "n_answers": 3,
                      "within_sd": pytest.approx(math.sqrt((0 + 1 / 3 + 0) / 3)), "flip_rate": pytest.approx(1 / 3)}]
    text = _cli(store, "show", "r").stdout
    assert "judge noise" in text and "33%" in text


def test_flips_follow_the_label_when_a_metric_states_one_else_the_value(store):
    # grade letters that differ with the same points never happen; values that differ without a
    # label are flips (a 0-1 score: any difference)
    _write(store, "r", {"m": [[0.5, 0.5], [0.5, 0.75], [1.0, 1.0], [0.2, 0.2]]})
    noise = _json(store, "show", "r")["judge_noise"][0]
    assert noise["flip_rate"] == pytest.approx(1 / 4)


def test_repeats_of_a_replaced_value_are_nobodys(store):
    _write(store, "r", {"m": [[1, 0], [0, 1], [1, 1]]}, stale=True)
    assert "judge_noise" not in _json(store, "show", "r")


def _two_systems(rng: np.random.Generator, k: int = 2) -> dict[str, list[list[float]]]:
    truth = rng.uniform(0.2, 0.8, N)
    return {m: [list(np.clip(truth[i] + shift + rng.normal(0, 0.15, k), 0, 1)) for i in range(N)]
            for m, shift in (("a", 0.0), ("b", 0.1))}


def test_compare_reports_the_judges_share_of_the_deltas_variance(store):
    systems = _two_systems(np.random.default_rng(3))
    _write(store, "r", systems)
    out = _json(store, "compare", "r:a", "r:b", "--metrics", "answer_correctness")
    (row,) = out["judge_noise"]
    a, b = np.asarray(systems["a"]), np.asarray(systems["b"])
    diffs = b.mean(axis=1) - a.mean(axis=1)
    judge = (b - a).var(axis=1, ddof=1) / 2  # per question: the variance of the mean of 2 repeat differences
    assert row["k_baseline"] == row["k_candidate"] == 2 and row["n_pairs"] == N
    assert row["judge_share"] == pytest.approx(min(1.0, judge.mean() / diffs.var(ddof=1)))
    assert row["noise_delta"] == pytest.approx(1.959964 * math.sqrt(judge.mean() / N), rel=1e-5)
    assert row["within_sd_baseline"] == pytest.approx(math.sqrt(a.var(axis=1, ddof=1).mean()))
    assert row["measured_on"] == ["baseline", "candidate"]
    text = _cli(store, "compare", "r:a", "r:b", "--metrics", "answer_correctness").stdout
    assert "judge noise" in text and "judge share" in text
    html = _cli(store, "report", "r:a", "r:b", "--metrics", "answer_correctness", "-o", str(store.root / "r.html"))
    assert html.exit_code == 0, html.output
    page = (store.root / "r.html").read_text(encoding="utf-8")
    assert 'id="judge-noise"' in page and f"{100 * row['judge_share']:.0f}%" in page


def test_with_one_verdict_per_answer_compare_prints_what_it_always_printed(store, tmp_path):
    """K = 1: no judge-noise key or table; and repeats whose means are the stored values change
    no CI and no p (the CIs resample questions over the per-answer means)."""
    systems = _two_systems(np.random.default_rng(5), k=3)
    _write(store, "r", systems)
    plain = RunStore(tmp_path / "plain")
    _write(plain, "r", {m: [[float(np.mean(x))] for x in rows] for m, rows in systems.items()})
    args = ("compare", "r:a", "r:b", "--metrics", "answer_correctness")
    one, many = _json(plain, *args), _json(store, *args)
    assert "judge_noise" not in one and "judge_noise" in many
    assert one["metrics"] == many["metrics"] and one["verdicts"] == many["verdicts"]
    order = sorted(range(N), key=lambda i: f"q{i}")  # compare draws its pairs in question_id order
    a, b = (np.asarray([np.mean(systems[m][i]) for i in order]) for m in "ab")
    assert (one["metrics"][0]["ci_low"], one["metrics"][0]["ci_high"]) == pytest.approx(paired_mean_ci(a, b))
    assert "judge noise" not in _cli(plain, *args).stdout


def test_a_binary_metric_with_fractional_means_gets_the_randomization_test(store):
    reps = {"a": [[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]] * 3, "b": [[1, 1, 1], [0, 1, 0], [1, 1, 0], [1, 1, 1]] * 3}
    _write(store, "r", reps, metric="answer_correct")
    row = _json(store, "compare", "r:a", "r:b", "--metrics", "answer_correct")["metrics"][0]
    assert row["test"].startswith("randomization")


def test_aa_compares_the_two_halves_of_a_runs_repeats(store):
    rng = np.random.default_rng(11)
    truth = rng.uniform(0.2, 0.8, N)
    reps = [list(np.clip(t + rng.normal(0, 0.1, 4), 0, 1)) for t in truth]
    _write(store, "r", {"m": reps})
    (row,) = _json(store, "compare", "r", "r", "--aa")["aa"]
    arr = np.asarray(reps)
    assert row["system"] == "r:m" and row["k"] == 4 and row["n_pairs"] == N
    assert row["delta"] == pytest.approx((arr[:, 2:].mean(axis=1) - arr[:, :2].mean(axis=1)).mean())
    assert row["noise_delta"] == pytest.approx(1.959964 * math.sqrt(2 * arr.var(axis=1, ddof=1).mean() / (4 * N)),
                                               rel=1e-5)
    assert row["ci_low"] < row["delta"] < row["ci_high"] and "p_holm" in row
    text = _cli(store, "compare", "r", "r", "--aa").stdout
    assert "A/A" in text and "judge noise alone moves" in text


def test_aa_on_a_run_without_repeats_says_what_it_needs(store):
    _write(store, "r", {"m": [[0.5], [0.7], [0.2]]})
    res = _cli(store, "compare", "r", "r", "--aa")
    assert isinstance(res.exception, EvalcoreError) and "--repeats K" in str(res.exception)
    assert "r:m" in str(res.exception)
    res = _cli(store, "compare", "r", "r", "--aa", "--markdown")
    assert isinstance(res.exception, EvalcoreError) and "--aa" in str(res.exception)
