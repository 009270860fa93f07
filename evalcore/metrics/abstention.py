"""Abstention ("don't know") detection, abstention accuracy and negative-question rules.

Why phrase lists and not a model: abstention must be cheap, deterministic and explainable.
The explicit `abstained` field from the target always wins; the text rules are the fallback,
and the rule that fired is stored in `details` so a wrong call is visible. Two kinds of list,
per language:

- phrases (DONT_KNOW_PHRASES): wordings only an abstention uses ("i don't know", "not sure",
  "cannot determine"); found anywhere in the answer, on word edges;
- no-answer forms (NO_ANSWER_FORMS): words that are an abstention only when they *are* the
  answer ("unknown", "n/a", "not available", "no data"); they also occur in real answers
  ("the unknown soldier", "not available in Europe"). A form counts when a sentence of the
  answer is the form alone, or ends in it after a linking verb ("The population is unknown.",
  "There is no data."). See `no_answer_form`.

Lists, negative rules and the snippet rule are scoring options (run config `score_options`,
`evalcore score --options-file FILE / --option KEY=VALUE`, or Python):

  options["dont_know_phrases"] = {"en": [...], "ko": [...]}   (replaces the defaults per language)
  options["dont_know_forms"]   = {"en": [...], "ko": [...]}   (replaces the defaults per language)
  options["negative_rules"]    = {check_type: {lang: [[any-of], [any-of], ...]}}

A negative rule is a list of groups; it passes when every group has at least one phrase in the
answer (so "보장" + ("아니" or "없") is [["보장"], ["아니", "없"]]). A rule passes if it passes in
any language, so mixed-language answers are judged fairly.

Target errors: an answer that was never produced cannot be classified as an abstention or not,
so these metrics are NaN with the reason "target error" (error rates are reported by
performance metrics).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import Item, MetricOption, MetricSpec, Score, ScoringContext
from evalcore.metrics.text import extract_keywords, find, normalize, strip_punct, trim_punct
from evalcore.schemas import EvalQuestion, EvalResponse

DONT_KNOW_PHRASES: dict[str, list[str]] = {
    "en": [
        "i don't know", "i do not know", "i dont know", "don't have enough information",
        "do not have enough information", "not enough information", "insufficient information",
        "insufficient data", "cannot answer", "can't answer", "unable to answer", "unable to find",
        "cannot find", "can't find", "could not find", "couldn't find", "no information", "not mentioned",
        "not provided in the", "does not contain information", "doesn't contain information",
        "no relevant information", "not available in the", "cannot be determined",
        "can't be determined", "cannot determine", "can't determine", "unable to determine",
        "there is no information", "there is no data", "there are no data", "no data available",
        "no data is available", "i'm not sure", "i am not sure", "not sure",
        "unanswerable", "no answer",
    ],
    "ko": ["없", "모르", "찾을 수 없", "확인 불가", "알 수 없", "답변할 수 없", "확인할 수 없"],
}

# Abstentions only when they are the answer (alone, or after a linking verb): see no_answer_form.
NO_ANSWER_FORMS: dict[str, list[str]] = {
    "en": ["unknown", "not known", "n/a", "none", "null", "nil", "no answer", "unanswerable",
           "not available", "no data", "no information", "not applicable"],
    "ko": ["없음", "해당 없음", "모름", "알 수 없음", "정보 없음", "확인 불가"],
}

# A sentence "<anything> <linking verb> [one word] <form>" is an abstention-shaped sentence.
_LINKING = r"(?:is|are|was|were|remains?|stays?|seems?|appears?|be|been|\S+'s)"
_SENTENCE_END = re.compile(r"[.!?;\n。！？]+")

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

# The lists as scoring options, declared by every metric that detects abstentions with them
# (here, the lexical no-answer rule, the judged answer classes); `language_lists` and
# `negative_rules` check the finer shape where they read them.
DONT_KNOW_PHRASES_OPTION = MetricOption("dont_know_phrases", dict[str, list[str]], DONT_KNOW_PHRASES,
                                        "abstention phrases per language, found anywhere in the answer")
DONT_KNOW_FORMS_OPTION = MetricOption("dont_know_forms", dict[str, list[str]], NO_ANSWER_FORMS,
                                      "no-answer forms per language, counted when they are the answer")
DONT_KNOW_OPTIONS = (DONT_KNOW_PHRASES_OPTION, DONT_KNOW_FORMS_OPTION)
NEGATIVE_RULES_OPTION = MetricOption("negative_rules", dict[str, dict[str, list[list[str]]]], NEGATIVE_RULES,
                                     "negative_detection rules per check type and language")


def language_lists(options: Mapping[str, Any] | None, key: str,
                   defaults: dict[str, list[str]]) -> dict[str, list[str]]:
    """The defaults with options[key] replacing whole languages. The option must be a mapping
    of language -> list of phrases: anything else is an error naming the option, because a
    malformed list would silently switch detection off."""
    value = (options or {}).get(key)
    if value is None:
        return dict(defaults)
    if not isinstance(value, Mapping) or not all(
            isinstance(lang, str) and isinstance(items, list) and all(isinstance(p, str) for p in items)
            for lang, items in value.items()):
        raise EvalcoreError(f"option {key!r} must map a language to a list of phrases, "
                            f"e.g. {{'en': ['no idea'], 'ko': ['모름']}}; got {value!r}")
    return {**defaults, **value}


def _sentences(answer_norm: str) -> list[str]:
    """The answer's sentences, without punctuation at their edges (inner punctuation stays, so
    "n/a" is not "na", the symbol of sodium)."""
    parts = (trim_punct(p) for p in _SENTENCE_END.split(answer_norm))
    return [" ".join(p.split()) for p in parts if p]


def _form_text(form: str) -> str:
    return " ".join(trim_punct(normalize(form)).split())


def no_answer_form(answer_norm: str, forms: dict[str, list[str]]) -> dict | None:
    """Which no-answer form the answer is, if any: a sentence that is the form alone ("N/A",
    "Unknown.") or ends in it after a linking verb ("The 2023 revenue is not available.",
    "There is no data."). A form inside a sentence ("the unknown soldier", "not available in
    Europe") does not count: those are answers."""
    sentences = _sentences(answer_norm)
    for lang, items in forms.items():
        for form in items:
            shaped = _form_rule(form)
            if shaped is None:
                continue
            f, pattern = shaped
            for sentence in sentences:
                if sentence == f or pattern.search(sentence):
                    return {"lang": lang, "form": form, "sentence": sentence}
    return None


@lru_cache(maxsize=1024)
def _form_rule(form: str) -> tuple[str, re.Pattern] | None:
    """A form's text as sentences are compared with it, and its "<linking verb> [word] form"
    pattern: built once per form, not once per form per answer."""
    f = _form_text(form)
    if not f:
        return None
    return f, re.compile(rf"(?:^|\s){_LINKING}\s+(?:\S+\s+)?{re.escape(f)}$")


def detect_dont_know(response: EvalResponse, options: dict[str, Any] | None = None) -> tuple[bool, dict]:
    """(is_dont_know, how). `how` names the evidence: explicit field, empty answer, a no-answer
    form (whole answer: by=short_answer; one sentence of it: by=no_answer_sentence), or a phrase."""
    if response.abstained is not None:
        return response.abstained, {"by": "abstained_field"}
    forms = _frozen(language_lists(options, "dont_know_forms", NO_ANSWER_FORMS))
    phrases = _frozen(language_lists(options, "dont_know_phrases", DONT_KNOW_PHRASES))
    flag, how = _detect_text(response.answer, forms, phrases)
    return flag, dict(how)  # the caller's own copy: a memoised answer is shared


Frozen = tuple[tuple[str, tuple[str, ...]], ...]


def _frozen(lists: dict[str, list[str]]) -> Frozen:
    return tuple((lang, tuple(items)) for lang, items in lists.items())


@lru_cache(maxsize=4096)
def _detect_text(text: str, forms: Frozen, phrases: Frozen) -> tuple[bool, dict]:
    """detect_dont_know on the answer's text, memoised: several metrics of one pass (dont_know,
    unanswerable_accuracy, the false positive/negative rates, answer_completeness, the judged
    grades) ask about the same answer, and the phrase scan is the costliest lexical rule."""
    answer = normalize(text)
    if not strip_punct(answer).strip():
        return True, {"by": "empty_answer", "answer": answer}
    form = no_answer_form(answer, {lang: list(items) for lang, items in forms})
    if form is not None:
        whole = len(_sentences(answer)) == 1 and form["sentence"] == _form_text(form["form"])
        return True, {"by": "short_answer" if whole else "no_answer_sentence", **form}
    for lang, items in phrases:
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


def negative_rules(options: Mapping[str, Any] | None) -> dict[str, dict[str, list[list[str]]]]:
    """NEGATIVE_RULES with options["negative_rules"] replacing whole check types. Checked: a
    check type without phrase rules, or a rule that is not {lang: [[phrase, ...], ...]}, is an
    error naming the option rather than a rule that can never pass."""
    value = (options or {}).get("negative_rules")
    if value is None:
        return dict(NEGATIVE_RULES)
    if not isinstance(value, Mapping):
        raise EvalcoreError(f"option 'negative_rules' must map a check type to its rule, got {value!r}")
    for check, rule in value.items():
        if check not in NEGATIVE_RULES:
            raise EvalcoreError(f"option 'negative_rules': {check!r} has no phrase rule to replace; "
                                f"rules exist for {', '.join(NEGATIVE_RULES)} (should_correct_premise "
                                "is decided by its correcting term)")
        good = isinstance(rule, Mapping) and rule and all(
            isinstance(groups, list) and groups and all(
                isinstance(g, list) and g and all(isinstance(p, str) and p.strip() for p in g) for g in groups)
            for groups in rule.values())
        if not good:
            raise EvalcoreError(f"option 'negative_rules' {check!r} must map a language to a list of "
                                f"phrase groups, e.g. {{'en': [['guarantee'], ['not', 'no']]}}; got {rule!r}")
    return {**NEGATIVE_RULES, **value}


def negative_check_type(q: EvalQuestion) -> tuple[str | None, bool]:
    """(check type, defaulted). A `negative` question without a check type is judged by
    should_not_hallucinate, and says so in details."""
    if q.negative_check:
        return q.negative_check, False
    if (q.category or "").casefold() == "negative":
        return "should_not_hallucinate", True
    return None, False


def correcting_terms(q: EvalQuestion) -> tuple[list[str], str] | str:
    """The terms a should_correct_premise answer must name, and where they came from; or why
    there are none. In order:
    1. the check's own term, `metadata.correcting_term` (text or list; the plan's
       `check: {type: should_correct_premise, correcting_term: ...}` puts it there);
    2. `expected_keywords`;
    3. the expected answer: its keywords that the question does not contain. The question holds
       the false premise, so its words cannot show a correction; what the expected answer adds
       (the right company, the right person) can. The plan's own negative questions carry only
       an expected answer, so without this rule they could not be scored."""
    own = q.metadata.get("correcting_term")
    if own is not None:
        terms = [own] if isinstance(own, str) else own
        if not isinstance(terms, list) or not all(isinstance(t, str) and t.strip() for t in terms):
            return "metadata.correcting_term must be a text or a list of texts"
        return list(terms), "correcting_term"
    if q.expected_keywords:
        return list(q.expected_keywords), "expected_keywords"
    question = normalize(q.question)
    terms = [k for k in extract_keywords(q.ground_truth) if not find(question, k)]
    if terms:
        return terms, "expected_answer"
    if q.ground_truth:
        return "should_correct_premise: the expected answer adds no term the question lacks; give correcting_term"
    return "should_correct_premise needs the correcting term (correcting_term, expected_keywords or an expected answer)"


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
        found = correcting_terms(q)
        if isinstance(found, str):
            return Score.nan(found, check_type=check)
        terms, source = found
        hits = [k for k in terms if find(answer, k)]
        return Score(float(bool(hits)), details={**base, "hits": hits, "terms": terms, "term_source": source})
    ok, how = rule_passes(answer, negative_rules(opts)[check])
    if not ok and r.abstained and check != "should_provide_accurate_disclaimer":
        ok, how = True, {"by": "abstained_field"}
    return Score(float(ok), details={**base, **how})


def _with_options(fn):
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r, ctx.options) for q, r in items]
    return batch


