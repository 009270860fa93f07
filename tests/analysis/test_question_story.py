"""One question, one story (issue 23, item 4): the diagnosis, the answer class, the metric labels
and the context readings agree or say why not, and every badge names its basis."""

from __future__ import annotations

import pytest

from evalcore.analysis.charts import distributions as G
from evalcore.analysis.questions import failure_modes as FM
from evalcore.analysis.runs import means as M
from evalcore.analysis.questions.question_story import stories
from evalcore.schemas import (
    ContextJudgement, EvalQuestion, EvalResponse, GoldPassage, MetricValue, RetrievedChunk, RunManifest,
)
from evalcore.store import FORMAT_VERSION, RunStore

JUDGE = "anthropic:claude-x/context_review@1"


def _value(q, metric, value, judge=None, label=None, group="g"):
    return MetricValue(run_id="s", method="m", question_id=q, metric=metric, value=value, group=group,
                       judge_id=judge, label=label)


def build(store: RunStore) -> None:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="s", name="s",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([
        # gold passage g1 never retrieved, but the judge finds rank 1 relevant
        EvalQuestion(id="miss", question="Who?", ground_truth="Ann", gold_passages=[GoldPassage(chunk_id="g1")]),
        # faithfulness 1.0 with no claims
        EvalQuestion(id="noclaims", question="When?", ground_truth="1900"),
        # unanswerable: the judge says DONT_KNOW, the phrase list missed it
        EvalQuestion(id="unans", question="Why?", answerable=False),
    ])
    chunks = [RetrievedChunk(rank=1, chunk_id="c1", text="Ann was born here."),
              RetrievedChunk(rank=2, chunk_id="c2", text="Unrelated.")]
    writer.write_responses([EvalResponse(question_id="miss", method="m", answer="Bob", retrieved=chunks),
                            EvalResponse(question_id="noclaims", method="m", answer="Yes."),
                            EvalResponse(question_id="unans", method="m", answer="Nobody can say.")])
    writer.write_metrics([
        _value("miss", "token_f1", 0.0), _value("miss", "hit_rate@5", 0.0, group="retrieval"),
        _value("miss", "context_precision", 0.5, judge=JUDGE, group="judged"), _value("miss", "dont_know", 0.0),
        _value("noclaims", "faithfulness", 1.0, judge=JUDGE, group="judged"), _value("noclaims", "token_f1", 0.0),
        _value("noclaims", "dont_know", 0.0),
        _value("unans", "answer_correct", 0.0, judge=JUDGE, label="DONT_KNOW", group="judged"),
        _value("unans", "answer_class", 0.0, judge=JUDGE, label="DONT_KNOW", group="judged"),
        _value("unans", "dont_know", 0.0),
    ])
    writer.write_context_verdicts([
        ContextJudgement(run_id="s", method="m", question_id="miss", metric="context_precision", rank=1,
                         verdict="relevant", reason="names Ann", judge_id=JUDGE),
        ContextJudgement(run_id="s", method="m", question_id="miss", metric="context_precision", rank=2,
                         verdict="not_relevant", reason="off topic", judge_id=JUDGE)])
    writer.publish()


@pytest.fixture
def story_store(tmp_path):
    store = RunStore(tmp_path / "runs")
    build(store)
    return store


def test_retrieval_miss_names_its_basis_and_the_judge_disagreement(story_store):
    s = stories(story_store, "s", "miss")["m"]
    assert s["bucket"] == "retrieval miss" and s["source"] == "gold passages"
    assert "retrieval miss from gold passages (hit_rate@5 = 0)" in s["basis"]
    ctx = s["contexts"]
    assert ctx["gold passage"].tolist() == ["no", "no"]
    assert ctx["judge verdict"].tolist() == ["relevant", "not_relevant"]
    assert any("gold passages and the judge differ" in n and "1 of 2" in n for n in s["notes"])
    basis = dict(zip(s["scores"].metric, s["scores"].basis))
    assert basis["hit_rate@5"] == "gold passages" and basis["context_precision"] == "judge"


