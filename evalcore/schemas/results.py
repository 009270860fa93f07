"""Scores, judge calls, claims and human annotations: what scoring writes to the store."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalcore.schemas.bounds import JsonObject
from evalcore.schemas.ids import Id
from evalcore.schemas.labels import (PREFERENCE, RETRACTED, SAMPLE_GRAMMAR, Preference, preference_other,
                                     sample_seed)
from evalcore.schemas.strict import Strict, utcnow
from evalcore.schemas.trials import first_trial


# How far ahead of this machine's clock a label's time may be (another machine's clock, a
# labelling tool's export): "the newest label counts", so a label dated in the future would
# outrank every label made after it (a 9999-12-31 label would never be overruled).
LABEL_CLOCK_SKEW = timedelta(minutes=5)


# A number where a time is expected: pydantic reads it as Unix seconds below 2e10 and as
# milliseconds above, so 253402300799 (9999-12-31 in seconds) became 1978 and passed the future
# check. Seconds, milliseconds and a YYYYMMDD date cannot be told apart, so none is guessed.
_NUMBER = re.compile(r"\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")


def time_not_number(value: Any) -> Any:
    """Refuse a number (or text that is one) where a label's time is expected (ValueError):
    times are ISO 8601 text (`2025-06-01T12:00:00Z`) or datetimes; anything else is left to
    pydantic's parsing."""
    if isinstance(value, (int, float)) or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError(f"{value!r} is a number, not a time: write the time in ISO 8601, e.g. "
                         "2025-06-01T12:00:00Z (a number could be seconds, milliseconds or a YYYYMMDD date)")
    return value


def label_time(when: datetime) -> datetime:
    """A label's time, checked: a time without a zone is UTC (as the store reads it), and a time
    more than LABEL_CLOCK_SKEW ahead of now is refused (ValueError)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    limit = utcnow() + LABEL_CLOCK_SKEW
    if when > limit:
        raise ValueError(f"{when.isoformat()} is in the future (more than {LABEL_CLOCK_SKEW.seconds // 60} minutes "
                         f"ahead of this machine's clock, {utcnow():%Y-%m-%dT%H:%M:%SZ}); a label's time is when "
                         "it was made")
    return when


def check_label_time(annotation: "Annotation") -> None:
    """The store's last check before a label is appended (StoreError naming it)."""
    from evalcore.errors import StoreError

    try:
        label_time(annotation.when)
    except ValueError as exc:
        raise StoreError(f"label {annotation.annotation_id} of run {annotation.run_id}, field 'when': {exc}") from None


class JudgeId(Strict):
    """Everything that determines a judge's verdicts; part of every judged value's identity."""

    provider: str
    model: str
    prompt_id: str
    prompt_version: str
    # None = no sampling parameter sent (the provider's default); recorded so it is never implied
    temperature: float | None = 0.0

    @property
    def label(self) -> str:
        """`provider:model/prompt@version`; a judge that samples at a temperature of its own
        choosing says so after the model (`openai:gpt-4o-mini[t=1]/answer_class@1`), so its
        values never pass for a temperature-0 judge's. Temperature 0 and None (no parameter
        sent: the provider's default) keep the plain label every stored run already has."""
        sampled = "" if self.temperature in (None, 0.0) else f"[t={self.temperature:g}]"
        return f"{self.provider}:{self.model}{sampled}/{self.prompt_id}@{self.prompt_version}"


class MetricValue(Strict):
    """One metric value for one (run, method, question).

    `value` is NaN only together with a `reason` (e.g. "no contexts"): a silent NaN hides
    a bug. Judged values carry the judge label; every value carries its metric version.
    """

    run_id: str
    method: str
    question_id: str
    metric: str
    value: float
    group: str
    version: str = "1"
    reason: str | None = None
    details: JsonObject = Field(default_factory=dict)  # nesting bounded: evalcore/schemas/bounds.py
    judge_id: str | None = None
    # the categorical verdict behind the value, in evalcore.schemas.labels' words (a grade
    # letter, an answer class): typed, so readers never parse it out of `details`
    label: str | None = None
    computed_at: datetime = Field(default_factory=utcnow)
    trial: int = Field(default=0, ge=0, exclude_if=first_trial)  # the answer's trial (schemas/trials.py)

    @model_validator(mode="after")
    def _nan_needs_reason(self) -> "MetricValue":
        if math.isinf(self.value):
            raise ValueError(f"metric {self.metric!r}: value must be finite or NaN")
        if math.isnan(self.value) and not self.reason:
            raise ValueError(f"metric {self.metric!r}: NaN needs a reason")
        return self


class MetricRepeat(Strict):
    """One of the K independent judge verdicts behind a judged value (`score --repeats K`).

    The metric value itself (MetricValue) is the mean over the repeats; these rows keep each
    repeat, so the judge's own noise can be measured (analysis/comparison/judge_noise.py).
    `value_at` is the `computed_at` of the MetricValue they belong to: a later pass that
    replaced the value with K = 1 leaves these rows behind, and readers, matching the two, never
    mistake them for the new value's repeats."""

    run_id: str
    method: str
    question_id: str
    metric: str
    repeat: int = Field(ge=0)
    value: float
    label: str | None = None
    judge_id: str | None = None
    reason: str | None = None
    value_at: datetime
    trial: int = Field(default=0, ge=0, exclude_if=first_trial)  # the answer's trial (schemas/trials.py)

    @model_validator(mode="after")
    def _finite_or_reasoned(self) -> "MetricRepeat":
        if math.isinf(self.value):
            raise ValueError(f"metric {self.metric!r} repeat {self.repeat}: value must be finite or NaN")
        return self


