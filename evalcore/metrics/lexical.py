"""Deterministic answer-vs-reference checks: exact match, SQuAD EM/F1, keywords, numbers.

Why several "exact" metrics: `exact_match` compares Unicode-normalised text (NFKC + casefold,
whitespace collapsed, surrounding punctuation dropped) and works for any language;
`squad_em`/`token_f1` follow the official SQuAD 2.0 evaluation rules exactly (lowercase, ASCII
punctuation and English articles removed, max over every gold answer), so numbers are
comparable with published results.

Reference answers: every metric takes the max over `question.answers` (which starts with
`ground_truth`). Unanswerable questions (answerable=False, no gold answers) follow SQuAD 2.0's
convention for exact_match / squad_em / token_f1: the right answer is no answer, so the score
is 1 when the response abstains (see abstention.detect_dont_know) and 0 otherwise.
A response with a target error scores 0 (the system gave no answer), with the error in details.
"""

from __future__ import annotations

from collections import Counter

from evalcore.metrics.abstention import DONT_KNOW_OPTIONS, detect_dont_know, negative_check_type
from evalcore.metrics.base import ANSWER_QUALITY, Item, MetricSpec, Score, ScoringContext, per_item
from evalcore.metrics.checks import SPECS as CHECK_SPECS, zero_on_error
from evalcore.metrics.text import (
    extract_keywords,
    find,
    normalize,
    numbers_equal,
    parse_numbers,
    squad_normalize,
    squad_tokens,
    strip_punct,
    tokenize,
)
from evalcore.schemas import EvalQuestion, EvalResponse


def _golds(q: EvalQuestion) -> list[str]:
    return [a for a in q.answers if a is not None and a.strip()]


def _no_answer_score(q: EvalQuestion, r: EvalResponse, opts: dict | None = None) -> Score | None:
    """The SQuAD 2.0 no-answer rule, or a NaN when there is nothing to compare with."""
    if _golds(q):
        return None
    if not q.answerable:
        if r.error:
            return Score(0.0, details={"no_answer_question": True, "target_error": r.error_kind})
        flag, how = detect_dont_know(r, opts)  # the run's phrase lists, like the dont_know metric
        return Score(float(flag), details={"no_answer_question": True, "abstained": flag, **how})
    return Score.nan("no ground truth")


def norm_answer(text: str | None) -> str:
    """exact_match normalisation: NFKC + casefold, collapsed spaces, no edge punctuation."""
    text = normalize(text)
    while text and strip_punct(text[0]) == "":
        text = text[1:].lstrip()
    while text and strip_punct(text[-1]) == "":
        text = text[:-1].rstrip()
    return text


def _exact_match(q: EvalQuestion, r: EvalResponse, opts: dict | None = None) -> Score:
    special = _no_answer_score(q, r, opts)
    if special is not None:
        return special
    pred = norm_answer(r.answer)
    best = [g for g in _golds(q) if norm_answer(g) == pred]
    return Score(float(bool(best)), details={"matched": best[0] if best else None})


