"""The judge figures a run's manifest records for a scoring pass, counted from stored calls.

Why from the calls that were stored, and not from the client's own counters: the manifest
must describe what readers can see. A call whose row could not be written (a full disk
mid-pass) happened, but no reader will ever find it, so it is not counted; scoring adds a
batch of calls here only after their part file was written, and records the figures only
with the publish that makes those rows visible (RunWriter.publish(record=...)).

One tally serves both engines: the local pass adds the JudgeCall rows it wrote; each Ray
actor keeps its own and ships `to_wire()` with its block summary, which the driver `merge`s.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from evalcore.schemas import JudgeCall


class CallTally:
    """Judge calls stored by one pass: per (method, question), live, cached, and judge labels."""

    def __init__(self) -> None:
        self.per_question: Counter = Counter()
        self.live = 0
        self.cached = 0
        self.judges: set[str] = set()

    def add(self, calls: Iterable[JudgeCall]) -> None:
        """Count calls whose rows were just written. A live call is one that reached the judge
        and got a reply (or no error); a cache hit cost nothing."""
        for call in calls:
            self.per_question[(call.method, call.question_id)] += 1
            if call.cache_hit:
                self.cached += 1
            elif call.error is None or call.response_raw is not None:
                self.live += 1
            self.judges.add(call.judge_id.label)

    @property
    def calls(self) -> int:
        return sum(self.per_question.values())

    def figures(self) -> dict[str, Any]:
        """{"counts": {...}, "judges": [...]}: what the manifest records for the pass."""
        per_q = self.per_question
        return {"counts": {"judge_calls": self.calls, "judge_calls_live": self.live,
                           "judge_calls_cached": self.cached, "judge_questions": len(per_q),
                           "judge_calls_per_question_max": max(per_q.values(), default=0)},
                "judges": sorted(self.judges)}

    def to_wire(self) -> dict[str, Any]:
        """Plain JSON, for a tally kept by a Ray actor to reach the driver."""
        return {"per_question": [[m, q, n] for (m, q), n in self.per_question.items()],
                "live": self.live, "cached": self.cached, "judges": sorted(self.judges)}

    def merge(self, wire: dict[str, Any]) -> None:
        """Add another tally's `to_wire()` figures."""
        for method, qid, n in wire["per_question"]:
            self.per_question[(method, qid)] += n
        self.live += wire["live"]
        self.cached += wire["cached"]
        self.judges |= set(wire["judges"])
