"""Data contracts (pydantic v2, extra="forbid") shared by every part of evalcore.

Why each model's module loads when the model is first named (_LAZY): creating a model class
costs time even with its validator deferred, and `evalcore runs` reads only RunManifest; it
imported every contract, a tenth of its start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcore.schemas.dataset import Check, EvalQuestion, GoldPassage
    from evalcore.schemas.manifest import RunManifest
    from evalcore.schemas.response import Citation, EvalResponse, RetrievedChunk, TokenUsage
    from evalcore.schemas.results import (Annotation, Claim, ContextJudgement, JudgeCall, JudgeId, MetricRepeat,
                                          MetricValue)

_MODULES = {
    "evalcore.schemas.dataset": ("Check", "EvalQuestion", "GoldPassage"),
    "evalcore.schemas.manifest": ("RunManifest",),
    "evalcore.schemas.response": ("Citation", "EvalResponse", "RetrievedChunk", "TokenUsage"),
    "evalcore.schemas.results": ("Annotation", "Claim", "ContextJudgement", "JudgeCall", "JudgeId", "MetricRepeat",
                                 "MetricValue"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
        return value
    raise AttributeError(f"module 'evalcore.schemas' has no attribute {name!r}")
