"""Shared judge work for one scoring pass: the glue between metrics and the judge client.

Why a memo: several metrics need the same judge output (faithfulness and context_recall both
need the decomposition and the support verdicts; groundedness reuses the answer's claims).
Every metric asks `work.run(task, requests)`; identical (task, method, question, inputs)
requests are answered once per pass, so claim extraction happens once per answer whatever
metrics are selected. The LLM cache below it makes repeated passes free as well.

`flush()` writes the pass's JudgeCall rows to the run and records the judges used and the
judge calls per question in the run manifest (counts: judge_calls, judge_calls_live,
judge_calls_cached, judge_questions, judge_calls_per_question_max).
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalcore.judges import DEFAULT_JUDGE, Judge, make_judge
from evalcore.judges.cache import request_key
from evalcore.judges.client import JudgeTask, LLMJudge, Outcome
from evalcore.judges.lexical import sentences
from evalcore.judges.tasks import build_prompt, inputs_for

# Rough reply sizes (tokens) for dry-run estimates: fixed part + per listed item.
OUTPUT_TOKENS = {"decompose": (40, 30), "support": (30, 35), "context_relevance": (20, 40),
                 "question_generation": (80, 0), "answer_relevance_direct": (50, 0),
                 "factual_accuracy": (300, 0), "answer_class": (40, 0),
                 "abstention": (30, 0), "groundedness": (80, 5), "correctness": (50, 0),
                 "answer_correctness": (50, 0), "plan_scores": (150, 0)}


class JudgeWork:
    def __init__(self, judge: Judge, run_id: str, writer: Any = None, update_manifest: bool = True,
                 record_claims: bool = True):
        self.judge = judge
        self.run_id = run_id
        self.writer = writer
        self.update_manifest = update_manifest
        self.record_claims = record_claims
        self._memo: dict[str, Outcome] = {}
        self.labels: set[str] = set()

    @property
    def heuristic(self) -> bool:
        return self.judge.kind == "heuristic"

    def run(self, task: str, requests: list[tuple[str, str, dict[str, Any]] | None]) -> list[Outcome | None]:
        """Outcomes for (method, question_id, inputs) requests; None requests stay None."""
        keys: list[str | None] = []
        todo: dict[str, JudgeTask] = {}
        for req in requests:
            if req is None:
                keys.append(None)
                continue
            method, qid, inputs = req
            key = request_key({"t": task, "m": method, "q": qid, "i": inputs})
            keys.append(key)
            if key not in self._memo and key not in todo:
                todo[key] = JudgeTask(task, inputs, self.run_id, method, qid, task)
        if todo:
            outs = self.judge.run_many(list(todo.values()))
            for key, out in zip(todo, outs):
                self._memo[key] = out
                self.labels.add(out.judge_id.label)
        return [self._memo[k] if k is not None else None for k in keys]

    def flush(self) -> None:
        calls = self.judge.drain_calls()
        if self.writer is None:
            return
        if calls:
            self.writer.write_judge_calls(calls)
        if not self.update_manifest:
            return
        per_q = self.judge.per_question
        figures = {
            "judge_calls": sum(per_q.values()),
            "judge_calls_live": self.judge.live_calls,
            "judge_calls_cached": self.judge.cached_calls,
            "judge_questions": len(per_q),
            "judge_calls_per_question_max": max(per_q.values(), default=0),
        }
        self.writer.edit_manifest(lambda m: {"counts": {**m.counts, **figures},
                                             "judges": sorted(set(m.judges) | self.labels)})


def get_work(ctx: Any) -> JudgeWork:
    """The pass's JudgeWork, built once per ScoringContext from ctx.options["judge"]
    (a spec string or a Judge; default: the real Anthropic judge)."""

    def factory() -> JudgeWork:
        spec = ctx.options.get("judge")
        judge = spec if isinstance(spec, Judge) else make_judge(
            spec or DEFAULT_JUDGE, store=ctx.store, concurrency=ctx.options.get("judge_concurrency"))
        return JudgeWork(judge, ctx.run_id, ctx.writer,
                         update_manifest=ctx.options.get("judge_update_manifest", True),
                         record_claims=ctx.options.get("judge_record_claims", True))

    return ctx.resource("judge_work", factory)


# ---- dry-run estimates -------------------------------------------------------------------
def estimate_calls(ctx: Any, planned: list[tuple[str, str, str, dict[str, Any]]]) -> dict[str, float]:
    """Calls, tokens and cost for planned (task, method, question_id, inputs) requests.

    Requests already counted by another metric in this ctx are not counted again (shared
    work), and requests already in the judge cache cost nothing. Second-stage inputs (claims)
    are guessed from sentences by the caller, so those figures are approximate.
    """
    work = get_work(ctx)
    seen: set = ctx.resource("judge_estimate_seen", set)
    judge = work.judge
    calls = cached = tin = tout = 0
    cost = 0.0
    for task, method, qid, inputs in planned:
        key = (task, method, qid, json.dumps(inputs, sort_keys=True, ensure_ascii=False))
        if key in seen:
            continue
        seen.add(key)
        if not isinstance(judge, LLMJudge):
            calls += 1
            continue
        if judge.cache.contains(judge.cache_key_for(task, inputs)):
            cached += 1
            continue
        prompt = build_prompt(task, inputs)
        n_in = math.ceil(len(prompt.system + prompt.user) / 3.5)
        fixed, per = OUTPUT_TOKENS.get(task, (100, 0))
        n_items = sum(len(v) for k, v in inputs.items() if isinstance(v, list))
        n_out = fixed + per * n_items
        from evalcore.judges.pricing import cost_usd

        c, _ = cost_usd(judge.prices, judge.model, n_in, n_out)
        calls, tin, tout, cost = calls + 1, tin + n_in, tout + n_out, cost + c
    return {"calls": calls, "cached": cached, "input_tokens": tin, "output_tokens": tout, "cost_usd": round(cost, 6)}


def guess_claims(text: str | None) -> list[str]:
    return sentences(text) or ([text] if text and text.strip() else [])


__all__ = ["JudgeWork", "get_work", "estimate_calls", "guess_claims", "inputs_for"]
