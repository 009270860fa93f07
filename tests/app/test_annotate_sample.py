"""End to end: annotate a random sample through the Annotate page, then the corrected Δ the CLI
prints (`compare --corrected`) and the one Compare shows are the same numbers; Runs gets its
'corrected' column; the whole-answer form labels every claim of an answer with its sample."""

from __future__ import annotations

import re

import pandas as pd
import pytest


from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.store import query_df
from tests.app.test_pages import texts

METHODS = ("local_search", "basic_search")


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    """One run, two methods x 60 questions; answer_class labelled at random on 49 answers per
    method (the page adds the 50th), the person disagreeing with the judge on every 4th."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path_factory.mktemp("sample") / "runs", n_runs=1, n_questions=60, n_metrics=4)
    run = store.run_ids()[0]
    rows = []
    for method in METHODS:
        items = U.label_items(store, run, method, "answer_class").set_index("question_id")
        order = S.order(list(items.index), 0)
        for pos, q in enumerate(order[:49]):
            judge = items.loc[q, "judge_label"]
            label = ("WRONG" if judge == "CORRECT" else "CORRECT") if pos % 4 == 0 else judge
            item = {"run_id": run, "method": method, "question_id": q, "target_kind": "answer_class",
                    "target_ref": "answer_class", "judge_label": judge}
            rows.append(A.build(item, "seed", label, None, (S.sample_id(0), S.inclusion_prob(pos, len(order)))))
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


def _progress(at) -> int:
    line = next(t for t in texts(at) if " answers labelled at random · " in t)
    return int(re.match(r"(\d+) of \d+ answers", line).group(1))


def test_random_sample_through_the_page_then_cli_and_compare_agree(sample_store, monkeypatch):
    store, run = sample_store
    for method in METHODS:
        at = _app(store, monkeypatch, "annotate", run=run, smethod=method, metric="answer_class", who="eve")
        assert next(s for s in at.selectbox if s.label == "Mode").value == "random sample"  # the default
        assert _progress(at) == 49
        expected_q = S.next_answer(store, run, method, "answer_class").question_id
        assert f"Answer labelled: {method} / {expected_q} / answer_class" in texts(at)
        box = next(s for s in at.selectbox if s.label.startswith("Your label"))
        box.set_value("WRONG" if box.value != "WRONG" else "CORRECT")
        next(b for b in at.button if b.label == "Label this whole answer").click().run()
        assert not at.exception
        assert _progress(at) == 50
        assert any(t.startswith("Corrected CI now ±") for t in texts(at))
    saved = query_df(store, "SELECT method, question_id, sample_id, inclusion_prob, who FROM annotations "
                            "WHERE who = 'eve'")
    assert len(saved) == 2 and set(saved.sample_id) == {"srs:0"} and (saved.inclusion_prob > 0).all()

    from typer.testing import CliRunner

    from evalcore.cli.main import app

    res = CliRunner().invoke(app, ["--store", str(store.root), "compare", f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}",
                                   "--metrics", "answer_class", "--corrected"])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if ln.strip().startswith(f"{run}:{METHODS[1]}")
                and "corrected" in ln)
    m = re.search(r"corrected ([+-]\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]", line)
    assert m, line

    at = _app(store, monkeypatch, "compare", sys=[f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}"], tm=["answer_class"])
    table = next(d.value for d in at.dataframe if "corrected Δ" in d.value.columns)
    row = table[table.metric == "answer_class"].iloc[0]
    assert f"{row['corrected Δ']:+.3f}" == m.group(1)
    assert row["corrected 95% CI"] == f"[{m.group(2)}, {m.group(3)}]"
    assert row["labelled"] == "50/60"

    at = _app(store, monkeypatch, "runs")
    board = next(d.value for d in at.dataframe if "corrected" in d.value.columns)
    cell = board[board.method == METHODS[1]].corrected.iloc[0]
    assert cell.startswith("answer_class ") and "[" in cell


def test_label_this_whole_answer_labels_every_claim(sample_store, monkeypatch):
    store, run = sample_store
    at = _app(store, monkeypatch, "annotate", run=run, smethod="local_search", metric="faithfulness", who="finn")
    boxes = [s for s in at.selectbox if s.label.startswith("Your label")]
    assert len(boxes) == 3  # the synthetic answers have three claims each
    q = S.next_answer(store, run, "local_search", "faithfulness").question_id
    next(b for b in at.button if b.label == "Label this whole answer").click().run()
    assert not at.exception
    got = query_df(store, "SELECT question_id, target_kind, sample_id FROM annotations WHERE who = 'finn'")
    assert len(got) == 3 and set(got.question_id) == {q} and set(got.target_kind) == {"claim"}
    assert set(got.sample_id) == {"srs:0"}
    assert U.answers(store, run, "local_search", "faithfulness").set_index("question_id").loc[q, "sampled"]


def test_calibration_section_reads_sampled_labels(sample_store, monkeypatch):
    store, run = sample_store
    at = _app(store, monkeypatch, "annotate", run=run, smethod="basic_search", metric="answer_class", who="eve",
              calm="answer_class")
    cal = next(d.value for d in at.dataframe if "kappa 95% CI" in d.value.columns)
    row = cal[cal.metric == "answer_class"].iloc[0]
    assert row["sampled answers"] >= 98 and 0 < row["kappa"] < 1
    assert row["reading"]
    assert any("judge \\ person" in d.value.columns and "CORRECT" in d.value.columns for d in at.dataframe)


def test_annotate_lists_the_runs_corrected_means(sample_store, monkeypatch):
    from evalcore.analysis.labels import corrected as C

    store, run = sample_store
    at = _app(store, monkeypatch, "annotate", run=run, smethod="basic_search", metric="answer_class", who="eve")
    table = next(d.value for d in at.dataframe if "corrected [95% CI]" in d.value.columns)
    want = C.system_estimate(store, run, "basic_search", "answer_class")
    row = table[(table.method == "basic_search") & (table.metric == "answer_class")].iloc[0]
    assert row["corrected [95% CI]"] == C.shown(want)
    for column, key in (("judge bias", "bias"), ("rho", "rho")):
        if want[key] is None:  # withheld below 50 labels (docs/labels.md): the page shows no number either
            assert pd.isna(row[column]), (column, row[column])
        else:
            assert row[column] == pytest.approx(want[key])


def test_the_whole_answer_form_shows_hostile_claims_as_plain_text(tmp_path, monkeypatch):
    from datetime import datetime, timezone

    from evalcore.demo.synthetic import JUDGE, build_store
    from evalcore.schemas import Claim
    from tests.app.conftest import HOSTILE

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=6, n_metrics=1)
    run = store.run_ids()[0]
    q = S.next_answer(store, run, "basic_search", "faithfulness").question_id
    writer = store.open_run(run)
    now = datetime.now(timezone.utc)
    writer.write_claims([Claim(run_id=run, method="basic_search", question_id=q, source="answer", idx=i,
                               text=HOSTILE if i == 0 else "a plain claim", verdict="supported", reason="r",
                               metric="faithfulness", judge_id=JUDGE.label, computed_at=now) for i in range(2)])
    writer.publish()
    at = _app(store, monkeypatch, "annotate", run=run, smethod="basic_search", metric="faithfulness", who="eve")
    assert HOSTILE in texts(at)  # verbatim, as plain text
    assert all(HOSTILE not in m.value for m in at.markdown)
    assert len([s for s in at.selectbox if s.label.startswith("Your label")]) == 2


def test_agree_disagree_and_steps_set_the_labels_a_save_stores(sample_store, monkeypatch):
    """The buttons the keys press (issue 35, item 5): Disagree gives a claim the other label and
    moves on, Agree the judge's, Previous/Next step; 'Agree with every item' saves the judge's
    labels in one click and draws the next answer."""
    store, run = sample_store
    at = _app(store, monkeypatch, "annotate", run=run, smethod="basic_search", metric="faithfulness", who="gil")
    q = S.next_answer(store, run, "basic_search", "faithfulness").question_id
    judge = [s.value for s in at.selectbox if s.label.startswith("Your label")]
    press = lambda label: next(b for b in at.button if b.label == label).click().run()  # noqa: E731
    press("Disagree")
    assert any(c.value.startswith("▶ current · item 2 of 3") for c in at.caption)
    press("Agree")
    press("Previous item")
    assert any(c.value.startswith("▶ current · item 2 of 3") for c in at.caption)
    shown = [s.value for s in at.selectbox if s.label.startswith("Your label")]
    other = {"supported": "not_supported", "not_supported": "supported"}
    assert shown == [other[judge[0]], *judge[1:]]
    press("Label this whole answer")
    got = query_df(store, "SELECT target_ref, label FROM annotations WHERE who = 'gil' ORDER BY target_ref")
    assert got.label.tolist() == shown
    nxt = S.next_answer(store, run, "basic_search", "faithfulness").question_id
    assert nxt != q and f"Answer labelled: basic_search / {nxt} / faithfulness" in texts(at)
    press("Agree with every item")
    got = query_df(store, "SELECT question_id, label, judge_label FROM annotations WHERE who = 'gil' AND question_id = ?",
                   [nxt])
    assert len(got) == 3 and (got.label == got.judge_label).all()
