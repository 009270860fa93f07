"""`score --repeats K` (issue 36 item 1): K independent judge verdicts per judged value, through
the real SDKs against the scripted judge server on 127.0.0.1 (tests/judges/conftest.py).

What must hold: the K verdicts are K distinct calls, made once and replayed after (repeat 0 keeps
the cache key it always had, so a K = 1 cache serves as repeat 0 and an interrupted pass resumes
with the missing repeats only); the OpenAI-compatible judge samples (temperature > 0, in its
label), the Anthropic judge sends no temperature (the provider's 1.0); each repeat is stored and
the value is their mean; `--dry-run` counts K times the calls; a pass with K = 1 leaves no
repeats to read; the Ray workers' scorer stores what the local pass stores.
"""

from __future__ import annotations

import itertools
import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.schemas import RunManifest
from evalcore.scoring.engine import score_run
from evalcore.store import FORMAT_VERSION, query_df

from .conftest import fence_of, good_judge, paris_item, task_of

ANTHROPIC = "anthropic:claude-haiku-4-5-20251001"


def coin_judge():
    """answer_class: CORRECT and WRONG in turn when the request samples (a temperature > 0, or
    none: the provider's default), the same verdict at temperature 0; every other task: good."""
    turn = itertools.count()

    def respond(body: dict, api: str) -> dict:
        system, _ = fence_of(body, api)
        if task_of(system) != "answer_class":
            return good_judge(body, api)
        sampled = body.get("temperature", 1.0) > 0
        label = "CORRECT" if not sampled or next(turn) % 2 == 0 else "WRONG"
        return {"text": json.dumps({"label": label, "reason": "coin"})}

    return respond


def _run(store, n: int = 2) -> str:
    items = [paris_item(2, qid=f"q{i}", answer=f"Paris, answer {i}.") for i in range(n)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="t",
                                          evalcore_version="test", methods=["m"]))
    writer.write_questions([q for q, _ in items])
    writer.write_responses([r for _, r in items])
    writer.publish()
    return "r1"


def _score(store, judge: str, k: int | None, **kw):
    options = {"judge": judge} if k is None else {"judge": judge, "judge_repeats": k}
    return score_run(store, "r1", metrics=["answer_class"], options=options, progress=False, **kw)


def _values(store):
    return query_df(store, "SELECT question_id, value, label, judge_id, details FROM metrics ORDER BY question_id")


def _repeats(store):
    return query_df(store, "SELECT question_id, repeat, value, label FROM metric_repeats ORDER BY question_id, repeat")


def test_k_verdicts_are_k_sampled_calls_made_once_stored_and_averaged(anthropic_env, store):
    anthropic_env.responder = coin_judge()
    _run(store)
    judge = f"openai:gpt-4o-mini@{anthropic_env.url}/v1"
    report = _score(store, judge, 3)
    assert not report.errors
    assert anthropic_env.count() == 2 * 3  # two answers, three independent verdicts each
    assert {r["body"]["temperature"] for r in anthropic_env.requests} == {1.0}  # the judge samples
    values, repeats = _values(store), _repeats(store)
    assert len(repeats) == 6 and sorted(set(repeats.repeat)) == [0, 1, 2]
    for row in values.itertuples():
        mine = repeats[repeats.question_id == row.question_id]
        assert row.value == pytest.approx(mine.value.mean())  # the stored value is the mean
        assert row.label == mine.label.mode().iloc[0]  # the most common verdict
        assert json.loads(row.details)["judge_repeats"] == 3
        assert row.judge_id == "openai:gpt-4o-mini[t=1]/answer_class@1"  # the sampling is in the label
    assert set(repeats.label) == {"CORRECT", "WRONG"}  # the repeats did differ
    _score(store, judge, 3)  # a second pass replays all of them
    assert anthropic_env.count() == 6
    assert _values(store)[["question_id", "value", "label"]].equals(values[["question_id", "value", "label"]])


