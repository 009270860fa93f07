"""An answer's K judge verdicts (`score --repeats K`) on the pages (issue 36, item 2): the
Questions page shows them side by side with each disagreeing verdict marked in text ("≠", and
the row's "differ"), and the Annotate page's hand-picked queue can put the answers whose
verdicts disagree most first. A run written directly: method `a` judged K = 4 times per answer,
method `b` once."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from evalcore.analysis.labels import annotations as A
from evalcore.schemas import EvalQuestion, EvalResponse, MetricRepeat, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore
from tests.app.conftest import ROOT

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
C, W, D = "CORRECT", "WRONG", "DONT_KNOW"
VALUE = {C: 1.0, W: 0.0, D: 0.0}
# per question, method a's four answer_class verdicts: q0 agree, q1 split 2-2, q2 split 3-1,
# q3 agree, q4 split 3-1 over three labels of which two are worth 0 (values differ less)
VERDICTS = {"q0": [C, C, C, C], "q1": [C, W, W, C], "q2": [W, W, C, W], "q3": [W, W, W, W], "q4": [D, D, W, D]}
JUDGE = "openai-compatible:qwen[t=1]/answer_class@1"


def _majority(labels):
    return max(labels, key=lambda x: (labels.count(x), -labels.index(x)))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("repeats") / "runs")
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="rep", name="rep",
                                          evalcore_version="test", methods=["a", "b"]))
    writer.write_questions([EvalQuestion(id=q, question=f"question {q}?", ground_truth="x") for q in VERDICTS])
    writer.write_responses([EvalResponse(question_id=q, method=m, answer=f"answer {q}") for m in "ab" for q in VERDICTS])
    values, repeats = [], []
    for i, (q, labels) in enumerate(VERDICTS.items()):
        at = T0 + timedelta(seconds=i)
        values.append(MetricValue(run_id="rep", method="a", question_id=q, metric="answer_class", group="judged",
                                  value=sum(VALUE[x] for x in labels) / len(labels), label=_majority(labels),
                                  judge_id=JUDGE, computed_at=at))
        repeats += [MetricRepeat(run_id="rep", method="a", question_id=q, metric="answer_class", repeat=r,
                                 value=VALUE[x], label=x, judge_id=JUDGE, value_at=at) for r, x in enumerate(labels)]
        values.append(MetricValue(run_id="rep", method="b", question_id=q, metric="answer_class", group="judged",
                                  value=1.0, label=C, judge_id=JUDGE, computed_at=at))  # judged once
    writer.write_metrics(values)
    writer.write_metric_repeats(repeats)
    writer.publish()
    return store


def _app(store, monkeypatch, page, **params):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page(f"pages/{page}.py")
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    return at


def test_an_answers_repeats_side_by_side_with_disagreement_in_words(store):
    from evalcore.analysis.questions.answer_repeats import answer_repeats

    table = answer_repeats(store, "rep", "q1").set_index("method")
    row = table.loc["a"]
    assert row["K"] == 4 and row["value (mean)"] == 0.5
    assert row["verdicts"] == "differ: 2 of 4 give the most common verdict"
    # the most common verdict is CORRECT (2-2, the earliest on a tie): the WRONGs are marked
    assert [row[f"repeat {i}"] for i in range(4)] == ["CORRECT (1)", "WRONG (0) ≠", "WRONG (0) ≠", "CORRECT (1)"]
    assert "b" not in table.index  # judged once: nothing to show
    agree = answer_repeats(store, "rep", "q0").iloc[0]
    assert agree["verdicts"] == "all 4 agree" and not any("≠" in agree[f"repeat {i}"] for i in range(4))
    # labels decide, as for the flip rate: DONT_KNOW and WRONG are both worth 0, yet differ
    assert answer_repeats(store, "rep", "q4").iloc[0]["repeat 2"] == "WRONG (0) ≠"


def test_questions_page_shows_the_k_verdicts_of_each_answer(store, monkeypatch):
    at = _app(store, monkeypatch, "questions", run="rep", qid="q2")
    tables = [d.value for d in at.dataframe if "verdicts" in d.value.columns]
    assert len(tables) == 1  # method a's; b was judged once
    (row,) = tables[0].to_dict("records")
    assert row["verdicts"] == "differ: 3 of 4 give the most common verdict"
    assert [row[f"repeat {i}"] for i in range(4)] == ["WRONG (0)", "WRONG (0)", "CORRECT (1) ≠", "WRONG (0)"]
    assert any("≠ marks a verdict that is not the most common one · 1 of 1 metrics differ" in c.value
               for c in at.caption)


def test_the_queue_can_put_the_most_disagreeing_answers_first(store):
    spread = A.queue(store, "rep", "answer_class", "a", limit=10)
    ordered = A.queue(store, "rep", "answer_class", "a", limit=10, order="judge disagreement")
    # differing first, the widest spread (2-2) before the 3-1 splits, then the answers that agree
    # (q4's labels differ, its values do not: SD 0, after q2's 0.5)
    assert ordered.question_id.tolist()[:3] == ["q1", "q2", "q4"]
    assert set(ordered.question_id.tolist()[3:]) == {"q0", "q3"}
    assert ordered.verdicts_differ.tolist() == [True, True, True, False, False]
    assert sorted(ordered.question_id) == sorted(spread.question_id)  # the same items, another order
    once = A.queue(store, "rep", "answer_class", "b", limit=10, order="judge disagreement")
    assert once.question_id.tolist() == A.queue(store, "rep", "answer_class", "b", limit=10).question_id.tolist()
    with pytest.raises(ValueError, match="unknown queue order"):
        A.queue(store, "rep", "answer_class", "a", order="loudest")


def test_annotate_page_orders_its_queue_by_disagreement(store, monkeypatch):
    at = _app(store, monkeypatch, "annotate", run="rep", kind="answer_class", method="a", who="ann",
              qorder="judge disagreement")
    shown = [t.value for t in at.text]
    assert any(t.startswith("a / q1 / answer_class") for t in shown), shown
    assert "judge disagreement: its 4 verdicts on answer_class differ (SD 0.58)" in shown
    at = _app(store, monkeypatch, "annotate", run="rep", kind="answer_class", method="b", who="ann",
              qorder="judge disagreement")
    assert any("answer_class was judged once for this answer" in t.value for t in at.text)
