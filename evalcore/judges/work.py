"""Shared judge work for one scoring pass: the glue between metrics and the judge client.

Why a memo: several metrics need the same judge output (faithfulness, context recall and
context precision share the claims, the reference statements and one context review;
groundedness reuses the answer's claims). Every metric asks `work.run(task, requests)`;
identical (task, method, question, inputs) requests are answered once per pass, so claim
extraction happens once per answer whatever metrics are selected. A request made with method
None (reference statements) is shared by every method. The LLM cache below it makes repeated
passes free as well.

`run_batches` sends the requests of several tasks in one concurrent batch; `run_staged` also
sends each answer's second-stage requests as soon as its first-stage replies are in (scoring
uses it for every selected metric's first_stage/second_stage, see MetricSpec).
The judge layer writes nothing: `take_calls` hands the pass's JudgeCall rows to scoring, which
stores them and counts the stored ones for the manifest (judges/tally.py).
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any, Callable

from evalcore.judges import DEFAULT_JUDGE, make_judge
from evalcore.judges.cache import request_key
from evalcore.judges.offline.words import sentences
from evalcore.judges.tasks import get_task, inputs_for
from evalcore.judges.pricing import token_cost
from evalcore.schemas import JudgeCall

if TYPE_CHECKING:  # the client (asyncio, threads) loads when a judge is used, not with the metric registry
    from evalcore.judges.client import Judge, JudgeTask, LLMJudge, Outcome

Request = tuple[str | None, str, dict[str, Any]] | None


class JudgeWork:
    """`repeats`: how many independent verdicts each request gets (`score --repeats K`); K > 1
    makes the judge sample (Judge.sample). `repeat`: the verdict being asked for now; scoring
    sets it while it computes repeat r (scoring/repeats.py), and every request, memo entry and
    cache key of that round carries it, so repeat r never reads repeat 0's reply."""

    def __init__(self, judge: Judge, run_id: str, update_manifest: bool = True, repeats: int = 1):
        self.judge = judge
        self.run_id = run_id
        self.update_manifest = update_manifest
        self.repeats = max(1, int(repeats))
        self.repeat = 0
        if self.repeats > 1:
            judge.sample()
        self._memo: dict[str, Outcome] = {}

    @property
    def heuristic(self) -> bool:
        return self.judge.kind == "heuristic"

    def run(self, task: str, requests: list[Request]) -> list[Outcome | None]:
        """Outcomes for (method, question_id, inputs) requests; None requests stay None."""
        return self.run_batches([(task, requests)])[0]

    def _key(self, task: str, req: tuple[str | None, str, dict[str, Any]]) -> str:
        method, qid, inputs = req
        repeat = {"r": self.repeat} if self.repeat else {}
        return request_key({"t": task, "m": method, "q": qid, "i": inputs, **repeat})

    def _task(self, task: str, req: tuple[str | None, str, dict[str, Any]]) -> JudgeTask:
        from evalcore.judges.client import JudgeTask

        method, qid, inputs = req
        return JudgeTask(task, inputs, self.run_id, method, qid, task, repeat=self.repeat)

    def _keep(self, key: str, out: Outcome) -> None:
        self._memo[key] = out

    def run_batches(self, batches: list[tuple[str, list[Request]]]) -> list[list[Outcome | None]]:
        """Like `run` for several tasks, with every request not yet answered sent together."""
        all_keys: list[list[str | None]] = []
        todo: dict[str, JudgeTask] = {}
        for task, requests in batches:
            keys: list[str | None] = []
            for req in requests:
                if req is None:
                    keys.append(None)
                    continue
                key = self._key(task, req)
                keys.append(key)
                if key not in self._memo and key not in todo:
                    todo[key] = self._task(task, req)
            all_keys.append(keys)
        if todo:
            outs = self.judge.run_many(list(todo.values()))
            for key, out in zip(todo, outs):
                self._keep(key, out)
        return [[self._memo[k] if k is not None else None for k in keys] for keys in all_keys]

    def run_staged(self, first: list[tuple[str, list[Request]]], n_items: int,
                   then: Callable[[int], list[tuple[str, list[Request]]]]) -> None:
        """Answer `first` (batches with one request, or None, per item of n_items) and, as soon
        as item i's first requests are all answered, `then(i)`'s requests (built from those
        replies, found in the memo), all in one concurrent session.

        Why: with a barrier between the stages, every answer's second request waited for the
        slowest first reply of the whole chunk, and the free request slots idled meanwhile.
        Identical requests are sent once, as in run_batches; outcomes land in the memo."""
        waiting: list[set[str]] = [set() for _ in range(n_items)]
        sent: list[str] = []  # the key of each task handed to the judge, in order
        tasks: list[JudgeTask] = []

        def add(task: str, req: tuple[str | None, str, dict[str, Any]]) -> str | None:
            key = self._key(task, req)
            if key in self._memo:
                return None
            if key not in seen:
                seen.add(key)
                sent.append(key)
                tasks.append(self._task(task, req))
            return key

        seen: set[str] = set()

        for task, requests in first:
            for i, req in enumerate(requests):
                key = add(task, req) if req is not None else None
                if key is not None:
                    waiting[i].add(key)

        def follow(i: int) -> None:
            for task, requests in then(i):
                for req in requests:
                    if req is not None:
                        add(task, req)

        for i in range(n_items):
            if not waiting[i]:
                follow(i)

        def more(index: int, out: Outcome) -> list[JudgeTask]:
            key = sent[index]
            self._keep(key, out)
            start = len(tasks)
            for i in range(n_items):
                if key in waiting[i]:
                    waiting[i].discard(key)
                    if not waiting[i]:
                        follow(i)
            return tasks[start:]

        initial = list(tasks)
        if initial:
            self.judge.run_many(initial, more=more)

    def take_calls(self) -> list[JudgeCall]:
        """The JudgeCall rows made since the last take (scoring stores them)."""
        return self.judge.drain_calls()