class JudgeCall(Strict):
    """One call to a judge, stored whole so any verdict can be replayed or re-judged."""

    run_id: str
    call_key: str
    judge_id: JudgeId
    method: str | None = None
    question_id: str | None = None
    purpose: str
    request: dict[str, Any]
    response_raw: str | None = None
    parsed: dict[str, Any] | list[Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    cache_hit: bool = False
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class Claim(Strict):
    """An atomic statement and the judge's verdict on it (faithfulness, context recall...)."""

    run_id: str
    method: str
    question_id: str
    source: Literal["answer", "ground_truth"]
    idx: int
    text: str
    verdict: str | None = None
    reason: str | None = None
    metric: str
    judge_id: str | None = None
    computed_at: datetime = Field(default_factory=utcnow)
    trial: int = Field(default=0, ge=0, exclude_if=first_trial)  # the answer's trial (schemas/trials.py)


class ContextJudgement(Strict):
    """A judge's relevance verdict on one retrieved context of one answer (context_precision...).

    Stored as its own table so pages and the analysis layer join verdicts by rank instead of
    reading them out of a metric's JSON details. A re-score replaces the whole set of an
    (answer, metric), like claims."""

    run_id: str
    method: str
    question_id: str
    metric: str
    rank: int
    verdict: Literal["relevant", "not_relevant"] | None = None
    score: float | None = None
    reason: str | None = None
    judge_id: str | None = None
    computed_at: datetime = Field(default_factory=utcnow)
    trial: int = Field(default=0, ge=0, exclude_if=first_trial)  # the answer's trial (schemas/trials.py)


class Annotation(Strict):
    """A human judgement on a verdict, claim or metric. Append-only: never overwritten."""

    annotation_id: str
    who: Id  # as typed by the person: the id rule applies (evalcore.schemas.ids)
    when: datetime = Field(default_factory=utcnow)
    run_id: str
    # the answer labelled, spelled as the run stores it (found by canonical match on the way in:
    # evalcore.analysis.labels.labels_io, the Annotate page), so the label joins the run's rows
    method: str | None = None
    question_id: str | None = None
    target_kind: Literal["claim", "context", "answer_class", "grade", "metric", "preference"]
    target_ref: str
    judge_label: str | None = None
    label: str
    note: str | None = None
    # How the answer was chosen. None (and every label written before these fields existed) =
    # hand-picked: it counts for agreement only. A random sample names its draw (sample_id) and
    # the probability the draw gave this answer of being in it; only such labels feed the
    # corrected estimates (evalcore.analysis.labels.corrected). docs/labels.md.
    sample_id: str | None = None
    inclusion_prob: float | None = Field(default=None, gt=0.0, le=1.0)
    # A preference only: which system's answer was shown on the left ("A" or "B"; None when not
    # shown by evalcore, e.g. imported), so the page's left/right maps back to the systems exactly.
    shown_left: Literal["A", "B"] | None = None

    @field_validator("sample_id")
    @classmethod
    def _one_sample_grammar(cls, sample_id: str | None) -> str | None:
        # one spelling per sample (schemas.labels): "hello", "srs:03" or a look-alike never
        # passes for a random sample
        if sample_id is not None and sample_seed(sample_id) is None:
            raise ValueError(f"sample_id {sample_id!r} is not a sample id: write {SAMPLE_GRAMMAR}, "
                             "or leave it empty for a hand-picked label")
        return sample_id

    @model_validator(mode="after")
    def _sample_complete(self) -> "Annotation":
        if (self.sample_id is None) != (self.inclusion_prob is None):
            raise ValueError("sample_id and inclusion_prob go together (both, or neither for a hand-picked item)")
        return self

    @model_validator(mode="after")
    def _one_pair_spelling(self) -> "Annotation":
        # a preference names its two systems once, A sorting first (schemas.labels)
        if self.target_kind != PREFERENCE:
            if self.shown_left is not None:
                raise ValueError("shown_left belongs to a preference label only")
            return self
        other = preference_other(self.target_ref)
        if other is None or self.method is None or self.question_id is None:
            raise ValueError(f"a preference names a question, its system A (run_id, method) and system B as "
                             f"target_ref 'preference:<run>:<method>', got {self.target_ref!r}")
        if not (self.run_id, self.method) < other:
            raise ValueError(f"a preference's system A sorts before its system B: ({self.run_id!r}, {self.method!r}) "
                             f"vs {other!r} (the same system twice, or the two named the other way round)")
        if self.label not in (*Preference, RETRACTED):
            raise ValueError(f"a preference is A, B or tie, got {self.label!r}")
        return self

    @field_validator("when", mode="before")
    @classmethod
    def _a_time_not_a_number(cls, when: Any) -> Any:
        return time_not_number(when)

    @field_validator("when")
    @classmethod
    def _not_in_the_future(cls, when: datetime) -> datetime:
        return label_time(when)
