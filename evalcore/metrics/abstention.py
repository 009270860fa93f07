"""Abstention ("don't know") detection, abstention accuracy and negative-question rules.

Why phrase lists and not a model: abstention must be cheap, deterministic and explainable.
The explicit `abstained` field from the target always wins; phrases are the fallback, and the
phrase that fired is stored in `details` so a wrong call is visible. Lists are per language and
configurable through scoring options:

  options["dont_know_phrases"] = {"en": [...], "ko": [...]}   (replaces the defaults per language)
  options["negative_rules"]    = {check_type: {lang: [[any-of], [any-of], ...]}}

A negative rule is a list of groups; it passes when every group has at least one phrase in the
answer (so "보장" + ("아니" or "없") is [["보장"], ["아니", "없"]]). A rule passes if it passes in
any language, so mixed-language answers are judged fairly.

Target errors: an answer that was never produced cannot be classified as an abstention or not,
so these metrics are NaN with the reason "target error" (error rates are reported by
performance metrics).
"""

from __future__ import annotations

from typing import Any

from evalcore.metrics.base import Item, MetricSpec, Score, ScoringContext
from evalcore.metrics.text import find, normalize, strip_punct
from evalcore.schemas import EvalQuestion, EvalResponse

DONT_KNOW_PHRASES: dict[str, list[str]] = {
    "en": [
        "i don't know", "i do not know", "i dont know", "don't have enough information",
        "do not have enough information", "not enough information", "insufficient information",
        "cannot answer", "can't answer", "unable to answer", "unable to find", "cannot find",
        "can't find", "could not find", "couldn't find", "no information", "not mentioned",
        "not provided in the", "does not contain information", "doesn't contain information",
        "no relevant information", "not available in the", "cannot be determined",
        "can't be determined", "there is no information", "i'm not sure", "i am not sure",
        "unanswerable", "no answer",
    ],
    "ko": ["없", "모르", "찾을 수 없", "확인 불가", "알 수 없", "답변할 수 없", "확인할 수 없"],
}

# Whole-answer forms that mean "no answer" even though they are not sentences.
SHORT_NO_ANSWER = frozenset({"", "n/a", "na", "none", "unknown", "null", "nil", "no answer", "-", "?",
                             "없음", "해당 없음", "모름", "unanswerable"})

NEGATIVE_RULES: dict[str, dict[str, list[list[str]]]] = {
    "should_not_hallucinate": {
        "ko": [["없", "찾을 수 없", "존재하지 않"]],
        "en": [["no information", "not found", "does not exist", "doesn't exist", "no record",
                "cannot find", "can't find", "could not find", "couldn't find", "not mentioned",
                "there is no", "there are no", "i don't know", "i do not know", "not aware of"]],
    },
    "should_not_fabricate_data": {
        "ko": [["없", "확인 불가", "알 수 없"]],
        "en": [["not available", "no data", "cannot be determined", "can't be determined",
                "not disclosed", "not provided", "don't have", "do not have", "no information",
                "not found", "unable to", "i don't know", "i do not know"]],
    },
    "should_provide_accurate_disclaimer": {
        "ko": [["보장"], ["아니", "없"]],
        "en": [["guarantee", "guaranteed", "guarantees"], ["not", "no", "cannot", "can't", "never"]],
    },
}
NEGATIVE_CHECKS = ("should_not_hallucinate", "should_correct_premise", "should_not_fabricate_data",
                   "should_provide_accurate_disclaimer")


def detect_dont_know(response: EvalResponse, options: dict[str, Any] | None = None) -> tuple[bool, dict]:
    """(is_dont_know, how). `how` names the evidence: explicit field, short form or phrase."""
    if response.abstained is not None:
        return response.abstained, {"by": "abstained_field"}
    answer = normalize(response.answer)
    bare = strip_punct(answer).strip()
    if answer in SHORT_NO_ANSWER or bare in SHORT_NO_ANSWER:
        return True, {"by": "short_answer", "answer": answer}
    phrases = dict(DONT_KNOW_PHRASES)
    phrases.update((options or {}).get("dont_know_phrases") or {})
    for lang, items in phrases.items():
        for phrase in items:
            if find(answer, phrase, whole_word=True):
                return True, {"by": "phrase", "lang": lang, "phrase": phrase}
    return False, {"by": "no_phrase"}


def _errored(r: EvalResponse) -> bool:
    return r.error is not None


