"""What a RAG method answered for one question (from a live server or a recorded file)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from evalcore.schemas.bounds import CostUsd, DurationMs, JsonObject, Rank, Score, SignedDurationMs, TokenCount
from evalcore.schemas.strict import Strict
from evalcore.schemas.ids import Id
from evalcore.schemas.trials import TrialIndex, first_trial

ErrorKind = Literal["error", "timeout", "empty", "http", "malformed"]


class RetrievedChunk(Strict):
    """One retrieved context, in the target's rank order (rank 1 = first)."""

    rank: Rank = Field(ge=1)
    chunk_id: str | None = None
    rel_path: str | None = None
    heading_path: str | None = None
    section: str | None = None
    text: str = ""
    score: Score | None = None  # bounded, like every number of an answer: evalcore/schemas/bounds.py
    metadata: JsonObject = Field(default_factory=dict)


class Citation(Strict):
    """A reference the answer cites: a chunk id and/or a document (+ section)."""

    chunk_id: str | None = None
    rel_path: str | None = None
    heading_path: str | None = None
    section: str | None = None
    text: str | None = None


class TokenUsage(Strict):
    input_tokens: TokenCount = Field(default=0, ge=0)
    output_tokens: TokenCount = Field(default=0, ge=0)
    model: str | None = None
    cost_usd: CostUsd | None = Field(default=None, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class EvalResponse(Strict):
    """One (question, method, trial) answer. `error` set means the target failed for this question.

    Duplicate chunk ids in `retrieved` are rejected: a ranking that lists a chunk twice would
    inflate every retrieval metric.
    """

    question_id: Id  # both names: NFC, outer whitespace removed (evalcore.schemas.ids)
    method: Id
    answer: str = ""
    retrieved: list[RetrievedChunk] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    abstained: bool | None = None
    scope: list[str] | None = None
    token_usage: TokenUsage | None = None
    latency_ms: DurationMs | None = Field(default=None, ge=0)
    timings: dict[str, SignedDurationMs] = Field(default_factory=dict)
    error: str | None = None
    error_kind: ErrorKind | None = None
    raw: JsonObject = Field(default_factory=dict)
    # which of the question's T trials this answer is (`run --trials T`; schemas/trials.py); trial 0,
    # the one answer of a run without trials, is left out of the record, which stays as it was
    trial: TrialIndex = Field(default=0, exclude_if=first_trial)

    @model_validator(mode="after")
    def _unique_chunk_ids(self) -> "EvalResponse":
        seen: set[str] = set()
        for chunk in self.retrieved:
            if chunk.chunk_id is None:
                continue
            if chunk.chunk_id in seen:
                raise ValueError(f"retrieved lists chunk_id {chunk.chunk_id!r} twice")
            seen.add(chunk.chunk_id)
        if self.error and not self.error_kind:
            self.error_kind = "error"
        return self
