"""The offline `heuristic` judge: the same task outputs as an LLM judge, computed lexically.

Why it exists: scoring must work without an API key (CI, air-gapped machines, quick looks),
and the judged metrics' plumbing (claims, verdicts, caching, storage) must be testable end to
end. It is never the default and never pretends to be a model: its provider is `heuristic`,
so every stored value's judge id starts with `heuristic:`.

How each task is approximated (each task's heuristic sits with its definition in
task_library; shared rules in offline.py, `coverage` and `key_words` in lexical.py):
- decompose / reference_statements: sentences of the answer / reference.
- context_review: a statement's support is a weighted share (0-1) of six word-overlap measures
  against the contexts (words, content words, names and numbers found...), supported when it
  is >= 0.882; weights and threshold were fitted on HaluEval QA rows 1-250 alone and measured on
  the other sets (offline.support; protocol and figures: docs/judges.md). faithfulness and
  context_recall are the mean support of the claims / statements; the verdict and its reason
  (what was not found) are shown per claim. A context's relevance is the share of the
  question's (or the best gold answer's) content words.
- question_generation: cannot write questions, so it returns the answer's first sentences;
  answer_relevance then compares them with the question by embedding cosine.
- answer_relevance_direct (answer_relevance's fallback when no question was generated): share
  of the question's content words found in the answer, banded to quarters; 0 for a hedge.
- answer_correctness: the best match over every gold answer (`answers`, SQuAD-style): 1 for
  the same words, 0.9 when the answer holds a gold answer, else 0.9 x the mean of the two word
  shares; answer_class: CORRECT when that match is >= 0.6.
- factual_accuracy: correctness = share of answer words in the gold answers + question,
  completeness = share of the best gold answer's words in the answer, consistency = 100 minus
  50 per negation clash.
- groundedness / correctness / plan_scores: banded from the support and match shares.

What it cannot do: see meaning. A paraphrase in other words is "unsupported" / "wrong", a
negated copy of the context is "supported", and a wrong answer that repeats the gold answer's
words ("not Paris") counts as right. `lexical-v3` in its judge id names this rule set
(`lexical-v2`: names and numbers plus 70% of the other words, verdicts counted 0/1).
"""

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
