"""recall_all@k: support-group entries follow the gold-passage matching rules (issue 16, item 1).

An entry is a chunk id, a rel_path, `rel_path > heading > path` (heading prefix rule), or names
a gold passage, whose own heading and snippet then decide. recall_all must never be 1 while the
evidence it names was not retrieved (seed 003: multi-hop questions must not "look green").
"""

from __future__ import annotations

import math

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.registry import METRICS
from evalcore.schemas import EvalQuestion, EvalResponse, GoldPassage


def question(gold, groups, qid="q1") -> EvalQuestion:
    return EvalQuestion(id=qid, question="two hops?", gold_passages=gold, required_support_groups=groups)


def response(chunks) -> EvalResponse:
    return EvalResponse(question_id="q1", method="m",
                        retrieved=[{"rank": i + 1, **c} for i, c in enumerate(chunks)])


def chunk(cid, path, heading, text=None):
    out = {"chunk_id": cid, "rel_path": path, "heading_path": heading}
    return out if text is None else {**out, "text": text}


def value(name, q, r, **options):
    return METRICS[name].compute([(q, r)], ScoringContext(run_id="t", options=options))[0]


ANCHORS = [GoldPassage(rel_path="a.md", heading_path="A > X"), GoldPassage(rel_path="b.md", heading_path="B > Y")]
WRONG_SECTIONS = response([chunk("c1", "a.md", "A > Z"), chunk("c2", "b.md", "B > W")])
RIGHT_SECTIONS = response([chunk("c1", "a.md", "A > X > deeper"), chunk("c2", "b.md", "b >  y")])


def test_document_entries_stand_for_the_gold_in_that_document():
    """The issue's case: groups name the documents, gold names sections; the wrong sections of the
    right documents were retrieved. recall@5 is 0, so recall_all@5 must not be 1."""
    q = question(ANCHORS, [["a.md"], ["b.md"]])
    assert value("recall@5", q, WRONG_SECTIONS).value == 0.0
    s = value("recall_all@5", q, WRONG_SECTIONS)
    assert s.value == 0.0 and s.details["missing_groups"] == [0, 1]
    assert value("recall_all@5", q, RIGHT_SECTIONS).value == 1.0


def test_heading_entries_use_the_prefix_rule():
    q = question(ANCHORS, [["a.md > A > X"], ["b.md > B > Y"]])
    assert value("recall_all@5", q, RIGHT_SECTIONS).value == 1.0  # deeper chunk, spacing, case
    assert value("recall_all@5", q, WRONG_SECTIONS).value == 0.0
    half = response([chunk("c1", "a.md", "A > X"), chunk("c2", "b.md", "B > W")])
    assert value("recall_all@5", q, half).value == 0.0  # half the evidence is not green
    assert value("recall@5", q, half).value == 0.5
    # "A > X" is a section, not a text prefix: "A > Xylophone" is another section
    other = response([chunk("c1", "a.md", "A > Xylophone"), chunk("c2", "b.md", "B > Y")])
    assert value("recall_all@5", q, other).value == 0.0


def test_entries_without_gold_are_anchors_of_their_own():
    q = question([GoldPassage(chunk_id="g")], [["docs/guide.md > Setup"], ["c9"]])
    r = response([chunk("c1", "docs/Guide.md", "setup > Linux"), chunk("c9", "x.md", None)])
    assert value("recall_all@3", q, r).value == 1.0
    r = response([chunk("c1", "docs/guide.md", "Settings"), chunk("c9", "x.md", None)])
    assert value("recall_all@3", q, r).details["missing_groups"] == [0]


def test_an_entry_naming_a_gold_passage_brings_its_snippet():
    gold = [GoldPassage(chunk_id="g1", rel_path="a.md", heading_path="A", snippet="the launce"),
            GoldPassage(rel_path="b.md", heading_path="B")]
    q = question(gold, [["g1"], ["b.md > B"]])
    with_snippet = response([chunk("c1", "a.md", "A > 1", "John saw the launce."), chunk("c2", "b.md", "B", "x")])
    without = response([chunk("c1", "a.md", "A > 1", "nothing here"), chunk("c2", "b.md", "B", "x")])
    assert value("recall_all@5", q, with_snippet).value == 1.0
    assert value("recall_all@5", q, without).value == 0.0
    # the scoring option that switches snippets off applies here too, as for recall@k
    assert value("recall_all@5", q, without, match_snippets=False).value == 1.0
    by_id = response([{"chunk_id": "g1"}, chunk("c2", "b.md", "B", "x")])
    assert value("recall_all@5", q, by_id).value == 1.0


def test_alternatives_and_no_groups():
    q = question(ANCHORS, [["a.md > A > X", "b.md > B > Y"]])
    assert value("recall_all@1", q, response([chunk("c2", "b.md", "B > Y")])).value == 1.0
    s = value("recall_all@5", question(ANCHORS, []), RIGHT_SECTIONS)
    assert math.isnan(s.value) and s.reason == "no support groups"


def test_unmatchable_groups_are_refused_at_load():
    import pytest
    from pydantic import ValidationError

    for groups in ([[]], [["a.md", "  "]]):
        with pytest.raises(ValidationError, match="support group 0"):
            question(ANCHORS, groups)
