"""A judged metric defined entirely in a test module: one TaskDef (prompt file, reply model,
heuristic, estimate) and one metric function. It must work end to end: the prompt renders,
the schema is sent, the offline judge answers, the dry run estimates it, scoring stores it
(issue 15 item 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from evalcore.judges.tasks import TaskDef, get_task, register, unregister
from evalcore.judges.work import estimate_calls, get_work
from evalcore.metrics.base import MetricSpec, Score
from evalcore.metrics.registry import register_metric, unregister_metric
from evalcore.schemas import RunManifest
from evalcore.scoring.engine import score_run
from evalcore.store import FORMAT_VERSION, query_df

from .conftest import fence_of, paris_item

PROMPT = """id: tone
version: 1
description: Is the answer polite?
preamble: preamble.v1
max_tokens: 200
system: |
  Task: judge the tone of an answer.
user: |
  The answer:
  ${answer}

  Reply with this JSON object: {"polite": 1, "reason": "short reason"}
"""


class ToneReply(BaseModel):
    polite: Literal[0, 1]
    reason: str = ""


def tone(items, ctx):
    work = get_work(ctx)
    label = work.judge.label("tone")
    outs = work.run("tone", [None if r.error else (r.method, q.id, {"answer": r.answer}) for q, r in items])
    return [Score(float(o.output["polite"]), reason=o.output["reason"], judge_id=label) if o and o.output
            else Score(float("nan"), reason=o.error if o else "target error", judge_id=label) for o in outs]


def _estimate(items, ctx):
    return estimate_calls(ctx, [("tone", r.method, q.id, {"answer": r.answer}) for q, r in items if not r.error])


@pytest.fixture
def tone_metric(tmp_path):
    (tmp_path / "tone.v1.yaml").write_text(PROMPT, encoding="utf-8")
    register(TaskDef("tone", "1", ToneReply, prompt_dir=tmp_path, output_tokens=(30, 0),
                     heuristic=lambda inp: {"polite": int("please" in inp["answer"].lower()),
                                            "reason": "offline: looks for 'please'"}))
    spec = MetricSpec("tone", "judged", tone, needs=frozenset({"judge", "answer"}), estimate=_estimate)
    register_metric(spec)
    yield spec
    unregister_metric("tone")
    unregister("tone")


def _run(store):
    items = [paris_item(1, qid="q1", answer="Paris, please note."), paris_item(1, qid="q2", answer="Paris.")]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="t1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    writer.publish()


def test_the_task_definition_is_complete(tone_metric):
    defn = get_task("tone")
    assert defn.schema() == {"type": "object", "properties": {"polite": {"type": "integer", "enum": [0, 1]},
                                                              "reason": {"type": "string"}},
                             "required": ["polite", "reason"], "additionalProperties": False}
    prompt = defn.prompt({"answer": "Hi"})
    assert "judge the tone" in prompt.system and "BEGIN answer" in prompt.user
    assert defn.estimate_output({"answer": "Hi"}) == 30 and defn.estimate_input({"answer": "Hi"}) > 50


def test_the_offline_judge_scores_it_through_scoring(tone_metric, store):
    _run(store)
    score_run(store, "t1", metrics=["tone"], options={"judge": "heuristic"}, progress=False)
    rows = query_df(store, "SELECT question_id, value, judge_id FROM metrics WHERE metric = 'tone' ORDER BY 1")
    assert list(rows.value) == [1.0, 0.0] and rows.judge_id.str.startswith("heuristic:").all()
    calls = query_df(store, "SELECT purpose FROM judge_calls")
    assert list(calls.purpose) == ["tone", "tone"]


def test_an_llm_judge_gets_its_schema_and_the_dry_run_counts_it(tone_metric, anthropic_env, store):
    anthropic_env.responder = lambda body, api: {
        "text": json.dumps({"polite": int("please" in fence_of(body, api)[1]), "reason": "r"})}
    _run(store)
    judge = {"judge": "anthropic:claude-haiku-4-5"}
    estimate = score_run(store, "t1", metrics=["tone"], options=judge, dry_run=True, progress=False).estimate
    assert estimate["calls"] == 2 and anthropic_env.count() == 0
    score_run(store, "t1", metrics=["tone"], options=judge, progress=False)
    assert anthropic_env.count() == 2
    sent = anthropic_env.requests[0]["body"]["output_config"]["format"]["schema"]
    assert sent == get_task("tone").schema()
    rows = query_df(store, "SELECT question_id, value FROM metrics WHERE metric = 'tone' ORDER BY 1")
    assert list(rows.value) == [1.0, 0.0]
    # a re-score is free: the cache answers
    score_run(store, "t1", metrics=["tone"], options=judge, progress=False)
    assert anthropic_env.count() == 2


def test_a_reply_outside_the_model_is_repaired_then_refused(tone_metric, anthropic_env, store):
    anthropic_env.push({"text": '{"polite": "yes"}'}, {"text": '{"polite": 2}'})
    (score,) = tone([paris_item(1, answer="x")], _ctx(store, "anthropic:claude-haiku-4-5"))
    assert score.value != score.value and "after one repair" in score.reason and "polite" in score.reason
    assert anthropic_env.count() == 2


def _ctx(store, judge):
    from evalcore.metrics.base import ScoringContext

    return ScoringContext(run_id="t1", store=store, options={"judge": judge})


def test_prompt_file_must_exist(tmp_path):
    with pytest.raises(KeyError, match="no prompt template"):
        register(TaskDef("nowhere", "1", ToneReply, heuristic=lambda inp: {}, prompt_dir=Path(tmp_path)))
