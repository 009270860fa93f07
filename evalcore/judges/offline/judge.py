"""HeuristicJudge: the Judge that answers every task offline, with each task's heuristic
(see the package docstring for what it approximates and what it cannot do)."""


from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from evalcore.judges.base import Judge, JudgeTask, Outcome
from evalcore.judges.tasks import get_task
from evalcore.schemas import JudgeCall


def run_task(task: str, inp: dict[str, Any]) -> dict[str, Any]:
    """The heuristic output for one task, validated by the task's own definition, so it has
    exactly the shape an LLM judge's parsed reply has."""
    defn = get_task(task)
    return defn.parse(json.loads(json.dumps(defn.heuristic(inp))), inp)


class HeuristicJudge(Judge):
    kind = "heuristic"
    provider = "heuristic"
    model = "lexical-v3"

    @asynccontextmanager
    async def _noop(self) -> AsyncIterator[None]:
        yield None

    def _session(self) -> Any:
        return self._noop()

    async def _run_one(self, t: JudgeTask, session: Any, sem: asyncio.Semaphore) -> Outcome:
        jid = self.judge_id(t.task)
        request = {"provider": self.provider, "model": self.model, "task": t.task, "inputs": t.inputs}
        if t.repeat:  # the same verdict again (this judge cannot vary), one call row per repeat
            request["repeat"] = t.repeat
        from evalcore.judges.cache import request_key

        key = request_key(request)
        call = JudgeCall(run_id=t.run_id, call_key=request_key({"k": key, "m": t.method, "q": t.question_id,
                                                                 "p": t.purpose})[:40],
                         judge_id=jid, method=t.method, question_id=t.question_id, purpose=t.purpose or t.task,
                         request=request)
        try:
            out = run_task(t.task, t.inputs)
        except Exception as exc:  # noqa: BLE001 - becomes a NaN reason, never a crash
            call.error = f"{type(exc).__name__}: {exc}"
            self._record(call)
            return Outcome(None, f"heuristic judge failed: {call.error}", jid, 0)
        call.response_raw = json.dumps(out, ensure_ascii=False)
        call.parsed = out
        self._record(call)
        return Outcome(out, None, jid, 0)