SPECS = [
    MetricSpec("dont_know", "abstention", version="2",
               compute=_with_options(_dont_know), needs=frozenset({"answer"}),
               binary=True, higher_is_better=False,
               description="1 if the answer abstains (explicit field, short form, or phrase).", decides_dont_know=True,
               options=DONT_KNOW_OPTIONS),
    MetricSpec("unanswerable_accuracy", "abstention", version="2",
               compute=_with_options(_unanswerable_accuracy),
               needs=frozenset({"answer"}), binary=True,
               description="1 if it abstains on an unanswerable question or answers an answerable one.",
               options=DONT_KNOW_OPTIONS),
    MetricSpec("abstention_false_positive_rate", "abstention", version="2",
               compute=_with_options(_false_positive),
               needs=frozenset({"answer"}), binary=True, higher_is_better=False,
               description="Answerable questions: 1 if the answer abstained.", options=DONT_KNOW_OPTIONS),
    MetricSpec("abstention_false_negative_rate", "abstention", version="2",
               compute=_with_options(_false_negative),
               needs=frozenset({"answer"}), binary=True, higher_is_better=False,
               description="Unanswerable questions: 1 if it answered anyway (hallucination rate).",
               options=DONT_KNOW_OPTIONS),
    MetricSpec("negative_detection", "abstention", version="2", compute=_with_options(_negative_detection),
               needs=frozenset({"answer"}), binary=True,
               description="Negative questions: 1 if the answer refuses/corrects per its check type.",
               options=(NEGATIVE_RULES_OPTION,)),
]
