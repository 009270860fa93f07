"""`show|compare --corrected` and `labels summary` on small stores (issue 35, items 2, 3 and 6).

- compare --corrected lists every metric labelled at random on both sides (not only the tested
  ones), each with rho, the labels-alone CI and the measured width ratio; its judge Δ, CI and
  verdict are the main table's (a labelled metric the table did not test: as `compare -m` tests it);
- --json carries null (with the status) wherever the text withholds a number;
- a population under 50 labelled in full shows its exact human mean; 50 of 50 CORRECT is not
  [1.000, 1.000]; a judge anti-correlated with people reads width 1.00, not 0.00;
- `labels summary RUN` prints kappa, bias, rho and a reading per method x metric.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner


from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.cli.main import app

METHODS = ("local_search", "basic_search")
runner = CliRunner()


def _cli(root, *args):
    res = runner.invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.output


def _label(run, method, q, kind, ref, judge, label, pos, population):
    item = {"run_id": run, "method": method, "question_id": q, "target_kind": kind, "target_ref": ref,
            "judge_label": judge}
    return A.build(item, "ann", label, None, (S.sample_id(0), S.inclusion_prob(pos, population)))


def _sample(store, run, method, metric, n, human):
    """Sampled labels on the first n answers of the seeded order; `human(pos, judge_label)`."""
    items = U.label_items(store, run, method, metric, with_text=False).set_index("question_id")
    order = S.order(list(items.index), 0)
    kind = U.unit(metric).kind
    return [_label(run, method, q, kind, items.loc[q, "target_ref"], items.loc[q, "judge_label"],
                   human(pos, items.loc[q, "judge_label"]), pos, len(order)) for pos, q in enumerate(order[:n])]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """80 questions, two methods. answer_class: 60 sampled labels per method (every 4th flips the
    judge); token_f1: 60 sampled 0-1 ratings per method (local_search's the judge's mirror image,
    rho = -1); factual_accuracy: 10 sampled grades per method (too few for an estimate)."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path_factory.mktemp("honest") / "runs", n_runs=1, n_questions=80, n_metrics=11)
    run = store.run_ids()[0]
    flip = {"CORRECT": "WRONG", "WRONG": "CORRECT"}
    rows = []
    for method in METHODS:
        rows += _sample(store, run, method, "answer_class", 60,
                        lambda pos, j: flip.get(j, "CORRECT") if pos % 4 == 0 else j)
        mirror = method == "local_search"
        rows += _sample(store, run, method, "token_f1", 60,
                        lambda pos, j, mirror=mirror: f"{round((1 - float(j)) if mirror else float(j), 1):.1f}")
        rows += _sample(store, run, method, "factual_accuracy", 10, lambda pos, j: "B")
    store.append_annotations(rows)
    return store, run


def _corrected_line(text, *words):
    """The line of `show --corrected`'s corrected table (below its header) holding every word."""
    table = text.split("human-corrected means", 1)[1]
    return next(ln for ln in table.splitlines() if all(w in ln for w in words))


def _pair(run):
    return f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}"


def test_compare_corrected_lists_every_labelled_metric_by_default(labelled):
    store, run = labelled
    out = _cli(store.root, "compare", *_pair(run), "--corrected")
    lines = {m: [ln for ln in out.splitlines() if ln.strip().startswith(f"{run}:{METHODS[1]}") and f" {m} " in ln
                 and "corrected" in ln] for m in ("answer_class", "token_f1", "factual_accuracy")}
    for metric in ("answer_class", "token_f1"):
        assert len(lines[metric]) == 1, out
        line = lines[metric][0]
        assert re.search(r"rho -?\d\.\d\d  labels alone \[-?\d\.\d{3}, -?\d\.\d{3}\]  width \d\.\d\d", line), line
        assert "(tested apart" in line  # neither is among compare's default tested metrics
    assert "corrected: 10 of 50 labels" in lines["factual_accuracy"][0]


