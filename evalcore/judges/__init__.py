"""LLM judges (and the offline heuristic judge) behind one client.

    make_judge("anthropic:claude-haiku-4-5-20251001", store)    # default real judge
    make_judge("openai:gpt-4o-mini", store)                     # OPENAI_API_KEY
    make_judge("openai:llama3.1@http://127.0.0.1:8000/v1")      # any OpenAI-compatible server
    make_judge("heuristic")                                     # offline, no LLM, labelled as such

A judge's identity is provider + model + prompt id/version (+ temperature): see JudgeId.
Metrics use judges through evalcore.judges.work (shared per-question work, storage).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import canonical_id

if TYPE_CHECKING:
    from evalcore.judges.client import Judge, JudgeTask, LLMJudge, Outcome
    from evalcore.judges.offline.judge import HeuristicJudge

# Why the judge classes load when first named: a module that needs one light part of this
# package (the price table for cost_usd, the task definitions for the metric registry) imports
# `evalcore.judges.<part>`, which runs this file first; importing the clients and both SDK
# backends here cost ~0.1 s of every such start (`show --corrected`, the Annotate page).
_LAZY = {"Judge": "evalcore.judges.client", "JudgeTask": "evalcore.judges.client",
         "LLMJudge": "evalcore.judges.client", "Outcome": "evalcore.judges.client",
         "HeuristicJudge": "evalcore.judges.offline.judge"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
        return value
    raise AttributeError(f"module 'evalcore.judges' has no attribute {name!r}")

# A dated (pinned) id that is not deprecated and has no adaptive thinking eating max_tokens.
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5-20251001"
DEFAULT_JUDGE = f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"

__all__ = ["DEFAULT_JUDGE", "Judge", "JudgeTask", "LLMJudge", "HeuristicJudge", "Outcome", "make_judge"]


def _check_url(url: str | None, what: str) -> None:
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EvalcoreError(f"{what}: {url!r} is not an http(s) URL")
    if parts.username or parts.password:
        raise EvalcoreError(f"{what}: credentials in the URL would be stored with every request; "
                            "put the key in the environment variable instead")


DEFAULT_CONCURRENCY = 16


def make_judge(spec: str | None, store=None, *, prices: dict | None = None, concurrency: int | None = None,
               timeout: float = 60.0, max_attempts: int = 5, backoff_base: float = 0.5) -> Judge:
    """Build a judge from `heuristic`, `anthropic[:MODEL]` or `openai:MODEL[@BASE_URL]`.

    `store` (a RunStore) enables the content-addressed cache in <store>/_shared/judge_cache.
    Concurrency defaults to EVALCORE_JUDGE_CONCURRENCY or 16 requests in flight (a judge call
    waits ~1 s on the network; 429s are retried after the provider's Retry-After).
    """
    from evalcore.judges.backends import AnthropicBackend, OpenAIBackend
    from evalcore.judges.cache import JudgeCache
    from evalcore.judges.client import LLMJudge
    from evalcore.judges.offline.judge import HeuristicJudge

    spec = canonical_id(spec or DEFAULT_JUDGE)  # as typed: the id rule (evalcore.schemas.ids)
    conc = int(concurrency or os.environ.get("EVALCORE_JUDGE_CONCURRENCY") or DEFAULT_CONCURRENCY)
    if spec == "heuristic":
        return HeuristicJudge(concurrency=conc)
    provider, _, rest = spec.partition(":")
    cache = JudgeCache(store.shared_cache("judge_cache") if store is not None else None)
    # structured outputs (a reply schema per task) unless EVALCORE_JUDGE_STRUCTURED=0
    structured = os.environ.get("EVALCORE_JUDGE_STRUCTURED", "1").strip().lower() not in ("0", "false", "no", "off")
    kw = dict(prices=prices, concurrency=conc, max_attempts=max_attempts, backoff_base=backoff_base,
              structured=structured)
    if provider == "anthropic":
        model = rest or DEFAULT_ANTHROPIC_MODEL
        backend = AnthropicBackend(model, timeout=timeout)
        _check_url(backend.base_url, "ANTHROPIC_BASE_URL")
        return LLMJudge(backend, cache, **kw)
    if provider == "openai":
        model, _, base_url = rest.partition("@")
        if not model:
            raise EvalcoreError("openai judge needs a model: openai:MODEL[@BASE_URL]")
        backend = OpenAIBackend(model, base_url or None, timeout=timeout)
        _check_url(backend.base_url, "openai judge base URL")
        return LLMJudge(backend, cache, **kw)
    raise EvalcoreError(f"unknown judge {spec!r}: use heuristic, anthropic:MODEL or openai:MODEL[@BASE_URL]")
