"""The labels people gave an answer show on the Questions page beside the judge's verdicts
(issue 35, item 5): each person's newest label per item, the judge's label, agreement in words
and how the answer was chosen; a retracted label and other answers' labels never show."""

from __future__ import annotations

from evalcore.analysis.labels import annotations as A
from tests.app.test_judge_repeats_pages import _app, store  # noqa: F401  (the run and the page runner)


def _item(question_id: str, method: str = "a", judge_label: str = "WRONG") -> dict:
    return {"run_id": "rep", "method": method, "question_id": question_id, "target_kind": "answer_class",
            "target_ref": "answer_class", "judge_label": judge_label}


def test_an_answers_labels_read_beside_the_judge(store, monkeypatch):  # noqa: F811
    A.save(store, _item("q2"), "ann", "CORRECT", None)            # disagrees with the judge
    A.save(store, _item("q2"), "bob", "WRONG", None, ("srs:0", 0.2))  # agrees, drawn at random
    A.save(store, _item("q3"), "ann", "CORRECT", None)            # another answer
    A.save(store, _item("q2", method="b"), "ann", "CORRECT", None)  # another method's answer
    gone = A.save(store, _item("q2"), "eve", "CORRECT", None)
    A.undo(store, gone)                                            # taken back: never shown
    table = A.answer_labels(store, "rep", "a", "q2").set_index("who")
    assert sorted(table.index) == ["ann", "bob"]
    assert table.loc["ann", "agrees"] == "no" and table.loc["bob", "agrees"] == "yes"
    assert table.loc["bob", "chosen"] == "srs:0" and table.loc["ann", "chosen"] == "hand-picked"
    assert A.answer_labels(store, "rep", "a", "q0").empty

    at = _app(store, monkeypatch, "questions", run="rep", qid="q2")
    assert any("Human labels on this answer: 2 from 2 people · 1 disagree with the judge" in c.value
               for c in at.caption)
    shown = [df.value for df in at.dataframe if "agrees" in df.value.columns]
    assert shown and sorted(shown[0]["who"]) == ["ann", "bob"]
