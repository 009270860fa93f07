"""Questions: what a dataset loader produces and every metric reads.

`extra="forbid"` everywhere so a typo in a dataset file is an error, not a silently
ignored field. Loaders for foreign formats map their fields explicitly and put
anything else into `metadata`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalcore.schemas.bounds import JsonObject, Label
from evalcore.schemas.ids import Id
from evalcore.schemas.strict import Strict


class GoldPassage(Strict):
    """One gold support: a chunk id, or an anchor (rel_path + heading_path [+ snippet]).

    Anchors survive re-chunking: a retrieved chunk matches when its rel_path is equal and its
    heading_path starts with the gold heading_path (docs/metrics/retrieval.md).
    `relevance` is the graded judgement (1 = relevant) used by nDCG.
    """

    chunk_id: str | None = None
    rel_path: str | None = Field(default=None, alias="doc")
    heading_path: str | None = None
    section: str | None = None
    snippet: str | None = None
    text: str | None = None
    relevance: float = 1.0

    @model_validator(mode="after")
    def _needs_an_identity(self) -> "GoldPassage":
        if not (self.chunk_id or self.rel_path or self.text or self.snippet):
            raise ValueError("a gold passage needs chunk_id, or rel_path/doc, or text/snippet")
        return self


CheckType = Literal["contains", "contains_any", "not_contains", "regex", "number", "list_coverage"]


class Check(Strict):
    """A declarative per-question check (generalises question-specific code).

    - contains / not_contains: `value` (a string) must (not) appear, Unicode-normalised.
    - contains_any: any of `values` appears.
    - regex: `value` is a regex in Python syntax, searched in the answer in linear time by
      RE2 (evalcore/metrics/linear_regex.py; what RE2 cannot run scores NaN with the reason).
    - number: `number` appears in the answer within `tolerance` (absolute).
    - list_coverage: fraction of `values` present must reach `min_fraction`.
    """

    type: CheckType
    name: str | None = None
    value: str | None = None
    values: list[str] = Field(default_factory=list)
    number: float | None = None
    tolerance: float = 0.0
    min_fraction: float = 1.0

    @model_validator(mode="after")
    def _fields_for_type(self) -> "Check":
        need_value = {"contains", "not_contains", "regex"}
        if self.type in need_value and not self.value:
            raise ValueError(f"check type {self.type!r} needs 'value'")
        if self.type in {"contains_any", "list_coverage"} and not self.values:
            raise ValueError(f"check type {self.type!r} needs a non-empty 'values' list")
        if self.type == "number" and self.number is None:
            raise ValueError("check type 'number' needs 'number'")
        if self.type == "regex":
            try:
                re.compile(self.value or "")
            except re.error as exc:
                raise ValueError(f"invalid regex {self.value!r}: {exc}") from exc
        return self


class EvalQuestion(Strict):
    """One evaluation question with everything any metric may need.

    `ground_truth` is the reference answer; `answers` holds every acceptable gold answer
    (SQuAD-style max over answers) and always starts with `ground_truth` when both exist.
    A loader may pass ground_truth as a list: the first item becomes ground_truth.
    """

    id: Id  # NFC, outer whitespace removed (evalcore.schemas.ids)
    question: str
    ground_truth: str | None = None
    answers: list[str] = Field(default_factory=list)
    category: Label | None = None  # each label at most MAX_LABEL_CHARS (evalcore.schemas.bounds)
    question_type: Label | None = None
    difficulty: Label | None = None
    tags: list[Label] = Field(default_factory=list)
    answerable: bool = True
    expected_keywords: list[str] = Field(default_factory=list)
    gold_passages: list[GoldPassage] = Field(default_factory=list)
    required_support_groups: list[list[str]] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)
    is_correct_rule: str | None = None
    negative_check: str | None = None
    recency_conflict_rule: Literal["cite_newer", "acknowledge_both", "cite_both"] | None = None
    metadata: JsonObject = Field(default_factory=dict)  # nesting bounded: evalcore/schemas/bounds.py

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("id must be a string or integer")
        if isinstance(value, int):
            return str(value)
        return value

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must not be empty")
        return value

    @field_validator("required_support_groups")
    @classmethod
    def _support_groups_can_match(cls, value: list[list[str]]) -> list[list[str]]:
        """An empty group or a blank entry could never be matched, so recall_all would be 0 for
        every answer: refuse it at load time instead."""
        for i, group in enumerate(value):
            if not group:
                raise ValueError(f"support group {i} is empty")
            if any(not entry.strip() for entry in group):
                raise ValueError(f"support group {i} has a blank entry")
        return value

    @model_validator(mode="before")
    @classmethod
    def _ground_truth_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("ground_truth"), list):
            data = dict(data)
            items = [str(x) for x in data["ground_truth"] if x is not None and str(x).strip()]
            data["ground_truth"] = items[0] if items else None
            given = data.get("answers") or []
            merged: list[Any] = []
            for answer in items + (list(given) if isinstance(given, list) else [given]):
                if answer not in merged:  # by equality: a malformed item (a list) must reach
                    merged.append(answer)  # validation and be reported, not crash hashing
            data["answers"] = merged
        return data

    @model_validator(mode="after")
    def _answers_start_with_ground_truth(self) -> "EvalQuestion":
        if self.ground_truth is not None and (not self.answers or self.answers[0] != self.ground_truth):
            rest = [a for a in self.answers if a != self.ground_truth]
            self.answers = [self.ground_truth, *rest]
        elif self.ground_truth is None and self.answers:
            self.ground_truth = self.answers[0]
        return self

    @property
    def gold_chunk_ids(self) -> list[str]:
        return [g.chunk_id for g in self.gold_passages if g.chunk_id]
