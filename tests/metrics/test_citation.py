"""Citation precision/recall, section accuracy, source indicators and recency rules."""

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.citation import SPECS
from evalcore.schemas import EvalQuestion, EvalResponse

BY_NAME = {s.name: s for s in SPECS}


def run(name, q, options=None, **resp):
    r = EvalResponse(question_id=q.id, method="m", **resp)
    return BY_NAME[name].compute([(q, r)], ScoringContext(run_id="t", options=options or {}))[0]


Q = EvalQuestion(id="q", question="?", gold_passages=[
    {"chunk_id": "c1"}, {"doc": "guide/rates.md", "heading_path": "Rates > Territory"}])
RETRIEVED = [{"rank": 1, "chunk_id": "c9", "rel_path": "guide/rates.md", "heading_path": "Rates >  territory > 118"},
             {"rank": 2, "chunk_id": "c5", "rel_path": "guide/other.md", "heading_path": "Intro"}]


def test_precision_recall_with_anchor_resolution():
    # c9 is cited by id only; resolved through `retrieved` it sits under the gold heading path.
    cits = [{"chunk_id": "c1"}, {"chunk_id": "c9"}, {"chunk_id": "c5"}, {"chunk_id": "c1"}]
    assert run("citation_precision", Q, citations=cits, retrieved=RETRIEVED).value == pytest.approx(2 / 3)
    assert run("citation_recall", Q, citations=cits, retrieved=RETRIEVED).value == 1.0
    assert run("citation_recall", Q, citations=[{"chunk_id": "c5"}], retrieved=RETRIEVED).value == 0.0


def test_nan_reasons():
    assert run("citation_precision", Q, citations=[]).reason == "no citations"
    assert run("citation_recall", EvalQuestion(id="x", question="?"), citations=[{"chunk_id": "a"}]).reason \
        == "no gold passages"
    assert "chunk ids only" in run("section_accuracy", EvalQuestion(id="y", question="?", gold_passages=[
        {"chunk_id": "a"}]), citations=[{"chunk_id": "a"}]).reason


def test_section_accuracy():
    cits = [{"rel_path": "guide/rates.md", "heading_path": "Rates > Territory > 117"},
            {"rel_path": "guide/rates.md", "heading_path": "Rates > Discounts"},
            {"chunk_id": "c1"}]  # names no document and is not in retrieved: wrong section
    s = run("section_accuracy", Q, citations=cits)
    assert s.value == pytest.approx(1 / 3) and s.details["n_without_document"] == 1


CITED = [{"chunk_id": "c1"}]  # source_citation_quality scores only where the run cites at all


def test_source_citation_quality_configurable():
    answer = "According to the rate table (page 4, Source: manual.pdf) the rate is 0.3%."
    s = run("source_citation_quality", Q, answer=answer, citations=CITED)
    assert s.value == 1.0 and {"according to", "page", "source:", "pdf"} <= set(s.details["indicators_found"])
    assert run("source_citation_quality", Q, answer="The rate is 0.3%.", citations=CITED).value == 0.0
    s = run("source_citation_quality", Q, answer="출처: 규정집 12쪽", options={"citation_indicators": ["출처", "쪽"]},
            citations=CITED)
    assert s.value == pytest.approx(2 / 3)


def test_source_citation_quality_scores_uncited_answers_but_not_missing_ones():
    """0 means the answer never says where its facts come from (seed 002); a blank or failed
    answer said nothing at all, so it is not scored rather than scored 0 (by the metric
    itself: scoring's failed-answer rule then counts it 0, as for every quality metric)."""
    q, cited = Q, EvalResponse(question_id="q", method="m", answer="See c1.", citations=CITED)
    uncited = EvalResponse(question_id="q", method="m", answer="The rate is 0.3%.")
    s = BY_NAME["source_citation_quality"].compute([(q, uncited), (q, cited)], ScoringContext(run_id="t"))[0]
    assert s.value == 0.0 and s.details["n_structured_citations"] == 0
    blank = run("source_citation_quality", Q, answer="   ", citations=CITED)
    assert blank.value != blank.value and blank.reason == "empty answer"
    failed = run("source_citation_quality", Q, answer="", error="HTTP 500", error_kind="http", citations=CITED)
    assert failed.value != failed.value and failed.reason == "no answer (http)"


def test_source_citation_quality_on_a_run_without_citations_is_nan_like_the_others():
    """On a run where no answer cites, the other citation metrics are skipped with "run has no
    citations"; source_citation_quality said 0.000 (20/20) beside them. Same reason now, NaN,
    and the default selection skips it for that reason too."""
    from evalcore.metrics.registry import METRICS
    from evalcore.scoring.engine import select_metrics

    s = run("source_citation_quality", Q, answer="According to page 4 of the manual, 0.3%.")
    assert s.value != s.value and s.reason == "run has no citations"
    items = [(Q, EvalResponse(question_id="q", method="m", answer="0.3%"))]
    _, skipped = select_metrics(METRICS, items, None, None, {})
    assert skipped["source_citation_quality"] == skipped["citation_precision"] == "run has no citations"


def test_recency_rules():
    meta = {"recency": {"newer": "rates-2024.md", "older": "rates-2019.md",
                        "newer_terms": ["0.305%"], "older_terms": ["0.290%"]}}
    new, old = {"rel_path": "rates-2024.md"}, {"rel_path": "rates-2019.md"}
    q = EvalQuestion(id="r", question="?", recency_conflict_rule="cite_newer", metadata=meta)
    assert run("recency_rule_pass", q, citations=[new]).value == 1.0
    assert run("recency_rule_pass", q, citations=[new, old]).value == 0.0
    q = q.model_copy(update={"recency_conflict_rule": "cite_both"})
    assert run("recency_rule_pass", q, citations=[new, old]).value == 1.0
    q = q.model_copy(update={"recency_conflict_rule": "acknowledge_both"})
    assert run("recency_rule_pass", q, answer="Now 0.305% (was 0.290% in 2019).").value == 1.0
    assert run("recency_rule_pass", q, answer="It is 0.305%.").value == 0.0
    missing = EvalQuestion(id="m", question="?", recency_conflict_rule="cite_newer")
    assert "metadata.recency" in run("recency_rule_pass", missing, citations=[new]).reason
