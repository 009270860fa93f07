"""Human labels on the pages (issue 35, items 2e, 3 and 6).

- Compare: every metric labelled at random on both sides gets its corrected row (not only the
  tested ones), with rho, the labels-alone CI and the width ratio; the judge Δ, CI and verdict
  beside it are the main table's (compare.pair_table and its verdict), never a second estimate;
- Runs: a run with sampled labels shows its judge calibration (kappa, bias, rho, reading) per
  method x metric;
- Annotate: on a population of 25, the progress lines count to 25 (not 50) and print no nan/None.
"""

from __future__ import annotations

import re

import pytest


from evalcore.analysis.comparison import compare as CMP
from evalcore.analysis.labels import corrected as C
from evalcore.analysis.comparison.verdict import verdict_lines
from tests.app.test_pages import texts
from tests.test_corrected_cli import METHODS, _sample


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """60 questions, two methods; answer_class and token_f1 labelled at random on 50 answers of
    each method (the person flips every 4th class; rates token_f1 as the judge scored it)."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path_factory.mktemp("pages") / "runs", n_runs=1, n_questions=60, n_metrics=11)
    run = store.run_ids()[0]
    flip = {"CORRECT": "WRONG", "WRONG": "CORRECT"}
    rows = []
    for method in METHODS:
        rows += _sample(store, run, method, "answer_class", 50, lambda pos, j: flip.get(j, "CORRECT") if pos % 4 == 0
                        else j)
        rows += _sample(store, run, method, "token_f1", 50, lambda pos, j: f"{round(float(j), 1):.1f}")
    store.append_annotations(rows)
    return store, run


def _app(store, monkeypatch, page, **params):
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import ROOT

    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page(f"pages/{page}.py")
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    return at


def test_compare_page_lists_every_labelled_metric_with_the_main_tables_judge(labelled, monkeypatch):
    store, run = labelled
    base, cand = f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}"
    at = _app(store, monkeypatch, "compare", sys=[base, cand], tm=["answer_class"])
    table = next(d.value for d in at.dataframe if "corrected Δ" in d.value.columns).set_index("metric")
    assert {"answer_class", "token_f1"} <= set(table.index)  # token_f1 is labelled, not tested
    assert {"rho", "labels-alone 95% CI", "width: labels alone / corrected"} <= set(table.columns)
    main = CMP.pair_table(store, base, cand, ("answer_class",))
    row = main.set_index("metric").loc["answer_class"]
    outcome = verdict_lines(main, "b", "c").set_index("metric").outcome["answer_class"]
    ac = table.loc["answer_class"]
    assert ac["judge Δ"] == pytest.approx(row.delta)
    assert ac["judge 95% CI"] == C.interval(row.ci_low, row.ci_high)
    assert ac["judge verdict"] == outcome
    apart = C.judge_apart(store, (run, METHODS[0]), (run, METHODS[1]), ["token_f1"])["token_f1"]
    tf = table.loc["token_f1"]
    assert tf["judge Δ"] == pytest.approx(apart.delta) and tf["judge verdict"] == f"{apart.outcome} (tested apart)"
    assert re.fullmatch(r"\[-?\d\.\d{3}, -?\d\.\d{3}\]", tf["labels-alone 95% CI"])


def test_runs_page_shows_judge_calibration_for_a_labelled_run(labelled, monkeypatch):
    store, run = labelled
    at = _app(store, monkeypatch, "runs")
    cal = next(d.value for d in at.dataframe if "kappa 95% CI" in d.value.columns)
    assert set(cal.run_id) == {run} and set(cal.method) == set(METHODS)
    assert {"answer_class", "token_f1"} <= set(cal.metric)
    assert {"reading", "bias (judge − human)", "rho", "kappa"} <= set(cal.columns)
    assert cal.reading.str.len().gt(0).all()


def test_annotate_counts_stay_inside_a_population_of_25(tmp_path, monkeypatch):
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=25, n_metrics=4)
    run = store.run_ids()[0]
    store.append_annotations(_sample(store, run, METHODS[0], "answer_class", 2, lambda pos, j: j))  # 2 agreeing
    at = _app(store, monkeypatch, "annotate", run=run, smethod=METHODS[0], metric="answer_class", who="eve")
    shown = texts(at)
    assert any(t.startswith("2 of 25 answers labelled at random · 2 of the 25 an estimate needs") for t in shown)
    assert any(t.startswith("Corrected CI now ±0.") for t in shown), shown
    assert not [t for t in shown if re.search(r"\b(nan|None)\b", t)]
    for t in shown:
        for more in re.findall(r"about (\d+) more labels", t):
            assert int(more) < 23, t
