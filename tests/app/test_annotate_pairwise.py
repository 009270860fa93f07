"""Annotate's pairwise mode (issue 35, item 4): two systems' answers to the drawn question side by
side, blind (no system named), left and right as the seed draws them for that question; A / B /
tie on keys 1 / 2 / 3; the label is stored for the system that was on the chosen side, with the
side shown left. Then the Compare page shows the corrected win rate `compare --corrected` prints."""

from __future__ import annotations

from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels import sample_order as O
from evalcore.analysis.labels import win_rate as W
from evalcore.store import query_df
from tests.app.test_pages import texts

BASE, CAND = "local_search", "basic_search"
N = 24


def test_pairwise_page_is_blind_keyed_and_stores_the_system_chosen(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from evalcore.demo.synthetic import build_store
    from tests.app.conftest import ROOT

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=N, n_metrics=4)
    run = store.run_ids()[0]
    pair = PF.pair_of((run, BASE), (run, CAND))[0]
    order = O.order(PF.population(store, pair).question_id.tolist(), 0)
    store.append_annotations([PF.build(pair, q, "seed", "A", sample=("srs:0", O.inclusion_prob(k, N)))
                              for k, q in enumerate(order[:N - 1])])  # all but the last question
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=90)  # the page alone: faster
    at.query_params.update(run=run, mode="pairwise", pa=BASE, pb=CAND, who="eve")
    at.run()
    assert not at.exception, at.exception
    q, left = order[-1], PF.left_side(0, order[-1])
    answers = query_df(store, "SELECT method, answer FROM responses WHERE question_id = ?", [q])
    answer = dict(zip(answers.method, answers.answer))
    systems = {"A": pair.a[1], "B": pair.b[1]}
    right = "B" if left == "A" else "A"
    shown = texts(at)
    assert shown.index(answer[systems[left]]) < shown.index(answer[systems[right]])  # left, then right
    said = shown + [c.value for c in at.caption] + [m.value for m in at.markdown]
    assert not any(BASE in s or CAND in s for s in said)  # blind: no text names a system
    keys = {b.label: b.proto.shortcut for b in at.button}
    assert (keys["A is better"], keys["B is better"], keys["Tie"]) == ("1", "2", "3")

    next(b for b in at.button if b.label == "B is better").click().run()  # the answer on the right
    assert not at.exception, at.exception
    got = query_df(store, "SELECT question_id, label, shown_left, sample_id FROM annotations WHERE who = 'eve'")
    assert got.to_dict("records") == [{"question_id": q, "label": right, "shown_left": left, "sample_id": "srs:0"}]
    assert f"{N} of {N} questions labelled at random" in " ".join(texts(at))

    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=90)
    at.query_params.update(sys=[f"{run}:{BASE}", f"{run}:{CAND}"], tm=["faithfulness"])
    at.run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "corrected win rate [95% CI]" in d.value.columns)
    row = table[table.metric == "faithfulness"].iloc[0]
    want = W.win_rate(store, (run, BASE), (run, CAND), "faithfulness")  # what `compare --corrected` prints
    assert row["corrected win rate [95% CI]"] == W.shown(want) and "(all 24 labelled)" in W.shown(want)
    assert row["judge win rate [95% CI]"] == W.judge_shown(want) and row["labelled"] == f"{N}/{N}"
