"""The pages of runs asked with `--trials T` (issue 36 item 4): the Compare page shows pass@T,
pass^T and the flip rate (the numbers `evalcore compare` prints), the Questions page one
question's T answers and verdicts with the flipping metrics marked; runs without trials show
neither."""

from __future__ import annotations

import pytest

from evalcore.analysis.comparison.trial_noise import pair_trials
from evalcore.store import RunStore
from tests.analysis.trial_runs import trial_run
from tests.app.conftest import ROOT

ANSWERS = {"q1": ["yes", "no", "yes"], "q2": ["no", "no", "no"], "q3": ["yes", "yes", "yes"]}


@pytest.fixture(scope="module")
def trials_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trial-pages")
    store = RunStore(folder / "runs")
    base = trial_run(store, folder, "base", ANSWERS)
    cand = trial_run(store, folder, "cand", {q: ["yes"] * 3 for q in ANSWERS})
    plain = trial_run(store, folder, "plain", {q: v[:1] for q, v in ANSWERS.items()}, trial_column=False)
    return store, base, cand, plain


def _page(store, monkeypatch, page: str, **params):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page(f"pages/{page}.py")
    at.query_params.update(params)
    at.run()
    assert not at.exception
    return at


def test_compare_page_shows_the_trials_numbers_compare_prints(trials_store, monkeypatch):
    store, base, cand, plain = trials_store
    at = _page(store, monkeypatch, "compare", sys=[f"{base}:m", f"{cand}:m"], tm=["exact_match"])
    assert "Trials" in [s.value for s in at.subheader]
    (table,) = [d.value for d in at.dataframe if "pass_at_t_baseline" in d.value.columns]
    (expected,) = pair_trials(store, f"{base}:m", f"{cand}:m", ["exact_match"])
    row = table.iloc[0]
    assert row["pass_at_t_baseline"] == pytest.approx(expected["pass_at_t_baseline"]) == pytest.approx(2 / 3)
    assert row["pass_all_t_baseline"] == pytest.approx(1 / 3) and row["flip_rate_baseline"] == pytest.approx(1 / 3)
    assert pair_trials(store, f"{plain}:m", f"{plain}:m", ["exact_match"]) == []  # without trials: no section


def test_questions_page_shows_each_trial_and_marks_the_flips(trials_store, monkeypatch):
    store, base, _, plain = trials_store
    at = _page(store, monkeypatch, "questions", run=base, qid="q1", layout="stacked")
    assert "Trials" in [s.value for s in at.subheader]
    (trials,) = [d.value for d in at.dataframe if "answer" in d.value.columns and "trial" in d.value.columns]
    assert trials["trial"].tolist() == [0, 1, 2] and trials["answer"].tolist() == ["yes", "no", "yes"]
    assert trials["exact_match ⚑"].tolist() == [1.0, 0.0, 1.0]  # flipped on this question: marked
    assert any("trials disagree on 1 metric(s): exact_match" in t.value for t in at.text)
    spread = [d.value for d in at.dataframe if "pass_at_t" in d.value.columns]
    assert spread and spread[0]["pass_at_t"].iloc[0] == pytest.approx(2 / 3)
    at = _page(store, monkeypatch, "questions", run=plain, qid="q1")
    assert "Trials" not in [s.value for s in at.subheader]