def test_repeat_zero_keeps_todays_cache_key_and_a_pass_resumes_with_the_missing_repeats(anthropic_env, store):
    anthropic_env.responder = coin_judge()
    _run(store)
    _score(store, ANTHROPIC, None)  # today's pass: one verdict each
    assert anthropic_env.count() == 2
    _score(store, ANTHROPIC, 2)  # repeat 0 is that pass's reply: one new call per answer
    assert anthropic_env.count() == 4
    _score(store, ANTHROPIC, 3)  # as if K = 3 had stopped after two repeats: only the third is asked
    assert anthropic_env.count() == 6
    assert all("temperature" not in r["body"] for r in anthropic_env.requests)  # Anthropic: the provider's 1.0
    assert _values(store).judge_id.tolist() == [f"{ANTHROPIC}/answer_class@1"] * 2  # label as it always was
    assert len(_repeats(store)) == 6


def test_dry_run_counts_k_times_the_calls_and_the_cost(anthropic_env, store):
    _run(store)
    one = _score(store, ANTHROPIC, None, dry_run=True).estimate
    three = _score(store, ANTHROPIC, 3, dry_run=True).estimate
    assert anthropic_env.count() == 0
    assert three["judge_repeats"] == 3 and one["judge_repeats"] == 1
    assert three["calls"] == 3 * one["calls"] == 6
    assert three["cost_usd"] == pytest.approx(3 * one["cost_usd"])


def test_a_pass_with_one_verdict_leaves_no_repeats_to_read(anthropic_env, store):
    from evalcore.analysis.comparison.judge_noise import noise_table

    anthropic_env.responder = coin_judge()
    _run(store)
    _score(store, ANTHROPIC, 3)
    assert len(noise_table(store, "r1")) == 1
    _score(store, ANTHROPIC, None)  # the value is repeat 0's again; the old repeats are nobody's
    assert noise_table(store, "r1").empty
    assert all("judge_repeats" not in json.loads(d or "{}") for d in _values(store).details)


@pytest.mark.parametrize("k", ["0", "51", "two"])
def test_a_bad_k_is_refused_in_one_error_naming_it(store, k):
    from evalcore.errors import EvalcoreError

    _run(store)
    res = CliRunner().invoke(app, ["--store", str(store.root), "score", "r1", "--judge", "heuristic",
                                   "--metrics", "answer_class", "--repeats", k])
    if k == "two":  # not a number: the command line's own usage error
        assert res.exit_code == 2 and "Invalid value for '--repeats'" in res.output
    else:  # the CLI prints an EvalcoreError as one `error:` line, exit 2
        assert isinstance(res.exception, EvalcoreError) and f"got {k}" in str(res.exception)
        assert "--repeats" in str(res.exception) and "\n" not in str(res.exception)
    assert query_df(store, "SELECT count(*) AS n FROM metrics").n[0] == 0  # nothing scored


def test_the_option_refuses_what_is_not_a_whole_number(store):
    from evalcore.errors import EvalcoreError

    _run(store)
    for bad in (2.5, True, "3", -1):
        with pytest.raises(EvalcoreError, match="judge_repeats"):
            _score(store, "heuristic", bad)


def test_the_ray_workers_scorer_stores_what_the_local_pass_stores(anthropic_env, store):
    """The Ray actor's scorer (run here without Ray) calls the same score_chunk: with the judge
    cache the local pass filled, it stores the same values and the same repeats."""
    from evalcore.scale.ray_scoring import _Scorer

    anthropic_env.responder = coin_judge()
    _run(store)
    _score(store, ANTHROPIC, 3)
    local_values, local_repeats = _values(store), _repeats(store)
    questions = {q.id: q.model_dump_json() for q, _ in (paris_item(2, qid=f"q{i}") for i in range(2))}
    scorer = _Scorer(store_root=str(store.root), run_id="r1", metric_names=["answer_class"],
                     options={"judge": ANTHROPIC, "judge_repeats": 3}, questions=questions, idf_questions=[],
                     have=["answer", "judge", "ground_truth"])
    responses = query_df(store, "SELECT record FROM responses ORDER BY question_id").record
    summary = scorer.score(scorer.items_of(responses))
    store.open_run("r1").publish()
    assert summary["values"] == 2 and anthropic_env.count() == 6  # every verdict from the cache
    assert _values(store)[["value", "label"]].equals(local_values[["value", "label"]])
    assert _repeats(store).equals(local_repeats)
    assert not local_values.value.isna().any()