def test_compare_corrected_judge_side_is_the_main_tables(labelled):
    store, run = labelled
    tested = json.loads(_cli(store.root, "compare", *_pair(run), "-m", "answer_class,token_f1", "--corrected",
                             "--json"))
    default = json.loads(_cli(store.root, "compare", *_pair(run), "--corrected", "--json"))
    assert {r["metric"] for r in tested["corrected"]} == {"answer_class", "token_f1"}  # -m names them
    assert {r["metric"] for r in default["corrected"]} == {"answer_class", "token_f1", "factual_accuracy"}
    for payload in (tested, default):
        rows = {r["metric"]: r for r in payload["corrected"]}
        main = {r["metric"]: r for r in tested["metrics"]}  # the main table that tested both
        for metric in ("answer_class", "token_f1"):
            r, m = rows[metric], main[metric]
            assert (r["judge_delta"], r["judge_low"], r["judge_high"]) == pytest.approx(
                (m["delta"], m["ci_low"], m["ci_high"]), abs=1e-12)
            assert r["judge_verdict"] == m["outcome"]
            assert r["rho"] is not None and r["classical_low"] < r["classical_high"]
            assert r["width_ratio"] == pytest.approx((r["classical_high"] - r["classical_low"])
                                                     / (r["ci_high"] - r["ci_low"]))
    assert {r["judge_tested"] for r in tested["corrected"] if r["metric"] != "factual_accuracy"} == {
        "with the main table"}
    # a judge Δ CI on a 0-1 metric's difference stays inside [-1, 1] (the main table's bootstrap)
    assert all(-1 <= r["judge_low"] <= r["judge_high"] <= 1 for r in default["corrected"])


def test_json_gives_null_wherever_the_text_withholds_a_number(labelled):
    store, run = labelled
    means = json.loads(_cli(store.root, "show", run, "--corrected", "--json"))["corrected"]
    few = [r for r in means if r["metric"] == "factual_accuracy"]
    assert len(few) == 2 and all(r["status"] == "too_few" and r["n_labelled"] == 10 for r in few)
    for r in few:
        assert {k for k, v in r.items() if v is not None} == {"method", "metric", "status", "n_labelled", "N",
                                                              "judge_mean"}, r
    text = _cli(store.root, "show", run, "--corrected")
    line = _corrected_line(text, "factual_accuracy", METHODS[1])
    assert "10 of 50 labels" in line and "[" not in line
    delta = next(r for r in json.loads(_cli(store.root, "compare", *_pair(run), "--corrected", "--json"))["corrected"]
                 if r["metric"] == "factual_accuracy")
    assert delta["status"] == "too_few"
    assert all(delta[k] is None for k in ("corrected_delta", "ci_low", "ci_high", "classical_low", "rho",
                                          "width_ratio", "implied_width_ratio"))
    assert delta["corrected_verdict"] == "–" and delta["verdict_changes"] is False


def test_an_anti_correlated_judge_reads_width_one_not_zero(labelled):
    store, run = labelled
    row = next(r for r in json.loads(_cli(store.root, "show", run, "--corrected", "--json"))["corrected"]
               if r["method"] == METHODS[0] and r["metric"] == "token_f1")
    assert row["rho"] < 0 and row["lam"] == 0.0 and row["implied_width_ratio"] == 1.0
    text = _cli(store.root, "show", run, "--corrected")
    line = _corrected_line(text, METHODS[0], "token_f1")
    assert line.split()[-1] == "1.00", line  # the measured ratio; sqrt(1 - rho^2) printed 0.00
    assert "labels-alone 95% CI's width over the corrected one's" in text


def test_labels_summary_prints_calibration_per_method_and_metric(labelled):
    store, run = labelled
    payload = json.loads(_cli(store.root, "labels", "summary", run, "--json"))
    rows = payload["calibration"]
    got = {(r["method"], r["metric"]) for r in rows}
    assert {(m, x) for m in METHODS for x in ("answer_class", "token_f1", "factual_accuracy")} <= got
    ac = next(r for r in rows if r["method"] == METHODS[1] and r["metric"] == "answer_class")
    assert ac["n_answers"] == 60 and ac["kappa"] is not None and ac["bias_low"] < ac["bias_high"]
    assert ac["advice"] in ("trust its mean", "biased: use corrected", "weak: rely on labels")
    for r in rows:
        if r["metric"] == "token_f1":  # a 0-1 rating is a number, not a category: no kappa
            assert r["kappa"] is None and r["rho"] is not None
        if r["metric"] == "factual_accuracy":  # the person said B every time: kappa is 0 by construction,
            assert r["kappa"] == 0 and r["kappa_low"] is None  # and no resampling can give it a width
    text = _cli(store.root, "labels", "summary", run)
    assert "kappa" in text and "reading" in text and "judge calibration" in text and "[0.00, 0.00]" not in text
    assert ac["advice"] in text and METHODS[0] in text and "token_f1" in text