def squad_f1_one(prediction: str, gold: str) -> float:
    """Token F1 of one prediction against one gold answer (SQuAD rules: bag of tokens; if either
    side has no tokens, 1 only when both are empty)."""
    pred_toks, gold_toks = squad_tokens(prediction), squad_tokens(gold)
    if not pred_toks or not gold_toks:
        return float(pred_toks == gold_toks)
    same = sum((Counter(pred_toks) & Counter(gold_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def _squad_em(q: EvalQuestion, r: EvalResponse, opts: dict | None = None) -> Score:
    special = _no_answer_score(q, r, opts)
    if special is not None:
        return special
    pred = squad_normalize(r.answer)
    hits = [g for g in _golds(q) if squad_normalize(g) == pred]
    return Score(float(bool(hits)), details={"matched": hits[0] if hits else None})


def _token_f1(q: EvalQuestion, r: EvalResponse, opts: dict | None = None) -> Score:
    special = _no_answer_score(q, r, opts)
    if special is not None:
        return special
    scores = [(squad_f1_one(r.answer, g), g) for g in _golds(q)]
    best, gold = max(scores, key=lambda x: x[0])
    return Score(best, details={"best_gold": gold})


def keywords_for(q: EvalQuestion) -> tuple[list[str], str]:
    """The question's expected keywords, else keywords extracted from the ground truth."""
    if q.expected_keywords:
        return list(q.expected_keywords), "expected_keywords"
    return extract_keywords(q.ground_truth), "extracted"


def keyword_matches(q: EvalQuestion, answer: str) -> tuple[list[str], list[str], str] | None:
    keywords, source = keywords_for(q)
    if not keywords:
        return None
    norm = normalize(answer)
    hits = [k for k in keywords if find(norm, k)]
    return hits, [k for k in keywords if k not in hits], source


NEGATIVE_NO_KEYWORDS = "negative question: scored by negative_detection, not by keywords"


def _keyword_metric(kind: str):
    def fn(q: EvalQuestion, r: EvalResponse) -> Score:
        # The Korean plan scores keywords over its non-negative questions only: the expected answer
        # of a negative question is a refusal or a correction, whose words an answer need not repeat
        # (and a refusal repeating "정보 ... 없습니다" is not a fact found).
        if negative_check_type(q)[0] is not None:
            return Score.nan(NEGATIVE_NO_KEYWORDS)
        found = keyword_matches(q, r.answer)
        if found is None:
            why = "no expected_keywords and no ground truth" if not q.ground_truth else \
                "no keywords could be extracted from the ground truth"
            return Score.nan(why)
        hits, missing, source = found
        value = float(bool(hits)) if kind == "hit" else len(hits) / (len(hits) + len(missing))
        details = {"matched": hits, "missing": missing, "source": source}
        if r.error:
            details["target_error"] = r.error_kind
        return Score(value, details=details)
    return fn


def expected_numbers(q: EvalQuestion) -> list[float]:
    """Numbers of the ground truth, else of the expected keywords (deduplicated, in order)."""
    nums = parse_numbers(q.ground_truth)
    if not nums:
        nums = [x for k in q.expected_keywords for x in parse_numbers(k)]
    out: list[float] = []
    for x in nums:
        if not any(numbers_equal(x, y) for y in out):
            out.append(x)
    return out


def _number_match(q: EvalQuestion, r: EvalResponse) -> Score:
    expected = expected_numbers(q)
    if not expected:
        return Score.nan("no numbers in the ground truth or expected keywords")
    found = parse_numbers(r.answer)
    hits = [x for x in expected if any(numbers_equal(x, y) for y in found)]
    return Score(len(hits) / len(expected),
                 details={"expected": expected, "found": found[:50],
                          "missing": [x for x in expected if x not in hits]})


def _completeness(q: EvalQuestion, r: EvalResponse) -> Score:
    if not q.ground_truth:
        return Score.nan("no ground truth")
    expected_words = len(tokenize(q.ground_truth))
    if expected_words == 0:
        return Score.nan("ground truth has no words")
    found = keyword_matches(q, r.answer)
    if found is None:
        return Score.nan("no keywords could be extracted from the ground truth")
    hits, missing, _ = found
    coverage = len(hits) / (len(hits) + len(missing))
    length = min(len(tokenize(r.answer)) / expected_words, 1.0)
    return Score((length + coverage) / 2, details={"length_score": length, "keyword_coverage": coverage})


def _with_options(fn):
    """Batch form handing the scoring options to `fn`, so the no-answer rule of unanswerable
    questions uses the run's dont_know phrase lists, as the dont_know metric does."""
    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        one = zero_on_error(lambda q, r: fn(q, r, ctx.options))
        return [one(q, r) for q, r in items]
    return batch


SPECS = [
    MetricSpec("exact_match", "lexical", version="2",
               compute=_with_options(_exact_match), needs=frozenset({"answer", "ground_truth"}),
               binary=True, description="Normalised (NFKC+casefold) equality, max over gold answers.",
               importance=(ANSWER_QUALITY, 8), options=DONT_KNOW_OPTIONS),
    MetricSpec("squad_em", "lexical", version="2",
               compute=_with_options(_squad_em), needs=frozenset({"answer", "ground_truth"}),
               binary=True, description="SQuAD 2.0 exact match, max over gold answers.", options=DONT_KNOW_OPTIONS),
    MetricSpec("token_f1", "lexical", version="2",
               compute=_with_options(_token_f1), needs=frozenset({"answer", "ground_truth"}),
               description="SQuAD 2.0 token F1, max over gold answers.",
               importance=(ANSWER_QUALITY, 7), key_rank=7, decides_correct=4, options=DONT_KNOW_OPTIONS),
    MetricSpec("keyword_hit", "lexical", version="2",
               compute=per_item(zero_on_error(_keyword_metric("hit"))), needs=frozenset({"answer", "keywords"}),
               binary=True, description="1 if any expected keyword is in the answer."),
    MetricSpec("keyword_coverage", "lexical", version="2",
               compute=per_item(zero_on_error(_keyword_metric("coverage"))),
               needs=frozenset({"answer", "keywords"}), description="Fraction of expected keywords in the answer.",
               importance=(ANSWER_QUALITY, 11), key_rank=8),
    MetricSpec("number_match", "lexical", per_item(zero_on_error(_number_match)), needs=frozenset({"answer", "ground_truth"}),
               description="Fraction of the reference's numbers present in the answer."),
    MetricSpec("answer_completeness", "lexical", per_item(zero_on_error(_completeness)),
               needs=frozenset({"answer", "ground_truth"}),
               description="(min(answer words / reference words, 1) + keyword_coverage) / 2."),
    *CHECK_SPECS,
]
