"""TREC topics are detected by the registry and read with the qrels beside them."""

from evalcore.datasets import load_questions
from evalcore.datasets.registry import detect_format


def test_dl19_topics_detected_with_graded_gold(shared_data):
    topics = shared_data / "msmarco_passage_qrels" / "topics.dl19-passage.txt"
    assert detect_format(topics) == "trec"
    questions = load_questions(topics)
    assert len(questions) == 43
    grades = {g.relevance for q in questions for g in q.gold_passages}
    assert grades <= {1.0, 2.0, 3.0} and 3.0 in grades  # graded judgements kept for nDCG
    assert all(q.question.strip() for q in questions)
