"""Data contracts (pydantic v2, extra="forbid") shared by every part of evalcore."""

from evalcore.schemas.dataset import Check, EvalQuestion, GoldPassage
from evalcore.schemas.response import Citation, EvalResponse, RetrievedChunk, TokenUsage
from evalcore.schemas.results import (
    Annotation,
    Claim,
    ContextJudgement,
    JudgeCall,
    JudgeId,
    MetricRepeat,
    MetricValue,
    RunManifest,
)

__all__ = [
    "Annotation",
    "Check",
    "Citation",
    "Claim",
    "ContextJudgement",
    "EvalQuestion",
    "EvalResponse",
    "GoldPassage",
    "JudgeCall",
    "JudgeId",
    "MetricRepeat",
    "MetricValue",
    "RetrievedChunk",
    "RunManifest",
    "TokenUsage",
]