def test_labels_summary_of_a_run_nobody_labelled_says_so(tmp_path):
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=4, n_metrics=4)
    out = _cli(store.root, "labels", "summary", store.run_ids()[0])
    assert "no randomly sampled labels" in out


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """6 questions: answer_class labelled in full on both methods (a census), the person calling
    CORRECT what the judge calls WRONG on the first two of the order."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path_factory.mktemp("small") / "runs", n_runs=1, n_questions=6, n_metrics=4)
    run = store.run_ids()[0]
    rows = []
    for method in METHODS:
        rows += _sample(store, run, method, "answer_class", 6, lambda pos, j: "CORRECT" if pos < 2 else j)
    store.append_annotations(rows)
    return store, run


def test_a_small_population_labelled_in_full_shows_its_human_mean(small):
    store, run = small
    human = U.answers(store, run, METHODS[1], "answer_class").human
    assert human.notna().all() and len(human) == 6
    row = next(r for r in json.loads(_cli(store.root, "show", run, "--corrected", "--json"))["corrected"]
               if r["method"] == METHODS[1])
    assert row["status"] == "all_labelled" and row["corrected"] == pytest.approx(human.mean())
    assert row["ci_low"] < row["ci_high"]
    text = _cli(store.root, "show", run, "--corrected")
    line = _corrected_line(text, METHODS[1], "answer_class")
    assert f"{human.mean():.3f}" in line and "6/6" in line and "of 50 labels" not in line
    delta = json.loads(_cli(store.root, "compare", *_pair(run), "-m", "answer_class", "--corrected",
                            "--json"))["corrected"][0]
    both = U.answers(store, run, METHODS[0], "answer_class").set_index("question_id").human
    assert delta["status"] == "all_labelled"
    assert delta["corrected_delta"] == pytest.approx((human.to_numpy() - both.loc[
        U.answers(store, run, METHODS[1], "answer_class").question_id].to_numpy()).mean())


def test_fifty_of_fifty_correct_prints_an_interval_that_holds_093(tmp_path):
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=60, n_metrics=4)
    run = store.run_ids()[0]
    store.append_annotations(_sample(store, run, METHODS[0], "answer_class", 50, lambda pos, j: "CORRECT"))
    text = _cli(store.root, "show", run, "--corrected")
    line = _corrected_line(text, METHODS[0], "answer_class")
    lo, hi = (float(x) for x in re.search(r"\[(\d\.\d{3}), (\d\.\d{3})\]", line).groups())
    assert lo < 0.93 <= hi <= 1.0, line


def test_only_metrics_with_sampled_labels_are_estimated_and_the_rows_are_those_of_all(labelled):
    """corrected_means computes an estimate only where a sampled label exists (sampled_metrics):
    its rows are exactly the every-metric computation's rows that have a label, in order."""
    from evalcore.analysis.labels.corrected import corrected_means, sampled_metrics

    store, run = labelled
    assert sampled_metrics(store, run) == {m: {"answer_class", "token_f1", "factual_accuracy"} for m in METHODS}
    every = corrected_means(store, run, labelled_only=False)
    kept = every[every.n_labelled > 0].reset_index(drop=True)
    fast = corrected_means(store, run)
    assert len(fast) == 6 and len(every) > len(fast)
    assert fast.equals(kept)


def test_compare_corrected_reads_on_the_compared_runs_database_alone(labelled, monkeypatch):
    """The corrected table's reads (which systems hold sampled labels, which pairs hold preference
    labels) are of the compared runs: they use the database the comparison built for them, not a
    second one over the whole store (a whole-store database cost ~0.1 s of every command)."""
    from evalcore.store import views

    store, run = labelled
    views.forget_connections()
    built = []
    real = views._build
    monkeypatch.setattr(views, "_build", lambda s, runs: built.append(runs) or real(s, runs))
    out = _cli(store.root, "compare", *_pair(run), "--corrected")
    assert "corrected" in out and built == [[run]], built


def test_show_corrected_of_a_run_scored_once_reads_on_the_runs_database_alone(labelled, monkeypatch):
    """`show` asks for the judge's noise of a run scored with --repeats K; a run scored once has
    none, and asking for it must not build a database over no run at all."""
    from evalcore.store import views

    store, run = labelled
    views.forget_connections()
    built = []
    real = views._build
    monkeypatch.setattr(views, "_build", lambda s, runs: built.append(runs) or real(s, runs))
    out = _cli(store.root, "show", run, "--corrected")
    assert "human-corrected means" in out and built == [[run]], built
