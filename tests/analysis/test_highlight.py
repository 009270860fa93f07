"""Highlight spans (analysis.highlight) and claims with their cited evidence (analysis.claim_evidence)."""

from __future__ import annotations

import json

import pandas as pd

from evalcore.analysis.questions.claim_evidence import answer_evidence, cited_numbers, claim_ref, numbered_contexts
from evalcore.analysis.questions.highlight import best_sentence, claim_spans, sentence_spans, word_spans

ANSWER = "The Nile flows through Uganda. It is 6,650 km long. Cats like milk."


def _cut(text, spans):
    return [text[s.start:s.end] for s in spans]


def test_sentences_are_trimmed_spans():
    text = "  One two.  Three four!\nFive"
    assert [text[s:e] for s, e in sentence_spans(text)] == ["One two.", "Three four!", "Five"]


def test_evidence_words_matching_the_claim_are_marked_and_neighbours_joined():
    evidence = "Rising in Burundi, the river Nile flows north through Uganda for 6650 km; 6651 km is wrong."
    spans = word_spans(evidence, "The Nile flows through Uganda, 6,650 km.")
    assert _cut(evidence, spans) == ["Nile flows", "through Uganda", "6650 km", "km"]
    assert {s.kind for s in spans} == {"match"}
    assert word_spans(evidence, "the of and") == []  # stop words alone match nothing


def test_verbatim_claims_are_placed_with_their_verdict():
    claims = [(0, "The Nile flows through Uganda.", "supported"), (1, "It is 6,650 km long.", "not_supported")]
    spans, placed = claim_spans(ANSWER, claims)
    assert _cut(ANSWER, spans) == ["The Nile flows through Uganda.", "It is 6,650 km long."]
    assert [s.kind for s in spans] == ["supported", "unsupported"]
    assert spans[1].title == "claim 2: not supported" and placed == {0, 1}


def test_rephrased_claims_land_on_their_sentence_and_unplaceable_ones_are_reported():
    claims = [(0, "Uganda is crossed by the Nile.", "supported"), (1, "Cats like milk", None),
              (2, "Dogs bark at night", "supported")]
    spans, placed = claim_spans(ANSWER, claims)
    assert _cut(ANSWER, spans) == ["The Nile flows through Uganda.", "Cats like milk"]
    assert [s.kind for s in spans] == ["supported", "unjudged"] and placed == {0, 1}


def test_claims_sharing_a_sentence_share_one_span_unsupported_wins():
    spans, _ = claim_spans("The Nile flows through Uganda.", [(0, "Nile Uganda flows", "supported"),
                                                               (1, "Uganda Nile through", "not_supported")])
    assert len(spans) == 1 and spans[0].kind == "unsupported"
    assert spans[0].title == "claim 1: supported; claim 2: not supported"


def test_best_sentence_is_the_one_sharing_most_claim_words():
    passage = "Egypt is hot. The Nile passes Uganda and Sudan. Rain falls."
    s, e = best_sentence("The Nile flows through Uganda", passage)
    assert passage[s:e] == "The Nile passes Uganda and Sudan."
    assert best_sentence("zebra quantum", passage) is None


def _detail(details, retrieved):
    record = json.dumps({"retrieved": retrieved})
    return {
        "responses": pd.DataFrame([{"method": "m", "answer": ANSWER, "record": record}]),
        "claims": pd.DataFrame([
            {"method": "m", "metric": "faithfulness", "source": "answer", "idx": 0,
             "text": "The Nile flows through Uganda.", "verdict": "supported", "reason": "r0"},
            {"method": "m", "metric": "faithfulness", "source": "answer", "idx": 1,
             "text": "It is 6,650 km long.", "verdict": "not_supported", "reason": "r1"}]),
        "metrics": pd.DataFrame([{"method": "m", "metric": "faithfulness", "details": json.dumps(details)}]),
    }


def test_each_claim_gets_the_passage_the_judge_cited_and_its_sentence():
    retrieved = [{"rank": 1, "text": "Unrelated words here."}, {"rank": 2, "text": "  "},
                 {"rank": 3, "text": "Africa has rivers. The Nile flows north through Uganda."}]
    # the judge numbers non-empty passages: number 2 is rank 3 (rank 2 is blank)
    detail = _detail({"statements": [{"verdict": 1, "context": 2}, {"verdict": 0, "context": None}]}, retrieved)
    ev = answer_evidence(detail, "m")
    first, second = ev["claims"]
    assert first["rank"] == 3 and first["sentence"] == "The Nile flows north through Uganda."
    assert [first["sentence"][s.start:s.end] for s in first["sentence_spans"]] == ["Nile flows", "through Uganda"]
    assert second["rank"] is None and second["sentence"] is None
    (span,) = ev["context_spans"][3]
    assert retrieved[2]["text"][span.start:span.end] == first["sentence"] and span.title.endswith("claim 1")
    assert [s.kind for s in ev["answer_spans"]] == ["supported", "unsupported"]


def test_bad_details_cite_nothing_and_refs_parse():
    assert cited_numbers("not json") == [] and cited_numbers({"statements": [{"context": "2"}]}) == [None]
    assert numbered_contexts(None) == []
    assert claim_ref("faithfulness:answer:3") == ("faithfulness", "answer", 3) and claim_ref("x:1") is None
