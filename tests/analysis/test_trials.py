"""Repeated trials of the system (issue 36 item 4): a question's trials are averaged before
pairing (n = questions, the CI resamples questions), pass@T / pass^T / flip rate for pass/fail
metrics, in `compare` (text and --json), `show` and `export`; runs without trials read as before."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from evalcore.analysis.comparison.compare import changed_questions, compare
from evalcore.analysis.comparison.trial_noise import pair_trials, systems_spread
from evalcore.analysis.read.results import wide_results
from evalcore.cli.main import app
from evalcore.stats.pass_at_k import pass_all_k, pass_at_k, pass_rates
from evalcore.stats.resample import paired_mean_ci, randomization_test
from evalcore.store import RunStore, query_df
from tests.analysis.trial_runs import trial_run

# baseline: q0 passes every time, q1 once, q2 never, q3 twice; the candidate does better
BASE = {"q0": ["yes", "yes", "yes"], "q1": ["yes", "no", "no"], "q2": ["no", "no", "no"], "q3": ["no", "yes", "yes"],
        "q4": ["no", "no", "yes"], "q5": ["yes", "yes", "no"]}
CAND = {"q0": ["yes", "yes", "yes"], "q1": ["yes", "yes", "no"], "q2": ["no", "yes", "yes"], "q3": ["yes", "yes", "yes"],
        "q4": ["yes", "no", "yes"], "q5": ["yes", "yes", "yes"]}


def _means(answers: dict[str, list[str]]) -> np.ndarray:
    return np.array([np.mean([a == "yes" for a in answers[q]]) for q in sorted(answers)])


@pytest.fixture(scope="module")
def trial_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trials")
    store = RunStore(folder / "runs")
    base = trial_run(store, folder, "base", BASE)
    cand = trial_run(store, folder, "cand", CAND)
    # the same first answers as runs without trials (no trial column at all)
    trial_run(store, folder, "plain-a", {q: [v[0]] for q, v in BASE.items()}, trial_column=False)
    trial_run(store, folder, "plain-b", {q: [v[0]] for q, v in CAND.items()}, trial_column=False)
    return store, f"{base}:m", f"{cand}:m"


def test_compare_averages_each_questions_trials_before_pairing(trial_store):
    store, base, cand = trial_store
    row = compare(store, [base, cand], metrics=["exact_match"]).table.iloc[0]
    a, b = _means(BASE), _means(CAND)
    assert row.n_pairs == len(BASE)  # questions, not questions x trials
    assert row.mean_a == pytest.approx(a.mean()) and row.delta == pytest.approx((b - a).mean())
    assert (row.ci_low, row.ci_high) == pytest.approx(paired_mean_ci(a, b, seed=0))  # resamples questions
    assert row.p_value == pytest.approx(randomization_test(b - a, seed=0)[0])
    assert row.test.startswith("randomization")  # means of trials are not 0/1: no McNemar on them
    assert (row.improved, row.regressed, row.unchanged) == (5, 0, 1)
    # the list of changed questions pairs the same per-question means
    listed = changed_questions(store, base, cand, "exact_match", "improved")
    assert sorted(listed.question_id) == ["q1", "q2", "q3", "q4", "q5"]
    assert listed.set_index("question_id").loc["q2", "delta"] == pytest.approx(2 / 3)


def test_pass_at_t_pass_all_t_and_flip_rate(trial_store):
    store, base, cand = trial_store
    table = systems_spread(store, [base], ["exact_match"]).iloc[0]
    assert table.trials == 3 and table.n_questions == 6 and table.pass_fail
    assert table.pass_at_t == pytest.approx(5 / 6)  # every question but q2 passes at least once
    assert table.pass_all_t == pytest.approx(1 / 6)  # only q0 passes every time
    assert table.flip_rate == pytest.approx(4 / 6)  # q1, q3, q4, q5 disagree
    (row,) = pair_trials(store, base, cand, ["exact_match"])
    assert (row["pass_at_t_candidate"], row["pass_all_t_candidate"]) == pytest.approx((1.0, 3 / 6))


def test_compare_prints_and_returns_the_trials(trial_store):
    store, base, cand = trial_store
    runner = CliRunner()
    args = ["--store", str(store.root), "compare", base, cand, "-m", "exact_match"]
    out = runner.invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    (row,) = got["trials"]
    assert row["trials_baseline"] == 3 and row["pass_at_t_baseline"] == pytest.approx(5 / 6)
    assert got["metrics"][0]["n_pairs"] == 6
    text = runner.invoke(app, args).stdout
    assert "pass@T base/cand" in text and "83%/100%" in text and "17%/50%" in text
    shown = runner.invoke(app, ["--store", str(store.root), "show", base.split(":")[0]]).stdout
    assert "pass@T" in shown and "83%" in shown


def test_a_run_summary_is_over_questions_each_the_mean_of_its_trials(trial_store):
    store, base, _ = trial_store
    run_id = base.split(":")[0]
    summary = query_df(store, "SELECT n, n_scored, mean, std FROM summary_metrics WHERE run_id = ? AND metric = "
                              "'exact_match'", [run_id]).iloc[0]
    a = _means(BASE)
    assert (summary.n, summary.n_scored) == (6, 6)
    assert summary["mean"] == pytest.approx(a.mean()) and summary["std"] == pytest.approx(a.std(ddof=1))
    answers = query_df(store, "SELECT n_responses FROM summary_responses WHERE run_id = ?", [run_id])
    assert answers.n_responses.iloc[0] == 18  # every answer asked
    exported = wide_results(store, run_id)
    assert list(exported.columns[:3]) == ["question_id", "method", "trial"] and len(exported) == 18


def test_a_run_without_trials_is_compared_and_exported_as_before(trial_store):
    store = trial_store[0]
    a, b = (store.resolve(name) for name in ("plain-a", "plain-b"))
    result = compare(store, [f"{a}:m", f"{b}:m"], metrics=["exact_match"])
    assert result.table.iloc[0].test == "mcnemar_exact"  # 0/1 pairs, as always
    assert systems_spread(store, [f"{a}:m", f"{b}:m"]).empty
    out = CliRunner().invoke(app, ["--store", str(store.root), "compare", f"{a}:m", f"{b}:m", "-m", "exact_match",
                                   "--json"])
    assert "trials" not in json.loads(out.stdout)
    assert "trial" not in wide_results(store, a).columns


def _brute(n: int, c: int, k: int) -> tuple[float, float]:
    """pass@k and pass^k by drawing every k of n tries (c passing)."""
    tries = [1] * c + [0] * (n - c)
    draws = list(itertools.combinations(tries, k))
    return (sum(any(d) for d in draws) / len(draws), sum(all(d) for d in draws) / len(draws))


@pytest.mark.parametrize("n,c,k", [(5, 0, 1), (5, 2, 1), (5, 2, 3), (6, 5, 4), (4, 4, 4), (4, 1, 4), (7, 3, 7)])
def test_pass_at_k_is_the_chance_over_draws_of_k_tries(n, c, k):
    assert (pass_at_k(n, c, k), pass_all_k(n, c, k)) == pytest.approx(_brute(n, c, k))


def test_pass_rates_leave_out_questions_with_fewer_tries():
    rates = pass_rates([(3, 1), (3, 0), (2, 2)], k=3)
    assert rates.n_questions == 2 and rates.pass_at_k == pytest.approx(0.5) and rates.pass_all_k == 0
    assert math.isnan(pass_rates([(2, 1)], k=3).pass_at_k)


def test_one_questions_trials_side_by_side_with_the_flips(trial_store):
    from evalcore.analysis.questions.question_trials import question_trials

    store, base, _ = trial_store
    run_id = base.split(":")[0]
    (q1,) = question_trials(store, run_id, "q1")
    assert q1["trials"] == 3 and q1["flipped"] == ["exact_match"]
    assert q1["table"]["answer"].tolist() == ["yes", "no", "no"] and q1["table"]["exact_match"].tolist() == [1, 0, 0]
    assert question_trials(store, run_id, "q0")[0]["flipped"] == []
    assert question_trials(store, store.resolve("plain-a"), "q0") == []


def test_the_leaderboards_ci_is_of_the_mean_it_shows(trial_store, monkeypatch):
    """The leaderboard's score of a system with trials is its summary's mean over questions (each
    the mean of its trials), and its CI is of those same values."""
    from evalcore.analysis.runs import leaderboard
    from evalcore.analysis.runs.means import mean_ci

    store, base, _ = trial_store
    monkeypatch.setattr(leaderboard, "MIN_N_FOR_CI", 2)
    monkeypatch.setattr(leaderboard, "ranking_metric", lambda: "exact_match")
    row = leaderboard.system_rows(store, [tuple(base.split(":"))]).iloc[0]
    a = _means(BASE)
    assert row["exact_match"] == pytest.approx(a.mean()) and row["exact_match_n"] == 6
    assert (row["exact_match_ci_low"], row["exact_match_ci_high"]) == pytest.approx(mean_ci(a))


def test_the_report_has_the_trials_section(trial_store):
    from evalcore.outputs.html_report import report_html

    store, base, cand = trial_store
    page = report_html(store, [base, cand], ["exact_match"])
    assert '<section id="trials">' in page and "pass@T baseline / candidate" in page and "83% / 100%" in page
    # runs without trials: their record has no "trials" (test_a_run_without_trials_is_compared_and_exported_as_before)
