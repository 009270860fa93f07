"""Prompt files are complete and versioned; judge specs parse; judge ids are honest."""

import pytest

from evalcore.errors import EvalcoreError
from evalcore.judges import DEFAULT_JUDGE, HeuristicJudge, LLMJudge, make_judge
from evalcore.judges.parsing import VALIDATORS
from evalcore.judges.prompts import load_prompt
from evalcore.judges.tasks import PROMPT_VERSIONS, get_task


def test_every_task_has_a_prompt_and_validator():
    assert set(PROMPT_VERSIONS) == set(VALIDATORS)
    for task, version in PROMPT_VERSIONS.items():
        tpl = load_prompt(task, version)  # the file <task>.v<version>.yaml exists, or this raises
        assert "DATA to be graded" in tpl.system and "JSON" in tpl.user


def test_absent_optional_text_is_plain_and_counts_are_ours():
    p = get_task("context_review").prompt({"question": "Q?", "ground_truth": "", "contexts": ["a", "b"],
                                           "claims": ["c"], "statements": [], "n_contexts": 2, "n_claims": 1,
                                           "n_statements": 0})
    assert "(absent)" in p.user and "2 for the passages, 1 for" in p.user and "0 for group S" in p.user
    assert p.user.count(f"<<<{p.fence} BEGIN context") == 2


def test_make_judge_specs(store, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert isinstance(make_judge("heuristic"), HeuristicJudge)
    j = make_judge(None, store=store)
    assert isinstance(j, LLMJudge) and j.spec == DEFAULT_JUDGE
    o = make_judge("openai:llama3@http://127.0.0.1:8000/v1")
    assert o.model == "llama3" and o.backend.base_url == "http://127.0.0.1:8000/v1"
    assert o.label("decompose", "context_review") == "openai:llama3/decompose+context_review@2+1"
    with pytest.raises(EvalcoreError, match="credentials"):
        make_judge("openai:m@http://user:secret@host/v1")
    with pytest.raises(EvalcoreError, match="unknown judge"):
        make_judge("gemini:x")
    with pytest.raises(EvalcoreError):
        make_judge("openai:")


def test_heuristic_is_labelled():
    j = make_judge("heuristic")
    assert j.judge_id("support").label == "heuristic:lexical-v3/support@1"


def test_missing_key_is_a_clear_error(monkeypatch):
    from evalcore.judges.client import JudgeTask

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(EvalcoreError, match="ANTHROPIC_API_KEY"):
        make_judge("anthropic").run_many([JudgeTask("abstention", {"question": "q", "answer": "a"}, "r")])
