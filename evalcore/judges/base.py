"""What every judge has in common: identity, the call log, per-question call counts, and
running a batch of judge tasks concurrently (also from code that already runs an event loop).

The real-model client (client.LLMJudge) and the offline heuristic judge (offline/judge.py) build
on this; a judge task and its outcome are the currency between judges and metric code:
an Outcome carries either an output or an error string, never an exception.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine

from evalcore.judges.tasks import PROMPT_VERSIONS
from evalcore.schemas import JudgeCall, JudgeId


@dataclass
class JudgeTask:
    task: str
    inputs: dict[str, Any]
    run_id: str
    method: str | None = None
    question_id: str | None = None
    purpose: str = ""
    # which of the K independent verdicts asked for this request (`score --repeats K`); 0 is the
    # one every pass asks, and its cache key is the request's own (judges/client.py: repeat_key)
    repeat: int = 0


@dataclass
class Outcome:
    output: dict[str, Any] | None
    error: str | None
    judge_id: JudgeId
    live_calls: int = 0
    # A combined task's reply with unusable parts (task_def.PartsError, still so after the
    # repair): reply key -> why, for every key of such a part; `output` holds the usable parts
    part_errors: dict[str, str] = field(default_factory=dict)

    def reply_value(self, key: str) -> tuple[Any, str | None]:
        """(the reply's value at `key`, None), or (None, why there is none): the whole call's
        error, or the error of the part that holds the key."""
        if self.output is not None and key in self.output:
            return self.output[key], None
        return None, self.part_errors.get(key) or self.error or "no judge output"


def run_sync(coro: Coroutine) -> Any:
    """Run a coroutine from sync code, also when the caller already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class Judge:
    """Common part: identity, call log, per-question call counts, batch execution."""

    kind = "llm"
    provider = ""
    model = ""
    temperature: float | None = 0.0  # None: the provider's default (no sampling parameter sent)

    def __init__(self, concurrency: int = 8):
        self.concurrency = max(1, int(concurrency))
        self._calls: list[JudgeCall] = []
        self._lock = threading.Lock()
        self.per_question: dict[tuple[str | None, str | None], int] = {}
        self.live_calls = 0
        self.cached_calls = 0
        # Optional: a zero-argument factory of an async context manager held around every HTTP
        # request on top of the local semaphore. The Ray engine installs a cluster-wide gate
        # here (evalcore/scale/judge_gate.py), so N workers together keep one concurrency and
        # rate limit instead of N times the local one. Cache hits never pass through it.
        self.gate: Any = None

    def judge_id(self, task: str) -> JudgeId:
        return JudgeId(provider=self.provider, model=self.model, prompt_id=task,
                       prompt_version=PROMPT_VERSIONS.get(task, "1"), temperature=self.temperature)

    def label(self, *tasks: str) -> str:
        """One label for a value built from several prompts: provider:model/a+b@1+1."""
        return JudgeId(provider=self.provider, model=self.model, prompt_id="+".join(tasks),
                       prompt_version="+".join(PROMPT_VERSIONS.get(t, "1") for t in tasks),
                       temperature=self.temperature).label

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    def _record(self, call: JudgeCall) -> None:
        with self._lock:
            self._calls.append(call)
            key = (call.method, call.question_id)
            self.per_question[key] = self.per_question.get(key, 0) + 1
            if call.cache_hit:
                self.cached_calls += 1
            elif call.error is None or call.response_raw is not None:
                self.live_calls += 1

    def drain_calls(self) -> list[JudgeCall]:
        with self._lock:
            out, self._calls = self._calls, []
        return out

    def sample(self) -> None:
        """Make every later request an independent sample (`score --repeats K`, K > 1): a
        judge whose replies cannot vary has nothing to change (the offline heuristic judge)."""

    def preload(self) -> None:
        """Import what the first call will need (an SDK takes seconds to import): scoring does
        this before it starts loading other things in the background."""

    def run_many(self, tasks: list[JudgeTask],
                 more: Callable[[int, Outcome], list[JudgeTask]] | None = None) -> list[Outcome]:
        """Outcomes of `tasks`, sent concurrently. With `more`, each outcome is handed to
        `more(index, outcome)` as it arrives, and the tasks it returns are sent at once in the
        same session (so a request that needs another's reply starts as soon as that reply is
        in, not when the whole batch is); their outcomes follow, in the order they were added."""
        if not tasks:
            return []
        return run_sync(self._run_all(tasks) if more is None else self._run_chained(tasks, more))

    async def _run_all(self, tasks: list[JudgeTask]) -> list[Outcome]:
        sem = asyncio.Semaphore(self.concurrency)
        async with self._session() as session:
            return list(await asyncio.gather(*(self._run_one(t, session, sem) for t in tasks)))

    async def _run_chained(self, tasks: list[JudgeTask],
                           more: Callable[[int, Outcome], list[JudgeTask]]) -> list[Outcome]:
        sem = asyncio.Semaphore(self.concurrency)
        outcomes: list[Outcome | None] = []
        index: dict[asyncio.Future, int] = {}
        async with self._session() as session:

            def submit(t: JudgeTask) -> asyncio.Future:
                fut = asyncio.ensure_future(self._run_one(t, session, sem))
                index[fut] = len(outcomes)
                outcomes.append(None)
                return fut

            pending = {submit(t) for t in tasks}
            try:
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for fut in sorted(done, key=index.__getitem__):
                        i = index[fut]
                        outcomes[i] = fut.result()
                        pending.update(submit(t) for t in more(i, outcomes[i]))
            finally:
                for fut in pending:  # a failing `more`: stop what is still running
                    fut.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
        return outcomes  # type: ignore[return-value]

    def _session(self) -> Any:
        raise NotImplementedError

    async def _run_one(self, t: JudgeTask, session: Any, sem: asyncio.Semaphore) -> Outcome:
        raise NotImplementedError