def get_work(ctx: Any) -> JudgeWork:
    """The pass's JudgeWork, built once per ScoringContext from ctx.options["judge"]
    (a spec string or a Judge; default: the real Anthropic judge)."""

    def factory() -> JudgeWork:
        from evalcore.judges.client import Judge

        spec = ctx.options.get("judge")
        judge = spec if isinstance(spec, Judge) else make_judge(
            spec or DEFAULT_JUDGE, store=ctx.store, concurrency=ctx.options.get("judge_concurrency"))
        return JudgeWork(judge, ctx.run_id, update_manifest=ctx.options.get("judge_update_manifest", True),
                         repeats=judge_repeats(ctx.options))

    return ctx.resource("judge_work", factory)


def judge_repeats(options: dict[str, Any]) -> int:
    """K, the independent verdicts asked per judged value (option `judge_repeats`, checked by
    metrics/options.py; default 1)."""
    return int(options.get("judge_repeats") or 1)


# ---- dry-run estimates -------------------------------------------------------------------
def estimate_calls(ctx: Any, planned: list[tuple[str, str | None, str, dict[str, Any]]]) -> dict[str, float]:
    """Calls, tokens and cost for planned (task, method, question_id, inputs) requests.

    Requests already counted by another metric in this ctx are not counted again (shared
    work; a method None request is one per question), and requests already in the judge cache
    cost nothing. With K repeats (`judge_repeats`) every request is counted K times, once per
    repeat's own cache key (a repeat already in the cache is free). Second-stage inputs (claims) are guessed from sentences by the caller, so
    token figures are approximate; call counts are exact unless a fallback or repair is needed.
    The cost is None (unknown, never 0) when calls are to be made and the judge's model has no
    price; `price_known` says so.
    """
    from evalcore.judges.client import LLMJudge

    work = get_work(ctx)
    seen: set = ctx.resource("judge_estimate_seen", set)
    judge = work.judge
    calls = cached = tin = tout = 0
    cost: float | None = 0.0
    for (task, method, qid, inputs), repeat in itertools.product(planned, range(work.repeats)):
        key = (task, method, qid, json.dumps(inputs, sort_keys=True, ensure_ascii=False), repeat)
        if key in seen:
            continue
        seen.add(key)
        if not isinstance(judge, LLMJudge):
            calls += 1
            continue
        if judge.answered_from_cache(task, inputs, repeat):
            cached += 1
            continue
        defn = get_task(task)
        n_in, n_out = defn.estimate_input(inputs), defn.estimate_output(inputs)
        c = token_cost(judge.model, n_in, n_out, judge.prices)
        calls, tin, tout = calls + 1, tin + n_in, tout + n_out
        cost = None if cost is None or c is None else cost + c
    return {"calls": calls, "cached": cached, "input_tokens": tin, "output_tokens": tout,
            "cost_usd": None if cost is None else round(cost, 6), "price_known": cost is not None}


def guess_claims(text: str | None) -> list[str]:
    return sentences(text) or ([text] if text and text.strip() else [])


__all__ = ["JudgeWork", "get_work", "estimate_calls", "guess_claims", "inputs_for", "judge_repeats"]