def test_faithfulness_without_claims_says_it_is_one_by_definition(story_store):
    s = stories(story_store, "s", "noclaims")["m"]
    assert s["claims_note"].startswith("no claims extracted: faithfulness 1.0 by definition")
    assert s["basis"] == "wrong by token_f1 = 0; retrieval not scored, faithfulness = 1"
    assert stories(story_store, "s", "miss")["m"]["claims_note"] == "no claims stored: faithfulness was not judged"


def test_unanswerable_abstention_agrees_everywhere(story_store):
    s = stories(story_store, "s", "unans")["m"]
    assert s["bucket"] == "correct abstention" and s["source"] == "judge"
    from evalcore.analysis.questions.failure_modes import source
    from tests.analysis.answer_frames import explained_row
    bucket, basis = explained_row({"answerable": False, "token_f1": 0.0, "dont_know": 0.0})
    assert (bucket, source(bucket, basis)) == ("should have abstained", "by token_f1")
    assert any("answer_correct = 0" in n and "unanswerable" in n for n in s["notes"])
    miss = stories(story_store, "s", "noclaims")["m"]
    assert miss["source"] == "computed: token_f1"  # the deciding metric and what it rests on
    # the same answer is DONT_KNOW for the answer classes, the Charts' bars and the diagnosis
    classes = M.answer_classes(story_store, "s").iloc[0]
    assert (classes.correct, classes.wrong, classes.dont_know) == (0, 2, 1)
    bars = G.label_counts(story_store, ("s:m",), "answer_class").set_index("label")["n"].to_dict()
    assert bars == {"WRONG": 2, "DONT_KNOW": 1}
    modes = FM.diagnoses(story_store, ("s:m",)).set_index("question_id")["bucket"].to_dict()
    assert modes == {"miss": "retrieval miss", "noclaims": "faithful but wrong", "unans": "correct abstention"}
    assert {q: stories(story_store, "s", q)["m"]["bucket"] for q in modes} == modes


def test_a_judge_class_the_rule_overrides_is_explained(tmp_path):
    store = RunStore(tmp_path / "runs")
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="s", name="s",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([EvalQuestion(id="q", question="Who?", ground_truth="Ann")])
    writer.write_responses([EvalResponse(question_id="q", method="m", answer="I don't know, maybe Bob")])
    writer.write_metrics([_value("q", "answer_class", 0.0, judge=JUDGE, label="WRONG", group="judged"),
                          _value("q", "dont_know", 1.0)])
    writer.publish()
    s = stories(store, "s", "q")["m"]
    assert s["bucket"] == "wrong abstention"
    assert any(n.startswith("The judge's class is WRONG; the answer class is DONT_KNOW: an abstention") for n in s["notes"])


def test_questions_page_tells_the_same_story(story_store, monkeypatch):
    """The page renders what stories() says: badges name their basis, the claims line for a
    claim-less faithfulness, the note on the judge's disagreement."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(story_store.root))
    root = Path(__file__).resolve().parents[2]
    shown = {}
    for qid in ("miss", "noclaims", "unans"):
        at = AppTest.from_file(str(root / "app.py"), default_timeout=60)
        at.run()
        at.switch_page("pages/questions.py")
        at.query_params.update({"run": "s", "qid": qid})
        at.run()
        assert not at.exception, at.exception
        badges = [m.value for m in at.markdown if ":green-badge" in m.value or ":red-badge" in m.value
                  or ":orange-badge" in m.value or ":gray-badge" in m.value]
        shown[qid] = (badges, [t.value for t in at.text], [i.value for i in at.info])
    badges, texts, infos = shown["miss"]
    assert any("retrieval miss · gold passages" in b for b in badges)
    assert any("gold passages and the judge differ" in i for i in infos)
    assert "(no claims extracted: faithfulness 1.0 by definition (an answer that states nothing has nothing " \
           "unsupported))" in shown["noclaims"][1]
    assert any("correct abstention · judge" in b for b in shown["unans"][0])
