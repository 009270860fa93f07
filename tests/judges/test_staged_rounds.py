"""Scoring sends an answer's second-stage judge requests as soon as its own first-stage replies
are in: no barrier waiting for the slowest first reply of the chunk."""

import asyncio

from evalcore.judges.offline.judge import HeuristicJudge
from evalcore.metrics.base import ScoringContext
from evalcore.metrics.judged.specs import SPECS
from evalcore.scoring.chunk import judge_rounds

from .conftest import paris_item

RAGAS = {"faithfulness", "context_precision", "context_recall", "answer_relevance"}


class HeldJudge(HeuristicJudge):
    """Holds the claims request of question q2 until a context review has started (or a few
    seconds have passed, so that a barrier shows as an order, not as a hang)."""

    def __init__(self) -> None:
        super().__init__(concurrency=16)
        self.log: list[tuple[str, str, str | None]] = []
        self.review_started: asyncio.Event | None = None

    async def _run_one(self, t, session, sem):
        if self.review_started is None:
            self.review_started = asyncio.Event()
        self.log.append(("start", t.task, t.question_id))
        if t.task == "context_review":
            self.review_started.set()
        if t.task in ("decompose", "answer_analysis") and t.question_id == "q2":
            try:
                await asyncio.wait_for(self.review_started.wait(), timeout=5)
            except asyncio.TimeoutError:
                pass
        out = await super()._run_one(t, session, sem)
        self.log.append(("end", t.task, t.question_id))
        return out


def test_a_second_stage_request_starts_before_every_first_stage_reply_is_back():
    items = [paris_item(3, qid="q1"), paris_item(3, qid="q2")]
    judge = HeldJudge()
    ctx = ScoringContext(run_id="r1", store=None, options={"judge": judge, "judge_calls": "separate"}, items=items)
    specs = [s for s in SPECS if s.name in RAGAS]
    judge_rounds(specs, items, ctx)
    log = judge.log
    first_review = log.index(("start", "context_review", "q1"))
    slow_claims_back = log.index(("end", "decompose", "q2"))
    assert first_review < slow_claims_back
    # q2's own review still waited for q2's claims
    assert log.index(("start", "context_review", "q2")) > slow_claims_back
    # every request went out once, and the metrics find all of them in the pass's memo
    assert sorted(task for kind, task, _ in log if kind == "start") == sorted(
        ["decompose"] * 2 + ["reference_statements"] * 2 + ["context_review"] * 2 + ["question_generation"] * 2)
    n = len(log)
    scores = {s.name: s.compute(items, ctx) for s in specs if s.name != "answer_relevance"}
    assert len(log) == n
    assert all(len(v) == 2 for v in scores.values())


def test_the_combined_design_keeps_the_reviews_from_waiting_for_the_slowest_analysis():
    items = [paris_item(3, qid="q1"), paris_item(3, qid="q2")]
    judge = HeldJudge()
    ctx = ScoringContext(run_id="r1", store=None, options={"judge": judge}, items=items)  # judge_calls: combined
    judge_rounds([s for s in SPECS if s.name in RAGAS], items, ctx)
    log = judge.log
    slow_analysis_back = log.index(("end", "answer_analysis", "q2"))
    assert log.index(("start", "context_review", "q1")) < slow_analysis_back
    assert log.index(("start", "context_review", "q2")) > slow_analysis_back
    # the analysis serves faithfulness and answer_relevance alike: one per answer, nothing else
    assert sorted(task for kind, task, _ in log if kind == "start") == sorted(
        ["answer_analysis"] * 2 + ["reference_statements"] * 2 + ["context_review"] * 2)
