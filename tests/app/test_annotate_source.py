"""Annotate shows where a claim comes from: a statement of the reference (context_recall's
`ground_truth` claims) beside the ground truth, an answer claim beside the answer; and the
decision buttons' labels are short enough to read in the 1400 px window's half column, with
their keyboard shortcuts kept."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.app.test_pages import texts


@pytest.fixture(scope="module")
def gt_store(tmp_path_factory):
    """One synthetic run plus a context_recall statement of the reference, judged not_supported."""
    from evalcore.demo.synthetic import JUDGE, build_store
    from evalcore.scoring.queries import run_questions
    from evalcore.schemas import Claim

    store = build_store(tmp_path_factory.mktemp("gt") / "runs", n_runs=1, n_questions=4)
    run = store.run_ids()[0]
    q = next(q for q in run_questions(store, run) if q.ground_truth)
    writer = store.open_run(run)
    writer.write_claims([Claim(run_id=run, method="basic_search", question_id=q.id, source="ground_truth", idx=0,
                               text="a statement of the reference", verdict="not_supported", reason="not found",
                               metric="context_recall", judge_id=JUDGE.label,
                               computed_at=datetime.now(timezone.utc))])
    writer.publish()
    return store, run, q


def _app(store, monkeypatch, **params):
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import ROOT

    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/annotate.py")
    at.query_params.update(params)
    at.run()
    return at


def _walk(at):
    while True:  # the claim queue of basic_search: step until the reference statement is shown
        item = next(t for t in texts(at) if t.count(" / ") == 2)
        if ":ground_truth:" in item:
            return item
        next(b for b in at.button if b.label.startswith("Skip")).click().run()


def test_a_reference_statement_shows_the_ground_truth_as_its_source(gt_store, monkeypatch):
    store, run, q = gt_store
    at = _app(store, monkeypatch, run=run, method="basic_search", kind="claim", who="carol")
    assert not at.exception
    _walk(at)
    captions = [c.value for c in at.caption]
    assert "Reference (ground truth) it comes from" in captions
    assert "Answer it comes from" not in captions


def test_an_answer_claim_shows_the_answer_as_its_source(gt_store, monkeypatch):
    store, run, q = gt_store
    at = _app(store, monkeypatch, run=run, method="local_search", kind="claim", who="carol")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert "Answer it comes from" in captions and "Reference (ground truth) it comes from" not in captions


def test_decision_buttons_are_short_and_keep_their_shortcuts(gt_store, monkeypatch):
    store, run, q = gt_store
    at = _app(store, monkeypatch, run=run, method="local_search", kind="claim", who="carol")
    buttons = {b.proto.shortcut.upper(): b.label for b in at.button if b.proto.shortcut}
    assert set(buttons) >= {"A", "S", "N", "U"}
    # Streamlit draws the shortcut as a key badge beside the label: "(A)" would repeat it and cut
    # the label off ("Agr… A") in the half-width column
    assert buttons["A"] == "Agree" and buttons["N"] == "Skip" and buttons["U"] == "Undo"
    assert buttons["S"] in ("Correct → supported", "Correct → not_supported")
