"""Scoring while asking, at the run's end (evalcore/scoring/streaming.py `_near_the_end`): once
fewer than a chunk's answers are still to come, what is pending is scored at once, so the run's
last answers do not all wait for the asking to end (the time a user waits after the last
answer). Without knowing how many answers come, a short run waits for its end as before."""

from __future__ import annotations

import time

from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring import streaming


class RecordingStream:
    """ChunkStream's interface; records each chunk's size and whether the run had ended."""

    def __init__(self, *args, **kwargs):
        self.sizes: list[int] = []
        self.scorer: streaming.StreamingScorer | None = None
        self.after_end: list[bool] = []

    def decide(self, first):
        return None

    def score(self, chunk):
        self.sizes.append(len(chunk))
        self.after_end.append(self.scorer._closing)

    def close(self, have, n_items):
        return None

    def release(self):
        pass


def _scorer(monkeypatch, n: int, expected: int | None):
    monkeypatch.setattr(streaming, "ChunkStream", RecordingStream)
    questions = [EvalQuestion(id=f"q{i}", question=f"question {i}") for i in range(n)]
    scorer = streaming.StreamingScorer(None, None, "run", questions, None, None, {}, expected=expected)
    scorer._stream.scorer = scorer
    return scorer, questions


def _answers(questions):
    return [EvalResponse(question_id=q.id, method="m", answer="yes") for q in questions]


def _wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_the_last_answers_are_scored_before_the_run_ends(monkeypatch):
    n = streaming.MIN_CHUNK + 20
    scorer, questions = _scorer(monkeypatch, n, expected=n)
    stream = scorer._stream
    scorer.add(_answers(questions[:streaming.MIN_CHUNK]))  # a whole chunk: scored at once
    assert _wait_for(lambda: stream.sizes == [streaming.MIN_CHUNK])
    scorer.add(_answers(questions[streaming.MIN_CHUNK:streaming.MIN_CHUNK + 8]))  # 12 still to come
    assert _wait_for(lambda: len(stream.sizes) == 2), "the end is near: 8 pending answers are scored now"
    scorer.add(_answers(questions[streaming.MIN_CHUNK + 8:]))
    assert _wait_for(lambda: sum(stream.sizes) == n)
    scorer.finish()
    assert stream.sizes == [streaming.MIN_CHUNK, 8, 12] and stream.after_end == [False, False, False]


def test_without_a_known_end_a_short_run_is_scored_when_the_asking_ends(monkeypatch):
    scorer, questions = _scorer(monkeypatch, 20, expected=None)
    stream = scorer._stream
    scorer.add(_answers(questions))
    time.sleep(0.2)
    assert stream.sizes == []  # fewer than a chunk, and no end in sight: they wait
    scorer.finish()
    assert stream.sizes == [20] and stream.after_end == [True]