def _dont_know(q: EvalQuestion, r: EvalResponse, opts: dict) -> Score:
    if _errored(r):
        return Score.nan("target error", error_kind=r.error_kind)
    flag, how = detect_dont_know(r, opts)
    return Score(float(flag), details=how)


def _unanswerable_accuracy(q: EvalQuestion, r: EvalResponse, opts: dict) -> Score:
    if _errored(r):
        return Score.nan("target error", error_kind=r.error_kind)
    flag, how = detect_dont_know(r, opts)
    right = flag if not q.answerable else not flag
    return Score(float(right), details={**how, "answerable": q.answerable, "dont_know": flag})


def _false_positive(q: EvalQuestion, r: EvalResponse, opts: dict) -> Score:
    if q.answerable is False:
        return Score.nan("answerable questions only")
    if _errored(r):
        return Score.nan("target error", error_kind=r.error_kind)
    flag, how = detect_dont_know(r, opts)
    return Score(float(flag), details=how)


def _false_negative(q: EvalQuestion, r: EvalResponse, opts: dict) -> Score:
    if q.answerable:
        return Score.nan("unanswerable questions only")
    if _errored(r):
        return Score.nan("target error", error_kind=r.error_kind)
    flag, how = detect_dont_know(r, opts)
    return Score(float(not flag), details=how)


def rule_passes(answer_norm: str, rule: dict[str, list[list[str]]]) -> tuple[bool, dict]:
    """A rule passes when, in some language, every group has a phrase in the answer."""
    tried = {}
    for lang, groups in rule.items():
        hits = [[p for p in group if find(answer_norm, p, whole_word=True)] for group in groups]
        tried[lang] = hits
        if groups and all(hits):
            return True, {"lang": lang, "hits": hits}
    return False, {"tried": tried}


def negative_check_type(q: EvalQuestion) -> tuple[str | None, bool]:
    """(check type, defaulted). A `negative` question without a check type is judged by
    should_not_hallucinate, and says so in details."""
    if q.negative_check:
        return q.negative_check, False
    if (q.category or "").casefold() == "negative":
        return "should_not_hallucinate", True
    return None, False


def _negative_detection(q: EvalQuestion, r: EvalResponse, opts: dict) -> Score:
    check, defaulted = negative_check_type(q)
    if check is None:
        return Score.nan("not a negative question")
    if check not in NEGATIVE_CHECKS:
        return Score.nan(f"unknown negative check type {check!r}; known: {', '.join(NEGATIVE_CHECKS)}")
    if _errored(r):
        return Score.nan("target error", check_type=check, error_kind=r.error_kind)
    answer = normalize(r.answer)
    base = {"check_type": check, "defaulted": defaulted}
    if check == "should_correct_premise":
        if not q.expected_keywords:
            return Score.nan("should_correct_premise needs the correcting term in expected_keywords",
                             check_type=check)
        hits = [k for k in q.expected_keywords if find(answer, k)]
        return Score(float(bool(hits)), details={**base, "hits": hits})
    rules = dict(NEGATIVE_RULES)
    rules.update((opts.get("negative_rules") or {}))
    ok, how = rule_passes(answer, rules[check])
    if not ok and r.abstained and check != "should_provide_accurate_disclaimer":
        ok, how = True, {"by": "abstained_field"}
    return Score(float(ok), details={**base, **how})


def _with_options(fn):
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r, ctx.options) for q, r in items]
    return batch


SPECS = [
    MetricSpec("dont_know", "abstention", _with_options(_dont_know), needs=frozenset({"answer"}),
               binary=True, higher_is_better=False,
               description="1 if the answer abstains (explicit field, short form, or phrase)."),
    MetricSpec("unanswerable_accuracy", "abstention", _with_options(_unanswerable_accuracy),
               needs=frozenset({"answer"}), binary=True,
               description="1 if it abstains on an unanswerable question or answers an answerable one."),
    MetricSpec("abstention_false_positive_rate", "abstention", _with_options(_false_positive),
               needs=frozenset({"answer"}), binary=True, higher_is_better=False,
               description="Answerable questions: 1 if the answer abstained."),
    MetricSpec("abstention_false_negative_rate", "abstention", _with_options(_false_negative),
               needs=frozenset({"answer"}), binary=True, higher_is_better=False,
               description="Unanswerable questions: 1 if it answered anyway (hallucination rate)."),
    MetricSpec("negative_detection", "abstention", _with_options(_negative_detection),
               needs=frozenset({"answer"}), binary=True,
               description="Negative questions: 1 if the answer refuses/corrects per its check type."),
]
